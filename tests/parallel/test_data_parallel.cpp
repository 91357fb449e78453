// DataParallelEngine (framework/parallel): sharding, exact reduction, invariance of one optimizer step
// over 1, 2 and 3 CPU replicas against the one-device LocalEngine and the fixture's HF reference
// gradient (SPEC §5), the sparse-gradient combination on which UNIF's one-replica-indices bug fails,
// replica failures surfacing as exceptions naming the replica, per-worker thread counts, device errors.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>
#include <torch/cuda.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/linear.h>
#include <torch/types.h>

#include "adversarial/fgm.h"
#include "adversarial/freeat.h"
#include "adversarial/freelb.h"
#include "adversarial/pgd.h"
#include "adversarial/rdrop.h"
#include "adversarial/smart.h"
#include "framework/checkpoint/pretrained.h"
#include "framework/checkpoint/safetensors.h"
#include "framework/common/error.h"
#include "framework/common/runtime.h"
#include "framework/data/batching.h"
#include "framework/data/records.h"
#include "framework/engines/auto_devices.h"
#include "framework/engines/data_parallel.h"
#include "framework/engines/devices.h"
#include "framework/engines/local_engine.h"
#include "framework/text/bert_tokenizer.h"
#include "models/electra/pretraining.h"
#include "models/heads/crf.h"
#include "models/heads/distillation.h"
#include "models/heads/sequence_classification.h"
#include "models/heads/token_classification.h"
#include "framework/text/encoding.h"
#include "models/heads/encoder_task_model.h"
#include "models/heads/factory.h"
#include "models/heads/loss.h"

namespace fs = std::filesystem;
using namespace unif;
using framework::DataParallelEngine;
using framework::DataParallelOptions;
using framework::LocalEngine;

namespace {

const fs::path kFixture = fs::path(UNIF_TEST_FIXTURES) / "tiny-bert-zh";
const fs::path kCase = kFixture / "reference" / "train" / "cls_pair";
const std::string kWords = "bert.embeddings.word_embeddings.weight";

// max over elements of |a-b| - (atol + rtol*|b|); <= 0 means close (the fixture's rule).
double worst_excess(const torch::Tensor& a, const torch::Tensor& b, double atol = 1e-6, double rtol = 1e-5) {
  REQUIRE(a.sizes() == b.sizes());
  auto ad = a.to(torch::kDouble), bd = b.to(torch::kDouble);
  return ((ad - bd).abs() - (atol + rtol * bd.abs())).max().item<double>();
}

torch::Tensor dense(const torch::Tensor& t) { return t.is_sparse() ? t.to_dense() : t; }

torch::Tensor tensor_2d(const nlohmann::json& rows) {
  std::vector<int64_t> flat;
  for (const auto& row : rows)
    for (const auto& v : row) flat.push_back(v.get<int64_t>());
  return torch::tensor(flat, torch::kLong).view({static_cast<int64_t>(rows.size()), -1});
}

struct Fixture {
  models::Batch batch;
  double z = 0;
};

Fixture fixture_batch() {
  std::ifstream in(kCase / "manifest.json");
  const auto manifest = nlohmann::json::parse(in);
  const auto& enc = manifest.at("encoded");
  Fixture f;
  f.batch.input_ids = tensor_2d(enc.at("input_ids"));
  f.batch.token_type_ids = tensor_2d(enc.at("token_type_ids"));
  f.batch.attention_mask = tensor_2d(enc.at("attention_mask"));
  f.batch.labels = torch::tensor(enc.at("labels").get<std::vector<int64_t>>(), torch::kLong);
  f.z = manifest.at("loss_normaliser_Z").get<double>();
  return f;
}

std::shared_ptr<models::TaskModel> fixture_model(bool sparse) {
  auto config = framework::read_hf_config(kFixture / "config.json");
  config.bert.hidden_dropout_prob(0.0).attention_probs_dropout_prob(0.0);
  framework::PretrainedOptions options;
  options.sparse_embeddings = sparse;
  auto model = framework::load_pretrained(kFixture, config, options).model;
  model->train();
  return model;
}

// A small random BERT (dropout 0) with any head.
std::shared_ptr<models::TaskModel> random_model(unif::Task kind, bool sparse, int64_t num_labels, double dropout = 0.0,
                                                bool checkpointing = false) {
  torch::manual_seed(7);
  auto o = models::EncoderConfig()
               .vocab_size(120)
               .hidden_size(32)
               .num_hidden_layers(2)
               .num_attention_heads(4)
               .intermediate_size(64)
               .max_position_embeddings(32)
               .hidden_dropout_prob(dropout)
               .attention_probs_dropout_prob(dropout)
               .initializer_range(0.2)
               .sparse_embeddings(sparse)
               .gradient_checkpointing(checkpointing);
  auto model = models::make_encoder_task_model(kind, o, num_labels);
  model->train();
  return model;
}

// A token-classification batch: B examples of varying length, labels -100 on [CLS], padding and
// some pieces. Returns Z = labeled tokens.
std::pair<models::Batch, double> token_batch(int64_t b, int64_t l, int64_t num_labels) {
  torch::manual_seed(11);
  models::Batch batch;
  batch.input_ids = torch::randint(1, 120, {b, l}, torch::kLong);
  batch.token_type_ids = torch::zeros({b, l}, torch::kLong);
  auto lengths = torch::randint(3, l + 1, {b}, torch::kLong);
  auto pos = torch::arange(l, torch::kLong).unsqueeze(0);
  batch.attention_mask = (pos < lengths.unsqueeze(1)).to(torch::kLong);
  batch.input_ids = batch.input_ids * batch.attention_mask;
  auto labels = torch::randint(0, num_labels, {b, l}, torch::kLong);
  auto ignored = (batch.attention_mask == 0) | (pos == 0) | (torch::rand({b, l}) < 0.2);
  batch.labels = labels.masked_fill(ignored, -100);
  return {batch, static_cast<double>((batch.labels != -100).sum().item<int64_t>())};
}

// One SGD step (lr 1) of `engine` on its master; returns every parameter's gradient g (dense) and
// value after the step, by name.
struct StepResult {
  std::map<std::string, torch::Tensor> grads, params;
  framework::PassResult pass;
};

template <class MakeEngine>
StepResult sgd_step(const std::shared_ptr<models::TaskModel>& model, const models::Batch& batch, double z,
                    const torch::Tensor& delta, MakeEngine make_engine) {
  StepResult out;
  auto step = [&] {
    torch::NoGradGuard no_grad;
    for (auto& p : model->named_parameters()) {
      auto& g = p.value().mutable_grad();
      REQUIRE(g.defined());
      out.grads[p.key()] = dense(g).clone();
      p.value().sub_(dense(g));
      g.reset();
    }
  };
  auto engine = make_engine(model, step);
  out.pass = engine->run(batch, delta, 1.0 / z, delta.defined());
  engine->optimizer_step();
  for (auto& p : model->named_parameters()) out.params[p.key()] = p.value().detach().clone();
  return out;
}

StepResult local_step(models::TaskModel& proto, const models::Batch& batch, double z, const torch::Tensor& delta = {}) {
  return sgd_step(proto.clone_model(), batch, z, delta,
                  [](auto m, auto step) { return std::make_unique<LocalEngine>(m, step); });
}

StepResult parallel_step(models::TaskModel& proto, int64_t replicas, const models::Batch& batch, double z,
                         const torch::Tensor& delta = {}) {
  return sgd_step(proto.clone_model(), batch, z, delta, [replicas](auto m, auto step) {
    DataParallelOptions o;
    o.devices.assign(static_cast<size_t>(replicas), torch::kCPU);
    o.threads_per_replica = 1;
    return std::make_unique<DataParallelEngine>(m, step, o);
  });
}

// real: (B, L) 1/0 for per-position logits (B, L, C): compared where it is 1 (with model.unpadded the
// padded positions' logits depend on each replica's own padding).
void require_same_step(const StepResult& a, const StepResult& ref, const torch::Tensor& real = {}) {
  REQUIRE(a.params.size() == ref.params.size());
  for (const auto& [name, value] : ref.params) {
    INFO(name);
    CHECK(worst_excess(a.grads.at(name), ref.grads.at(name)) <= 0);
    CHECK(worst_excess(a.params.at(name), value) <= 0);
  }
  CHECK(a.pass.loss_sum == Approx(ref.pass.loss_sum).epsilon(1e-6));
  CHECK(a.pass.output.loss_count == ref.pass.output.loss_count);
  // Logits: an absolute error on the scale of the logits themselves. A logit is a dot product over
  // the hidden size, and a row's value can cancel to near 0 while its terms do not; AVX-512 GEMM
  // kernels (OpenBLAS SkylakeX) sum a block of M rows in another order than a block of M/2, so a
  // near-zero logit differs by float32 rounding of its terms' scale (1.1e-6 on logits of scale
  // 3.9 in masked_lm here: 2-3 ulps of 3.9), not of its own.
  const double logit_scale = std::max(1.0, ref.pass.output.logits.abs().max().item<double>());
  INFO("logit scale " << logit_scale);
  if (real.defined() && ref.pass.output.logits.dim() == 3) {
    const torch::Tensor keep = real.to(torch::kBool).unsqueeze(-1).expand_as(ref.pass.output.logits);
    CHECK(worst_excess(a.pass.output.logits.masked_select(keep), ref.pass.output.logits.masked_select(keep),
                       1e-6 * logit_scale) <= 0);
  } else {
    CHECK(worst_excess(a.pass.output.logits, ref.pass.output.logits, 1e-6 * logit_scale) <= 0);
  }
  CHECK(worst_excess(a.pass.output.example_losses, ref.pass.output.example_losses) <= 0);
  if (ref.pass.delta_grad.defined()) {
    REQUIRE(a.pass.delta_grad.defined());
    CHECK(worst_excess(a.pass.delta_grad, ref.pass.delta_grad, 1e-9, 1e-5) <= 0);
  }
}

// The fixture's reference gradient g (HF, dropout 0) of cls_pair / none, densified, by name.
std::map<std::string, torch::Tensor> reference_grads(const std::map<std::string, torch::Tensor>& like) {
  const auto ref = framework::read_safetensors(kCase / "none" / "grads.safetensors").tensors;
  std::map<std::string, torch::Tensor> out;
  for (const auto& [name, g] : like) {
    if (name == kWords)
      out[name] = torch::zeros_like(g).index_put_({ref.at(kWords + ".rows")}, ref.at(kWords + ".values"));
    else
      out[name] = ref.at(name);
  }
  return out;
}

// What UNIF did with the IndexedSlices of several devices: kept the first replica's rows.
torch::Tensor unif_like_combine(const std::vector<torch::Tensor>& grads) { return grads.front().coalesce(); }

// A toy TaskModel (embedding + linear) that fails on a poisoned input id and records the intra-op
// thread count it ran with.
struct ToyState {
  std::mutex mutex;
  std::vector<int> threads_seen;
  bool throw_user_error = false;
};

class Toy final : public models::TaskModel {
 public:
  static constexpr int64_t kPoison = 999;
  explicit Toy(std::shared_ptr<ToyState> state) : state_(std::move(state)) {
    emb_ = register_module("emb", torch::nn::Embedding(torch::nn::EmbeddingOptions(1000, 4)));
    out_ = register_module("out", torch::nn::Linear(4, 2));
  }
  models::ModelOutput forward(const models::Batch& batch, const torch::Tensor& delta) override {
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      state_->threads_seen.push_back(at::get_num_threads());
    }
    if ((batch.input_ids == kPoison).any().item<bool>()) {
      if (state_->throw_user_error) throw UserError("poisoned example");
      throw std::runtime_error("poisoned example");
    }
    auto e = emb_(batch.input_ids);  // (b, L, 4)
    if (delta.defined()) e = e + delta;
    models::ModelOutput out;
    out.logits = out_(e.mean(1));  // (b, 2)
    out.example_losses = torch::nn::functional::cross_entropy(
        out.logits, batch.labels, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
    out.loss_count = batch.size();
    return out;
  }
  torch::nn::Embedding word_embeddings() override { return emb_; }
  std::shared_ptr<models::TaskModel> clone_model() const override {
    auto copy = std::make_shared<Toy>(state_);
    models::copy_module_state(*this, *copy);
    return copy;
  }

 private:
  std::shared_ptr<ToyState> state_;
  torch::nn::Embedding emb_{nullptr};
  torch::nn::Linear out_{nullptr};
};

models::Batch toy_batch(int64_t b) {
  models::Batch batch;
  batch.input_ids = torch::arange(b * 3, torch::kLong).view({b, 3});
  batch.token_type_ids = torch::zeros({b, 3}, torch::kLong);
  batch.attention_mask = torch::ones({b, 3}, torch::kLong);
  batch.labels = torch::arange(b, torch::kLong) % 2;
  return batch;
}

// Runs `f` with a deadline: a hang fails the test instead of blocking ctest.
template <class F>
void within_seconds(int seconds, F f) {
  auto fut = std::async(std::launch::async, f);
  if (fut.wait_for(std::chrono::seconds(seconds)) != std::future_status::ready) {
    std::fprintf(stderr, "FAILED: no answer within %d s (hang)\n", seconds);
    std::_Exit(1);
  }
  fut.get();
}

}  // namespace

TEST_CASE("shards are contiguous, as even as possible, the first B mod N one larger", "[parallel]") {
  auto sizes = [](int64_t b, int64_t n) {
    std::vector<int64_t> s;
    int64_t next = 0;
    for (const auto& shard : framework::shard_batch(b, n)) {
      CHECK(shard.begin == next);
      next += shard.size;
      s.push_back(shard.size);
    }
    CHECK(next == b);
    return s;
  };
  CHECK(sizes(8, 3) == std::vector<int64_t>{3, 3, 2});
  CHECK(sizes(2, 3) == std::vector<int64_t>{1, 1, 0});
  CHECK(sizes(9, 3) == std::vector<int64_t>{3, 3, 3});
  CHECK(sizes(7, 1) == std::vector<int64_t>{7});
  CHECK(sizes(0, 2) == std::vector<int64_t>{0, 0});
  CHECK_THROWS_AS(framework::shard_batch(4, 0), std::invalid_argument);
}

TEST_CASE("combine_sparse keeps every replica's rows and sums duplicates", "[parallel]") {
  auto sp = [](std::vector<int64_t> rows, std::vector<float> vals) {
    auto i = torch::tensor(rows, torch::kLong).view({1, -1});
    auto v = torch::tensor(vals).view({-1, 1}).repeat({1, 2});  // (n, 2)
    return torch::sparse_coo_tensor(i, v, {10, 2});
  };
  auto a = sp({1, 3, 1}, {1.f, 2.f, 4.f});  // uncoalesced: row 1 twice
  auto b = sp({3, 7}, {8.f, 16.f});
  auto c = framework::combine_sparse({a, torch::Tensor(), b});
  REQUIRE(c.is_sparse());
  REQUIRE(c.is_coalesced());
  CHECK(torch::equal(c.indices().view({-1}), torch::tensor({1, 3, 7}, torch::kLong)));
  CHECK(torch::equal(c.to_dense(), a.to_dense() + b.to_dense()));
  CHECK_FALSE(framework::combine_sparse({torch::Tensor()}).defined());
  CHECK_THROWS_AS(framework::combine_sparse({a, torch::ones({10, 2})}), std::invalid_argument);
}

TEST_CASE("sparse gradients of replicas on disjoint vocabulary rows: all rows kept (UNIF's bug fails)", "[parallel]") {
  // Example 0 touches rows 5..9, example 1 rows 40..44 (and both [CLS]=2, [SEP]=3 are avoided), so
  // replica 0 and replica 1 see disjoint rows of the word-embedding table.
  auto proto = random_model(unif::Task::Classification, /*sparse=*/true, 2);
  models::Batch batch;
  batch.input_ids = torch::tensor({5, 6, 7, 8, 9, 40, 41, 42, 43, 44}, torch::kLong).view({2, 5});
  batch.token_type_ids = torch::zeros({2, 5}, torch::kLong);
  batch.attention_mask = torch::ones({2, 5}, torch::kLong);
  batch.labels = torch::tensor({0, 1}, torch::kLong);
  const double z = 2;

  auto full = local_step(*proto, batch, z).grads.at(kWords);  // (V, H), one device
  // Per-replica gradients, as each replica computes them on its shard.
  std::vector<torch::Tensor> per_replica;
  for (const auto& shard : framework::shard_batch(2, 2)) {
    auto m = proto->clone_model();
    LocalEngine e(m, [] {});
    e.run(framework::slice_batch(batch, shard), {}, 1.0 / z, false);
    per_replica.push_back(m->word_embeddings()->weight.grad().clone());
    REQUIRE(per_replica.back().is_sparse());
  }
  auto rows_of = [](const torch::Tensor& g) {
    auto idx = g.coalesce().indices().view({-1});
    return std::set<int64_t>(idx.data_ptr<int64_t>(), idx.data_ptr<int64_t>() + idx.numel());
  };
  const std::set<int64_t> both{5, 6, 7, 8, 9, 40, 41, 42, 43, 44};
  auto matches_full = [&](const torch::Tensor& g) {
    return rows_of(g) == both && worst_excess(g.to_dense(), full) <= 0;
  };
  CHECK(matches_full(framework::combine_sparse(per_replica)));
  CHECK_FALSE(matches_full(unif_like_combine(per_replica)));  // the check can fail: UNIF's combination does

  // The engine itself: the master's gradient carries both replicas' rows.
  auto two = parallel_step(*proto, 2, batch, z);
  CHECK(worst_excess(two.grads.at(kWords), full) <= 0);
  CHECK(rows_of(two.grads.at(kWords).to_sparse(1)) == both);
}

TEST_CASE("one step on 1, 2, 3 replicas equals one device and the HF reference (cls_pair, B=8)", "[parallel]") {
  const auto f = fixture_batch();
  for (bool sparse : {true, false}) {
    auto proto = fixture_model(sparse);
    const auto local = local_step(*proto, f.batch, f.z);
    const auto ref = reference_grads(local.grads);
    for (const auto& [name, g] : ref) {
      INFO("local vs HF " << name);
      CHECK(worst_excess(local.grads.at(name), g) <= 0);
    }
    for (int64_t n : {1, 2, 3}) {  // 3 replicas: shards 3, 3, 2
      INFO((sparse ? "sparse" : "dense") << " embeddings, " << n << " replicas");
      const auto dp = parallel_step(*proto, n, f.batch, f.z);
      require_same_step(dp, local);
      for (const auto& [name, g] : ref) {
        INFO("vs HF " << name);
        CHECK(worst_excess(dp.grads.at(name), g) <= 0);
      }
    }
  }
}

TEST_CASE("fewer examples than replicas (B=2 on 3) and a perturbation delta with its gradient", "[parallel]") {
  const auto f = fixture_batch();
  const auto two = framework::slice_batch(f.batch, {3, 2});
  auto proto = fixture_model(/*sparse=*/true);
  const auto local = local_step(*proto, two, 2.0);
  require_same_step(parallel_step(*proto, 3, two, 2.0), local);

  torch::manual_seed(3);
  const int64_t h = proto->word_embeddings()->options.embedding_dim();
  const auto delta = 0.05 * torch::randn({8, f.batch.input_ids.size(1), h}) * f.batch.attention_mask.unsqueeze(-1);
  const auto local_d = local_step(*proto, f.batch, f.z, delta);
  REQUIRE(local_d.pass.delta_grad.defined());
  for (int64_t n : {2, 3}) {
    INFO(n << " replicas with delta");
    require_same_step(parallel_step(*proto, n, f.batch, f.z, delta), local_d);
  }
}

TEST_CASE("token classification: 1, 2, 3 replicas equal one device (Z = labeled tokens of the whole batch)",
          "[parallel]") {
  auto [batch, z] = token_batch(7, 12, 5);  // 7 on 3 replicas: 3, 2, 2
  for (bool sparse : {true, false}) {
    auto proto = random_model(unif::Task::TokenClassification, sparse, 5);
    const auto local = local_step(*proto, batch, z);
    for (int64_t n : {1, 2, 3}) {
      INFO((sparse ? "sparse" : "dense") << ", " << n << " replicas");
      require_same_step(parallel_step(*proto, n, batch, z), local);
    }
  }
}

// model.crf: each row's loss is its tag sequence's CRF negative log-likelihood (a sum over rows),
// normalised by the labeled tokens of the whole batch; the CRF's parameters are dense and shared.
TEST_CASE("token classification with a CRF: 1, 2, 3 replicas equal one device", "[parallel][crf]") {
  auto [batch, z] = token_batch(7, 12, 5);
  for (bool sparse : {true, false}) {
    auto proto = random_model(unif::Task::TokenClassification, sparse, 5);
    auto& tagger = dynamic_cast<models::EncoderForTokenClassificationImpl&>(*proto);
    tagger.enable_crf(models::crf_constraints({"B-A", "B-B", "I-A", "I-B", "O"}));
    const auto local = local_step(*proto, batch, z);
    REQUIRE(local.grads.count("crf.transitions"));
    // The random labels take forbidden moves: their rows' loss is huge but finite, and the
    // forbidden entries get no gradient.
    REQUIRE(local.grads.at("crf.transitions")[4][2].item<double>() == 0.0);  // O -> I-A
    for (int64_t n : {1, 2, 3}) {
      INFO((sparse ? "sparse" : "dense") << ", " << n << " replicas");
      require_same_step(parallel_step(*proto, n, batch, z), local);
    }
  }
}

// model.early_exit: each row's loss is the head's cross-entropy plus its branches' KL to the head's
// distribution (held fixed), a sum over rows; the branches are dense and shared.
TEST_CASE("classification with early-exit branches: 1, 2, 3 replicas equal one device", "[parallel][early_exit]") {
  const auto f = fixture_batch();
  for (bool sparse : {true, false}) {
    auto proto = fixture_model(sparse);
    dynamic_cast<models::EncoderForSequenceClassificationImpl&>(*proto).enable_early_exit();
    const auto local = local_step(*proto, f.batch, f.z);
    REQUIRE(local.grads.count("branches.0.classifier.weight"));
    for (int64_t n : {1, 2, 3}) {
      INFO((sparse ? "sparse" : "dense") << ", " << n << " replicas");
      require_same_step(parallel_step(*proto, n, f.batch, f.z), local);
    }
  }
}

// distill.intermediate (TinyBERT): each row's hidden-state, attention and embedding terms are
// normalised by its own real tokens, so shards padded differently give the same sum; the projection
// to the teacher's width is a dense parameter of the wrapper.
TEST_CASE("distillation with TinyBERT's layer-wise terms: 1, 2, 3 replicas equal one device", "[parallel][distill]") {
  const auto f = fixture_batch();
  torch::manual_seed(9);
  auto teacher_options = models::EncoderConfig()
                             .vocab_size(f.batch.input_ids.max().item<int64_t>() + 1)
                             .hidden_size(48)
                             .num_hidden_layers(4)
                             .num_attention_heads(4)
                             .intermediate_size(64)
                             .max_position_embeddings(64)
                             .hidden_dropout_prob(0.0)
                             .attention_probs_dropout_prob(0.0)
                             .initializer_range(0.2);
  auto teacher = models::make_encoder_task_model(unif::Task::Classification, teacher_options, 2);
  for (bool sparse : {true, false}) {
    auto student = std::dynamic_pointer_cast<models::EncoderTaskModel>(fixture_model(sparse));
    models::IntermediateDistillation d;
    d.layers = models::uniform_layer_map(student->options().num_hidden_layers(), 4);
    auto proto = std::make_shared<models::DistillationModel>(student, teacher, 2.0, 0.5, d);
    REQUIRE(proto->has_projection());
    proto->train();
    const auto local = local_step(*proto, f.batch, f.z);
    REQUIRE(local.grads.count("distill_projection.weight"));
    for (int64_t n : {2, 3}) {
      INFO((sparse ? "sparse" : "dense") << ", " << n << " replicas");
      require_same_step(parallel_step(*proto, n, f.batch, f.z), local);
    }
  }
}

// training.loss: with class weights the normaliser Z is the sum of the targets' weights over the
// WHOLE batch (torch's weighted mean), never per shard; label smoothing and focal terms per item.
TEST_CASE("training.loss (class weights - label smoothing - focal): 1 2 3 replicas equal one device", "[parallel]") {
  models::LossOptions loss;
  loss.label_smoothing = 0.1;
  loss.focal_gamma = 2.0;
  const auto f = fixture_batch();
  for (bool sparse : {true, false}) {
    auto proto = std::dynamic_pointer_cast<models::EncoderTaskModel>(fixture_model(sparse));
    loss.class_weights = torch::tensor({0.5f, 2.0f});  // Z = 8 only with weights averaging 1
    proto->set_loss_options(loss);
    const double z = models::loss_normalizer(f.batch.labels, loss.class_weights);
    REQUIRE(z != Approx(8.0));  // the weights change Z: a per-count normaliser would fail below
    const auto local = local_step(*proto, f.batch, z);
    for (int64_t n : {2, 3}) {
      INFO("classification " << (sparse ? "sparse" : "dense") << ", " << n << " replicas");
      require_same_step(parallel_step(*proto, n, f.batch, z), local);
    }
  }
  auto [batch, count] = token_batch(7, 12, 5);
  auto proto =
      std::dynamic_pointer_cast<models::EncoderTaskModel>(random_model(unif::Task::TokenClassification, true, 5));
  loss.class_weights = torch::tensor({0.5f, 2.0f, 1.0f, 0.25f, 3.0f});
  proto->set_loss_options(loss);
  const double z = models::loss_normalizer(batch.labels, loss.class_weights);
  REQUIRE(z != Approx(count));
  const auto local = local_step(*proto, batch, z);
  for (int64_t n : {2, 3}) {
    INFO("token classification, " << n << " replicas");
    require_same_step(parallel_step(*proto, n, batch, z), local);
  }
}

// masked_lm: the decoder is tied to the word embedding table, so the table's gradient is the dense
// decoder gradient plus the lookup's sparse rows (a dense tensor); summed over replicas it must
// equal one device's, with sparse and dense lookups, even and uneven shards.
TEST_CASE("masked_lm with the tied decoder: 1 2 3 replicas equal one device (sparse and dense lookups)",
          "[parallel][mlm]") {
  auto [batch, unused] = token_batch(7, 12, 5);
  torch::manual_seed(13);
  auto picked = (torch::rand({7, 12}) < 0.3) & (batch.attention_mask == 1);
  batch.labels =
      torch::where(picked, torch::randint(0, 120, {7, 12}, torch::kLong), torch::full({7, 12}, -100, torch::kLong));
  const double z = static_cast<double>(picked.sum().item<int64_t>());
  REQUIRE(z > 5);
  for (bool sparse : {true, false}) {
    auto proto = random_model(unif::Task::MaskedLm, sparse, 0);
    const auto local = local_step(*proto, batch, z);
    CHECK(local.pass.output.loss_count == static_cast<int64_t>(z));
    for (int64_t n : {1, 2, 3}) {
      INFO((sparse ? "sparse" : "dense") << " lookups, " << n << " replicas");
      require_same_step(parallel_step(*proto, n, batch, z), local);
    }
  }
}

// ELECTRA pretraining: each replica samples its shard's replacements from the batch's own uniforms,
// and the discriminator's term is scaled by the global batch's M / T (Batch::token_ratio), so the
// step is the one-device step. Without the global ratio each shard would weigh its term by its own.
TEST_CASE("replaced_token_detection: 1 2 3 replicas equal one device (samples keyed to the data)",
          "[parallel][electra]") {
  const fs::path dir = fs::path(UNIF_TEST_FIXTURES) / "electra_rtd";
  auto [batch, unused] = token_batch(7, 12, 5);
  torch::manual_seed(13);
  auto picked = (torch::rand({7, 12}) < 0.3) & (batch.attention_mask == 1);
  batch.labels =
      torch::where(picked, torch::randint(0, 120, {7, 12}, torch::kLong), torch::full({7, 12}, -100, torch::kLong));
  batch.uniforms = torch::rand({7, 12}, torch::kFloat64);
  const double z = static_cast<double>(picked.sum().item<int64_t>());
  batch.token_ratio = z / batch.attention_mask.sum().item<double>();
  REQUIRE(z > 5);
  for (bool sparse : {true, false}) {
    framework::PretrainedOptions options;
    options.task = unif::Task::ReplacedTokenDetection;
    options.sparse_embeddings = sparse;
    auto disc_config = framework::read_hf_config(dir / "discriminator" / "config.json");
    disc_config.bert.hidden_dropout_prob(0.0).attention_probs_dropout_prob(0.0);
    auto disc = framework::load_pretrained(dir / "discriminator", disc_config, options).model;
    options.task = unif::Task::MaskedLm;
    auto gen_config = framework::read_hf_config(dir / "generator" / "config.json");
    gen_config.bert.hidden_dropout_prob(0.0).attention_probs_dropout_prob(0.0);
    auto gen = framework::load_pretrained(dir / "generator", gen_config, options).model;
    auto proto = std::make_shared<models::ElectraPretrainingModel>(
        std::dynamic_pointer_cast<models::ElectraForPreTrainingImpl>(disc),
        std::dynamic_pointer_cast<models::EncoderForMaskedLMImpl>(gen), 50.0);
    proto->train();
    const auto local = local_step(*proto, batch, z);
    CHECK(local.pass.output.loss_count == static_cast<int64_t>(z));
    REQUIRE(local.grads.count("generator.generator_lm_head.bias"));
    REQUIRE(local.grads.count("discriminator_predictions.dense_prediction.weight"));
    for (int64_t n : {1, 2, 3}) {
      INFO((sparse ? "sparse" : "dense") << " lookups, " << n << " replicas");
      require_same_step(parallel_step(*proto, n, batch, z), local);
    }
    // Each shard's own M / T instead: the discriminator's gradient is not the one-device one.
    models::Batch own = batch;
    own.token_ratio = 0;
    const auto shards = parallel_step(*proto, 3, own, z);
    const auto& name = "discriminator_predictions.dense_prediction.weight";
    CHECK(worst_excess(shards.grads.at(name), local.grads.at(name)) > 0);
  }
}

// One strategy step (SGD lr 1 at every optimizer_step) of `strategy` on a clone of `proto` with
// `replicas` CPU replicas (0 = LocalEngine): parameters after the step and the step's loss.
// `steps` > 1 repeats the step on the same batch (step numbers 0, 1, ...); the loss is the last one's.
std::pair<std::map<std::string, torch::Tensor>, double> strategy_step(models::TaskModel& proto, int64_t replicas,
                                                                      adversarial::Strategy& strategy,
                                                                      const models::Batch& batch, double z,
                                                                      int64_t steps = 1) {
  auto model = proto.clone_model();
  auto sgd = [model] {
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters()) {
      if (!p.grad().defined()) continue;
      p.sub_(dense(p.grad()));
      p.mutable_grad().reset();
    }
  };
  std::unique_ptr<framework::GradientEngine> engine;
  if (replicas == 0) {
    engine = std::make_unique<LocalEngine>(model, sgd);
  } else {
    DataParallelOptions o;
    o.devices.assign(static_cast<size_t>(replicas), torch::kCPU);
    o.threads_per_replica = 1;
    engine = std::make_unique<DataParallelEngine>(model, sgd, o);
  }
  adversarial::StepResult r;
  for (int64_t step = 0; step < steps; ++step) {
    r = strategy.accumulate(*engine, batch, 1.0 / z, /*seed=*/42, step);
    if (!r.stepped) engine->optimizer_step();
  }
  std::map<std::string, torch::Tensor> params;
  for (auto& p : model->named_parameters()) params[p.key()] = p.value().detach().clone();
  return {params, r.loss_sum};
}

TEST_CASE("every adversarial method: one step on 2 and 3 replicas equals one device", "[parallel][adversarial]") {
  const auto f = fixture_batch();
  std::vector<std::pair<std::string, std::function<std::unique_ptr<adversarial::Strategy>()>>> methods{
      {"fgm", [] { return std::make_unique<adversarial::Fgm>(0.1); }},
      {"pgd", [] { return std::make_unique<adversarial::Pgd>(0.1, 0.03, 3); }},
      {"freelb", [] { return std::make_unique<adversarial::FreeLb>(0.05, 0.03, 3, 0.1); }},
      {"freeat", [] { return std::make_unique<adversarial::FreeAt>(0.01, 2); }},
      {"smart", [] { return std::make_unique<adversarial::Smart>(0.02, 0.01, 1, 1.0); }},
      {"rdrop", [] { return std::make_unique<adversarial::RDrop>(1.0); }},
  };
  for (bool sparse : {true, false}) {
    auto proto = fixture_model(sparse);
    for (const auto& [name, make] : methods) {
      auto local_strategy = make();
      const auto [local, local_loss] = strategy_step(*proto, 0, *local_strategy, f.batch, f.z);
      for (int64_t n : {2, 3}) {
        auto strategy = make();
        const auto [dp, dp_loss] = strategy_step(*proto, n, *strategy, f.batch, f.z);
        CHECK(dp_loss == Approx(local_loss).epsilon(1e-6));
        for (const auto& [key, value] : local) {
          INFO(name << (sparse ? " sparse " : " dense ") << n << " replicas: " << key);
          CHECK(worst_excess(dp.at(key), value) <= 0);
        }
      }
    }
  }
}

TEST_CASE("smart with its momentum teacher: three steps on 2 and 3 replicas equal one device",
          "[parallel][adversarial]") {
  const auto f = fixture_batch();
  for (bool sparse : {true, false}) {
    auto proto = fixture_model(sparse);
    adversarial::Smart local_strategy(0.02, 0.01, 1, 1.0, /*bregman=*/1.0, /*momentum=*/0.5);
    const auto [local, local_loss] = strategy_step(*proto, 0, local_strategy, f.batch, f.z, 3);
    for (int64_t n : {2, 3}) {
      adversarial::Smart strategy(0.02, 0.01, 1, 1.0, 1.0, 0.5);
      const auto [dp, dp_loss] = strategy_step(*proto, n, strategy, f.batch, f.z, 3);
      CHECK(dp_loss == Approx(local_loss).epsilon(1e-6));
      for (const auto& [key, value] : local) {
        INFO((sparse ? "sparse " : "dense ") << n << " replicas: " << key);
        CHECK(worst_excess(dp.at(key), value) <= 0);
      }
      // The teacher is the same too (steps 2 and 3 would differ if replicas kept the teacher's values).
      REQUIRE(strategy.teacher().size() == local_strategy.teacher().size());
      for (size_t i = 0; i < strategy.teacher().size(); ++i)
        CHECK(worst_excess(strategy.teacher()[i], local_strategy.teacher()[i]) <= 0);
    }
  }
}

TEST_CASE("gradients accumulate over passes - CPU replicas read the master's parameter storage, own their gradients",
          "[parallel]") {
  const auto f = fixture_batch();
  auto proto = fixture_model(/*sparse=*/true);
  // Reference: two passes on one device (same batch, scale 1/Z each).
  auto ref_model = proto->clone_model();
  LocalEngine local(ref_model, [] {});
  local.run(f.batch, {}, 1.0 / f.z, false);
  local.run(f.batch, {}, 1.0 / f.z, false);

  auto model = proto->clone_model();
  DataParallelOptions o;
  o.devices = {torch::kCPU, torch::kCPU, torch::kCPU};
  DataParallelEngine engine(
      model,
      [&] {
        torch::NoGradGuard no_grad;
        for (auto& p : model->parameters()) {
          if (!p.grad().defined()) continue;
          p.sub_(dense(p.grad()));
          p.mutable_grad().reset();
        }
      },
      o);
  CHECK(engine.replicas() == 3);
  CHECK(engine.replica(0) == model);  // replica 0 is the master on its own device
  std::vector<const void*> storage;
  for (const auto& p : engine.replica(2)->parameters()) storage.push_back(p.data_ptr());
  {  // shared values, separate leaves: each replica's backward accumulates into its own .grad
    const auto mine = engine.replica(1)->parameters(), theirs = model->parameters();
    REQUIRE(mine.size() == theirs.size());
    for (size_t j = 0; j < mine.size(); ++j) {
      CHECK(mine[j].data_ptr() == theirs[j].data_ptr());
      CHECK_FALSE(mine[j].is_same(theirs[j]));
      CHECK(mine[j].requires_grad());
    }
  }

  engine.run(f.batch, {}, 1.0 / f.z, false);
  engine.run(f.batch, {}, 1.0 / f.z, false);
  auto ref_params = ref_model->named_parameters();
  for (auto& p : model->named_parameters()) {
    INFO(p.key());
    CHECK(worst_excess(dense(p.value().grad()), dense(ref_params[p.key()].grad())) <= 0);
  }
  for (int64_t r = 1; r < 3; ++r)
    for (const auto& p : engine.replica(r)->parameters()) CHECK_FALSE(p.grad().defined());  // reduced and reset

  engine.optimizer_step();
  const auto master = model->named_parameters();
  for (int64_t r = 1; r < 3; ++r) {
    size_t k = 0;
    for (const auto& p : engine.replica(r)->named_parameters()) {
      INFO("replica " << r << " " << p.key());
      CHECK(torch::equal(p.value(), master[p.key()]));
      CHECK_FALSE(p.value().grad().defined());
      if (r == 2) CHECK(p.value().data_ptr() == storage[k++]);  // still the master's storage
    }
  }
  // A master parameter re-pointed to new storage (as a loader may do): the next sync copies its
  // values into the replica's old storage, so the replicas never read stale weights.
  {
    torch::NoGradGuard no_grad;
    auto w = model->parameters()[0];
    w.set_data(w.detach().clone() + 1.0);
  }
  engine.optimizer_step();
  CHECK(torch::equal(engine.replica(1)->parameters()[0], model->parameters()[0]));
  CHECK(engine.replica(1)->parameters()[0].data_ptr() != model->parameters()[0].data_ptr());
  // Training mode follows the master.
  model->eval();
  engine.run(f.batch, {}, 1.0 / f.z, false);
  CHECK_FALSE(engine.replica(1)->is_training());
}

TEST_CASE("a replica that throws surfaces as an exception naming the replica, never a hang", "[parallel]") {
  auto state = std::make_shared<ToyState>();
  auto model = std::make_shared<Toy>(state);
  DataParallelOptions o;
  o.devices = {torch::kCPU, torch::kCPU, torch::kCPU};
  o.threads_per_replica = 1;
  within_seconds(60, [&] {
    DataParallelEngine engine(
        model, [] {}, o);
    auto batch = toy_batch(6);  // shards 2, 2, 2: example 4 is replica 2's
    batch.input_ids[4][1] = Toy::kPoison;
    CHECK_THROWS_WITH(engine.run(batch, {}, 1.0, false),
                      Catch::Contains("replica 2 of 3") && Catch::Contains("poisoned example"));
    state->throw_user_error = true;
    CHECK_THROWS_AS(engine.run(batch, {}, 1.0, false), UserError);  // the class is kept
    // A strategy's StrategyError (its loss function on a replica) keeps its class too: the trainer
    // reports it as a UserError.
    framework::PassRequest refusing;
    refusing.loss_fn = [](const models::ModelOutput& out, int64_t first) -> torch::Tensor {
      if (first > 0) throw framework::StrategyError("no distribution to compare");
      return out.example_losses.sum();
    };
    CHECK_THROWS_AS(engine.run_custom(toy_batch(6), refusing), framework::StrategyError);
    CHECK_THROWS_WITH(engine.run_custom(toy_batch(6), refusing),
                      Catch::Contains("replica 1 of 3") && Catch::Contains("no distribution to compare"));
    // Two failing replicas: the lowest index is reported.
    batch.input_ids[0][0] = Toy::kPoison;
    CHECK_THROWS_WITH(engine.run(batch, {}, 1.0, false), Catch::Contains("replica 0 of 3"));
    // The engine still works afterwards.
    engine.optimizer_step();
    auto r = engine.run(toy_batch(6), {}, 1.0, false);
    CHECK(r.output.logits.size(0) == 6);
  });
}

// Replica 2's example is poisoned, so the pass throws after replica 1 has run its backward. Its
// gradient used to stay on the replica and be added at the next reduction: the next clean pass
// then gave the master more than that pass's gradient.
TEST_CASE("after a replica throws, the other replicas' gradients of that pass never reach a later step", "[parallel]") {
  auto state = std::make_shared<ToyState>();
  auto model = std::make_shared<Toy>(state);
  auto reference = std::make_shared<Toy>(state);
  models::copy_module_state(*model, *reference);
  DataParallelOptions o;
  o.devices = {torch::kCPU, torch::kCPU, torch::kCPU};
  o.threads_per_replica = 1;
  within_seconds(60, [&] {
    DataParallelEngine engine(
        model, [] {}, o);
    auto poisoned = toy_batch(6);  // shards 2, 2, 2: example 4 is replica 2's
    poisoned.input_ids[4][1] = Toy::kPoison;
    CHECK_THROWS(engine.run(poisoned, {}, 1.0, false));
    model->zero_grad();  // the master's part of the failed pass (the contract: zero before going on)
    engine.run(toy_batch(6), {}, 1.0, false);

    LocalEngine local(reference, [] {});
    local.run(toy_batch(6), {}, 1.0, false);
    const auto got = model->named_parameters(), want = reference->named_parameters();
    for (const auto& item : want) {
      INFO(item.key());
      REQUIRE(got[item.key()].grad().defined());
      CHECK(worst_excess(dense(got[item.key()].grad()), dense(item.value().grad())) <= 0.0);
    }
  });
}

TEST_CASE("forward_with that throws leaves every replica with the master's own parameters", "[parallel]") {
  auto state = std::make_shared<ToyState>();
  auto model = std::make_shared<Toy>(state);
  DataParallelOptions o;
  o.devices = {torch::kCPU, torch::kCPU};
  o.threads_per_replica = 1;
  within_seconds(60, [&] {
    DataParallelEngine engine(
        model, [] {}, o);
    std::vector<torch::Tensor> teacher;
    for (const auto& p : engine.parameters()) teacher.push_back(p.detach() * 2 + 1);
    auto poisoned = toy_batch(4);
    poisoned.input_ids[0][0] = Toy::kPoison;  // replica 0 throws; replica 1 ran with the teacher
    CHECK_THROWS(engine.forward_with(poisoned, teacher));
    const auto master = model->parameters(), replica = engine.replica(1)->parameters();
    REQUIRE(master.size() == replica.size());
    for (size_t j = 0; j < master.size(); ++j) CHECK(torch::equal(master[j], replica[j]));
  });
}

// The engine sets OpenBLAS to one thread while several CPU replicas run; it used to leave it so for
// the rest of the process (the evaluation after training ran on one core).
TEST_CASE("several CPU replicas set single-threaded BLAS while the engine lives, then restore it", "[parallel]") {
  if (std::getenv("OPENBLAS_NUM_THREADS") != nullptr || unif::blas_threads() == 0) {
    WARN("skipped: OPENBLAS_NUM_THREADS is set or the BLAS is not OpenBLAS");
    return;
  }
  REQUIRE(unif::set_blas_threads(2));
  {
    auto model = std::make_shared<Toy>(std::make_shared<ToyState>());
    DataParallelOptions o;
    o.devices = {torch::kCPU, torch::kCPU};
    DataParallelEngine engine(
        model, [] {}, o);
    CHECK(unif::blas_threads() == 1);
    {
      unif::ScopedBlasThreads full(3);  // what the trainer's evaluation holds
      CHECK(unif::blas_threads() == 3);
    }
    CHECK(unif::blas_threads() == 1);
  }
  CHECK(unif::blas_threads() == 2);
}

TEST_CASE("a Torch error inside BERT on one replica names that replica", "[parallel]") {
  auto model = random_model(unif::Task::Classification, true, 2);
  DataParallelOptions o;
  o.devices = {torch::kCPU, torch::kCPU};
  o.threads_per_replica = 1;
  within_seconds(60, [&] {
    DataParallelEngine engine(
        model, [] {}, o);
    models::Batch batch;
    batch.input_ids = torch::full({4, 5}, 7, torch::kLong);
    batch.input_ids[3][2] = 100000;  // out of the vocabulary: replica 1's shard (2, 2)
    batch.token_type_ids = torch::zeros({4, 5}, torch::kLong);
    batch.attention_mask = torch::ones({4, 5}, torch::kLong);
    batch.labels = torch::zeros({4}, torch::kLong);
    CHECK_THROWS_WITH(engine.run(batch, {}, 1.0, false), Catch::Contains("data-parallel replica 1 of 2 (cpu)"));
  });
}

TEST_CASE("each worker runs with threads_per_replica intra-op threads - the caller's count is untouched",
          "[parallel]") {
  const int before = at::get_num_threads();
  auto state = std::make_shared<ToyState>();
  auto model = std::make_shared<Toy>(state);
  for (int64_t t : {1, 3}) {
    DataParallelOptions o;
    o.devices = {torch::kCPU, torch::kCPU};
    o.threads_per_replica = t;
    DataParallelEngine engine(
        model, [] {}, o);
    CHECK(engine.threads_per_replica() == t);
    state->threads_seen.clear();
    engine.run(toy_batch(4), {}, 1.0, false);
    REQUIRE(state->threads_seen.size() == 2);
    for (int seen : state->threads_seen) CHECK(seen == t);
  }
  CHECK(at::get_num_threads() == before);
  DataParallelOptions o;
  o.devices = {torch::kCPU, torch::kCPU};
  DataParallelEngine automatic(
      model, [] {}, o);
  CHECK(automatic.threads_per_replica() >= 1);
}

TEST_CASE("parallel.devices: bad entries are UserErrors naming the entry", "[parallel]") {
  CHECK(framework::parse_devices({"cpu", "cpu", "cpu"}).devices == std::vector<torch::Device>(3, torch::kCPU));
  CHECK(framework::parse_devices({"auto"}).automatic);
  CHECK(framework::resolve_devices(framework::parse_devices({"auto"}), nullptr, 128, 16).devices.size() >= 1);
  CHECK_THROWS_WITH(framework::parse_devices({"cpu", "gpu"}),
                    Catch::Contains("parallel.devices[1]: 'gpu'") && Catch::Contains("expected cpu, cuda:N"));
  CHECK_THROWS_WITH(framework::parse_devices({"cuda:x"}), Catch::Contains("parallel.devices[0]"));
  CHECK_THROWS_AS(framework::parse_devices({}), UserError);
  if (!torch::cuda::is_available())
    CHECK_THROWS_WITH(framework::check_present(framework::parse_devices({"cuda:0"})),
                      Catch::Contains("parallel.devices[0]: 'cuda:0'") && Catch::Contains("CUDA"));
}

TEST_CASE("span extraction: real cmrc2018 windows, 1, 2, 3 replicas and adversarial methods equal one device",
          "[parallel][span]") {
  // 5 windows of real questions (some hold the answer, some are [CLS] "no answer" windows), uneven
  // on 2 and 3 replicas; Z = windows of the whole batch.
  framework::DataConfig d;
  d.text_fields = {"question", "context"};
  d.label_field = "answers";
  const auto file = fs::path(UNIF_SOURCE_DIR) / "data/cmrc2018_zh/dev.jsonl";
  auto records = framework::read_records(file);
  records.resize(2);
  auto examples = framework::make_examples(unif::Task::SpanExtraction, d, {}, file, records, true);
  auto vocab = std::make_shared<const framework::Vocab>(framework::Vocab::load((kFixture / "vocab.txt").string()));
  framework::BertTokenizer tok(vocab, true);
  framework::SpanConfig sc;
  sc.doc_stride = 24;
  auto enc = framework::encode_examples(unif::Task::SpanExtraction, examples, tok, 32,
                                        framework::TruncateMethod::LongerFO, sc);
  REQUIRE(enc.size() >= 5);
  std::vector<int64_t> idx, no_answer;
  for (size_t i = 0; i < enc.size(); ++i)
    if (enc[i].start_position > 0 && idx.size() < 2)
      idx.push_back(static_cast<int64_t>(i));
    else
      no_answer.push_back(static_cast<int64_t>(i));
  REQUIRE(no_answer.size() >= 3);
  idx.insert(idx.begin() + 1, no_answer.begin(), no_answer.begin() + static_cast<std::ptrdiff_t>(5 - idx.size()));
  auto batch = framework::collate(unif::Task::SpanExtraction, enc, examples, idx, 0);
  batch.input_ids = batch.input_ids.remainder(120);             // random_model's vocabulary ([CLS] 101, [SEP] 102 kept)
  REQUIRE(batch.labels.select(1, 0).gt(0).any().item<bool>());  // an answer window
  REQUIRE(batch.labels.select(1, 0).eq(0).any().item<bool>());  // a no-answer window
  const double z = 5;
  for (bool sparse : {true, false}) {
    auto proto = random_model(unif::Task::SpanExtraction, sparse, 2);
    const auto local = local_step(*proto, batch, z);
    for (int64_t n : {1, 2, 3}) {
      INFO((sparse ? "sparse" : "dense") << ", " << n << " replicas");
      require_same_step(parallel_step(*proto, n, batch, z), local);
    }
    std::vector<std::pair<std::string, std::function<std::unique_ptr<adversarial::Strategy>()>>> methods{
        {"fgm", [] { return std::make_unique<adversarial::Fgm>(0.1); }},
        {"pgd", [] { return std::make_unique<adversarial::Pgd>(0.1, 0.03, 2); }},
        {"freelb", [] { return std::make_unique<adversarial::FreeLb>(0.05, 0.03, 2, 0.1); }},
        {"smart", [] { return std::make_unique<adversarial::Smart>(0.02, 0.01, 1, 1.0); }},
    };
    for (const auto& [name, make] : methods) {
      auto ls = make();
      const auto [ref, ref_loss] = strategy_step(*proto, 0, *ls, batch, z);
      auto ds = make();
      const auto [dp, dp_loss] = strategy_step(*proto, 3, *ds, batch, z);
      CHECK(dp_loss == Approx(ref_loss).epsilon(1e-6));
      for (const auto& [key, value] : ref) {
        INFO(name << (sparse ? " sparse " : " dense ") << "3 replicas: " << key);
        // SMART's KL over 32 start/end positions per window sums in another order per shard: its
        // float32 error reaches ~1.2e-6 absolute here (the others stay within 1e-6).
        CHECK(worst_excess(dp.at(key), value, name == "smart" ? 2e-6 : 1e-6) <= 0);
      }
    }
  }
}

TEST_CASE("dropout on 3 replicas repeats exactly from the same global seed (per-replica generators)", "[parallel]") {
  auto proto = random_model(unif::Task::Classification, /*sparse=*/false, 3, /*dropout=*/0.3);
  auto batch = toy_batch(9);
  auto grads_of = [&](uint64_t seed, uint64_t family) {
    auto model = proto->clone_model();
    model->train();
    DataParallelOptions opt;
    opt.devices.assign(3, torch::kCPU);
    opt.threads_per_replica = 1;
    opt.dropout_family = family;
    DataParallelEngine engine(
        model, [] {}, opt);
    torch::manual_seed(seed);
    engine.run(batch, {}, 1.0 / 9, false);
    engine.run(batch, {}, 1.0 / 9, false);  // two passes: the generators are reseeded per pass
    std::vector<torch::Tensor> g;
    for (auto& p : model->parameters()) g.push_back(dense(p.grad()).clone());
    return g;
  };
  auto differ = [](const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
    bool d = false;
    for (size_t i = 0; i < a.size(); ++i) d = d || !torch::equal(a[i], b[i]);
    return d;
  };
  const auto a = grads_of(11, 0);
  for (int repeat = 0; repeat < 3; ++repeat) {
    const auto b = grads_of(11, 0);
    for (size_t i = 0; i < a.size(); ++i) REQUIRE(torch::equal(a[i], b[i]));
  }
  CHECK(differ(a, grads_of(12, 0)));  // another seed: other masks (dropout is really on)
  // Another family (what rank 1 of a multi-process job uses): same seed, other masks; repeatable.
  const auto f1 = grads_of(11, 1);
  CHECK(differ(a, f1));
  CHECK_FALSE(differ(f1, grads_of(11, 1)));
}

// Every encoder family (tests/fixtures/families, dropout 0): token classification and masked_lm
// (its tied decoder) on 2 and 3 replicas equal one device, sparse and dense word-embedding
// gradients; FreeLB's perturbation (of the family's word embeddings, width embedding_size for
// ELECTRA and ALBERT) on 2 replicas equals one device.
// training.gradient_checkpointing with dropout on: one device and 3 replicas (per-replica dropout
// generators), every adversarial method (their extra forwards and delta-only passes): the step is
// bitwise the step without checkpointing.
TEST_CASE("gradient checkpointing: 1 device and 3 replicas, every method, bitwise the step without it",
          "[parallel][checkpointing]") {
  auto [batch, z] = token_batch(7, 12, 5);
  std::vector<std::pair<std::string, std::function<std::unique_ptr<adversarial::Strategy>()>>> methods{
      {"none", [] { return std::make_unique<adversarial::NoAdversary>(); }},
      {"fgm", [] { return std::make_unique<adversarial::Fgm>(0.1); }},
      {"pgd", [] { return std::make_unique<adversarial::Pgd>(0.1, 0.03, 2); }},
      {"freelb", [] { return std::make_unique<adversarial::FreeLb>(0.05, 0.03, 2, 0.1); }},
      {"smart", [] { return std::make_unique<adversarial::Smart>(0.02, 0.01, 1, 1.0); }},
      {"rdrop", [] { return std::make_unique<adversarial::RDrop>(1.0); }},
  };
  for (bool sparse : {true, false}) {
    auto plain = random_model(unif::Task::TokenClassification, sparse, 5, 0.1, false);
    auto ckpt = random_model(unif::Task::TokenClassification, sparse, 5, 0.1, true);
    for (const auto& [name, make] : methods)
      for (int64_t replicas : {0, 3}) {
        INFO(name << (sparse ? " sparse " : " dense ") << replicas << " replicas");
        auto a = make(), b = make();
        torch::manual_seed(21);  // one device: dropout from the global generator
        const auto [ref, ref_loss] = strategy_step(*plain, replicas, *a, batch, z, 2);
        torch::manual_seed(21);
        const auto [got, got_loss] = strategy_step(*ckpt, replicas, *b, batch, z, 2);
        CHECK(got_loss == ref_loss);
        for (const auto& [key, value] : ref) {
          INFO(key);
          CHECK(torch::equal(got.at(key), value));
        }
      }
  }
}

TEST_CASE("every encoder family: 2 and 3 replicas equal one device (token classification, masked_lm, freelb)",
          "[parallel][families]") {
  const std::string family =
      GENERATE("roberta", "xlm-roberta", "distilbert", "electra", "albert", "deberta-v2", "modernbert", "mpnet");
  const fs::path dir = fs::path(UNIF_TEST_FIXTURES) / "families" / family;
  auto [batch, z] = token_batch(7, 12, 5);
  torch::manual_seed(13);
  auto picked = (torch::rand({7, 12}) < 0.3) & (batch.attention_mask == 1);
  auto mlm_labels =
      torch::where(picked, torch::randint(0, 120, {7, 12}, torch::kLong), torch::full({7, 12}, -100, torch::kLong));
  const double mlm_z = static_cast<double>(picked.sum().item<int64_t>());
  for (bool sparse : {true, false})
    for (unif::Task task : {unif::Task::TokenClassification, unif::Task::MaskedLm}) {
      auto config = framework::read_hf_config(dir / "config.json");
      config.bert.hidden_dropout_prob(0.0).attention_probs_dropout_prob(0.0).classifier_dropout(0.0);
      framework::PretrainedOptions options;
      options.task = task;
      options.num_labels = 5;
      options.sparse_embeddings = sparse;
      options.fresh_mismatched_head = true;  // the fixtures' 3-label heads
      torch::manual_seed(7);
      auto proto = framework::load_pretrained(dir, config, options).model;
      proto->train();
      models::Batch b = batch;
      double zz = z;
      if (task == unif::Task::MaskedLm) b.labels = mlm_labels, zz = mlm_z;
      const auto local = local_step(*proto, b, zz);
      for (int64_t n : {2, 3}) {
        INFO(family << " " << to_string(task) << (sparse ? " sparse " : " dense ") << n << " replicas");
        require_same_step(parallel_step(*proto, n, b, zz), local, b.attention_mask);
      }
      if (task != unif::Task::TokenClassification) continue;
      adversarial::FreeLb local_freelb(0.05, 0.03, 2, 0.1), dp_freelb(0.05, 0.03, 2, 0.1);
      const auto [one, one_loss] = strategy_step(*proto, 0, local_freelb, b, zz);
      const auto [two, two_loss] = strategy_step(*proto, 2, dp_freelb, b, zz);
      CHECK(two_loss == Approx(one_loss).epsilon(1e-6));
      for (const auto& [key, value] : one) {
        INFO(family << " freelb" << (sparse ? " sparse " : " dense ") << key);
        CHECK(worst_excess(two.at(key), value) <= 0);
      }
    }
}
