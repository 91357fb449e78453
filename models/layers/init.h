// Weight initialisation of HF BertPreTrainedModel._init_weights, for training from scratch and for
// heads that a checkpoint does not contain: Linear weights and Embedding tables ~ N(0, range²),
// biases 0, the Embedding padding_idx row 0, LayerNorm weight 1 and bias 0.
#pragma once
#include <torch/nn/module.h>

namespace unif::models {

/// Initialises every Linear, Embedding and LayerNorm inside `module` (recursively, itself included)
/// as HF does, drawing from the default torch generator (seed it with torch::manual_seed).
void init_bert_weights(torch::nn::Module& module, double initializer_range);

}  // namespace unif::models
