#include "framework/engines/coupled_pass.h"

#include <torch/autograd.h>

namespace unif::framework {

PassResult run_coupled(GradientEngine& engine, const models::TaskModel& model, const models::Batch& batch,
                       const PassRequest& request) {
  if (request.delta.defined() || request.want_delta_grad || request.loss_fn || request.pair_loss_fn ||
      !request.param_grads)
    throw StrategyError(
        "a loss over the whole batch (in-batch negatives) takes no adversarial method: it is not a sum of "
        "per-example losses to perturb (set adversarial.method: none)");
  const models::ModelOutput kept = engine.forward_kept(batch, model.gradient_cache_rows(batch));
  PassResult r;
  r.output.loss_count = kept.loss_count;
  if (!kept.logits.defined()) return r;  // an empty batch
  // The gathered rows as one leaf (float32 whatever the forward's precision): the loss's gradient
  // with respect to every row, cut into replicas' and ranks' pieces by backward_kept.
  torch::Tensor rows = kept.logits.detach().to(torch::kFloat32).requires_grad_(true);
  models::ModelOutput gathered;
  gathered.logits = rows;
  gathered.loss_count = kept.loss_count;
  models::Batch targets;
  if (batch.labels.defined()) targets.labels = batch.labels.to(rows.device());
  if (batch.sample_weights.defined()) targets.sample_weights = batch.sample_weights.to(rows.device());
  targets.input_ids = batch.input_ids;  // size() and shapes only
  torch::Tensor loss;
  torch::Tensor grad;
  {
    torch::AutoGradMode enable(true);
    loss = model.batch_loss(gathered, targets);
    grad = torch::autograd::grad({loss * request.scale}, {rows})[0];
  }
  engine.backward_kept(grad);
  r.loss_sum = loss.item<double>();
  r.output.logits = kept.logits;
  return r;
}

}  // namespace unif::framework
