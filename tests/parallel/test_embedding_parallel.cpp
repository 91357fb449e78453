// In-batch-negative losses across replicas (SPEC §5, §9): one step of task embedding on 2 and 3 CPU
// replicas equals one device with the whole batch — the loss and every parameter's gradient — for
// each loss (mnrl with and without hard negatives, symmetric, dot similarity, cosent, cosine,
// matryoshka), on batches that do not divide evenly, shards padded to different lengths, sparse and
// dense word-embedding gradients. The one-device reference is plain autograd on the model's own
// forward and batch_loss, not an engine. A deliberately broken gather (each replica scoring its
// own shard only, as a per-device loss would) must differ from it, so the test can fail.
// cached_mnrl's gradient cache (framework/engines/gradient_cache.h) forwards each replica's shard in
// pieces and again in its backward: the same step as mnrl on the whole batch, and with dropout on
// the same masks in both forwards (the cache checks that each piece's outputs repeat).
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include <torch/types.h>

#include "framework/common/error.h"
#include "framework/engines/data_parallel.h"
#include "framework/engines/local_engine.h"
#include "models/heads/embedding_model.h"
#include "models/heads/factory.h"

using namespace unif;
using framework::DataParallelEngine;
using framework::DataParallelOptions;
using framework::LocalEngine;

namespace {

// A small random BERT embedder (dropout 0 unless asked).
std::shared_ptr<models::EncoderForEmbeddingImpl> embedder(bool sparse, models::EmbeddingOptions options,
                                                          double dropout = 0.0) {
  torch::manual_seed(11);
  auto o = models::EncoderConfig()
               .vocab_size(90)
               .hidden_size(32)
               .num_hidden_layers(2)
               .num_attention_heads(4)
               .intermediate_size(48)
               .max_position_embeddings(40)
               .hidden_dropout_prob(dropout)
               .attention_probs_dropout_prob(dropout)
               .initializer_range(0.2)
               .sparse_embeddings(sparse);
  auto model = std::dynamic_pointer_cast<models::EncoderForEmbeddingImpl>(
      models::make_encoder_task_model(Task::Embedding, o, 1));
  REQUIRE(model);
  model->set_embedding_options(std::move(options));
  model->train();
  return model;
}

// N examples of C texts, lengths varying by example and column (so that shards pad differently);
// scores in [0, 5] for the scored losses.
models::Batch texts_batch(int64_t n, int64_t c, bool scores) {
  torch::manual_seed(3);
  const int64_t L = 12;
  auto ids = torch::zeros({n, c, L}, torch::kLong), mask = torch::zeros({n, c, L}, torch::kLong);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j) {
      const int64_t len = 3 + (i * 5 + j * 3) % (L - 3);  // the longest texts in the first shards
      ids[i][j].narrow(0, 0, len).copy_(torch::randint(5, 90, {len}, torch::kLong));
      ids[i][j][0] = 1;
      mask[i][j].narrow(0, 0, len).fill_(1);
    }
  models::Batch b;
  b.input_ids = ids;
  b.token_type_ids = torch::zeros_like(ids);
  b.attention_mask = mask;
  if (scores) b.labels = torch::rand({n}) * 5.0;
  return b;
}

struct Step {
  double loss = 0.0;
  std::vector<torch::Tensor> grads;
};

std::vector<torch::Tensor> grads_of(models::TaskModel& m) {
  std::vector<torch::Tensor> g;
  for (const auto& p : m.parameters()) {
    const auto& x = p.grad();
    g.push_back(!x.defined() ? torch::zeros_like(p) : (x.is_sparse() ? x.to_dense() : x.clone()));
  }
  return g;
}

// One device, plain autograd: forward on the whole batch, batch_loss, backward of loss / N.
Step reference(models::EncoderForEmbeddingImpl& m, const models::Batch& batch) {
  m.zero_grad();
  const auto out = m.forward(batch);
  const auto loss = m.batch_loss(out, batch);
  (loss / static_cast<double>(batch.size())).backward();
  return {loss.item<double>(), grads_of(m)};
}

Step on_replicas(const std::shared_ptr<models::EncoderForEmbeddingImpl>& m, const models::Batch& batch,
                 int64_t replicas) {
  m->zero_grad();
  framework::PassResult r;
  if (replicas == 1) {
    LocalEngine engine(m, [] {});
    r = engine.run(batch, {}, 1.0 / static_cast<double>(batch.size()), false);
  } else {
    DataParallelOptions o;
    o.devices.assign(static_cast<size_t>(replicas), torch::kCPU);
    DataParallelEngine engine(
        m, [] {}, o);
    r = engine.run(batch, {}, 1.0 / static_cast<double>(batch.size()), false);
  }
  CHECK(r.output.loss_count == batch.size());
  CHECK(r.output.logits.size(0) == batch.size());
  return {r.loss_sum, grads_of(*m)};
}

// max over elements of |a-b| - (atol + rtol*|b|): <= 0 is equal to float32 summation error.
double worst_excess(const torch::Tensor& a, const torch::Tensor& b) {
  auto ad = a.to(torch::kDouble), bd = b.to(torch::kDouble);
  return ((ad - bd).abs() - (1e-6 + 1e-5 * bd.abs())).max().item<double>();
}

void same_step(const Step& a, const Step& b) {
  CHECK(a.loss == Approx(b.loss).epsilon(1e-5));
  REQUIRE(a.grads.size() == b.grads.size());
  for (size_t i = 0; i < a.grads.size(); ++i) {
    INFO("parameter " << i);
    CHECK(worst_excess(a.grads[i], b.grads[i]) <= 0.0);
  }
}

struct Case {
  const char* name;
  EmbeddingLoss loss;
  Similarity similarity;
  bool symmetric;
  int64_t columns;
  std::vector<int64_t> matryoshka;
  bool normalize = false;       // the model's Normalize (dot similarity on unit vectors, as Normalize + dot models)
  int64_t mini_batch_size = 0;  // cached_mnrl: texts per forward
};

}  // namespace

TEST_CASE("in-batch losses: one step on 1, 2, 3 replicas equals one device with the whole batch",
          "[parallel][embedding]") {
  const std::vector<Case> cases{
      {"mnrl pairs", EmbeddingLoss::Mnrl, Similarity::Cosine, false, 2, {}},
      {"mnrl two hard negatives", EmbeddingLoss::Mnrl, Similarity::Cosine, false, 4, {}},
      {"mnrl symmetric, normalized, dot", EmbeddingLoss::Mnrl, Similarity::Dot, true, 3, {}, true},
      {"cached_mnrl, one example per forward", EmbeddingLoss::CachedMnrl, Similarity::Cosine, false, 3, {}, false, 3},
      {"cached_mnrl, two examples per forward, symmetric, two hard negatives",
       EmbeddingLoss::CachedMnrl,
       Similarity::Cosine,
       true,
       4,
       {},
       false,
       8},
      {"cached_mnrl, matryoshka, a piece larger than a shard",
       EmbeddingLoss::CachedMnrl,
       Similarity::Cosine,
       false,
       2,
       {32, 8},
       false,
       100},
      {"cosent", EmbeddingLoss::Cosent, Similarity::Cosine, false, 2, {}},
      {"cosine", EmbeddingLoss::Cosine, Similarity::Cosine, false, 2, {}},
      {"matryoshka mnrl", EmbeddingLoss::Mnrl, Similarity::Cosine, false, 3, {32, 16, 8}},
  };
  for (const auto& c : cases)
    for (bool sparse : {true, false}) {
      DYNAMIC_SECTION(c.name << (sparse ? ", sparse" : ", dense")) {
        models::EmbeddingOptions o;
        o.loss.loss = c.loss;
        o.loss.similarity = c.similarity;
        o.loss.symmetric = c.symmetric;
        o.normalize = c.normalize;
        o.loss.matryoshka_dims = c.matryoshka;
        o.mini_batch_size = c.mini_batch_size;
        const bool scored = c.loss == EmbeddingLoss::Cosent || c.loss == EmbeddingLoss::Cosine;
        const auto batch = texts_batch(7, c.columns, scored);  // 7 = 4 + 3 = 3 + 2 + 2: uneven shards
        auto model = embedder(sparse, o);
        const Step want = reference(*model, batch);
        CHECK(want.loss > 0.0);
        for (int64_t replicas : {1, 2, 3}) {
          INFO(replicas << " replicas");
          same_step(on_replicas(model, batch, replicas), want);
        }
      }
    }
}

TEST_CASE("in-batch losses: per-shard losses (no gather) differ from one device, so the test can fail",
          "[parallel][embedding]") {
  models::EmbeddingOptions o;
  const auto batch = texts_batch(6, 3, false);
  auto model = embedder(false, o);
  const Step want = reference(*model, batch);
  // Each half scored against its own examples only: what a loss computed per device would do.
  model->zero_grad();
  double loss = 0.0;
  for (int64_t begin : {0, 3}) {
    const auto half = framework::slice_batch(batch, {begin, 3});
    const auto l = model->batch_loss(model->forward(half), half);
    (l / 6.0).backward();
    loss += l.item<double>();
  }
  const Step per_shard{loss, grads_of(*model)};
  CHECK(std::abs(per_shard.loss - want.loss) > 1e-3);
  double worst = 0.0;
  for (size_t i = 0; i < want.grads.size(); ++i)
    worst = std::max(worst, worst_excess(per_shard.grads[i], want.grads[i]));
  CHECK(worst > 0.0);
}

TEST_CASE("in-batch losses take no adversarial pass: a perturbation is a StrategyError", "[parallel][embedding]") {
  auto model = embedder(false, {});
  const auto batch = texts_batch(4, 2, false);
  LocalEngine engine(model, [] {});
  const auto delta = torch::zeros({4, 12, 32});
  CHECK_THROWS_AS(engine.run(batch, delta, 1.0, false), framework::StrategyError);
  framework::PassRequest request;
  request.param_grads = false;
  request.want_delta_grad = true;
  CHECK_THROWS_AS(engine.run_custom(batch, request), framework::StrategyError);
}

// With dropout on, the gradient cache's second forward of each piece must draw the masks its first
// forward drew (else the cache throws: the outputs would differ). One piece per shard draws what mnrl's
// single forward draws, so the two steps are equal; smaller pieces draw other masks (as
// sentence-transformers' cached loss does), checked to run and to repeat.
TEST_CASE("cached_mnrl with dropout: each piece's masks replayed, on 1 and 2 replicas", "[parallel][embedding]") {
  const auto batch = texts_batch(5, 3, false);
  for (int64_t replicas : {1, 2}) {
    INFO(replicas << " replicas");
    models::EmbeddingOptions mnrl;
    auto plain = embedder(false, mnrl, 0.3);
    torch::manual_seed(5);
    const Step want = on_replicas(plain, batch, replicas);
    models::EmbeddingOptions cached;
    cached.loss.loss = EmbeddingLoss::CachedMnrl;
    cached.mini_batch_size = 3 * 5;  // a piece holds a whole shard
    auto whole = embedder(false, cached, 0.3);
    torch::manual_seed(5);
    same_step(on_replicas(whole, batch, replicas), want);
    cached.mini_batch_size = 3;  // one example per forward
    auto pieces = embedder(false, cached, 0.3);
    torch::manual_seed(5);
    const Step first = on_replicas(pieces, batch, replicas);
    const double after_first = torch::rand({1}).item<double>();
    CHECK(std::isfinite(first.loss));
    CHECK(std::abs(first.loss - want.loss) > 1e-6);  // other masks
    auto again = embedder(false, cached, 0.3);
    torch::manual_seed(5);
    same_step(on_replicas(again, batch, replicas), first);
    CHECK(torch::rand({1}).item<double>() == after_first);
  }
}
