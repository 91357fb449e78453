// TextCnn: see textcnn.h.
#include "apps/textcnn_example/textcnn.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include <torch/nn/functional/loss.h>
#include <torch/nn/functional/padding.h>

#include "models/heads/encoder_task_model.h"

namespace unif::examples {

namespace F = torch::nn::functional;

TextCnn::TextCnn(TextCnnOptions options) : options_(std::move(options)) {
  if (options_.vocab_size < 1 || options_.num_labels < (options_.multilabel ? 1 : 2) || options_.widths.empty())
    throw std::invalid_argument(
        "TextCnn: needs vocab_size >= 1, num_labels >= 2 (1 multilabel) and at least one width");
  embedding_ = register_module("embedding", torch::nn::Embedding(options_.vocab_size, options_.embedding_dim));
  for (size_t i = 0; i < options_.widths.size(); ++i)
    convs_.push_back(register_module(
        "conv" + std::to_string(options_.widths[i]),
        torch::nn::Conv1d(torch::nn::Conv1dOptions(options_.embedding_dim, options_.filters, options_.widths[i]))));
  dropout_ = register_module("dropout", models::Dropout(options_.dropout));
  classifier_ = register_module(
      "classifier",
      torch::nn::Linear(options_.filters * static_cast<int64_t>(options_.widths.size()), options_.num_labels));
}

models::ModelOutput TextCnn::forward(const models::Batch& batch, const torch::Tensor& word_embedding_delta) {
  const auto mask = batch.attention_mask.to(torch::kFloat32);  // (B, L)
  auto e = embedding_(batch.input_ids);                        // (B, L, H)
  if (word_embedding_delta.defined()) e = e + word_embedding_delta;
  e = e * mask.unsqueeze(-1);  // padding contributes zeros
  const int64_t widest = *std::max_element(options_.widths.begin(), options_.widths.end());
  const int64_t length = e.size(1);
  auto x = e.transpose(1, 2);  // (B, H, L)
  if (length < widest) x = F::pad(x, F::PadFuncOptions({0, widest - length}));
  const auto lengths = mask.sum(1).to(torch::kLong);  // (B)

  std::vector<torch::Tensor> pooled;
  for (size_t i = 0; i < convs_.size(); ++i) {
    const int64_t w = options_.widths[i];
    auto c = torch::relu(convs_[i](x));  // (B, F, P), window j covers positions j .. j+w-1
    const int64_t windows = c.size(2);
    // Windows inside the example (j + w <= len), and always window 0 (short examples).
    const auto j = torch::arange(windows, torch::TensorOptions().dtype(torch::kLong).device(c.device()));
    const auto valid = (j.unsqueeze(0) + w <= lengths.unsqueeze(1)) | (j.unsqueeze(0) == 0);  // (B, P)
    c = c.masked_fill(~valid.unsqueeze(1), -std::numeric_limits<float>::infinity());
    pooled.push_back(std::get<0>(c.max(2)));  // (B, F)
  }
  models::ModelOutput out;
  out.logits = classifier_(dropout_(torch::cat(pooled, 1)));  // (B, C)
  if (!batch.labels.defined()) return out;
  auto losses = options_.multilabel ? F::binary_cross_entropy_with_logits(
                                          out.logits, batch.labels.to(out.logits.scalar_type()),
                                          F::BinaryCrossEntropyWithLogitsFuncOptions().reduction(torch::kNone))
                                          .mean(-1)
                                    : F::cross_entropy(out.logits, batch.labels.to(torch::kLong),
                                                       F::CrossEntropyFuncOptions().reduction(torch::kNone));
  if (batch.sample_weights.defined()) losses = losses * batch.sample_weights.to(losses.scalar_type());
  out.example_losses = losses;
  out.loss_count = batch.size();
  return out;
}

std::shared_ptr<models::TaskModel> TextCnn::clone_model() const {
  auto copy = std::make_shared<TextCnn>(options_);
  models::copy_module_state(*this, *copy);
  return copy;
}

}  // namespace unif::examples
