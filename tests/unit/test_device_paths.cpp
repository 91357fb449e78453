// Device and precision paths of the engines that a CPU can check: R-Drop's twin forward runs under
// the same autocast as the first (it ran in float32 under bf16 before), on one device and on
// replicas. The GPU-only halves (cross-device targets, GPU dropout streams, masked_lm evaluation on a
// GPU) are in tests/parallel/test_cuda_engine.cpp.
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include "adversarial/strategy.h"
#include "framework/common/precision.h"
#include "framework/engines/data_parallel.h"
#include "framework/engines/local_engine.h"
#include "models/heads/factory.h"

using namespace unif;

namespace {

std::shared_ptr<models::TaskModel> tiny_classifier() {
  torch::manual_seed(3);
  auto o = models::EncoderConfig()
               .vocab_size(120)
               .hidden_size(32)
               .num_hidden_layers(2)
               .num_attention_heads(4)
               .intermediate_size(64)
               .max_position_embeddings(32)
               .hidden_dropout_prob(0.0)
               .attention_probs_dropout_prob(0.0);
  auto model = models::make_encoder_task_model(unif::Task::Classification, o, 3);
  model->train();
  return model;
}

models::Batch tiny_batch() {
  torch::manual_seed(5);
  models::Batch b;
  b.input_ids = torch::randint(1, 120, {4, 12}, torch::kLong);
  b.token_type_ids = torch::zeros({4, 12}, torch::kLong);
  b.attention_mask = torch::ones({4, 12}, torch::kLong);
  b.labels = torch::randint(0, 3, {4}, torch::kLong);
  return b;
}

// The largest difference between the two forwards of a twin pass (dropout 0: the same function of
// the same inputs, so 0 exactly when both run in the same precision).
double twin_difference(framework::GradientEngine& engine) {
  framework::PassRequest twin;
  twin.scale = 0.25;
  double diff = -1.0;
  twin.pair_loss_fn = [&diff](const models::ModelOutput& a, const models::ModelOutput& b, int64_t) {
    diff = std::max(diff, (a.logits - b.logits).abs().max().item<double>());
    return a.example_losses.sum() + b.example_losses.sum();
  };
  engine.run_custom(tiny_batch(), twin);
  return diff;
}

}  // namespace

TEST_CASE("R-Drop's twin forward runs under the same bf16 autocast as the first", "[unit][precision]") {
  auto model = tiny_classifier();
  framework::LocalEngine local(
      model, [] {}, Precision::BF16);
  CHECK(twin_difference(local) == 0.0);

  auto replicated = tiny_classifier();
  framework::DataParallelOptions o;
  o.devices = {torch::kCPU, torch::kCPU};
  o.precision = Precision::BF16;
  framework::DataParallelEngine engine(
      replicated, [] {}, o);
  CHECK(twin_difference(engine) == 0.0);
}
