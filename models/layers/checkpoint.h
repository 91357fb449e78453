// Gradient checkpointing of one encoder layer (HF's gradient_checkpointing): the layer runs without
// keeping its activations, and backward runs it again, keeping them only for as long as its own
// backward takes. Memory then holds one hidden state per layer instead of every activation of every
// layer, for about one more forward pass of compute.
//
// The recomputation draws the same dropout masks: the states of the generators the layer draws
// from (the device's default generator and the generators given to the layer's models::Dropout
// modules) are set back to what they were at the forward, and restored after. So gradients are
// bitwise those of the run without checkpointing on CPU, and a run's random stream moves as it
// would without it. Parameter gradients are returned through the graph (not accumulated into .grad
// by the recomputation), so a pass that asks autograd::grad for some inputs only leaves the
// parameters' .grad untouched.
//
//   x = checkpoint_layer(options.gradient_checkpointing(), *block,
//                        [block, mask](const std::vector<torch::Tensor>& in) { return block->forward(in[0], mask); },
//                        {x});
#pragma once
#include <functional>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

namespace unif::models {

/// `layer(inputs)`, checkpointed when `on`, `module` is training and gradients are recorded (else run
/// as it is; also while attention scores are captured for layer-wise distillation, attention_capture.h). inputs[0] is
/// the layer's hidden state; further inputs are tensors made outside the layer that may carry gradients (DeBERTa's
/// relative embeddings, MPNet's position bias): anything else the closure reads must hold no gradient and is captured
/// by value (masks, positions). `module` holds the layer's parameters and Dropout modules.
torch::Tensor checkpoint_layer(bool on, torch::nn::Module& module,
                               std::function<torch::Tensor(const std::vector<torch::Tensor>&)> layer,
                               std::vector<torch::Tensor> inputs);

}  // namespace unif::models
