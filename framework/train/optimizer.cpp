#include "framework/train/optimizer.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <torch/nn/utils/clip_grad.h>
#include <ATen/Parallel.h>

#include "framework/common/error.h"
#include "framework/train/adamw_kernel.h"
#include "models/architectures.h"

namespace unif::framework {

void Optimizer::zero_grad() {
  for (auto& p : params_) {
    auto& g = p.tensor.mutable_grad();
    if (g.defined()) g = torch::Tensor();  // set_to_none: a sparse grad must not be zeroed in place
  }
}

torch::Tensor Optimizer::dense_grad(const torch::Tensor& p) {
  const auto& g = p.grad();
  if (!g.defined()) return g;
  return g.is_sparse() ? g.coalesce().to_dense() : g;
}

torch::Tensor& Optimizer::slot(size_t i, const std::string& name) {
  if (slots_.size() < params_.size()) slots_.resize(params_.size());
  auto& s = slots_[i][name];
  if (!s.defined()) s = torch::zeros_like(params_[i].tensor, torch::MemoryFormat::Contiguous);
  return s;
}

std::map<std::string, torch::Tensor> Optimizer::state() const {
  std::map<std::string, torch::Tensor> out;
  for (size_t i = 0; i < slots_.size(); ++i)
    for (const auto& [k, v] : slots_[i]) out[params_[i].name + "." + k] = v.detach().clone();
  out["__step__"] = torch::tensor({steps_}, torch::kInt64);
  return out;
}

void Optimizer::load_state(const std::map<std::string, torch::Tensor>& state, const std::string& where) {
  const auto fail = [&](const std::string& what) {
    return UserError(where + ": the optimizer state does not fit the model's parameters: " + what +
                     " (a checkpoint of another model or optimizer, or an edited file)");
  };
  const auto step = state.find("__step__");
  if (step == state.end() || step->second.numel() != 1 || step->second.is_floating_point())
    throw fail("__step__ missing or not one integer");
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < params_.size(); ++i) index[params_[i].name] = i;
  const auto names = slot_names();
  std::vector<std::map<std::string, torch::Tensor>> slots(params_.size());
  for (const auto& [key, value] : state) {
    if (key == "__step__") continue;
    const auto dot = key.rfind('.');
    const auto it = dot == std::string::npos ? index.end() : index.find(key.substr(0, dot));
    if (it == index.end()) throw fail(key + " names no parameter of the model");
    if (std::find(names.begin(), names.end(), key.substr(dot + 1)) == names.end())
      throw fail(key + ": '" + key.substr(dot + 1) + "' is not a state of this optimizer");
    const auto& p = params_[it->second].tensor;
    if (!value.sizes().equals(p.sizes()) || value.scalar_type() != p.scalar_type())
      throw fail(key + " is " + std::string(c10::toString(value.scalar_type())) + " " + c10::str(value.sizes()) +
                 ", the parameter " + std::string(c10::toString(p.scalar_type())) + " " + c10::str(p.sizes()));
    slots[it->second][key.substr(dot + 1)] = value.clone().to(p.device());
  }
  // A parameter has all of the optimizer's state tensors or none (never updated: no gradient yet).
  for (size_t i = 0; i < params_.size(); ++i)
    if (!slots[i].empty() && slots[i].size() != names.size())
      for (const auto& n : names)
        if (!slots[i].count(n)) throw fail(params_[i].name + "." + n + " is missing");
  slots_ = std::move(slots);
  steps_ = step->second.item<int64_t>();
}

namespace {

// torch.optim.AdamW (PyTorch 1.13, amsgrad off, maximize off).
class AdamW final : public Optimizer {
 public:
  AdamW(std::vector<OptimParam> params, const OptimizerOptions& o) : Optimizer(std::move(params)), o_(o) {}
  std::vector<std::string> slot_names() const override { return {"exp_avg", "exp_avg_sq"}; }
  void step(double lr) override {
    torch::NoGradGuard no_grad;
    ++steps_;
    const double bc1 = 1.0 - std::pow(o_.beta1, steps_);
    const double bc2_sqrt = std::sqrt(1.0 - std::pow(o_.beta2, steps_));
    for (size_t i = 0; i < params_.size(); ++i) {
      auto& p = params_[i];
      const auto& raw = p.tensor.grad();
      if (!raw.defined()) continue;
      const double plr = lr * p.lr_scale;
      auto& m = slot(i, "exp_avg");
      auto& v = slot(i, "exp_avg_sq");
      if (adamw_fused_supported(p.tensor, raw, m, v)) {  // one pass, sparse rows read in place
        AdamWScalars s;
        s.decay = static_cast<float>(1.0 - plr * p.weight_decay);
        s.beta1 = static_cast<float>(o_.beta1), s.one_minus_beta1 = static_cast<float>(1.0 - o_.beta1);
        s.beta2 = static_cast<float>(o_.beta2), s.one_minus_beta2 = static_cast<float>(1.0 - o_.beta2);
        s.bc2_sqrt = static_cast<float>(bc2_sqrt), s.eps = static_cast<float>(o_.eps);
        s.step = static_cast<float>(-plr / bc1);
        auto data = p.tensor.detach();
        adamw_fused(data, raw, m, v, s);
        continue;
      }
      auto g = dense_grad(p.tensor);
      p.tensor.mul_(1.0 - plr * p.weight_decay);
      m.mul_(o_.beta1).add_(g, 1.0 - o_.beta1);
      v.mul_(o_.beta2).addcmul_(g, g, 1.0 - o_.beta2);
      auto denom = (v.sqrt() / bc2_sqrt).add_(o_.eps);
      p.tensor.addcdiv_(m, denom, -plr / bc1);
    }
  }

 private:
  OptimizerOptions o_;
};

// torch.optim.SGD (dampening 0, nesterov off); weight decay added to the gradient.
class Sgd final : public Optimizer {
 public:
  Sgd(std::vector<OptimParam> params, const OptimizerOptions& o) : Optimizer(std::move(params)), o_(o) {}
  std::vector<std::string> slot_names() const override {
    return o_.momentum != 0.0 ? std::vector<std::string>{"momentum_buffer"} : std::vector<std::string>{};
  }
  void step(double lr) override {
    torch::NoGradGuard no_grad;
    ++steps_;
    for (size_t i = 0; i < params_.size(); ++i) {
      auto& p = params_[i];
      auto g = dense_grad(p.tensor);
      if (!g.defined()) continue;
      if (p.weight_decay != 0.0) g = g.add(p.tensor, p.weight_decay);
      if (o_.momentum != 0.0) {
        bool fresh = slots_.size() <= i || !slots_[i].count("momentum_buffer");
        auto& buf = slot(i, "momentum_buffer");
        if (fresh)
          buf.copy_(g);
        else
          buf.mul_(o_.momentum).add_(g);
        g = buf;
      }
      p.tensor.add_(g, -lr * p.lr_scale);
    }
  }

 private:
  OptimizerOptions o_;
};

// LAMB (You et al. 2020, with Adam bias correction): r = m̂/(sqrt(v̂)+eps) + wd·p;
// p -= lr · (‖p‖/‖r‖) · r, the trust ratio being 1 when either norm is 0.
class Lamb final : public Optimizer {
 public:
  Lamb(std::vector<OptimParam> params, const OptimizerOptions& o) : Optimizer(std::move(params)), o_(o) {}
  std::vector<std::string> slot_names() const override { return {"exp_avg", "exp_avg_sq"}; }
  void step(double lr) override {
    torch::NoGradGuard no_grad;
    ++steps_;
    const double bc1 = 1.0 - std::pow(o_.beta1, steps_);
    const double bc2 = 1.0 - std::pow(o_.beta2, steps_);
    for (size_t i = 0; i < params_.size(); ++i) {
      auto& p = params_[i];
      auto g = dense_grad(p.tensor);
      if (!g.defined()) continue;
      auto& m = slot(i, "exp_avg");
      auto& v = slot(i, "exp_avg_sq");
      m.mul_(o_.beta1).add_(g, 1.0 - o_.beta1);
      v.mul_(o_.beta2).addcmul_(g, g, 1.0 - o_.beta2);
      auto r = (m / bc1) / ((v / bc2).sqrt() + o_.eps);
      if (p.weight_decay != 0.0) r.add_(p.tensor, p.weight_decay);
      const double wn = p.tensor.norm().item<double>();
      const double rn = r.norm().item<double>();
      const double trust = (wn > 0.0 && rn > 0.0) ? wn / rn : 1.0;
      p.tensor.add_(r, -lr * p.lr_scale * trust);
    }
  }

 private:
  OptimizerOptions o_;
};

}  // namespace

std::unique_ptr<Optimizer> make_optimizer(std::vector<OptimParam> params, const OptimizerOptions& opt) {
  switch (opt.name) {
    case OptimizerKind::AdamW: return std::make_unique<AdamW>(std::move(params), opt);
    case OptimizerKind::Sgd: return std::make_unique<Sgd>(std::move(params), opt);
    case OptimizerKind::Lamb: return std::make_unique<Lamb>(std::move(params), opt);
  }
  throw std::invalid_argument("unknown optimizer " + std::to_string(static_cast<int>(opt.name)) + " (expected " +
                              join_names<OptimizerKind>(", ", " or ") + ")");
}

std::vector<OptimParam> bert_param_groups(const std::vector<std::pair<std::string, torch::Tensor>>& named,
                                          double weight_decay, double layerwise_lr_decay, int64_t num_layers,
                                          const models::Architecture* arch) {
  std::vector<OptimParam> out;
  for (const auto& [name, t] : named) {
    if (!t.requires_grad()) continue;
    OptimParam p{name, t, 1.0, weight_decay};
    // No decay on biases and LayerNorm weights (HF Trainer's rule, by every family's LayerNorm names).
    if (name.find("bias") != std::string::npos || name.find("LayerNorm.weight") != std::string::npos ||
        name.find("norm.weight") != std::string::npos)  // layer_norm, ModernBERT's norm, attn_norm, final_norm
      p.weight_decay = 0.0;
    if (layerwise_lr_decay != 1.0) {
      const int64_t depth = (arch ? models::encoder_depth(*arch, name) : std::nullopt).value_or(num_layers + 1);
      p.lr_scale = std::pow(layerwise_lr_decay, static_cast<double>(num_layers + 1 - depth));
    }
    out.push_back(std::move(p));
  }
  return out;
}

namespace {

// Sum of the squares of a gradient, accumulated in double. For a contiguous float32 CPU tensor one
// read of the data: fixed blocks of 2^16 elements summed in parallel, then the block sums in order,
// so the result does not depend on the thread count (exact resume and replica invariance need
// that). `to(kDouble).pow(2).sum()` wrote two double copies of every gradient: 148 ms of a 8.9 s
// BERT-base step against HF's 48 ms (docs/performance.md). Other tensors (CUDA, half) keep it.
double sum_of_squares(const torch::Tensor& v) {
  if (!(v.device().is_cpu() && v.scalar_type() == torch::kFloat && v.is_contiguous()))
    return v.to(torch::kDouble).pow(2).sum().item<double>();
  const float* x = v.data_ptr<float>();
  const int64_t n = v.numel();
  constexpr int64_t kBlock = int64_t{1} << 16;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> partial(static_cast<size_t>(blocks), 0.0);
  at::parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t begin = b * kBlock, end = std::min(n, begin + kBlock);
      double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // independent lanes: the adds need not wait on each other
      int64_t i = begin;
      for (; i + 8 <= end; i += 8)
        for (int j = 0; j < 8; ++j) acc[j] += static_cast<double>(x[i + j]) * static_cast<double>(x[i + j]);
      for (; i < end; ++i) acc[0] += static_cast<double>(x[i]) * static_cast<double>(x[i]);
      partial[static_cast<size_t>(b)] =
          ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    }
  });
  double sum = 0.0;
  for (double s : partial) sum += s;
  return sum;
}

}  // namespace

double clip_grad_norm(const std::vector<OptimParam>& params, double max_norm) {
  torch::NoGradGuard no_grad;
  double sq = 0.0;
  for (const auto& p : params) {
    const auto& g = p.tensor.grad();
    if (!g.defined()) continue;
    sq += sum_of_squares(g.is_sparse() ? g.coalesce().values() : g);
  }
  const double total = std::sqrt(sq);
  if (max_norm <= 0.0) return total;
  const double coef = max_norm / (total + 1e-6);
  if (coef < 1.0) {
    for (const auto& p : params) {
      auto& g = p.tensor.mutable_grad();
      if (!g.defined()) continue;
      if (g.is_sparse())
        g = g.coalesce() * coef;
      else
        g.mul_(coef);
    }
  }
  return total;
}

}  // namespace unif::framework
