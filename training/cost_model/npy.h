#ifndef GOPT_TRAINING_COST_MODEL_NPY_H_
#define GOPT_TRAINING_COST_MODEL_NPY_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gopt::policy::cost_model {

// One array of a `.npy` file (NumPy format versions 1.0, 2.0 and 3.0),
// C order. Floating point arrays (f2 is not supported; f4, f8) land in
// `floats`, integer and bool arrays (i1/i2/i4/i8, u1/u2/u4/u8, b1) in `ints`;
// the other vector stays empty. A plain value.
struct NpyArray {
  std::string descr;           // as in the header, e.g. "<f4"
  std::vector<int64_t> shape;  // () for a scalar
  std::vector<float> floats;
  std::vector<int64_t> ints;

  bool is_float() const { return descr.size() >= 2 && descr[1] == 'f'; }
  int64_t num_elements() const;
};

// Parses the bytes of one `.npy` file. InvalidArgument saying what is wrong
// (bad magic, unsupported version, malformed header dict, unsupported dtype,
// Fortran order, data shorter or longer than the shape says, or more than
// 2^31 elements). Thread-safe.
absl::StatusOr<NpyArray> ParseNpy(absl::string_view bytes);

// Reads every `<name>.npy` member of a `.npz` archive (a zip, stored or
// deflated) held in `bytes`; keys are the names without ".npy". Errors are
// InvalidArgument naming the member ("member 'node_feat.npy': ...") or the
// archive problem. Thread-safe.
absl::StatusOr<std::map<std::string, NpyArray>> ParseNpz(
    absl::string_view bytes);

}  // namespace gopt::policy::cost_model

#endif  // GOPT_TRAINING_COST_MODEL_NPY_H_
