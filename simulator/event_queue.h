#ifndef GOPT_SIMULATOR_EVENT_QUEUE_H_
#define GOPT_SIMULATOR_EVENT_QUEUE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gopt::simulator {

// The event queue of Simulator's event loop (event_loop.h).

// A kernel's end or a transfer's arrival. Events at equal times pop in
// creation order (seq). 16 bytes: seq, id and kind share one word whose
// order is seq's, since seq is unique (seq < 2^32: seq counts kernels and
// transfers, at most nodes + edges).
struct Event {
  double time;
  uint64_t tag;  // seq << 32 | id << 1 | is_transfer

  static Event Make(double time, int64_t seq, int32_t id, bool is_transfer) {
    return Event{time, static_cast<uint64_t>(seq) << 32 |
                           static_cast<uint64_t>(id) << 1 |
                           static_cast<uint64_t>(is_transfer)};
  }
  int32_t id() const { return static_cast<int32_t>((tag >> 1) & 0x7fffffff); }
  bool is_transfer() const { return tag & 1; }
  bool Before(const Event& o) const {
    return (time < o.time) | ((time == o.time) & (tag < o.tag));
  }
};

// A binary min-heap of events. The simulator keeps it small (one event per
// device and per link), so a plain array heap with the comparisons inlined
// beats std::push_heap's out-of-line calls. Keeps its buffer across
// Clear() calls, so a reused queue does not allocate. Not thread-safe: one
// per simulation.
class EventQueue {
 public:
  void Clear() { heap_.clear(); }
  bool empty() const { return heap_.empty(); }
  // The earliest event; the queue must not be empty.
  const Event& top() const { return heap_.front(); }
  void Push(Event event) {
    heap_.push_back(event);
    RiseFrom(heap_.size() - 1, event);
  }
  // Replaces the earliest event by `event` (one sift-down instead of a pop
  // and a push); the queue must not be empty.
  void ReplaceTop(Event event) {
    const size_t size = heap_.size();
    size_t i = 0;
    for (size_t child = 1; child < size; child = 2 * i + 1) {
      // Without a right child, compare the left one with itself (never
      // Before): no read past the end, and no branch.
      const size_t right = child + 1 < size ? child + 1 : child;
      child += heap_[right].Before(heap_[child]);
      if (!heap_[child].Before(event)) break;
      heap_[i] = heap_[child];
      i = child;
    }
    heap_[i] = event;
  }
  // Whether every event, apart from the earliest one when `skip_earliest`,
  // is later than `time`.
  bool AllLaterThan(double time, bool skip_earliest) const {
    if (!skip_earliest) return heap_.empty() || heap_.front().time > time;
    for (size_t child = 1; child <= 2 && child < heap_.size(); ++child) {
      if (!(heap_[child].time > time)) return false;
    }
    return true;
  }
  // The events in heap order, and a queue set to such a copy (checkpoints
  // of the event loop: the same array pops in the same order).
  const std::vector<Event>& heap() const { return heap_; }
  void Assign(const std::vector<Event>& heap) {
    heap_.assign(heap.begin(), heap.end());
  }
  // Removes and returns the earliest event; the queue must not be empty.
  // The hole at the root first sinks to a leaf along the earlier children
  // (a loop of fixed length, without the unpredictable early exit of a
  // textbook sift-down), then the last event rises from there; it rarely
  // rises far, as the last event is usually a late one.
  Event Pop() {
    const Event top = heap_.front();
    const Event last = heap_.back();
    const size_t size = heap_.size() - 1;  // heap_[size] is `last`
    size_t i = 0;
    for (size_t child = 1; child < size; child = 2 * i + 1) {
      // Without a right child, compare the left one with itself (never
      // Before): no read past the end, and no branch.
      const size_t right = child + 1 < size ? child + 1 : child;
      child += heap_[right].Before(heap_[child]);
      heap_[i] = heap_[child];
      i = child;
    }
    RiseFrom(i, last);
    heap_.pop_back();
    return top;
  }

 private:
  // Puts `event` at the hole `i`, moving it up past later parents.
  void RiseFrom(size_t i, const Event& event) {
    while (i > 0) {
      const size_t parent = (i - 1) / 2;
      if (!event.Before(heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = event;
  }

  std::vector<Event> heap_;
};

}  // namespace gopt::simulator

#endif  // GOPT_SIMULATOR_EVENT_QUEUE_H_
