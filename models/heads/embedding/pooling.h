// Sentence embeddings from token embeddings: sentence-transformers' Pooling module (one mode, no
// prompt exclusion) and its Normalize module, as tensor functions (docs/spec.md §5, "Sentence
// embeddings"). For hidden h (B, L, H) and attention mask m (B, L) of 0/1:
//   mean       Σ_l m_l h_l / max(Σ_l m_l, 1e-9)          (summed in float32 for half / bfloat16 h)
//   cls        h at the first l with m_l = 1 (l = 0 with right padding; 0 for an all-padding row)
//   max        max over l of h_l where m_l = 1, -inf elsewhere (an all-padding row gives -inf)
//   lasttoken  h at the last l with m_l = 1 (right or left padding); 0 for an all-padding row
//   normalize  x / max(‖x‖₂, 1e-12) over the last dimension (torch.nn.functional.normalize)
// The gradient flows to the positions read (mean: every unmasked one; max: the arg-max per feature).
//
// Example:
//   auto sentence = unif::models::pool(last_hidden_state, batch.attention_mask, unif::Pooling::Mean);  // (B, H)
//   if (normalize_embeddings) sentence = unif::models::normalize(sentence);
#pragma once
#include <torch/types.h>

#include "framework/common/embedding_names.h"

namespace unif::models {

using unif::Pooling;

/// (B, H) from hidden (B, L, H) and attention_mask (B, L) of 0/1 (any integer, bool or float type).
/// std::invalid_argument when the shapes do not fit.
torch::Tensor pool(const torch::Tensor& hidden, const torch::Tensor& attention_mask, Pooling mode);

/// L2-normalized over the last dimension: torch.nn.functional.normalize(x, p=2, dim=-1, eps=1e-12).
torch::Tensor normalize(const torch::Tensor& embeddings);

}  // namespace unif::models
