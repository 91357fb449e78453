// Shared head plumbing: see encoder_task_model.h.
#include "models/heads/encoder_task_model.h"

#include <algorithm>
#include <stdexcept>
#include <utility>
#include <vector>

#include "models/architectures.h"

namespace unif::models {

EncoderTaskModel::EncoderTaskModel(const EncoderConfig& options, bool add_pooling_layer)
    : arch_(&models::architecture(options.model_type())) {
  encoder_ = register_module(arch_->encoder_name, arch_->make_encoder(options, add_pooling_layer));
}

namespace {

// set_layer_tap's taps of this thread, by model.
thread_local std::vector<std::pair<const EncoderTaskModel*, LayerTap*>> t_layer_taps;

LayerTap* thread_layer_tap(const EncoderTaskModel* model) {
  for (const auto& [m, tap] : t_layer_taps)
    if (m == model) return tap;
  return nullptr;
}

}  // namespace

void EncoderTaskModel::set_layer_tap(LayerTap* tap) {
  t_layer_taps.erase(std::remove_if(t_layer_taps.begin(), t_layer_taps.end(),
                                    [this](const auto& entry) { return entry.first == this; }),
                     t_layer_taps.end());
  if (tap) t_layer_taps.emplace_back(this, tap);
}

EncoderOutput EncoderTaskModel::encode(const Batch& batch, const torch::Tensor& word_embedding_delta,
                                       bool first_token_only, LayerTap* tap) {
  if (!batch.input_ids.defined()) throw std::invalid_argument("Batch has no input_ids");
  return encoder_->encode(batch.input_ids, batch.token_type_ids, batch.attention_mask, word_embedding_delta,
                          first_token_only, tap ? tap : thread_layer_tap(this));
}

torch::Tensor EncoderTaskModel::weighted(const torch::Tensor& example_losses, const Batch& batch) {
  if (!batch.sample_weights.defined()) return example_losses;
  return example_losses * batch.sample_weights.to(example_losses.scalar_type());
}

double EncoderTaskModel::head_dropout(const EncoderConfig& options) {
  return options.classifier_dropout() >= 0.0 ? options.classifier_dropout() : options.hidden_dropout_prob();
}

void copy_module_state(const torch::nn::Module& from, torch::nn::Module& to) {
  torch::NoGradGuard no_grad;
  auto copy = [](const torch::OrderedDict<std::string, torch::Tensor>& src,
                 torch::OrderedDict<std::string, torch::Tensor> dst) {
    if (src.size() != dst.size()) throw std::logic_error("copy_module_state: modules differ in structure");
    for (const auto& item : src) {
      torch::Tensor* target = dst.find(item.key());
      if (target == nullptr || target->sizes() != item.value().sizes())
        throw std::logic_error("copy_module_state: no tensor '" + item.key() + "' of the same shape");
      target->set_data(item.value().detach().clone());
    }
  };
  copy(from.named_parameters(), to.named_parameters());
  copy(from.named_buffers(), to.named_buffers());
  to.train(from.is_training());
}

}  // namespace unif::models
