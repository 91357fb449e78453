// HF-style weight initialisation: see init.h.
#include "models/layers/init.h"

#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/utils.h>

namespace unif::models {

namespace {
void init_one(torch::nn::Module& m, double range) {
  if (auto* linear = dynamic_cast<torch::nn::LinearImpl*>(&m)) {
    linear->weight.normal_(0.0, range);
    if (linear->bias.defined()) linear->bias.zero_();
  } else if (auto* embedding = dynamic_cast<torch::nn::EmbeddingImpl*>(&m)) {
    embedding->weight.normal_(0.0, range);
    if (auto pad = embedding->options.padding_idx()) embedding->weight[*pad].zero_();
  } else if (auto* norm = dynamic_cast<torch::nn::LayerNormImpl*>(&m)) {
    if (norm->weight.defined()) norm->weight.fill_(1.0);
    if (norm->bias.defined()) norm->bias.zero_();
  }
}
}  // namespace

void init_bert_weights(torch::nn::Module& module, double initializer_range) {
  torch::NoGradGuard no_grad;
  init_one(module, initializer_range);
  for (const auto& child : module.modules(/*include_self=*/false)) init_one(*child, initializer_range);
}

}  // namespace unif::models
