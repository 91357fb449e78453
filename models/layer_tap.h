// LayerTap: what a caller asks of a family's layer stack beyond its last hidden state — every
// layer's output (HF's output_hidden_states: layer-wise distillation, probing) and a stop after
// any layer (early exit). Each family's loop reports to it; the task heads read it.
//
//   LayerTap tap;
//   tap.keep_hidden_states = true;
//   EncoderOutput out = encoder.encode(ids, types, mask, {}, /*first_token_only=*/false, &tap);
//   tap.hidden_states[0];  // the embeddings' output, as the first layer reads it
//   tap.hidden_states[i];  // layer i's output (i = 1 .. layers), the last equal to HF's last hidden state
#pragma once
#include <cstdint>
#include <functional>
#include <vector>
#include <torch/types.h>

namespace unif::models {

struct LayerTap {
  /// Keep every layer's output (B, L, H) in hidden_states: [0] the input of the first layer (the
  /// embeddings' output after any projection to the hidden size), [i] layer i's output, the last
  /// after the family's final norm where it has one: HF's output_hidden_states. The encoder then
  /// computes every position of every layer (first_token_only is not honoured).
  bool keep_hidden_states = false;
  std::vector<torch::Tensor> hidden_states;

  /// Asked after each layer but the last, with its 1-based index and output (B, L, H) (zeros at
  /// padding in the unpadded path): true stops the stack there, and the encoder returns that
  /// output as its last hidden state (after the family's final norm where it has one).
  std::function<bool(int64_t layer, const torch::Tensor& hidden)> exit_after;

  /// Set by the encoder: how many layers ran.
  int64_t layers_run = 0;
};

/// A family's loop, before its first layer: records the stack's input. `input()` gives it as (B, L, H)
/// (padding the unpadded path's rows back), called only when kept.
inline void tap_input(LayerTap* tap, const std::function<torch::Tensor()>& input) {
  if (!tap) return;
  tap->layers_run = 0;
  tap->hidden_states.clear();
  if (tap->keep_hidden_states) tap->hidden_states.push_back(input());
}

/// A family's loop, after layer `index` (1-based) of `layers` made its output (`output()` gives it
/// as (B, L, H)): records it and says whether the stack stops here. The last layer's output is
/// recorded by tap_final (a family may normalize it), never stops.
inline bool tap_layer(LayerTap* tap, int64_t index, int64_t layers, const std::function<torch::Tensor()>& output) {
  if (!tap) return false;
  tap->layers_run = index;
  if (index >= layers) return false;
  torch::Tensor h;
  if (tap->keep_hidden_states) tap->hidden_states.push_back(h = output());
  if (!tap->exit_after) return false;
  if (!h.defined()) h = output();
  return tap->exit_after(index, h);
}

/// A family's encode, on the (B, L, H) output it returns: the last hidden state when every layer ran.
inline void tap_final(LayerTap* tap, int64_t layers, const torch::Tensor& last_hidden_state) {
  if (tap && tap->keep_hidden_states && tap->layers_run == layers) tap->hidden_states.push_back(last_hidden_state);
}

}  // namespace unif::models
