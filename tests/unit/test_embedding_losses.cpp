// Sentence-embedding pooling and losses (models/heads/embedding) against sentence-transformers' own
// Pooling, Normalize and loss classes: tests/fixtures/embedding/reference.json, written by
// make_reference.py beside it (the values and the gradients w.r.t. the inputs). Also: cached_mnrl is
// mnrl, the candidates are blocked per column (a layout interleaved per example gives another loss),
// MatryoshkaLoss sorts its dims, the names of the choices, and each class of bad input.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "framework/common/error.h"
#include "models/heads/embedding/losses.h"
#include "models/heads/embedding/pooling.h"

using unif::EmbeddingLoss;
using unif::Pooling;
using unif::Similarity;
using unif::models::embedding_loss;
using unif::models::EmbeddingLossOptions;
using json = nlohmann::json;

namespace {

constexpr double kRelative = 1e-6;  // float32, relative to the largest reference value

const json& reference() {
  static const json ref = [] {
    std::ifstream in(std::string(UNIF_TEST_FIXTURES) + "/embedding/reference.json");
    REQUIRE(in.good());
    return json::parse(in);
  }();
  return ref;
}

torch::Tensor tensor_of(const json& t) {
  std::vector<float> data;
  for (const auto& v : t.at("data")) data.push_back(static_cast<float>(v.get<double>()));
  const auto shape = t.at("shape").get<std::vector<int64_t>>();
  return torch::tensor(data, torch::kFloat).reshape(shape);
}

/// Every |got - want| <= kRelative · max|want| (and the shapes equal).
void require_close(const torch::Tensor& got, const torch::Tensor& want, const std::string& what) {
  INFO(what);
  REQUIRE(got.sizes() == want.sizes());
  const double scale = std::max(want.abs().max().item<double>(), 1e-30);
  const double diff = (got.to(torch::kFloat) - want).abs().max().item<double>();
  INFO("max |difference| " << diff << ", max |reference| " << scale);
  REQUIRE(diff <= kRelative * scale);
}

void require_close(double got, double want, const std::string& what) {
  INFO(what << ": got " << std::setprecision(9) << got << ", want " << want << ", relative difference "
            << std::abs(got - want) / std::abs(want));
  REQUIRE(std::abs(got - want) <= kRelative * std::abs(want));
}

EmbeddingLossOptions options_of(const json& o) {
  EmbeddingLossOptions out;
  out.loss = unif::parse_enum<EmbeddingLoss>(o.at("loss").get<std::string>(), "loss");
  out.similarity = unif::parse_enum<Similarity>(o.at("similarity").get<std::string>(), "similarity");
  out.scale = o.at("scale").get<double>();
  out.symmetric = o.at("symmetric").get<bool>();
  out.matryoshka_dims = o.at("matryoshka_dims").get<std::vector<int64_t>>();
  out.matryoshka_weights = o.at("matryoshka_weights").get<std::vector<double>>();
  return out;
}

/// Loss value and d loss / d emb.
std::pair<double, torch::Tensor> loss_and_grad(const torch::Tensor& emb, const torch::Tensor& scores,
                                               const EmbeddingLossOptions& o) {
  auto leaf = emb.detach().clone().requires_grad_();
  auto loss = embedding_loss(leaf, scores, o);
  REQUIRE(loss.dim() == 0);
  loss.backward();
  return {loss.item<double>(), leaf.grad()};
}

torch::Tensor random_emb(int64_t n, int64_t c, int64_t d, uint64_t seed) {
  torch::manual_seed(seed);
  return torch::randn({n, c, d});
}

/// Cross-entropy of row i over `candidates` (M, D) with target column `target`, cosine similarity times
/// scale, computed one candidate at a time: an independent statement of MultipleNegativesRankingLoss.
double row_loss(const torch::Tensor& anchor, const std::vector<torch::Tensor>& candidates, size_t target,
                double scale) {
  std::vector<double> logits;
  for (const auto& c : candidates)
    logits.push_back(scale * (anchor.dot(c) / (anchor.norm() * c.norm())).item<double>());
  const double top = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (const double l : logits) sum += std::exp(l - top);
  return top + std::log(sum) - logits[target];
}

}  // namespace

TEST_CASE("pooling equals sentence-transformers' Pooling and Normalize modules", "[embedding]") {
  const auto& ref = reference().at("pooling");
  const auto hidden = tensor_of(ref.at("hidden"));
  const auto weights = tensor_of(ref.at("weights"));
  int checked = 0;
  for (const auto& batch : ref.at("cases")) {
    std::vector<int64_t> flat;
    const auto rows = batch.at("attention_mask").get<std::vector<std::vector<int64_t>>>();
    for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
    const auto attention_mask = torch::tensor(flat, torch::kLong).view({static_cast<int64_t>(rows.size()), -1});
    for (const auto& [name, want] : batch.at("modes").items()) {
      const std::string what = batch.at("name").get<std::string>() + " " + name;
      const auto mode = unif::parse_enum<Pooling>(name, "pooling");
      auto h = hidden.clone().requires_grad_();
      const auto pooled = unif::models::pool(h, attention_mask, mode);
      require_close(pooled, tensor_of(want.at("pooled")), what + " pooled");
      require_close(unif::models::normalize(pooled), tensor_of(want.at("normalized")), what + " normalized");
      (pooled * weights).sum().backward();
      require_close(h.grad(), tensor_of(want.at("grad")), what + " gradient");
      ++checked;
    }
  }
  CHECK(checked == 11);  // 3 batches x 4 modes, but max on the all-padding batch
}

TEST_CASE("pooling: an all-padding row is -inf under max, 0 under mean and lasttoken, token 0 under cls",
          "[embedding]") {
  const auto hidden = torch::arange(24, torch::kFloat).view({2, 3, 4}) + 1;
  const auto mask = torch::tensor({1, 1, 0, 0, 0, 0}, torch::kLong).view({2, 3});
  const auto max = unif::models::pool(hidden, mask, Pooling::Max);
  CHECK(max[1].eq(-std::numeric_limits<float>::infinity()).all().item<bool>());
  CHECK(torch::equal(max[0], hidden[0][1]));
  CHECK(unif::models::pool(hidden, mask, Pooling::Mean)[1].eq(0).all().item<bool>());
  CHECK(unif::models::pool(hidden, mask, Pooling::LastToken)[1].eq(0).all().item<bool>());
  CHECK(torch::equal(unif::models::pool(hidden, mask, Pooling::Cls)[1], hidden[1][0]));
  // A bool or float mask reads as the same 0/1 mask.
  CHECK(torch::equal(unif::models::pool(hidden, mask.to(torch::kBool), Pooling::LastToken),
                     unif::models::pool(hidden, mask, Pooling::LastToken)));
  CHECK(torch::equal(unif::models::pool(hidden, mask.to(torch::kFloat), Pooling::Mean),
                     unif::models::pool(hidden, mask, Pooling::Mean)));
}

TEST_CASE("every loss equals sentence-transformers' loss class, value and gradient", "[embedding]") {
  const auto& ref = reference().at("losses");
  const auto emb_all = tensor_of(ref.at("emb"));
  const auto scores = torch::tensor(ref.at("scores").get<std::vector<float>>(), torch::kFloat);
  INFO("sentence-transformers " << reference().at("sentence_transformers").get<std::string>());
  int checked = 0;
  for (const auto& c : ref.at("cases")) {
    const std::string what = c.at("name").get<std::string>();
    const auto o = options_of(c.at("options"));
    const auto emb = emb_all.narrow(1, 0, c.at("columns").get<int64_t>());
    const auto [loss, grad] = loss_and_grad(emb, c.at("scores").get<bool>() ? scores : torch::Tensor(), o);
    require_close(loss, c.at("loss").get<double>(), what + " loss");
    require_close(grad, tensor_of(c.at("grad")), what + " gradient");
    ++checked;
  }
  CHECK(checked == 26);
}

TEST_CASE("cached_mnrl is mnrl: the same value and gradient", "[embedding]") {
  const auto emb = random_emb(6, 4, 16, 7);
  for (const bool symmetric : {false, true}) {
    for (const auto similarity : {Similarity::Cosine, Similarity::Dot}) {
      EmbeddingLossOptions mnrl;
      mnrl.symmetric = symmetric;
      mnrl.similarity = similarity;
      auto cached = mnrl;
      cached.loss = EmbeddingLoss::CachedMnrl;
      const auto [a, ga] = loss_and_grad(emb, {}, mnrl);
      const auto [b, gb] = loss_and_grad(emb, {}, cached);
      CHECK(a == b);
      CHECK(torch::equal(ga, gb));
    }
  }
}

TEST_CASE("mnrl's candidates are blocked per column, not interleaved per example", "[embedding]") {
  // Rows: anchor a_i, positive p_i, negatives n1_i, n2_i. Blocked candidates are
  // [p_0..p_3, n1_0..n1_3, n2_0..n2_3] with a_i's target at column i; a layout interleaved per example,
  // [p_0, n1_0, n2_0, p_1, ...] read with the same targets, scores other candidates as positives.
  const int64_t n = 4;
  const int64_t columns = 4;
  const auto emb = random_emb(n, columns, 8, 11);
  std::vector<torch::Tensor> blocked;
  std::vector<torch::Tensor> interleaved;
  for (int64_t c = 1; c < columns; ++c)
    for (int64_t i = 0; i < n; ++i) blocked.push_back(emb[i][c]);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 1; c < columns; ++c) interleaved.push_back(emb[i][c]);
  double want_blocked = 0;
  double want_interleaved = 0;
  for (int64_t i = 0; i < n; ++i) {
    want_blocked += row_loss(emb[i][0], blocked, static_cast<size_t>(i), 20.0) / n;
    want_interleaved += row_loss(emb[i][0], interleaved, static_cast<size_t>(i), 20.0) / n;
  }
  const double got = embedding_loss(emb, {}, EmbeddingLossOptions{}).item<double>();
  INFO("blocked " << want_blocked << ", interleaved " << want_interleaved << ", got " << got);
  CHECK(std::abs(got - want_blocked) <= 1e-5 * std::abs(want_blocked));
  REQUIRE(std::abs(want_blocked - want_interleaved) > 1e-2);
  CHECK(std::abs(got - want_interleaved) > 1e-2);

  // Without hard negatives the two layouts coincide.
  const auto pairs = emb.narrow(1, 0, 2);
  double want_pairs = 0;
  std::vector<torch::Tensor> positives;
  for (int64_t i = 0; i < n; ++i) positives.push_back(emb[i][1]);
  for (int64_t i = 0; i < n; ++i) want_pairs += row_loss(emb[i][0], positives, static_cast<size_t>(i), 20.0) / n;
  CHECK(std::abs(embedding_loss(pairs, {}, EmbeddingLossOptions{}).item<double>() - want_pairs) <=
        1e-5 * std::abs(want_pairs));
}

TEST_CASE("matryoshka: dims in any order (sorted, each keeping its weight), weights default to 1", "[embedding]") {
  const auto emb = random_emb(5, 3, 12, 3);
  EmbeddingLossOptions sorted;
  sorted.matryoshka_dims = {12, 6, 3};
  sorted.matryoshka_weights = {1.0, 0.5, 0.25};
  EmbeddingLossOptions shuffled = sorted;
  shuffled.matryoshka_dims = {3, 12, 6};
  shuffled.matryoshka_weights = {0.25, 1.0, 0.5};
  const auto [a, ga] = loss_and_grad(emb, {}, sorted);
  const auto [b, gb] = loss_and_grad(emb, {}, shuffled);
  CHECK(a == b);
  CHECK(torch::equal(ga, gb));

  // Σ_k w_k · L(normalize(emb[..., :d_k])): default weights 1.
  EmbeddingLossOptions ones;
  ones.matryoshka_dims = {12, 4};
  EmbeddingLossOptions plain;
  const auto trunc = [&](int64_t d) { return unif::models::normalize(emb.narrow(-1, 0, d)); };
  const double want =
      embedding_loss(trunc(12), {}, plain).item<double>() + embedding_loss(trunc(4), {}, plain).item<double>();
  require_close(embedding_loss(emb, {}, ones).item<double>(), want, "default weights");
}

TEST_CASE("the choices' names are the config's", "[embedding]") {
  CHECK(unif::join_names<Pooling>(" | ") == "mean | cls | max | lasttoken");
  CHECK(unif::join_names<EmbeddingLoss>(" | ") == "mnrl | cached_mnrl | cosent | cosine");
  CHECK(unif::join_names<Similarity>(" | ") == "cosine | dot");
  CHECK(unif::enum_from_name<Pooling>("lasttoken") == Pooling::LastToken);
  CHECK(unif::name_of(EmbeddingLoss::CachedMnrl) == "cached_mnrl");
  CHECK_FALSE(unif::enum_from_name<Pooling>("weightedmean").has_value());
  CHECK_THROWS_WITH(unif::parse_enum<Similarity>("euclidean", "embedding.similarity"),
                    "embedding.similarity: expected cosine or dot, got 'euclidean'");
}

TEST_CASE("bad inputs: each class is refused with a clear message", "[embedding]") {
  using Catch::Contains;
  const auto emb = random_emb(4, 3, 8, 5);
  const auto pairs = emb.narrow(1, 0, 2);
  const auto scores = torch::rand({4});
  EmbeddingLossOptions mnrl;
  EmbeddingLossOptions cosent;
  cosent.loss = EmbeddingLoss::Cosent;
  EmbeddingLossOptions cosine;
  cosine.loss = EmbeddingLoss::Cosine;

  SECTION("fewer than 2 columns") {
    CHECK_THROWS_AS(embedding_loss(emb.narrow(1, 0, 1), {}, mnrl), unif::UserError);
    CHECK_THROWS_WITH(embedding_loss(emb.narrow(1, 0, 1), {}, mnrl), Contains("at least 2 text columns"));
  }
  SECTION("scores missing for cosent and cosine") {
    CHECK_THROWS_AS(embedding_loss(pairs, {}, cosent), unif::UserError);
    CHECK_THROWS_WITH(embedding_loss(pairs, {}, cosine), Contains("needs a score per pair"));
  }
  SECTION("scores with other than 2 columns, or given to mnrl") {
    CHECK_THROWS_AS(embedding_loss(emb, scores, cosent), unif::UserError);
    CHECK_THROWS_WITH(embedding_loss(emb, scores, cosine), Contains("exactly 2 text columns"));
    CHECK_THROWS_WITH(embedding_loss(pairs, scores, mnrl), Contains("takes no scores"));
    CHECK_THROWS_AS(embedding_loss(pairs, torch::rand({3}), cosent), std::invalid_argument);
  }
  SECTION("matryoshka dims larger than D or not positive") {
    auto o = mnrl;
    o.matryoshka_dims = {8, 16};
    CHECK_THROWS_AS(embedding_loss(emb, {}, o), unif::UserError);
    CHECK_THROWS_WITH(embedding_loss(emb, {}, o),
                      "embedding.matryoshka_dims: 16 is larger than the embedding dimension 8");
    o.matryoshka_dims = {8, 0};
    CHECK_THROWS_WITH(embedding_loss(emb, {}, o), Contains("must be > 0"));
  }
  SECTION("matryoshka weights not one per dim, or not finite") {
    auto o = mnrl;
    o.matryoshka_dims = {8, 4};
    o.matryoshka_weights = {1.0};
    CHECK_THROWS_AS(embedding_loss(emb, {}, o), unif::UserError);
    CHECK_THROWS_WITH(unif::models::check_embedding_loss_options(o),
                      Contains("embedding.matryoshka_weights: one weight per dimension"));
    o.matryoshka_weights = {1.0, std::nan("")};
    CHECK_THROWS_WITH(embedding_loss(emb, {}, o), Contains("finite"));
  }
  SECTION("an empty batch, or emb not (N, C, D)") {
    CHECK_THROWS_AS(embedding_loss(torch::zeros({0, 2, 8}), {}, mnrl), std::invalid_argument);
    CHECK_THROWS_WITH(embedding_loss(torch::zeros({0, 2, 8}), {}, mnrl), Contains("N = 0"));
    CHECK_THROWS_AS(embedding_loss(torch::zeros({4, 8}), {}, mnrl), std::invalid_argument);
    CHECK_THROWS_AS(embedding_loss(torch::zeros({4, 2, 8}, torch::kLong), {}, mnrl), std::invalid_argument);
  }
  SECTION("options that do not fit the loss") {
    auto o = mnrl;
    o.scale = 0;
    CHECK_THROWS_WITH(embedding_loss(emb, {}, o), Contains("embedding.scale: must be a positive number"));
    auto sym = cosent;
    sym.symmetric = true;
    CHECK_THROWS_WITH(embedding_loss(pairs, scores, sym), Contains("embedding.symmetric"));
    auto dot = cosine;
    dot.similarity = Similarity::Dot;
    CHECK_THROWS_WITH(embedding_loss(pairs, scores, dot), Contains("embedding.similarity"));
    cosine.scale = 0;  // CosineSimilarityLoss has no scale
    CHECK_NOTHROW(embedding_loss(pairs, scores, cosine));
  }
  SECTION("pooling shapes") {
    const auto hidden = torch::randn({2, 3, 4});
    CHECK_THROWS_AS(unif::models::pool(hidden, torch::ones({2, 4}), Pooling::Mean), std::invalid_argument);
    CHECK_THROWS_AS(unif::models::pool(hidden[0], torch::ones({3}), Pooling::Mean), std::invalid_argument);
    CHECK_THROWS_AS(unif::models::pool(torch::randn({2, 0, 4}), torch::ones({2, 0}), Pooling::Cls),
                    std::invalid_argument);
  }
}
