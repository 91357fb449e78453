// run_coupled: one pass of a model whose loss couples the examples of a batch
// (TaskModel::couples_examples: in-batch negatives, where every anchor is scored against every
// other example's embeddings), on any engine.
//
// The engine's forward_kept returns the outputs of the WHOLE global batch: every replica's rows and
// every rank's, in batch order, each made by a graph the engine keeps. The model's batch_loss on
// them is the loss one device computes on the whole batch; its gradient with respect to each row
// goes back through backward_kept to the replica (and the rank) whose graph made that row. So the
// parameters' gradients are one device's up to float summation order (SPEC §5), for any number of
// replicas and ranks, uneven shards and shards padded to different lengths: no example is scored
// against a stale or detached copy of another, and no gradient is lost on the way back.
//
// Example (what an engine's run() does for such a model):
//   if (model.couples_examples()) return run_coupled(*this, model, batch, task_pass({}, scale, false));
#pragma once
#include "framework/engines/gradient_engine.h"
#include "models/task_model.h"

namespace unif::framework {

/// forward_kept, model.batch_loss on the gathered outputs, backward_kept of request.scale * loss.
/// loss_sum is that loss (counted once, not per rank); output.logits the gathered outputs. A request
/// with a perturbation, a custom or twin loss, or without parameter gradients (the adversarial
/// methods) is a StrategyError: such a loss is not one the methods can perturb example by example.
PassResult run_coupled(GradientEngine& engine, const models::TaskModel& model, const models::Batch& batch,
                       const PassRequest& request);

}  // namespace unif::framework
