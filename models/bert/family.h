// The BERT family's row parts (models/architectures.cpp): its encoder, its sequence head (dropout +
// `classifier` on the pooler), its MLM head (`cls.predictions`) and the checks relating BertConfig's
// keys (the keys themselves: fields.h, which RoBERTa, ELECTRA, ALBERT and DeBERTa share).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json_fwd.hpp>
#include <torch/nn/module.h>

#include "models/architectures.h"
#include "models/encoder_config.h"
#include "models/encoder_model.h"

namespace unif::models {

class HfJson;

std::shared_ptr<EncoderModel> make_bert_encoder(const EncoderConfig& options, bool add_pooling_layer);
std::unique_ptr<SequenceHead> make_bert_sequence_head(torch::nn::Module& owner, const EncoderConfig& options,
                                                      int64_t num_labels);
std::unique_ptr<LmHead> make_bert_lm_head(torch::nn::Module& owner, EncoderModel& encoder);

/// pad_token_id in [0, vocab_size) (the word embeddings' padding row), num_attention_heads dividing
/// hidden_size: the relations of BertConfig's keys every family reading them shares.
void check_bert_relations(const HfJson& config, const EncoderConfig& options);
/// check_bert_relations and type_vocab_size >= 1 (the model reads token types).
void check_bert_config(const HfJson& config, const EncoderConfig& options);
/// BertModel's embeddings (word, position, token type; embedding_size wide where set) and layers.
std::vector<SizedTensor> bert_sized_tensors(const EncoderConfig& options);

/// The family's row of the architecture table (models/architectures.h).
Architecture bert_architecture();

}  // namespace unif::models
