// gopt_fusion_benchmark: can this LibTorch run a chain of elementwise ops
// faster than op by op on one CPU thread (as an executor runs it)? Prints,
// per chain length and tensor size, the median seconds of:
//   op_by_op   at::add / at::mul / at::relu / at::sub, one new tensor each
//              (what the executor does for a fusion group today);
//   out_reuse  the same ops writing into two ping-pong buffers (out=);
//   in_place   the first op out of place, the rest in place;
//   chunked    in_place over slices of 8192 elements (32 KiB, L1-sized), so
//              intermediates stay in cache;
//   script     TorchScript's profiling graph executor, fusers off;
//   script_te  the same with the TensorExpr fuser on CPU; without LLVM
//              codegen (Debian's LibTorch) its kernels run in the TE
//              interpreter (up to --te_max_elements; -1 beyond).
// The ratio op_by_op / best says what fusing a group could save here.
//
//   build/bin/gopt_fusion_benchmark [--sizes=1024,65536,...] [--lengths=2,4,8]

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/jit/passes/tensorexpr_fuser.h>
#include <torch/csrc/jit/tensorexpr/kernel.h>
#include <torch/jit.h>
#include <torch/script.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"

// Exported by libtorch_cpu but declared only in a header Debian does not
// ship (torch/csrc/jit/codegen/fuser/interface.h).
namespace torch::jit {
TORCH_API void overrideCanFuseOnCPU(bool value);
}  // namespace torch::jit

ABSL_FLAG(std::vector<std::string>, sizes,
          std::vector<std::string>({"1024", "16384", "262144", "1048576",
                                    "4194304"}),
          "elements per tensor (f32)");
ABSL_FLAG(std::vector<std::string>, lengths,
          std::vector<std::string>({"2", "4", "8"}), "ops per chain");
ABSL_FLAG(double, min_seconds, 0.05, "measured time per variant and batch");
ABSL_FLAG(int64_t, te_max_elements, 16384,
          "script_te only up to this many elements (the TE interpreter takes "
          "seconds per call beyond); larger sizes print -1");

namespace {

constexpr int64_t kChunkElements = 8192;

// Op i of a chain: add b, mul c, relu, sub b, repeating.
at::Tensor Step(int i, const at::Tensor& y, const at::Tensor& b,
                const at::Tensor& c) {
  switch (i % 4) {
    case 0:
      return at::add(y, b);
    case 1:
      return at::mul(y, c);
    case 2:
      return at::relu(y);
    default:
      return at::sub(y, b);
  }
}

void StepOut(int i, at::Tensor& out, const at::Tensor& y, const at::Tensor& b,
             const at::Tensor& c) {
  switch (i % 4) {
    case 0:
      at::add_out(out, y, b);
      break;
    case 1:
      at::mul_out(out, y, c);
      break;
    case 2:
      at::clamp_min_out(out, y, 0);
      break;
    default:
      at::sub_out(out, y, b);
  }
}

void StepInPlace(int i, at::Tensor& y, const at::Tensor& b,
                 const at::Tensor& c) {
  switch (i % 4) {
    case 0:
      y.add_(b);
      break;
    case 1:
      y.mul_(c);
      break;
    case 2:
      y.relu_();
      break;
    default:
      y.sub_(b);
  }
}

std::string ScriptSource(int length) {
  std::string body = "def chain(x, b, c):\n  y = x\n";
  const char* ops[] = {"y = y + b", "y = y * c", "y = torch.relu(y)",
                       "y = y - b"};
  for (int i = 0; i < length; ++i)
    absl::StrAppend(&body, "  ", ops[i % 4], "\n");
  return body + "  return y\n";
}

// Median seconds per call of `fn` over 5 batches of at least min_seconds.
double Time(const std::function<void()>& fn, double min_seconds) {
  for (int i = 0; i < 3; ++i) fn();
  std::vector<double> batches;
  for (int batch = 0; batch < 5; ++batch) {
    int calls = 0;
    const auto start = std::chrono::steady_clock::now();
    double elapsed = 0;
    while (elapsed < min_seconds / 5 || calls < 3) {
      fn();
      ++calls;
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                              start)
                    .count();
    }
    batches.push_back(elapsed / calls);
  }
  std::sort(batches.begin(), batches.end());
  return batches[batches.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  at::set_num_threads(1);
  const double min_seconds = absl::GetFlag(FLAGS_min_seconds);
  std::printf(
      "elements\tops\top_by_op_s\tout_reuse_s\tin_place_s\tchunked_s\t"
      "script_s\tscript_te_s\tbest\top_by_op/best\n");
  for (const std::string& size_text : absl::GetFlag(FLAGS_sizes)) {
    const int64_t n = std::stoll(size_text);
    const at::Tensor x = at::randn({n});
    const at::Tensor b = at::randn({n});
    const at::Tensor c = at::randn({n});
    for (const std::string& length_text : absl::GetFlag(FLAGS_lengths)) {
      const int length = std::stoi(length_text);
      std::vector<std::pair<std::string, double>> times;
      times.emplace_back("op_by_op", Time(
                                         [&] {
                                           at::Tensor y = x;
                                           for (int i = 0; i < length; ++i) {
                                             y = Step(i, y, b, c);
                                           }
                                         },
                                         min_seconds));
      times.emplace_back("out_reuse", Time(
                                          [&] {
                                            at::Tensor p = at::empty_like(x);
                                            at::Tensor q = at::empty_like(x);
                                            StepOut(0, p, x, b, c);
                                            for (int i = 1; i < length; ++i) {
                                              StepOut(i, q, p, b, c);
                                              std::swap(p, q);
                                            }
                                          },
                                          min_seconds));
      times.emplace_back("in_place", Time(
                                         [&] {
                                           at::Tensor y = Step(0, x, b, c);
                                           for (int i = 1; i < length; ++i) {
                                             StepInPlace(i, y, b, c);
                                           }
                                         },
                                         min_seconds));
      times.emplace_back("chunked",
                         Time(
                             [&] {
                               at::Tensor out = at::empty_like(x);
                               for (int64_t s = 0; s < n; s += kChunkElements) {
                                 const int64_t len =
                                     std::min(kChunkElements, n - s);
                                 at::Tensor y = out.narrow(0, s, len);
                                 const at::Tensor bs = b.narrow(0, s, len);
                                 const at::Tensor cs = c.narrow(0, s, len);
                                 at::add_out(y, x.narrow(0, s, len), bs);
                                 for (int i = 1; i < length; ++i) {
                                   StepInPlace(i, y, bs, cs);
                                 }
                               }
                             },
                             min_seconds));
      for (bool te : {false, true}) {
        if (te && n > absl::GetFlag(FLAGS_te_max_elements)) {
          times.emplace_back("script_te", -1);
          continue;
        }
        torch::jit::overrideCanFuseOnCPU(te);
        torch::jit::setTensorExprFuserEnabled(te);
        torch::jit::tensorexpr::getTEMustUseLLVMOnCPU() = false;
        auto unit = torch::jit::compile(ScriptSource(length));
        torch::jit::Function& fn = unit->get_function("chain");
        std::vector<c10::IValue> inputs = {x, b, c};
        times.emplace_back(te ? "script_te" : "script",
                           Time([&] { fn(inputs); }, min_seconds));
      }
      auto best = std::min_element(
          times.begin(), times.end(), [](const auto& l, const auto& r) {
            return r.second < 0 || (l.second >= 0 && l.second < r.second);
          });
      std::printf("%lld\t%d", static_cast<long long>(n), length);
      for (const auto& [name, s] : times) std::printf("\t%.3g", s);
      std::printf("\t%s\t%.2f\n", best->first.c_str(),
                  times[0].second / best->second);
      std::fflush(stdout);
    }
  }
  return 0;
}
