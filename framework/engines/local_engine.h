// LocalEngine: the GradientEngine (gradient_engine.h) of one model on one device; the data-parallel
// engine beside it (data_parallel.h) implements the same contract over replicas.
#pragma once
#include <functional>
#include <memory>

#include "framework/engines/gradient_cache.h"
#include "framework/engines/gradient_engine.h"
#include "framework/common/precision.h"
#include "framework/parallel/dropout_streams.h"
#include "models/task_model.h"

namespace unif::framework {

class LocalEngine final : public GradientEngine {
 public:
  /// `optimizer_step` clips, steps and zeroes the gradients (owned by the trainer). Forward passes
  /// run under autocast to `precision` on the model's device (framework/common/precision.h); batches
  /// on another device are copied to the model's first.
  LocalEngine(std::shared_ptr<models::TaskModel> model, std::function<void()> optimizer_step,
              Precision precision = Precision::FP32);
  PassResult run(const models::Batch& batch, const torch::Tensor& delta, double scale, bool want_delta_grad) override;
  PassResult run_custom(const models::Batch& batch, const PassRequest& request) override;
  int64_t embedding_dim() const override;
  void optimizer_step() override { optimizer_step_(); }
  std::vector<torch::Tensor> parameters() override { return model_->parameters(); }
  models::ModelOutput forward_with(const models::Batch& batch, const std::vector<torch::Tensor>& params) override;
  models::ModelOutput forward_kept(const models::Batch& batch, int64_t cache_rows) override;
  void backward_kept(const torch::Tensor& logits_grad) override;

 private:
  std::shared_ptr<models::TaskModel> model_;
  std::function<void()> optimizer_step_;
  Precision precision_;
  torch::Device device_ = torch::kCPU;  // the model's
  // A model on a GPU: its dropout generator, reseeded every pass from the global CPU generator, so
  // that masks are saved with it in checkpoints (exact resume). On the CPU dropout draws from the
  // global generator itself.
  DropoutStreams dropout_streams_;
  torch::Tensor kept_;   // forward_kept's logits, with their graph, until backward_kept
  GradientCache cache_;  // or its pieces, with cache_rows
  void reseed_dropout();

  models::ModelOutput forward(const models::Batch& batch, const torch::Tensor& delta);
};

}  // namespace unif::framework
