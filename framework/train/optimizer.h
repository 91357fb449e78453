// Optimizers over named parameters: adamw (torch.optim.AdamW semantics), sgd (optional momentum),
// lamb (You et al. 2020). Own implementations so that the state is keyed by parameter name and saved
// in safetensors for an exact resume, and sparse gradients are densified first (SPEC §5: AdamW on a
// sparse embedding gradient then equals the dense case).
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include "framework/config/choices.h"

namespace unif::models {
struct Architecture;
}

namespace unif::framework {

/// One trainable tensor with its own learning-rate multiplier and weight decay.
struct OptimParam {
  std::string name;
  torch::Tensor tensor;
  double lr_scale = 1.0;      // layer-wise LR decay multiplier
  double weight_decay = 0.0;  // 0 for biases and LayerNorm weights (the BERT convention)
};

struct OptimizerOptions {
  OptimizerKind name = OptimizerKind::AdamW;
  double weight_decay = 0.01;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-6;
  double momentum = 0.0;  // sgd only
};

class Optimizer {
 public:
  explicit Optimizer(std::vector<OptimParam> params) : params_(std::move(params)) {}
  virtual ~Optimizer() = default;
  /// One update of every parameter that has a gradient, with base learning rate `lr`.
  virtual void step(double lr) = 0;
  void zero_grad();
  /// State tensors keyed "<param name>.<slot>" plus "__step__"; load_state restores them exactly.
  std::map<std::string, torch::Tensor> state() const;
  /// UserError naming `where` (the file) when `state` does not fit the parameters: an unknown
  /// parameter or slot name, a shape or dtype that differs, a parameter with only some of its
  /// slots, no "__step__". A parameter without any slot is taken as never updated.
  void load_state(const std::map<std::string, torch::Tensor>& state, const std::string& where);
  /// The names of the state tensors this optimizer keeps per parameter.
  virtual std::vector<std::string> slot_names() const = 0;
  const std::vector<OptimParam>& params() const { return params_; }
  int64_t steps() const { return steps_; }

 protected:
  torch::Tensor& slot(size_t i, const std::string& name);   // zero-initialized on first use
  static torch::Tensor dense_grad(const torch::Tensor& p);  // undefined when p has no gradient
  std::vector<OptimParam> params_;
  std::vector<std::map<std::string, torch::Tensor>> slots_;
  int64_t steps_ = 0;
};

/// Builds the named optimizer; throws std::invalid_argument on an unknown name.
std::unique_ptr<Optimizer> make_optimizer(std::vector<OptimParam> params, const OptimizerOptions& opt);

/// Parameter groups the BERT way: no weight decay on names containing "bias", "LayerNorm.weight" or
/// "layer_norm.weight"; layer-wise LR decay (UNIF/ELECTRA) by the depth in the encoder of `arch`'s
/// family (models::encoder_depth; nullptr, a model of no family: none has a depth): depth 0 =
/// embeddings (and their projection), i+1 = encoder layer i, num_layers+1 = everything else
/// (pooler, head); lr_scale = decay^(num_layers + 1 - depth). Frozen parameters (requires_grad
/// false) are left out.
std::vector<OptimParam> bert_param_groups(const std::vector<std::pair<std::string, torch::Tensor>>& named,
                                          double weight_decay, double layerwise_lr_decay, int64_t num_layers,
                                          const models::Architecture* arch);

/// Clips the global L2 norm of all gradients to max_norm (as torch.nn.utils.clip_grad_norm_, sparse
/// gradients included); returns the norm before clipping.
double clip_grad_norm(const std::vector<OptimParam>& params, double max_norm);

}  // namespace unif::framework
