// The RoBERTa family's row parts (RoBERTa and XLM-RoBERTa rows of models/architectures.cpp): the
// encoder, the sequence head (`classifier.dense` / `classifier.out_proj` on <s>, tanh), the MLM head
// (`lm_head`), and RobertaConfig's keys (BertConfig's, with RoBERTa's defaults).
#pragma once
#include <cstdint>
#include <memory>

#include <nlohmann/json_fwd.hpp>
#include <torch/nn/module.h>

#include "models/architectures.h"
#include "models/encoder_config.h"
#include "models/encoder_model.h"

namespace unif::models {

class HfJson;

std::shared_ptr<EncoderModel> make_roberta_encoder(const EncoderConfig& options, bool add_pooling_layer);
std::unique_ptr<SequenceHead> make_roberta_sequence_head(torch::nn::Module& owner, const EncoderConfig& options,
                                                         int64_t num_labels);
std::unique_ptr<LmHead> make_roberta_lm_head(torch::nn::Module& owner, EncoderModel& encoder);
/// check_bert_config, and max_position_embeddings > pad_token_id + 1 (positions start after pad_token_id).
void check_roberta_config(const HfJson& config, const EncoderConfig& options);

/// The rows of RoBERTa and XLM-RoBERTa in the architecture table (models/architectures.h).
Architecture roberta_architecture();
Architecture xlm_roberta_architecture();

}  // namespace unif::models
