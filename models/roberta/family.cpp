// The RoBERTa family's row parts: see family.h.
#include "models/roberta/family.h"

#include <nlohmann/json.hpp>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include "models/bert/family.h"
#include "models/layers/init.h"
#include "models/layers/linear.h"
#include "models/full_precision.h"
#include "models/heads/family_parts.h"
#include "models/bert/fields.h"
#include "models/hf_fields.h"
#include "models/hf_json.h"
#include "models/roberta/roberta_model.h"

namespace unif::models {
namespace {

// RobertaLMHead, registered as `lm_head`: dense → gelu → layer_norm → decoder (tied) + bias.
class RobertaLmHeadImpl : public torch::nn::Module {
 public:
  explicit RobertaLmHeadImpl(const EncoderConfig& o) {
    dense = register_module("dense", torch::nn::Linear(o.hidden_size(), o.hidden_size()));
    layer_norm = register_module(
        "layer_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({o.hidden_size()}).eps(o.layer_norm_eps())));
    bias = register_parameter("bias", torch::zeros({o.vocab_size()}));
  }
  torch::nn::Linear dense{nullptr};
  torch::nn::LayerNorm layer_norm{nullptr};
  torch::Tensor bias;
};
TORCH_MODULE(RobertaLmHead);

class RobertaLm : public LmHead {
 public:
  RobertaLm(torch::nn::Module& owner, EncoderModel& encoder) : encoder_(encoder) {
    const EncoderConfig& o = encoder.encoder_options();
    head_ = owner.register_module("lm_head", RobertaLmHead(o));
    init_bert_weights(*head_, o.initializer_range());
  }
  torch::Tensor forward(const torch::Tensor& hidden) override {
    // LayerNorm on float32 under autocast, as the encoder's.
    const torch::Tensor x = head_->layer_norm(full_precision(torch::gelu(linear(head_->dense, hidden))));
    return at::linear(x, encoder_.word_embeddings()->weight, head_->bias);
  }

 private:
  EncoderModel& encoder_;
  RobertaLmHead head_{nullptr};
};

}  // namespace

std::shared_ptr<EncoderModel> make_roberta_encoder(const EncoderConfig& options, bool add_pooling_layer) {
  return std::make_shared<RobertaModelImpl>(options, add_pooling_layer);
}

std::unique_ptr<SequenceHead> make_roberta_sequence_head(torch::nn::Module& owner, const EncoderConfig& options,
                                                         int64_t num_labels) {
  return make_classification_head(owner, options, num_labels, "tanh");
}

std::unique_ptr<LmHead> make_roberta_lm_head(torch::nn::Module& owner, EncoderModel& encoder) {
  return std::make_unique<RobertaLm>(owner, encoder);
}

namespace {

struct RobertaFields : BertFields {
  static void defaults(EncoderConfig& c) {
    c.vocab_size(50265).pad_token_id(1);
  }  // RobertaConfig's, where BertConfig's differ
};

}  // namespace

void check_roberta_config(const HfJson& config, const EncoderConfig& o) {
  check_bert_config(config, o);
  // HF's create_position_ids_from_input_ids: the first token's position is pad_token_id + 1.
  if (o.max_position_embeddings() <= o.pad_token_id() + 1)
    config.fail("max_position_embeddings", "must be > pad_token_id + 1 (" + std::to_string(o.pad_token_id() + 1) +
                                               ": positions start after pad_token_id), got " +
                                               std::to_string(o.max_position_embeddings()));
}

Architecture roberta_architecture() {
  Architecture a;
  a.model_type = "roberta";
  a.class_prefix = "Roberta";
  a.encoder_name = "roberta";
  a.tokenizer = "ByteLevelBPE";
  a.positions = PositionScheme::Offset;
  a.token_type_ids = false;
  a.sequence_pooler = false;
  a.make_encoder = make_roberta_encoder;
  a.make_sequence_head = make_roberta_sequence_head;
  a.make_lm_head = make_roberta_lm_head;
  a.tied_keys = {"lm_head.decoder.weight", "lm_head.decoder.bias"};
  a.check_config = check_roberta_config;
  a.sized_tensors = bert_sized_tensors;
  a.layers.embeddings = {"embeddings."};
  a.layers.layers = "encoder.layer.";
  use_hf_fields<RobertaFields>(a);
  return a;
}

Architecture xlm_roberta_architecture() {
  // RoBERTa's modules and keys, with SentencePiece (fairseq's ids) for a tokenizer.
  Architecture a = roberta_architecture();
  a.model_type = "xlm-roberta";
  a.class_prefix = "XLMRoberta";
  a.tokenizer = "SentencePieceFairseq";
  return a;
}

}  // namespace unif::models
