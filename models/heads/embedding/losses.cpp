// Sentence-embedding losses: see losses.h for the formulas. Each is written as sentence-transformers
// 6.3 computes it (compute_loss_from_embeddings, MatryoshkaLoss's shrink), op for op, so that values
// and gradients agree with it to float32 rounding.
#include "models/heads/embedding/losses.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>

#include <torch/nn/functional/normalization.h>

#include "framework/common/error.h"
#include "framework/common/strings.h"

namespace unif::models {

namespace {

/// sentence-transformers scores half and bfloat16 embeddings in float32 (_convert_to_float_tensor).
torch::Tensor embedding_scoring_type(const torch::Tensor& t) {
  const auto dtype = t.scalar_type();
  return (dtype == torch::kHalf || dtype == torch::kBFloat16) ? t.to(torch::kFloat) : t;
}

torch::Tensor embedding_rows_normalized(const torch::Tensor& t) {
  namespace nnf = torch::nn::functional;
  return nnf::normalize(t, nnf::NormalizeFuncOptions().p(2).dim(-1));  // eps 1e-12
}

std::string embedding_loss_label(const EmbeddingLossOptions& o) { return "embedding.loss " + name_of(o.loss); }

bool ranks_in_batch(EmbeddingLoss loss) { return loss == EmbeddingLoss::Mnrl || loss == EmbeddingLoss::CachedMnrl; }

/// MultipleNegativesRankingLoss (symmetric: directions query_to_doc + doc_to_query, per_direction).
torch::Tensor in_batch_ranking_loss(const torch::Tensor& emb, const EmbeddingLossOptions& o) {
  const int64_t n = emb.size(0);
  const int64_t columns = emb.size(1);
  const auto anchors = emb.select(1, 0);    // (N, D)
  const auto positives = emb.select(1, 1);  // (N, D)
  // Blocked per column: [positives; negatives_1; ...], as torch.cat(embeddings[1:], dim=0).
  std::vector<torch::Tensor> candidate_columns;
  for (int64_t c = 1; c < columns; ++c) candidate_columns.push_back(emb.select(1, c));
  const auto candidates = torch::cat(candidate_columns, 0);  // ((C-1)·N, D)

  const auto query_to_doc = similarity_matrix(anchors, candidates, o.similarity) * o.scale;  // (N, (C-1)·N)
  const auto positive_scores = query_to_doc.narrow(1, 0, n).diagonal();                      // (N)
  auto log_z = torch::logsumexp(query_to_doc, {1});                                          // (N)
  if (o.symmetric) {
    // Row i: p_i against every anchor a_j (the hard negatives take no part in this direction).
    const auto doc_to_query = similarity_matrix(anchors, positives, o.similarity).t() * o.scale;  // (N, N)
    log_z = (log_z + torch::logsumexp(doc_to_query, {1})) / 2;
  }
  return -(positive_scores - log_z).mean();
}

/// CoSENTLoss, as sentence-transformers 6.3 sums it: sorted by score, each pair score plus the
/// log-sum-exp of minus the scores of strictly higher labels (a suffix logcumsumexp), then the
/// log-sum-exp of those and a 0. Equal to log(1 + Σ_{y_i < y_j} exp(s_i - s_j)).
torch::Tensor cosent_loss(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& scores,
                          const EmbeddingLossOptions& o) {
  auto s = pairwise_similarity(a, b, o.similarity) * o.scale;  // (N)
  auto labels = scores.to(s.device()).reshape({-1});
  if (labels.scalar_type() == torch::kBool) labels = labels.to(torch::kLong);
  const auto [sorted, order] = labels.sort(/*stable=*/true, /*dim=*/0, /*descending=*/false);
  s = s.index_select(0, order);
  const auto higher_start = torch::searchsorted(sorted, sorted, /*out_int32=*/false, /*right=*/true);  // (N)
  auto suffix = torch::logcumsumexp(-s.flip({0}), 0).flip({0});
  suffix = torch::cat({suffix, torch::full({1}, -std::numeric_limits<double>::infinity(), s.options())});
  s = s + suffix.index_select(0, higher_start);
  s = torch::cat({torch::zeros({1}, s.options()), s});
  return torch::logsumexp(s, {0});
}

/// CosineSimilarityLoss: MSELoss (mean) between torch.cosine_similarity(a, b) and the scores.
torch::Tensor cosine_loss(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& scores) {
  const auto cos = torch::cosine_similarity(embedding_scoring_type(a), embedding_scoring_type(b), 1, 1e-8);
  return torch::mse_loss(cos, scores.to(cos.device(), cos.scalar_type()).reshape({-1}));
}

torch::Tensor unwrapped_embedding_loss(const torch::Tensor& emb, const torch::Tensor& scores,
                                       const EmbeddingLossOptions& o) {
  switch (o.loss) {
    case EmbeddingLoss::Mnrl:
    case EmbeddingLoss::CachedMnrl: return in_batch_ranking_loss(emb, o);
    case EmbeddingLoss::Cosent: return cosent_loss(emb.select(1, 0), emb.select(1, 1), scores, o);
    case EmbeddingLoss::Cosine: return cosine_loss(emb.select(1, 0), emb.select(1, 1), scores);
  }
  throw std::invalid_argument("embedding_loss: unknown loss");
}

/// MatryoshkaLoss's shrink: the first `dim` features, L2-normalized (in float32 for half types).
torch::Tensor matryoshka_shrink(const torch::Tensor& t, int64_t dim) {
  return embedding_rows_normalized(embedding_scoring_type(t.narrow(-1, 0, dim))).to(t.scalar_type());
}

}  // namespace

void check_embedding_loss_options(const EmbeddingLossOptions& o, int64_t dimension) {
  const auto label = embedding_loss_label(o);
  if (o.loss != EmbeddingLoss::Cosine && !(std::isfinite(o.scale) && o.scale > 0)) {
    std::ostringstream got;
    got << o.scale;
    throw UserError("embedding.scale: must be a positive number for " + label + ", got " + got.str());
  }
  if (o.symmetric && !ranks_in_batch(o.loss))
    throw UserError("embedding.symmetric: applies to mnrl and cached_mnrl only, not " + label);
  if (o.loss == EmbeddingLoss::Cosine && o.similarity != Similarity::Cosine)
    throw UserError("embedding.similarity: " + label + " (CosineSimilarityLoss) compares cosines; " +
                    name_of(o.similarity) + " is not supported with it");
  for (const auto d : o.matryoshka_dims) {
    if (d <= 0) throw UserError("embedding.matryoshka_dims: every dimension must be > 0, got " + std::to_string(d));
    if (dimension > 0 && d > dimension)
      throw UserError("embedding.matryoshka_dims: " + std::to_string(d) + " is larger than the embedding dimension " +
                      std::to_string(dimension));
  }
  if (!o.matryoshka_weights.empty() && o.matryoshka_weights.size() != o.matryoshka_dims.size())
    throw UserError("embedding.matryoshka_weights: one weight per dimension of embedding.matryoshka_dims (" +
                    std::to_string(o.matryoshka_dims.size()) + "), got " + std::to_string(o.matryoshka_weights.size()));
  for (const auto w : o.matryoshka_weights)
    if (!std::isfinite(w)) throw UserError("embedding.matryoshka_weights: every weight must be a finite number");
}

torch::Tensor embedding_loss(const torch::Tensor& emb, const torch::Tensor& scores, const EmbeddingLossOptions& o) {
  if (!emb.defined() || emb.dim() != 3 || !emb.is_floating_point())
    throw std::invalid_argument(
        "embedding_loss: emb must be a floating-point [N, C, D] tensor, got " +
        (emb.defined() ? framework::shape_string(emb.sizes().vec()) : std::string("no tensor")));
  const int64_t n = emb.size(0);
  const int64_t columns = emb.size(1);
  if (n == 0) throw std::invalid_argument("embedding_loss: an empty batch (N = 0)");
  if (emb.size(2) == 0) throw std::invalid_argument("embedding_loss: embeddings of dimension 0");
  const auto label = embedding_loss_label(o);
  if (ranks_in_batch(o.loss)) {
    if (columns < 2)
      throw UserError(label +
                      ": needs at least 2 text columns (data.text_fields: anchor, positive[, negative_1 ..]), got " +
                      std::to_string(columns));
    if (scores.defined())
      throw UserError(label + ": takes no scores (its targets are the in-batch positives), but scores were given");
  } else {
    if (columns != 2)
      throw UserError(label + ": needs exactly 2 text columns (data.text_fields: text_a, text_b) and a score, got " +
                      std::to_string(columns) + " columns");
    if (!scores.defined()) throw UserError(label + ": needs a score per pair (data.label_field), got none");
    if (scores.numel() != n)
      throw std::invalid_argument("embedding_loss: " + std::to_string(n) + " pairs but " +
                                  std::to_string(scores.numel()) + " scores");
  }
  check_embedding_loss_options(o, emb.size(2));
  if (o.matryoshka_dims.empty()) return unwrapped_embedding_loss(emb, scores, o);

  // MatryoshkaLoss: dims sorted descending, each with its weight (a stable sort, as Python's sorted).
  std::vector<size_t> order(o.matryoshka_dims.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t i, size_t j) { return o.matryoshka_dims[i] > o.matryoshka_dims[j]; });
  // Its ForwardDecorator shrinks the previous dimension's (already normalized) output; its
  // CachedLossDecorator shrinks the full embedding each time. The same values, mirrored to the rounding.
  const bool nested = o.loss != EmbeddingLoss::CachedMnrl;
  torch::Tensor total;
  torch::Tensor shrunk = emb;
  for (const size_t k : order) {
    const int64_t dim = o.matryoshka_dims[k];
    const double weight = o.matryoshka_weights.empty() ? 1.0 : o.matryoshka_weights[k];
    shrunk = matryoshka_shrink(nested ? shrunk : emb, dim);
    auto term = unwrapped_embedding_loss(shrunk, scores, o) * weight;
    total = total.defined() ? total + term : term;
  }
  return total;
}

torch::Tensor similarity_matrix(const torch::Tensor& a, const torch::Tensor& b, Similarity similarity) {
  auto x = embedding_scoring_type(a);
  auto y = embedding_scoring_type(b);
  if (similarity == Similarity::Cosine) {
    x = embedding_rows_normalized(x);
    y = embedding_rows_normalized(y);
  }
  return torch::mm(x, y.transpose(0, 1));
}

torch::Tensor pairwise_similarity(const torch::Tensor& a, const torch::Tensor& b, Similarity similarity) {
  auto x = embedding_scoring_type(a);
  auto y = embedding_scoring_type(b);
  if (similarity == Similarity::Cosine) {
    x = embedding_rows_normalized(x);
    y = embedding_rows_normalized(y);
  }
  return (x * y).sum(-1);
}

}  // namespace unif::models
