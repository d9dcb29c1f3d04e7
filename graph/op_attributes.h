#ifndef GOPT_GRAPH_OP_ATTRIBUTES_H_
#define GOPT_GRAPH_OP_ATTRIBUTES_H_

#include <cstdint>
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

// The structural attributes of an op that its cost and the learned models'
// features depend on. Importers fill what their format has; everything else
// stays at its default ("absent"). Values are XLA's conventions, whatever
// the source format (importers translate, e.g. ONNX NCHW Conv to
// ConvolutionDimensions).
struct OpAttributes {
  // XLA `dimensions=`: reduce/broadcast/transpose/concatenate/reverse/sort
  // axes; for importers from other formats the same role (e.g. ONNX axes).
  std::vector<int64_t> dimensions;
  std::vector<WindowDimension> window;  // convolution, reduce-window
  bool has_convolution_dimensions = false;
  ConvolutionDimensions convolution;
  int64_t feature_group_count = 1;
  int64_t batch_group_count = 1;
  bool has_dot_dimensions = false;
  DotDimensions dot;
  std::vector<int64_t> slice_starts;
  std::vector<int64_t> slice_limits;
  std::vector<int64_t> slice_strides;
  std::vector<int64_t> dynamic_slice_sizes;
  std::vector<PaddingDimension> padding;
  int64_t parameter_number = -1;  // parameter nodes
  int64_t tuple_index = -1;       // get-tuple-element
  bool is_stable = false;         // sort
  bool is_root = false;           // the graph's output (HLO ROOT)
  // Iterations of a loop (while / Loop / TF1 frame); -1 = unknown (costed
  // as one iteration, with a warning on the graph).
  int64_t trip_count = -1;
  std::string custom_call_target;  // custom-call
  std::string comparison;          // compare direction ("LT", ...)

  bool operator==(const OpAttributes& o) const {
    return dimensions == o.dimensions && window == o.window &&
           has_convolution_dimensions == o.has_convolution_dimensions &&
           convolution == o.convolution &&
           feature_group_count == o.feature_group_count &&
           batch_group_count == o.batch_group_count &&
           has_dot_dimensions == o.has_dot_dimensions && dot == o.dot &&
           slice_starts == o.slice_starts && slice_limits == o.slice_limits &&
           slice_strides == o.slice_strides &&
           dynamic_slice_sizes == o.dynamic_slice_sizes &&
           padding == o.padding && parameter_number == o.parameter_number &&
           tuple_index == o.tuple_index && is_stable == o.is_stable &&
           is_root == o.is_root && trip_count == o.trip_count &&
           custom_call_target == o.custom_call_target &&
           comparison == o.comparison;
  }
};

}  // namespace gopt::graph

#endif  // GOPT_GRAPH_OP_ATTRIBUTES_H_
