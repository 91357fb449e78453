// Sentence-embedding losses (SPEC §9 `embedding`, docs/spec.md §5 "Sentence embeddings") as pure
// tensor functions: the value sentence-transformers' loss class returns (its mean conventions) for
// the same embeddings, differentiable w.r.t. them. The engines embed the texts; this file only scores.
//
// A batch is one tensor emb (N, C, D): N examples, C text columns. For mnrl / cached_mnrl column 0 is
// the anchor a_i, column 1 its positive p_i and columns 2.. its hard negatives; for cosent / cosine
// C = 2 (text_a, text_b) and scores (N) holds each pair's score y_i. With s = scale, sim = cos or dot:
//
//   mnrl       MultipleNegativesRankingLoss. The candidates are BLOCKED per column,
//              [p_0..p_{N-1}, n1_0..n1_{N-1}, ...] ((C-1)·N of them, not interleaved per example):
//              L = mean_i [ log Σ_j exp(s·sim(a_i, cand_j)) - s·sim(a_i, p_i) ]
//              symmetric: MultipleNegativesSymmetricRankingLoss = MultipleNegativesRankingLoss with
//              directions (query_to_doc, doc_to_query), partition_mode per_direction:
//              L = mean_i [ (log Σ_j exp(s·sim(a_i, cand_j)) + log Σ_j exp(s·sim(a_j, p_i))) / 2
//                           - s·sim(a_i, p_i) ]   (hard negatives only in the first term)
//   cached_mnrl  CachedMultipleNegativesRankingLoss: the same value and gradient as mnrl (the
//              mini-batches of its gradient cache are the engine's; mini_batch_size is not read here)
//   cosent     CoSENTLoss: L = log(1 + Σ_{(i,j): y_i < y_j} exp(s·(sim(a_i,b_i) - sim(a_j,b_j))))
//   cosine     CosineSimilarityLoss: L = mean_i (cos(a_i, b_i) - y_i)²  (torch.cosine_similarity,
//              eps 1e-8; scale is not used, similarity must be cosine)
//   matryoshka MatryoshkaLoss around any of them when matryoshka_dims is non-empty: the dims are sorted
//              descending (each keeping its weight; default weights all 1) and
//              L = Σ_k w_k · L_inner(normalize(emb[..., :d_k]))
//              (every truncation, the full width too, is L2-normalized again, so dot becomes cosine).
//
// Similarities are util.cos_sim (rows L2-normalized with eps 1e-12, then a matrix product) and
// util.dot_score; half and bfloat16 embeddings are scored in float32, as sentence-transformers does.
//
// Example:
//   unif::models::EmbeddingLossOptions o;                  // mnrl, cosine, scale 20
//   auto emb = torch::stack({anchor, positive, negative}, 1).requires_grad_();   // (N, 3, D)
//   auto loss = unif::models::embedding_loss(emb, {}, o);  // scalar
//   loss.backward();                                       // emb.grad(): (N, 3, D)
#pragma once
#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "framework/common/embedding_names.h"

namespace unif::models {

using unif::EmbeddingLoss;
using unif::Similarity;

/// SPEC §9's `embedding` keys that decide the loss (mini_batch_size is the cached engine's).
struct EmbeddingLossOptions {
  EmbeddingLoss loss = EmbeddingLoss::Mnrl;
  Similarity similarity = Similarity::Cosine;
  double scale = 20.0;                     // s: mnrl, cached_mnrl, cosent
  bool symmetric = false;                  // mnrl, cached_mnrl: add the doc_to_query direction
  std::vector<int64_t> matryoshka_dims;    // empty: no MatryoshkaLoss; any order, each in 1..D
  std::vector<double> matryoshka_weights;  // empty: all 1; else one per dim
};

/// The options on their own (what a config check can ask before any batch): unif::UserError naming
/// the `embedding.*` key for scale <= 0 or not finite (mnrl, cached_mnrl, cosent), symmetric with
/// cosent / cosine, similarity dot with cosine, a dimension <= 0 or (when `dimension` > 0) larger than
/// it, weights that are not one per dimension or not finite.
void check_embedding_loss_options(const EmbeddingLossOptions& options, int64_t dimension = 0);

/// The scalar loss of emb (N, C, D) (scores: (N) for cosent / cosine, an undefined tensor for mnrl /
/// cached_mnrl), differentiable w.r.t. emb. unif::UserError for what the config and data decide:
/// C < 2 for mnrl, C != 2 or no scores for cosent / cosine, scores given to mnrl, and everything
/// check_embedding_loss_options rejects (dims checked against D); std::invalid_argument for what the
/// caller decides: emb not (N, C, D) floating point, N = 0, D = 0, scores not N values.
torch::Tensor embedding_loss(const torch::Tensor& emb, const torch::Tensor& scores,
                             const EmbeddingLossOptions& options);

/// util.cos_sim / util.dot_score: (n, D) and (m, D) -> (n, m), sim(a_i, b_j).
torch::Tensor similarity_matrix(const torch::Tensor& a, const torch::Tensor& b, Similarity similarity);

/// util.pairwise_cos_sim / util.pairwise_dot_score: (n, D) and (n, D) -> (n), sim(a_i, b_i).
torch::Tensor pairwise_similarity(const torch::Tensor& a, const torch::Tensor& b, Similarity similarity);

}  // namespace unif::models
