// BertModel and BertPooler: see bert_model.h.
#include "models/bert/bert_model.h"

#include <limits>
#include <stdexcept>

#include "models/layers/init.h"
#include "models/layers/linear.h"

namespace unif::models {

BertPoolerImpl::BertPoolerImpl(EncoderConfig options_) : options(std::move(options_)) {
  options.validate();
  reset();
}

void BertPoolerImpl::reset() {
  dense = register_module("dense", torch::nn::Linear(options.hidden_size(), options.hidden_size()));
}

torch::Tensor BertPoolerImpl::forward(const torch::Tensor& hidden) {
  return torch::tanh(linear(dense, hidden.select(1, 0)));  // (B, H)
}

torch::Tensor extended_attention_mask(const torch::Tensor& attention_mask, torch::Dtype dtype) {
  torch::Tensor mask = attention_mask.unsqueeze(1).unsqueeze(2).to(dtype);  // (B, 1, 1, L)
  const double lowest = dtype == torch::kDouble ? std::numeric_limits<double>::lowest()
                                                : static_cast<double>(std::numeric_limits<float>::lowest());
  return (1.0 - mask) * lowest;
}

BertModelImpl::BertModelImpl(EncoderConfig options_, bool add_pooling_layer_)
    : options(std::move(options_)), add_pooling_layer(add_pooling_layer_) {
  options.validate();
  reset();
  init_bert_weights(*this, options.initializer_range());
}

void BertModelImpl::reset() {
  embeddings = register_module("embeddings", BertEmbeddings(options));
  encoder = register_module("encoder", BertEncoder(options));
  if (add_pooling_layer) pooler = register_module("pooler", BertPooler(options));
}

BertModelOutput BertModelImpl::forward(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids,
                                       const torch::Tensor& attention_mask, const torch::Tensor& inputs_embeds,
                                       bool first_token_only, LayerTap* tap) {
  BertModelOutput out;
  out.embedding_output = embeddings(input_ids, token_type_ids, inputs_embeds);  // (B, L, H)
  const auto& x = out.embedding_output;
  torch::Tensor mask =
      attention_mask.defined()
          ? attention_mask
          : torch::ones({x.size(0), x.size(1)}, torch::TensorOptions().dtype(torch::kLong).device(x.device()));
  if (mask.dim() != 2 || mask.size(0) != x.size(0) || mask.size(1) != x.size(1))
    throw std::invalid_argument("BertModel: attention_mask must be (B, L) like the inputs");
  out.last_hidden_state = encoder(x, extended_attention_mask(mask, x.scalar_type()), first_token_only, tap);
  tap_final(tap, options.num_hidden_layers(), out.last_hidden_state);
  if (pooler) out.pooler_output = pooler(out.last_hidden_state);
  return out;
}

EncoderOutput BertModelImpl::encode(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids,
                                    const torch::Tensor& attention_mask, const torch::Tensor& word_embedding_delta,
                                    bool first_token_only, LayerTap* tap) {
  if (!input_ids.defined()) throw std::invalid_argument("BertModel: no input_ids");
  return forward({}, token_type_ids, attention_mask,
                 embed_words(embeddings->word_embeddings, input_ids, word_embedding_delta), first_token_only, tap);
}

}  // namespace unif::models
