// BertEmbeddings: see embeddings.h.
#include "models/bert/embeddings.h"

#include <stdexcept>
#include <string>

namespace unif::models {

BertEmbeddingsImpl::BertEmbeddingsImpl(EncoderConfig options_, bool token_types_)
    : options(std::move(options_)), token_types(token_types_) {
  options.validate();
  reset();
}

void BertEmbeddingsImpl::reset() {
  const auto& o = options;
  const int64_t width = o.embedding_width();
  word_embeddings =
      register_module("word_embeddings", torch::nn::Embedding(torch::nn::EmbeddingOptions(o.vocab_size(), width)
                                                                  .padding_idx(o.pad_token_id())
                                                                  .sparse(o.sparse_embeddings())));
  position_embeddings = register_module(
      "position_embeddings", torch::nn::Embedding(torch::nn::EmbeddingOptions(o.max_position_embeddings(), width)));
  if (token_types)
    token_type_embeddings = register_module(
        "token_type_embeddings", torch::nn::Embedding(torch::nn::EmbeddingOptions(o.type_vocab_size(), width)));
  // "LayerNorm": HF's (and TF's) spelling, it is the checkpoint key.
  layer_norm =
      register_module("LayerNorm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({width}).eps(o.layer_norm_eps())));
  dropout = register_module("dropout", Dropout(o.hidden_dropout_prob()));
}

torch::Tensor BertEmbeddingsImpl::forward(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids,
                                          const torch::Tensor& inputs_embeds) {
  if (input_ids.defined() == inputs_embeds.defined())
    throw std::invalid_argument("BertEmbeddings: give exactly one of input_ids and inputs_embeds");
  torch::Tensor embeds = inputs_embeds.defined() ? inputs_embeds : word_embeddings(input_ids);  // (B, L, H)
  const int64_t batch = embeds.size(0), length = embeds.size(1);
  if (length > options.max_position_embeddings())
    throw std::invalid_argument("sequence length " + std::to_string(length) + " exceeds max_position_embeddings (" +
                                std::to_string(options.max_position_embeddings()) + ")");
  auto long_opts = torch::TensorOptions().dtype(torch::kLong).device(embeds.device());
  torch::Tensor positions = torch::arange(length, long_opts).unsqueeze(0);  // (1, L)
  // Same order of additions as HF: (inputs_embeds + token_type) + position.
  torch::Tensor x = embeds;
  if (token_types) {
    torch::Tensor types = token_type_ids.defined() ? token_type_ids : torch::zeros({batch, length}, long_opts);
    x = x + token_type_embeddings(types);
  }
  x = x + position_embeddings(positions);
  return dropout(layer_norm(x));
}

}  // namespace unif::models
