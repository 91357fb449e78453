// The BERT family's row parts (models/architectures.cpp): its encoder, its sequence head (dropout +
// `classifier` on the pooler), its MLM head (`cls.predictions`), and the BertConfig keys of
// config.json, which RoBERTa, ELECTRA and ALBERT configs share (they call read_bert_config /
// write_bert_config for them and add their own).
#pragma once
#include <cstdint>
#include <memory>

#include <nlohmann/json_fwd.hpp>
#include <torch/nn/module.h>

#include "models/bert/options.h"
#include "models/encoder_model.h"

namespace unif::models {

class HfJson;

std::shared_ptr<EncoderModel> make_bert_encoder(const BertOptions& options, bool add_pooling_layer);
std::unique_ptr<SequenceHead> make_bert_sequence_head(torch::nn::Module& owner, const BertOptions& options,
                                                      int64_t num_labels);
std::unique_ptr<LmHead> make_bert_lm_head(torch::nn::Module& owner, EncoderModel& encoder);

/// BertConfig's keys (vocab_size, hidden_size, ..., classifier_dropout, position_embedding_type).
void read_bert_config(const HfJson& config, BertOptions& options);
void write_bert_config(const BertOptions& options, nlohmann::json& config);

}  // namespace unif::models
