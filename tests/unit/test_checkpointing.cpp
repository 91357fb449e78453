// training.gradient_checkpointing (models/layers/checkpoint.h): for every family, padded and
// unpadded, with dropout on, one training step's loss and every gradient are bitwise those of the
// same step without checkpointing; the layers' activations are not kept (fewer saved tensors in the
// graph); a pass that asks autograd::grad for an input only (adversarial ascent steps) leaves the
// parameters' .grad untouched; the random stream after the step is the one without checkpointing.
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <thread>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/autograd.h>
#include <torch/types.h>

#include "framework/checkpoint/pretrained.h"
#include "models/heads/encoder_task_model.h"

namespace fs = std::filesystem;

namespace {

struct CheckpointStep {
  double loss = 0;
  std::map<std::string, torch::Tensor> grads;
  torch::Tensor next_draw;       // the global generator's next number after the step
  std::string first_layer_node;  // the autograd node that made layer 1's output
};

// One classification step (dropout on, training mode) of the fixture `dir`, seeded alike.
CheckpointStep checkpoint_step(const fs::path& dir, bool checkpointing, bool unpadded) {
  unif::framework::PretrainedOptions o;
  o.task = unif::Task::Classification;
  o.num_labels = 3;
  o.fresh_mismatched_head = true;
  o.unpad_inputs = unpadded;
  o.gradient_checkpointing = checkpointing;
  torch::manual_seed(3);  // the fresh head
  auto model = unif::framework::load_pretrained(dir, o).model;
  model->train();
  torch::manual_seed(5);
  unif::models::Batch b;
  const int64_t n = 4, l = 12;
  b.input_ids = torch::randint(5, 300, {n, l}, torch::kLong);
  b.token_type_ids = torch::zeros({n, l}, torch::kLong);
  const auto lengths = torch::tensor({12, 3, 7, 5}, torch::kLong);
  b.attention_mask = torch::arange(l, torch::kLong).unsqueeze(0).lt(lengths.unsqueeze(1)).to(torch::kLong);
  b.input_ids = b.input_ids * b.attention_mask;
  b.labels = torch::tensor({0, 2, 1, 2}, torch::kLong);
  unif::models::LayerTap tap;
  tap.keep_hidden_states = true;
  model->set_layer_tap(&tap);
  torch::manual_seed(17);  // the dropout masks' stream
  const auto out = model->forward(b);
  model->set_layer_tap(nullptr);
  const auto loss = out.example_losses.sum() / static_cast<double>(n);
  loss.backward();
  CheckpointStep r;
  r.loss = loss.item<double>();
  if (!unpadded && tap.hidden_states.size() > 2) r.first_layer_node = tap.hidden_states[1].grad_fn()->name();
  for (const auto& p : model->named_parameters())
    if (p.value().grad().defined()) r.grads[p.key()] = p.value().grad().to_dense().clone();
  r.next_draw = torch::rand({4});
  return r;
}

}  // namespace

TEST_CASE("gradient checkpointing: every family's step is bitwise the step without it (dropout on)",
          "[unit][checkpointing]") {
  const std::string family =
      GENERATE("bert", "roberta", "distilbert", "electra", "albert", "deberta-v2", "modernbert", "mpnet");
  const fs::path dir = family == "bert" ? fs::path(UNIF_TEST_FIXTURES) / "tiny-bert-zh"
                                        : fs::path(UNIF_TEST_FIXTURES) / "families" / family;
  for (bool unpadded : {false, true}) {
    INFO(family << (unpadded ? " unpadded" : " padded"));
    const auto plain = checkpoint_step(dir, false, unpadded);
    const auto ckpt = checkpoint_step(dir, true, unpadded);
    CHECK(ckpt.loss == plain.loss);
    REQUIRE(ckpt.grads.size() == plain.grads.size());
    REQUIRE(plain.grads.size() > 10);
    for (const auto& [name, g] : plain.grads) {
      INFO(name);
      REQUIRE(ckpt.grads.count(name));
      CHECK(torch::equal(ckpt.grads.at(name), g));
    }
    CHECK(torch::equal(ckpt.next_draw, plain.next_draw));  // the recomputation put the stream back
    if (!unpadded) {  // the layer ran checkpointed: its output's node is the checkpoint's
      CHECK(ckpt.first_layer_node == "CheckpointBackward");
      CHECK(plain.first_layer_node != "CheckpointBackward");
    }
  }
}

TEST_CASE("gradient checkpointing: a gradient of an input only leaves the parameters' .grad untouched",
          "[unit][checkpointing]") {
  unif::framework::PretrainedOptions o;
  o.task = unif::Task::Classification;
  o.gradient_checkpointing = true;
  auto model = unif::framework::load_pretrained(fs::path(UNIF_TEST_FIXTURES) / "tiny-bert-zh", o).model;
  model->train();
  unif::models::Batch b;
  b.input_ids = torch::randint(5, 300, {2, 8}, torch::kLong);
  b.token_type_ids = torch::zeros({2, 8}, torch::kLong);
  b.attention_mask = torch::ones({2, 8}, torch::kLong);
  b.labels = torch::tensor({0, 1}, torch::kLong);
  const int64_t h = model->word_embeddings()->options.embedding_dim();
  auto delta = torch::zeros({2, 8, h}).requires_grad_(true);
  const auto loss = model->forward(b, delta).example_losses.sum();
  const auto g = torch::autograd::grad({loss}, {delta})[0];
  CHECK(g.abs().sum().item<double>() > 0);
  for (const auto& p : model->parameters()) CHECK_FALSE(p.grad().defined());
  // Evaluation (no gradients recorded) runs the layers plainly.
  torch::NoGradGuard no_grad;
  CHECK_FALSE(model->forward(b).example_losses.requires_grad());
}

// A layer tap holds for the thread that set it: evaluation workers running one model at once (a
// distillation model's dev pass) each read their own layers, never another's (a tap shared by the
// model once lost a worker's hidden states to the other worker's pass).
TEST_CASE("set_layer_tap holds for the calling thread only", "[unit][layer_tap]") {
  unif::framework::PretrainedOptions o;
  o.task = unif::Task::Classification;
  auto model = unif::framework::load_pretrained(fs::path(UNIF_TEST_FIXTURES) / "tiny-bert-zh", o).model;
  model->eval();
  unif::models::Batch b;
  b.input_ids = torch::randint(5, 300, {2, 8}, torch::kLong);
  b.token_type_ids = torch::zeros({2, 8}, torch::kLong);
  b.attention_mask = torch::ones({2, 8}, torch::kLong);
  unif::models::LayerTap mine;
  mine.keep_hidden_states = true;
  model->set_layer_tap(&mine);
  std::thread other([&] { model->forward(b); });  // no tap on that thread
  other.join();
  CHECK(mine.hidden_states.empty());
  model->forward(b);
  CHECK(mine.hidden_states.size() == static_cast<size_t>(model->options().num_hidden_layers()) + 1);
  model->set_layer_tap(nullptr);
  mine.hidden_states.clear();
  model->forward(b);
  CHECK(mine.hidden_states.empty());
}
