#ifndef GOPT_UTIL_GEOMETRIC_MEAN_H_
#define GOPT_UTIL_GEOMETRIC_MEAN_H_

#include <cmath>

namespace gopt {

// The geometric mean of positive ratios, accumulated one at a time (as the
// mean of their logarithms, so that long products neither overflow nor
// underflow). Not thread-safe.
//
//   GeometricMean mean;
//   mean.Add(2.0);
//   mean.Add(8.0);
//   mean.value();  // 4.0
class GeometricMean {
 public:
  // Adds one ratio (> 0).
  void Add(double ratio) {
    log_sum_ += std::log(ratio);
    ++count_;
  }
  int count() const { return count_; }
  // The geometric mean; 0 when nothing was added.
  double value() const { return count_ > 0 ? std::exp(log_sum_ / count_) : 0; }

 private:
  double log_sum_ = 0;
  int count_ = 0;
};

}  // namespace gopt

#endif  // GOPT_UTIL_GEOMETRIC_MEAN_H_
