// Early exit (FastBERT): the branches' self-distillation loss by hand from each layer's hidden
// state, the head's gradient untouched by the branches (the head's distribution is held fixed),
// which layer answers each record under a threshold, and the model's bad inputs.
#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/nn/functional/loss.h>
#include <torch/types.h>

#include "models/heads/early_exit.h"
#include "models/heads/sequence_classification.h"

namespace {

using unif::models::EncoderForSequenceClassificationImpl;

constexpr int64_t kLayers = 3, kLabels = 3;

unif::models::EncoderConfig exit_config() {
  unif::models::EncoderConfig cfg;
  cfg.vocab_size(50).hidden_size(16).num_hidden_layers(kLayers).num_attention_heads(2).intermediate_size(32);
  cfg.hidden_dropout_prob(0.0).attention_probs_dropout_prob(0.0).initializer_range(0.5);
  return cfg;
}

unif::models::Batch exit_batch() {
  torch::manual_seed(5);
  unif::models::Batch batch;
  batch.input_ids = torch::randint(1, 50, {6, 9}, torch::kLong);
  batch.token_type_ids = torch::zeros({6, 9}, torch::kLong);
  batch.attention_mask = torch::ones({6, 9}, torch::kLong);
  batch.attention_mask[1].narrow(0, 6, 3).fill_(0);
  batch.attention_mask[4].narrow(0, 3, 6).fill_(0);
  batch.labels = torch::tensor({0, 2, 1, 1, 0, 2}, torch::kLong);
  return batch;
}

// Each branch's logits (B, C) from the hidden states of a plain pass (LayerTap).
std::vector<torch::Tensor> branch_logits(EncoderForSequenceClassificationImpl& model,
                                         const unif::models::Batch& batch) {
  unif::models::LayerTap tap;
  tap.keep_hidden_states = true;
  model.encoder().encode(batch.input_ids, batch.token_type_ids, batch.attention_mask, {}, false, &tap);
  std::vector<torch::Tensor> out;
  for (int64_t i = 1; i < kLayers; ++i)
    out.push_back(model.branches[static_cast<size_t>(i - 1)]->as<unif::models::EarlyExitBranchImpl>()->forward(
        tap.hidden_states[static_cast<size_t>(i)], batch.attention_mask));
  return out;
}

}  // namespace

TEST_CASE("early exit: the loss is the head's cross-entropy plus each branch's KL to the head", "[unit][early_exit]") {
  torch::manual_seed(1);
  EncoderForSequenceClassificationImpl plain(exit_config(), kLabels);
  auto model = std::dynamic_pointer_cast<EncoderForSequenceClassificationImpl>(plain.clone_model());
  CHECK_FALSE(model->has_early_exit());
  model->enable_early_exit();
  REQUIRE(model->has_early_exit());
  REQUIRE(model->branches->size() == kLayers - 1);
  CHECK(model->named_parameters().find("branches.1.classifier.weight") != nullptr);
  CHECK(model->named_parameters().find("branches.1.dense.bias") != nullptr);
  const auto batch = exit_batch();

  const auto out = model->forward(batch);
  const auto ref = plain.forward(batch);
  CHECK(torch::allclose(out.logits, ref.logits, 0, 1e-6));  // the head's answer while training
  CHECK_FALSE(out.exit_layers.defined());
  CHECK(out.loss_count == 6);
  const auto branches = branch_logits(*model, batch);
  const auto t = torch::log_softmax(out.logits.to(torch::kDouble), -1);
  torch::Tensor want =
      torch::nn::functional::cross_entropy(out.logits.to(torch::kDouble), batch.labels,
                                           torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
  for (const auto& b : branches) {
    const auto s = torch::log_softmax(b.to(torch::kDouble), -1);
    want = want + (t.exp() * (t - s)).sum(-1);
  }
  CHECK(torch::allclose(out.example_losses.to(torch::kDouble), want, 1e-5, 1e-6));
  CHECK(out.example_losses.sub(ref.example_losses).min().item<double>() > 0);  // the KL terms are there

  // The head learns from the labels alone: its gradient is the plain model's.
  out.example_losses.sum().backward();
  ref.example_losses.sum().backward();
  const auto head = model->named_parameters()["classifier.weight"].grad();
  CHECK(torch::allclose(head, plain.named_parameters()["classifier.weight"].grad(), 1e-5, 1e-7));
  CHECK(model->named_parameters()["branches.0.classifier.weight"].grad().abs().sum().item<double>() > 0);
  // The KL's gradient reaches the encoder through the branches (frozen in FastBERT's second stage).
  const auto layer0 = model->named_parameters()["bert.encoder.layer.0.output.dense.weight"].grad();
  CHECK_FALSE(torch::allclose(layer0, plain.named_parameters()["bert.encoder.layer.0.output.dense.weight"].grad()));
}

TEST_CASE("early exit: each record is answered by the first branch below the threshold", "[unit][early_exit]") {
  torch::manual_seed(2);
  EncoderForSequenceClassificationImpl model(exit_config(), kLabels);
  model.enable_early_exit();
  model.eval();
  torch::NoGradGuard no_grad;
  const auto batch = exit_batch();
  const auto head = model.forward(batch);
  const auto branches = branch_logits(model, batch);
  const auto e1 = unif::models::normalized_entropy(branches[0]), e2 = unif::models::normalized_entropy(branches[1]);
  CHECK(e1.min().item<double>() >= 0);
  CHECK(e1.max().item<double>() <= 1);

  // 0: nobody exits early; the head answers everything.
  model.set_exit_threshold(0.0);
  auto out = model.forward(batch);
  REQUIRE(out.exit_layers.defined());
  CHECK(torch::equal(out.exit_layers, torch::full({6}, kLayers, torch::kLong)));
  CHECK(torch::allclose(out.logits, head.logits, 0, 1e-6));
  CHECK(out.example_losses.defined());

  // Just above every record's first-branch entropy: all answer at layer 1.
  model.set_exit_threshold(std::min(1.0, e1.max().item<double>() + 1e-6));
  out = model.forward(batch);
  CHECK(torch::equal(out.exit_layers, torch::ones({6}, torch::kLong)));
  CHECK(torch::allclose(out.logits, branches[0], 0, 1e-6));

  // Between the records' entropies: each row's own layer, and that layer's logits.
  const double u = e1.median().item<double>();
  model.set_exit_threshold(u);
  out = model.forward(batch);
  int64_t early = 0;
  for (int64_t b = 0; b < 6; ++b) {
    INFO("row " << b);
    const int64_t layer = out.exit_layers[b].item<int64_t>();
    const bool first = e1[b].item<double>() < u, second = !first && e2[b].item<double>() < u;
    CHECK(layer == (first ? 1 : second ? 2 : kLayers));
    const auto& want = first ? branches[0][b] : second ? branches[1][b] : head.logits[b];
    CHECK(torch::allclose(out.logits[b], want, 0, 1e-6));
    early += layer < kLayers;
  }
  CHECK(early >= 1);
  CHECK(early < 6);

  // A clone keeps the branches, their values and the threshold.
  auto clone = std::dynamic_pointer_cast<EncoderForSequenceClassificationImpl>(model.clone_model());
  REQUIRE(clone->has_early_exit());
  CHECK(clone->exit_threshold() == model.exit_threshold());
  CHECK(torch::equal(clone->forward(batch).exit_layers, out.exit_layers));
  // Unset: the head again, no exit layers.
  model.set_exit_threshold(std::nullopt);
  CHECK_FALSE(model.forward(batch).exit_layers.defined());
}

TEST_CASE("early exit: bad inputs", "[unit][early_exit]") {
  EncoderForSequenceClassificationImpl model(exit_config(), kLabels);
  CHECK_THROWS_WITH(model.set_exit_threshold(0.5), Catch::Contains("no early exits"));
  model.enable_early_exit();
  CHECK_THROWS_WITH(model.set_exit_threshold(1.5), Catch::Contains("in [0, 1]"));
  CHECK_THROWS_WITH(model.set_exit_threshold(-0.1), Catch::Contains("in [0, 1]"));
  CHECK_THROWS_WITH(model.set_exit_threshold(std::nan("")), Catch::Contains("in [0, 1]"));
  EncoderForSequenceClassificationImpl regression(exit_config(), 1, unif::Task::Regression);
  CHECK_THROWS_WITH(regression.enable_early_exit(), Catch::Contains("single-label classification"));
  // A checkpoint holding branches.* brings them back before its weights load; a regression model
  // ignores them.
  EncoderForSequenceClassificationImpl loaded(exit_config(), kLabels);
  loaded.adopt_checkpoint_modules({"bert.embeddings.word_embeddings.weight", "branches.0.dense.weight"});
  CHECK(loaded.has_early_exit());
  regression.adopt_checkpoint_modules({"branches.0.dense.weight"});
  CHECK_FALSE(regression.has_early_exit());
}
