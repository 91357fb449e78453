// AttentionCapture: every family's attention hands its scores to the capture living on the calling
// thread (layer-wise distillation matches them, TinyBERT's attention term). Scoped: while one lives,
// the layer stacks run padded (the unpadded path has no (B, heads, L, L) score tensor), so each
// layer's scores arrive in order, one tensor per layer.
//
//   AttentionCapture capture;
//   model.forward(batch);
//   capture.scores;  // per layer (B, heads, L, L): q·kᵀ/√d plus the family's biases and masks, before softmax
#pragma once
#include <vector>
#include <torch/types.h>

namespace unif::models {

class AttentionCapture {
 public:
  AttentionCapture() : outer_(current()) { current() = this; }
  ~AttentionCapture() { current() = outer_; }
  AttentionCapture(const AttentionCapture&) = delete;
  AttentionCapture& operator=(const AttentionCapture&) = delete;

  /// The capture of this thread, or nullptr.
  static AttentionCapture* active() { return current(); }

  std::vector<torch::Tensor> scores;

 private:
  static AttentionCapture*& current() {
    thread_local AttentionCapture* capture = nullptr;
    return capture;
  }
  AttentionCapture* outer_;
};

/// An attention module's pre-softmax scores (B, heads, Lq, L), kept when a capture is active.
inline void offer_attention_scores(const torch::Tensor& scores) {
  if (auto* c = AttentionCapture::active()) c->scores.push_back(scores);
}

}  // namespace unif::models
