// Head parts several families share, with HF's names:
//   ClassificationHead: RobertaClassificationHead / ElectraClassificationHead — `dense` (H, H),
//     `dropout`, `out_proj` (C, H) on the first position: dropout → dense → act → dropout → out_proj,
//     act tanh (RoBERTa, XLM-R) or gelu (ELECTRA).
//   TiedDecoder: an output layer whose weight is the word embedding table (not a parameter of its
//     own) with its own `bias` (V): DistilBERT's vocab_projector, ELECTRA's generator_lm_head.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "models/layers/dropout.h"
#include "models/encoder_config.h"
#include "models/encoder_model.h"

namespace unif::models {

class ClassificationHeadImpl : public torch::nn::Module {
 public:
  /// act: "tanh" or any hidden_act name (activations.h). HF init.
  ClassificationHeadImpl(const EncoderConfig& options, int64_t num_labels, const std::string& act);
  /// features (B, L, H) (L may be 1) -> logits (B, C) from position 0.
  torch::Tensor forward(const torch::Tensor& features);

  torch::nn::Linear dense{nullptr};
  Dropout dropout{nullptr};
  torch::nn::Linear out_proj{nullptr};

 private:
  std::function<torch::Tensor(const torch::Tensor&)> act_;
};
TORCH_MODULE(ClassificationHead);

/// The sequence head of RoBERTa / XLM-R (act "tanh") and ELECTRA (act "gelu"): a ClassificationHead
/// registered on `owner` as `classifier`, on the encoder's last hidden state.
std::unique_ptr<SequenceHead> make_classification_head(torch::nn::Module& owner, const EncoderConfig& options,
                                                       int64_t num_labels, const std::string& act);

class TiedDecoderImpl : public torch::nn::Module {
 public:
  explicit TiedDecoderImpl(int64_t vocab_size);
  /// hidden (N, E) · weightᵀ + bias -> (N, V); weight (V, E) is the word embedding table.
  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& weight);
  torch::Tensor bias;
};
TORCH_MODULE(TiedDecoder);

}  // namespace unif::models
