// Shared BERT head plumbing: see bert_task_model.h.
#include "models/heads/bert_task_model.h"

#include <stdexcept>

namespace unif::models {

BertTaskModel::BertTaskModel(const BertOptions& options, bool add_pooling_layer) {
  bert = register_module("bert", BertModel(options, add_pooling_layer));
}

BertModelOutput BertTaskModel::encode(const Batch& batch, const torch::Tensor& word_embedding_delta,
                                      bool first_token_only) {
  if (!batch.input_ids.defined()) throw std::invalid_argument("Batch has no input_ids");
  torch::Tensor embeds = bert->embeddings->word_embeddings(batch.input_ids);  // E (B, L, H)
  if (word_embedding_delta.defined()) {
    if (word_embedding_delta.sizes() != embeds.sizes())
      throw std::invalid_argument("word_embedding_delta must have the shape (B, L, H) of the word embeddings");
    embeds = embeds + word_embedding_delta;
  }
  return bert->forward({}, batch.token_type_ids, batch.attention_mask, embeds, first_token_only);
}

torch::Tensor BertTaskModel::weighted(const torch::Tensor& example_losses, const Batch& batch) {
  if (!batch.sample_weights.defined()) return example_losses;
  return example_losses * batch.sample_weights.to(example_losses.scalar_type());
}

double BertTaskModel::head_dropout(const BertOptions& options) {
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
