// The sentence-embedding choices (SPEC §9: model.pooling, embedding.loss, embedding.similarity) and
// their config names, without Torch: the config can read and write them, and models/heads/embedding/
// (pooling.h, losses.h) computes with them. The names are sentence-transformers' where it has one
// (Pooling's pooling_mode strings; util.cos_sim / util.dot_score).
#pragma once
#include <array>

#include "framework/common/enum_names.h"

namespace unif {

/// model.pooling: how token embeddings (B, L, H) become one vector per text (sentence-transformers'
/// Pooling module, one mode).
enum class Pooling { Mean, Cls, Max, LastToken };
inline constexpr std::array<EnumName<Pooling>, 4> kPoolingNames{
    {{Pooling::Mean, "mean"}, {Pooling::Cls, "cls"}, {Pooling::Max, "max"}, {Pooling::LastToken, "lasttoken"}}};
constexpr const auto& enum_names(Pooling) { return kPoolingNames; }

/// embedding.loss: MultipleNegativesRankingLoss, its gradient-cached form (the same value and
/// gradient), CoSENTLoss, CosineSimilarityLoss.
enum class EmbeddingLoss { Mnrl, CachedMnrl, Cosent, Cosine };
inline constexpr std::array<EnumName<EmbeddingLoss>, 4> kEmbeddingLossNames{{{EmbeddingLoss::Mnrl, "mnrl"},
                                                                             {EmbeddingLoss::CachedMnrl, "cached_mnrl"},
                                                                             {EmbeddingLoss::Cosent, "cosent"},
                                                                             {EmbeddingLoss::Cosine, "cosine"}}};
constexpr const auto& enum_names(EmbeddingLoss) { return kEmbeddingLossNames; }

/// embedding.similarity: util.cos_sim or util.dot_score (and their pairwise forms).
enum class Similarity { Cosine, Dot };
inline constexpr std::array<EnumName<Similarity>, 2> kSimilarityNames{
    {{Similarity::Cosine, "cosine"}, {Similarity::Dot, "dot"}}};
constexpr const auto& enum_names(Similarity) { return kSimilarityNames; }

}  // namespace unif
