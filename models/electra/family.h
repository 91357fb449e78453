// ELECTRA (the discriminator, and ElectraForMaskedLM's generator head) as HF: embeddings of width
// embedding_size (BERT's modules), `embeddings_project` Linear(E, H) when embedding_size differs
// from hidden_size, BERT's encoder layers, no pooler. Sequence head `classifier.dense` /
// `classifier.out_proj` on the first token with gelu; MLM head `generator_predictions` (dense(H, E),
// gelu, LayerNorm(E)) and `generator_lm_head` (tied to the word embeddings, own bias). ElectraConfig
// keys: BertConfig's + embedding_size.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json_fwd.hpp>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

#include "models/architectures.h"
#include "models/bert/embeddings.h"
#include "models/bert/encoder.h"
#include "models/encoder_config.h"
#include "models/encoder_model.h"

namespace unif::models {

class HfJson;

class ElectraModelImpl : public EncoderModel {
 public:
  ElectraModelImpl(EncoderConfig options);
  EncoderOutput encode(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids,
                       const torch::Tensor& attention_mask, const torch::Tensor& word_embedding_delta,
                       bool first_token_only, LayerTap* tap = nullptr) override;
  torch::nn::Embedding word_embeddings() override { return embeddings->word_embeddings; }
  const EncoderConfig& encoder_options() const override { return options; }

  EncoderConfig options;
  BertEmbeddings embeddings{nullptr};
  torch::nn::Linear embeddings_project{nullptr};  // (H, E); null when E == H
  BertEncoder encoder{nullptr};
};

std::shared_ptr<EncoderModel> make_electra_encoder(const EncoderConfig& options, bool add_pooling_layer);
std::unique_ptr<SequenceHead> make_electra_sequence_head(torch::nn::Module& owner, const EncoderConfig& options,
                                                         int64_t num_labels);
std::unique_ptr<LmHead> make_electra_lm_head(torch::nn::Module& owner, EncoderModel& encoder);
/// BERT's, and `embeddings_project` where embedding_size differs from hidden_size.
std::vector<SizedTensor> electra_sized_tensors(const EncoderConfig& options);

/// The family's row of the architecture table (models/architectures.h).
Architecture electra_architecture();

}  // namespace unif::models
