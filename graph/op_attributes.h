#ifndef GOPT_GRAPH_OP_ATTRIBUTES_H_
#define GOPT_GRAPH_OP_ATTRIBUTES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gopt::graph {

// One spatial dimension of a convolution or reduce-window, XLA style.
struct WindowDimension {
  int64_t size = 1;
  int64_t stride = 1;
  int64_t padding_low = 0;
  int64_t padding_high = 0;
  int64_t window_dilation = 1;
  int64_t base_dilation = 1;  // > 1 for transposed convolution (lhs dilation)
  bool reversal = false;

  bool operator==(const WindowDimension& o) const {
    return size == o.size && stride == o.stride &&
           padding_low == o.padding_low && padding_high == o.padding_high &&
           window_dilation == o.window_dilation &&
           base_dilation == o.base_dilation && reversal == o.reversal;
  }
};

// Which dimension of each convolution operand plays which role, XLA style
// ("b01f_01io->b01f" is batch 0, feature 3, spatial {1,2} for the input).
struct ConvolutionDimensions {
  int64_t input_batch = 0;
  int64_t input_feature = 1;
  std::vector<int64_t> input_spatial;
  int64_t kernel_input_feature = 1;
  int64_t kernel_output_feature = 0;
  std::vector<int64_t> kernel_spatial;
  int64_t output_batch = 0;
  int64_t output_feature = 1;
  std::vector<int64_t> output_spatial;

  bool operator==(const ConvolutionDimensions& o) const {
    return input_batch == o.input_batch && input_feature == o.input_feature &&
           input_spatial == o.input_spatial &&
           kernel_input_feature == o.kernel_input_feature &&
           kernel_output_feature == o.kernel_output_feature &&
           kernel_spatial == o.kernel_spatial &&
           output_batch == o.output_batch &&
           output_feature == o.output_feature &&
           output_spatial == o.output_spatial;
  }
};

// Batch and contracting dimensions of a dot (matmul/gemm/einsum-like op).
struct DotDimensions {
  std::vector<int64_t> lhs_batch;
  std::vector<int64_t> rhs_batch;
  std::vector<int64_t> lhs_contracting;
  std::vector<int64_t> rhs_contracting;

  bool operator==(const DotDimensions& o) const {
    return lhs_batch == o.lhs_batch && rhs_batch == o.rhs_batch &&
           lhs_contracting == o.lhs_contracting &&
           rhs_contracting == o.rhs_contracting;
  }
};

// Per-dimension padding: low, high, interior (XLA pad).
struct PaddingDimension {
  int64_t low = 0;
  int64_t high = 0;
  int64_t interior = 0;

  bool operator==(const PaddingDimension& o) const {
    return low == o.low && high == o.high && interior == o.interior;
  }
};

// A T that lives on the heap once first written and costs one null pointer
// until then; reading an absent value yields a shared default-constructed T,
// so absent and default compare equal. Copies are deep. Reads are safe from
// many threads; writes need the same external synchronisation as any value.
//
//   OutOfLine<DotDimensions> dot;
//   dot.get().lhs_contracting.empty();          // true, nothing allocated
//   dot.mutable_get()->lhs_contracting = {1};   // allocates
template <typename T>
class OutOfLine {
 public:
  OutOfLine() = default;
  OutOfLine(const OutOfLine& other) : value_(Clone(other.value_)) {}
  OutOfLine& operator=(const OutOfLine& other) {
    if (this != &other) value_ = Clone(other.value_);
    return *this;
  }
  OutOfLine(OutOfLine&&) noexcept = default;
  OutOfLine& operator=(OutOfLine&&) noexcept = default;

  const T& get() const { return value_ != nullptr ? *value_ : Default(); }
  // The value, allocated (default-constructed) if absent.
  T* mutable_get() {
    if (value_ == nullptr) value_ = std::make_unique<T>();
    return value_.get();
  }

  bool operator==(const OutOfLine& other) const { return get() == other.get(); }

 private:
  static std::unique_ptr<T> Clone(const std::unique_ptr<T>& value) {
    return value != nullptr ? std::make_unique<T>(*value) : nullptr;
  }
  static const T& Default() {
    static const T* const kDefault = new T();
    return *kDefault;
  }

  std::unique_ptr<T> value_;
};

// The structural attributes of an op that its cost and the learned models'
// features depend on. Importers fill what their format has; everything else
// stays at its default ("absent"). Values are XLA's conventions, whatever
// the source format (importers translate, e.g. ONNX NCHW Conv to
// ConvolutionDimensions).
//
// Attributes most ops have are public fields. Those of few ops (window,
// convolution and dot dimension numbers, slices, padding, custom-call
// target, comparison direction) are kept out of
// line, because a graph holds one OpAttributes per node: read them with
// window(), dot(), ... (an empty or default value when absent) and write
// them with mutable_window(), mutable_dot(), ... (which allocate on first
// use). A value type: copyable, movable, safe to read from many threads.
//
//   OpAttributes attrs;
//   attrs.has_dot_dimensions = true;
//   attrs.mutable_dot()->lhs_contracting = {1};
//   attrs.dot().rhs_contracting.empty();  // true
class OpAttributes {
 public:
  // XLA `dimensions=`: reduce/broadcast/transpose/concatenate/reverse/sort
  // axes; for importers from other formats the same role (e.g. ONNX axes).
  std::vector<int64_t> dimensions;
  bool has_convolution_dimensions = false;  // convolution() is meaningful
  bool has_dot_dimensions = false;          // dot() is meaningful
  bool is_stable = false;                   // sort
  bool is_root = false;                     // the graph's output (HLO ROOT)
  int64_t feature_group_count = 1;
  int64_t batch_group_count = 1;
  int64_t parameter_number = -1;  // parameter nodes
  int64_t tuple_index = -1;       // get-tuple-element
  // Iterations of a loop (while / Loop / TF1 frame); -1 = unknown (costed
  // as one iteration, with a warning on the graph).
  int64_t trip_count = -1;
  // Collectives: devices in each group that exchanges data (the ring the
  // catalog and the simulator price); 0 = not given (all devices of the
  // program).
  int64_t collective_group_size = 0;

  // Convolution, reduce-window: one entry per spatial dimension.
  const std::vector<WindowDimension>& window() const { return rare().window; }
  std::vector<WindowDimension>* mutable_window() {
    return &mutable_rare()->window;
  }

  const ConvolutionDimensions& convolution() const {
    return rare().convolution;
  }
  ConvolutionDimensions* mutable_convolution() {
    return &mutable_rare()->convolution;
  }

  const DotDimensions& dot() const { return dot_.get(); }
  DotDimensions* mutable_dot() { return dot_.mutable_get(); }

  // Slice: start, limit (exclusive) and stride of each dimension.
  const std::vector<int64_t>& slice_starts() const {
    return rare().slice_starts;
  }
  std::vector<int64_t>* mutable_slice_starts() {
    return &mutable_rare()->slice_starts;
  }
  const std::vector<int64_t>& slice_limits() const {
    return rare().slice_limits;
  }
  std::vector<int64_t>* mutable_slice_limits() {
    return &mutable_rare()->slice_limits;
  }
  const std::vector<int64_t>& slice_strides() const {
    return rare().slice_strides;
  }
  std::vector<int64_t>* mutable_slice_strides() {
    return &mutable_rare()->slice_strides;
  }

  // Dynamic-slice: the size of each dimension of the result.
  const std::vector<int64_t>& dynamic_slice_sizes() const {
    return rare().dynamic_slice_sizes;
  }
  std::vector<int64_t>* mutable_dynamic_slice_sizes() {
    return &mutable_rare()->dynamic_slice_sizes;
  }

  // Pad: one entry per dimension.
  const std::vector<PaddingDimension>& padding() const {
    return rare().padding;
  }
  std::vector<PaddingDimension>* mutable_padding() {
    return &mutable_rare()->padding;
  }

  // Custom-call: the target's name.
  const std::string& custom_call_target() const {
    return rare().custom_call_target;
  }
  std::string* mutable_custom_call_target() {
    return &mutable_rare()->custom_call_target;
  }

  // Compare: the direction ("LT", "EQ", ...).
  const std::string& comparison() const { return rare().comparison; }
  std::string* mutable_comparison() { return &mutable_rare()->comparison; }

  bool operator==(const OpAttributes& o) const {
    return dimensions == o.dimensions &&
           has_convolution_dimensions == o.has_convolution_dimensions &&
           has_dot_dimensions == o.has_dot_dimensions &&
           is_stable == o.is_stable && is_root == o.is_root &&
           feature_group_count == o.feature_group_count &&
           batch_group_count == o.batch_group_count &&
           parameter_number == o.parameter_number &&
           tuple_index == o.tuple_index && trip_count == o.trip_count &&
           collective_group_size == o.collective_group_size && dot_ == o.dot_ &&
           rare_ == o.rare_;
  }

 private:
  // The attributes of the less common ops, allocated together on first
  // write. Dot dimensions are apart: dots are common in ML graphs and need
  // none of these.
  struct Rare {
    std::vector<WindowDimension> window;
    ConvolutionDimensions convolution;
    std::vector<int64_t> slice_starts;
    std::vector<int64_t> slice_limits;
    std::vector<int64_t> slice_strides;
    std::vector<int64_t> dynamic_slice_sizes;
    std::vector<PaddingDimension> padding;
    std::string custom_call_target;
    std::string comparison;

    bool operator==(const Rare& o) const {
      return window == o.window && convolution == o.convolution &&
             slice_starts == o.slice_starts && slice_limits == o.slice_limits &&
             slice_strides == o.slice_strides &&
             dynamic_slice_sizes == o.dynamic_slice_sizes &&
             padding == o.padding &&
             custom_call_target == o.custom_call_target &&
             comparison == o.comparison;
    }
  };

  const Rare& rare() const { return rare_.get(); }
  Rare* mutable_rare() { return rare_.mutable_get(); }

  OutOfLine<DotDimensions> dot_;
  OutOfLine<Rare> rare_;
};

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_OP_ATTRIBUTES_H_
