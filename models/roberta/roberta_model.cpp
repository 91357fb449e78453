// RobertaModel: see roberta_model.h.
#include "models/roberta/roberta_model.h"

#include <stdexcept>
#include <string>

#include "models/layers/init.h"

namespace unif::models {

RobertaEmbeddingsImpl::RobertaEmbeddingsImpl(const EncoderConfig& o) : options(o) {
  const int64_t h = o.hidden_size();
  word_embeddings = register_module(
      "word_embeddings",
      torch::nn::Embedding(
          torch::nn::EmbeddingOptions(o.vocab_size(), h).padding_idx(o.pad_token_id()).sparse(o.sparse_embeddings())));
  token_type_embeddings = register_module("token_type_embeddings",
                                          torch::nn::Embedding(torch::nn::EmbeddingOptions(o.type_vocab_size(), h)));
  layer_norm =
      register_module("LayerNorm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({h}).eps(o.layer_norm_eps())));
  dropout = register_module("dropout", Dropout(o.hidden_dropout_prob()));
  position_embeddings = register_module(
      "position_embeddings",
      torch::nn::Embedding(torch::nn::EmbeddingOptions(o.max_position_embeddings(), h).padding_idx(o.pad_token_id())));
}

torch::Tensor RobertaEmbeddingsImpl::forward(const torch::Tensor& input_ids, const torch::Tensor& delta,
                                             const torch::Tensor& token_type_ids, const torch::Tensor& attention_mask) {
  const int64_t pad = options.pad_token_id();
  const int64_t length = input_ids.size(1);
  if (length + pad >= options.max_position_embeddings())
    throw std::invalid_argument("sequence length " + std::to_string(length) + " exceeds max_position_embeddings (" +
                                std::to_string(options.max_position_embeddings()) + ") less pad_token_id + 1 (" +
                                std::to_string(pad + 1) + ")");
  // HF's create_position_ids_from_input_ids: pad + the count of real tokens up to here; pad for padding.
  // Padding is also what the attention mask leaves out (unif pads batches with id 0, not <pad>).
  torch::Tensor real = input_ids.ne(pad).to(torch::kInt);
  if (attention_mask.defined()) real = real * attention_mask.to(torch::kInt);
  const torch::Tensor positions = (torch::cumsum(real, 1).to(torch::kInt) * real).to(torch::kLong) + pad;
  const torch::Tensor types = token_type_ids.defined() ? token_type_ids : torch::zeros_like(input_ids);
  torch::Tensor x = embed_words(word_embeddings, input_ids, delta) + token_type_embeddings(types);
  x = x + position_embeddings(positions);
  return dropout(layer_norm(x));
}

RobertaModelImpl::RobertaModelImpl(EncoderConfig options_, bool add_pooling_layer) : options(std::move(options_)) {
  options.validate();
  embeddings = register_module("embeddings", RobertaEmbeddings(options));
  encoder = register_module("encoder", BertEncoder(options));
  if (add_pooling_layer) pooler = register_module("pooler", BertPooler(options));
  init_bert_weights(*this, options.initializer_range());
}

EncoderOutput RobertaModelImpl::encode(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids,
                                       const torch::Tensor& attention_mask, const torch::Tensor& word_embedding_delta,
                                       bool first_token_only, LayerTap* tap) {
  EncoderOutput out;
  const torch::Tensor mask = attention_mask_or_ones(attention_mask, input_ids);
  out.embedding_output = embeddings(input_ids, word_embedding_delta, token_type_ids, mask);
  const auto& x = out.embedding_output;
  out.last_hidden_state = encoder(x, extended_attention_mask(mask, x.scalar_type()), first_token_only, tap);
  tap_final(tap, options.num_hidden_layers(), out.last_hidden_state);
  if (pooler) out.pooler_output = pooler(out.last_hidden_state);
  return out;
}

}  // namespace unif::models
