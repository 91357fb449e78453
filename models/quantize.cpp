// Dynamic int8 Linear layers: see quantize.h.
#include "models/quantize.h"

#include <cctype>
#include <cstdio>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <unordered_map>

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/quantized/PackedParams.h>
#include <c10/core/QEngine.h>

namespace unif::models {

namespace detail {
std::atomic<int64_t> g_int8_layers{0};
}  // namespace detail

namespace {

struct Packed {
  std::weak_ptr<torch::nn::Module> owner;  // expired: the Linear is gone (its address may be reused)
  c10::intrusive_ptr<LinearPackedParamsBase> params;
  int64_t out_features = 0;
  bool reduce_range = false;
};

std::shared_mutex& table_mutex() {
  static std::shared_mutex m;
  return m;
}
std::unordered_map<const torch::nn::LinearImpl*, Packed>& table() {
  static std::unordered_map<const torch::nn::LinearImpl*, Packed> t;
  return t;
}

std::string engine_name(at::QEngine e) { return c10::toString(e); }

// The engines this LibTorch has, in the order int8 prefers them.
std::vector<at::QEngine> preferred_engines() {
  std::vector<at::QEngine> out;
  const auto supported = at::globalContext().supportedQEngines();
  for (const char* want : {"X86", "FBGEMM", "ONEDNN", "QNNPACK"})
    for (const auto e : supported)
      if (engine_name(e) == want) out.push_back(e);
  return out;
}

// fbgemm's (and x86's) int8 kernels multiply-add pairs of u8 x s8 into saturating 16-bit sums on
// CPUs without VNNI, so PyTorch's dynamic Linear quantizes activations to 7 bits there
// (reduce_range). With AVX512-VNNI (32-bit accumulation) the full 8 bits are safe, and they matter: on
// MiniLM 7-bit activations cost 5 points of F1 / Pearson where 8-bit ones cost 1-2.
bool cpu_has_vnni() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vnni");  // fbgemm's VNNI kernels are AVX-512 ones
#else
  return false;
#endif
}
bool wants_reduce_range(const std::string& engine) {
  return (engine == "FBGEMM" || engine == "X86") && !cpu_has_vnni();
}

c10::intrusive_ptr<LinearPackedParamsBase> prepack(const at::Tensor& qweight, const c10::optional<at::Tensor>& bias) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("quantized::linear_prepack", "")
          .typed<c10::intrusive_ptr<LinearPackedParamsBase>(at::Tensor, c10::optional<at::Tensor>)>();
  return op.call(qweight, bias);
}

// Symmetric int8 per output channel (PyTorch's per_channel_symmetric MinMax observer: scale =
// max|w| / 127.5, zero point 0), or per tensor where the engine packs no per-channel weights.
c10::intrusive_ptr<LinearPackedParamsBase> pack(const at::Tensor& w, const c10::optional<at::Tensor>& bias) {
  const at::Tensor wf = w.detach().to(at::kFloat).contiguous();
  const double eps = 1.1920928955078125e-07;  // float32 epsilon, the observers' lower bound
  try {
    const at::Tensor scales = (wf.abs().amax({1}) / 127.5).clamp_min(eps).to(at::kDouble);
    const at::Tensor zeros = at::zeros({wf.size(0)}, at::kLong);
    return prepack(at::quantize_per_channel(wf, scales, zeros, 0, at::kQInt8), bias);
  } catch (const c10::Error&) {
    const double scale = std::max(wf.abs().max().item<double>() / 127.5, eps);
    return prepack(at::quantize_per_tensor(wf, scale, 0, at::kQInt8), bias);
  }
}

}  // namespace

std::vector<std::string> int8_engines() {
  std::vector<std::string> out;
  for (const auto e : preferred_engines()) out.push_back(engine_name(e));
  return out;
}

std::string QuantizeReport::summary() const {
  char line[160];
  std::snprintf(line, sizeof line, "int8: %lld Linear layers on %s, weights %.1f MB -> %.1f MB",
                static_cast<long long>(layers), engine.c_str(), static_cast<double>(float_bytes) / 1e6,
                static_cast<double>(int8_bytes) / 1e6);
  return line;
}

QuantizeReport quantize_dynamic_int8(torch::nn::Module& model) {
  const auto engines = preferred_engines();
  if (engines.empty())
    throw std::runtime_error("int8: this LibTorch has no quantized engine (fbgemm, x86, onednn or qnnpack)");
  at::globalContext().setQEngine(engines.front());
  const std::string name = engine_name(engines.front());
  const bool reduce_range = wants_reduce_range(name);  // one CPU check for every layer

  QuantizeReport report;
  for (const char c : name) report.engine += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::vector<std::pair<const torch::nn::LinearImpl*, Packed>> packed;
  for (const auto& m : model.modules(/*include_self=*/true)) {
    const auto* linear = dynamic_cast<const torch::nn::LinearImpl*>(m.get());
    if (linear == nullptr) continue;
    if (!linear->weight.device().is_cpu())
      throw std::runtime_error("int8: the model must be on the CPU (a Linear is on " + linear->weight.device().str() +
                               ")");
    c10::optional<at::Tensor> bias;
    if (linear->bias.defined()) bias = linear->bias.detach().to(at::kFloat).contiguous();
    Packed p{m, pack(linear->weight, bias), linear->weight.size(0), reduce_range};
    report.layers += 1;
    report.float_bytes += linear->weight.numel() * 4;
    report.int8_bytes += linear->weight.numel() + linear->weight.size(0) * 4;
    packed.emplace_back(linear, std::move(p));
  }
  std::unique_lock<std::shared_mutex> lock(table_mutex());
  auto& t = table();
  for (auto it = t.begin(); it != t.end();) it = it->second.owner.expired() ? t.erase(it) : std::next(it);
  for (auto& [layer, p] : packed) t[layer] = std::move(p);
  detail::g_int8_layers.store(static_cast<int64_t>(t.size()), std::memory_order_release);
  return report;
}

namespace detail {

std::optional<torch::Tensor> int8_linear(const torch::nn::LinearImpl* layer, const torch::Tensor& x) {
  c10::intrusive_ptr<LinearPackedParamsBase> params;
  int64_t out_features = 0;
  bool reduce_range = false;
  {
    std::shared_lock<std::shared_mutex> lock(table_mutex());
    const auto& t = table();
    const auto it = t.find(layer);
    if (it == t.end() || it->second.owner.expired()) return std::nullopt;
    params = it->second.params;
    out_features = it->second.out_features;
    reduce_range = it->second.reduce_range;
  }
  // The packed kernels take a 2-D float input: (rows, in_features) -> (rows, out_features).
  auto sizes = x.sizes().vec();
  const at::Tensor rows = x.to(at::kFloat).reshape({-1, x.size(-1)}).contiguous();
  at::Tensor y = params->apply_dynamic(rows, reduce_range);
  sizes.back() = out_features;
  return y.view(sizes).to(x.scalar_type());
}

}  // namespace detail

}  // namespace unif::models
