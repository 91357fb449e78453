// Unpadded batches (EncoderConfig::unpad_inputs, model.unpadded): the real tokens of a padded (B, L)
// batch as one (N, H) matrix, so that the per-token layers (projections, feed-forward blocks, norms)
// skip the padding; attention lays its q, k, v out on the padded rectangle again (the mask hides the
// padded keys) and gathers the context back.
//
//   if (auto p = Packing::of(options, additive_mask)) {   // (B, 1, 1, L) additive mask
//     torch::Tensor x = p->pack(hidden);                   // (N, H)
//     ... x = layer(x) ...
//     return p->pad(x);                                    // (B, L, H), zeros at padding
//   }
#pragma once
#include <cstdint>
#include <optional>

#include <torch/types.h>

#include "models/bert/attention.h"
#include "models/attention_capture.h"
#include "models/encoder_config.h"

namespace unif::models {

struct Packing {
  torch::Tensor idx;  // (N) the real tokens' rows of the (B · L) positions
  int64_t batch = 0, length = 0;

  /// The real tokens of a batch whose additive mask (B, 1, 1, L) or 1/0 mask (B, L) is `mask`, when
  /// options.unpad() takes them (unpad_inputs and enough padding); nullopt: run padded.
  static std::optional<Packing> of(const EncoderConfig& options, const torch::Tensor& mask, bool additive) {
    // Attention scores captured (attention_capture.h): the padded path, which makes them.
    if (!options.unpad_inputs() || !mask.defined() || AttentionCapture::active()) return std::nullopt;
    const int64_t b = mask.size(0), l = mask.size(-1);
    const torch::Tensor flat = mask.reshape({b * l});
    const torch::Tensor idx = (additive ? flat.eq(0) : flat.ne(0)).nonzero().squeeze(1);
    if (!options.unpad(idx.size(0), b * l)) return std::nullopt;
    return Packing{idx, b, l};
  }
  /// (B, L, X) -> (N, X), the real tokens' rows.
  torch::Tensor pack(const torch::Tensor& x) const {
    return x.reshape({batch * length, x.size(-1)}).index_select(0, idx);
  }
  /// (N, X) -> (B, L, X), zeros at padding.
  torch::Tensor pad(const torch::Tensor& x) const {
    return torch::zeros({batch * length, x.size(-1)}, x.options())
        .index_copy(0, idx, x)
        .view({batch, length, x.size(-1)});
  }
};

/// multi_head_attention (attention.h) of packed q, k, v (N, H) of one batch: laid out on its padded
/// rectangle for attention with additive_mask (B, 1, 1, L), the context (N, H) gathered back.
inline torch::Tensor packed_attention(const Packing& p, const torch::Tensor& q, const torch::Tensor& k,
                                      const torch::Tensor& v, int64_t heads, const torch::Tensor& additive_mask,
                                      Dropout& dropout) {
  const int64_t h = q.size(1);
  const auto parts = p.pad(torch::cat({q, k, v}, 1)).split(h, 2);
  return p.pack(multi_head_attention(parts[0], parts[1], parts[2], heads, additive_mask, dropout));
}

}  // namespace unif::models
