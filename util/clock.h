#ifndef GOPT_UTIL_CLOCK_H_
#define GOPT_UTIL_CLOCK_H_

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace gopt {

// The source of the current time for everything that keeps to a deadline or
// measures how long its work took (the engine, the policies, fine-tuning,
// pre-training). Passed in (RequestContext::clock, ProposeOptions::clock,
// FineTuneOptions::clock, ...) instead of read from absl::Now(), so that
// tests run deadlines on a FakeClock, deterministically. Implementations
// are thread-safe.
//
//   const Clock& clock = Clock::Real();
//   if (clock.Now() >= deadline) return absl::DeadlineExceededError(...);
class Clock {
 public:
  virtual ~Clock() = default;

  // The current time.
  virtual absl::Time Now() const = 0;

  // Waits until `duration` of this clock's time has passed.
  virtual void SleepFor(absl::Duration duration) const = 0;

  // The process's real clock (absl::Now, absl::SleepFor). Never destroyed.
  static const Clock& Real();
};

// absl::Now and absl::SleepFor.
class RealClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
  void SleepFor(absl::Duration duration) const override {
    absl::SleepFor(duration);
  }
};

inline const Clock& Clock::Real() {
  static const RealClock* clock = new RealClock;
  return *clock;
}

// Seconds of `clock`'s time since `start`.
//
//   const absl::Time start = clock.Now();
//   ...
//   result.seconds = SecondsSince(clock, start);
inline double SecondsSince(const Clock& clock, absl::Time start) {
  return absl::ToDoubleSeconds(clock.Now() - start);
}

// A clock for tests: time stands still except when SleepFor or Advance
// moves it on, and optionally by `tick` after every Now() (to stand for
// the time work takes between two readings). Starts at the Unix epoch.
// Thread-safe.
//
//   FakeClock clock;
//   context.clock = &clock;
//   context.deadline = clock.Now() + absl::Milliseconds(300);
class FakeClock final : public Clock {
 public:
  explicit FakeClock(absl::Duration tick = absl::ZeroDuration())
      : tick_(tick) {}

  absl::Time Now() const override {
    absl::MutexLock lock(&mutex_);
    const absl::Time now = now_;
    now_ += tick_;
    return now;
  }

  // Advances the clock by `duration` at once, without waiting.
  void SleepFor(absl::Duration duration) const override { Advance(duration); }

  // Moves the clock on by `duration`.
  void Advance(absl::Duration duration) const {
    absl::MutexLock lock(&mutex_);
    now_ += duration;
  }

 private:
  const absl::Duration tick_;
  mutable absl::Mutex mutex_;
  mutable absl::Time now_ ABSL_GUARDED_BY(mutex_) = absl::UnixEpoch();
};

}  // namespace gopt

#endif  // GOPT_UTIL_CLOCK_H_
