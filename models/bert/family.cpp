// The BERT family's row parts: see family.h.
#include "models/bert/family.h"

#include <nlohmann/json.hpp>

#include "models/bert/bert_model.h"
#include "models/layers/dropout.h"
#include "models/layers/init.h"
#include "models/layers/linear.h"
#include "models/bert/lm_head.h"
#include "models/bert/fields.h"
#include "models/hf_fields.h"
#include "models/hf_json.h"

namespace unif::models {
namespace {

// BertForSequenceClassification: dropout + `classifier` Linear(H, C) on the pooled [CLS].
class BertSequenceHead : public SequenceHead {
 public:
  BertSequenceHead(torch::nn::Module& owner, const EncoderConfig& o, int64_t num_labels) {
    dropout_ = owner.register_module(
        "dropout", Dropout(o.classifier_dropout() >= 0 ? o.classifier_dropout() : o.hidden_dropout_prob()));
    classifier_ = owner.register_module("classifier", torch::nn::Linear(o.hidden_size(), num_labels));
    init_bert_weights(*classifier_, o.initializer_range());
  }
  torch::Tensor forward(const EncoderOutput& encoded) override {
    return linear(classifier_, dropout_(encoded.pooler_output));
  }

 private:
  Dropout dropout_{nullptr};
  torch::nn::Linear classifier_{nullptr};
};

// BertForMaskedLM's `cls`: transform, then the decoder tied to the word embeddings.
class BertLmHead : public LmHead {
 public:
  BertLmHead(torch::nn::Module& owner, EncoderModel& encoder) : encoder_(encoder) {
    const EncoderConfig& o = encoder.encoder_options();
    cls_ = owner.register_module("cls", MlmHead(o));
    init_bert_weights(*cls_, o.initializer_range());
    torch::NoGradGuard no_grad;
    cls_->predictions->bias.zero_();
  }
  torch::Tensor forward(const torch::Tensor& hidden) override {
    return at::linear(cls_->predictions->transform(hidden), encoder_.word_embeddings()->weight,
                      cls_->predictions->bias);
  }

 private:
  EncoderModel& encoder_;
  MlmHead cls_{nullptr};
};

}  // namespace

std::shared_ptr<EncoderModel> make_bert_encoder(const EncoderConfig& options, bool add_pooling_layer) {
  return std::make_shared<BertModelImpl>(options, add_pooling_layer);
}

std::unique_ptr<SequenceHead> make_bert_sequence_head(torch::nn::Module& owner, const EncoderConfig& options,
                                                      int64_t num_labels) {
  return std::make_unique<BertSequenceHead>(owner, options, num_labels);
}

std::unique_ptr<LmHead> make_bert_lm_head(torch::nn::Module& owner, EncoderModel& encoder) {
  return std::make_unique<BertLmHead>(owner, encoder);
}

void read_absolute_positions(const HfJson& r, EncoderConfig& /*c*/) {
  r.string("position_embedding_type", [&](const std::string& v) {
    if (v != "absolute") r.fail("position_embedding_type", "only \"absolute\" is supported, got \"" + v + "\"");
  });
}

void write_absolute_positions(const EncoderConfig& /*c*/, nlohmann::json& j) {
  if (!j.contains("position_embedding_type")) j["position_embedding_type"] = "absolute";
}

void write_embedding_width(const EncoderConfig& c, nlohmann::json& j) { j["embedding_size"] = c.embedding_width(); }

void check_bert_relations(const HfJson& r, const EncoderConfig& b) {
  r.check_id("pad_token_id", b.pad_token_id(), "vocab_size", b.vocab_size());
  r.check_divides("num_attention_heads", b.num_attention_heads(), "hidden_size", b.hidden_size());
}

void check_bert_config(const HfJson& r, const EncoderConfig& b) {
  if (b.type_vocab_size() < 1)
    r.fail("type_vocab_size",
           "must be an integer >= 1 (the model reads token types), got " + std::to_string(b.type_vocab_size()));
  check_bert_relations(r, b);
}

std::vector<SizedTensor> bert_sized_tensors(const EncoderConfig& o) {
  const int64_t e = o.embedding_width(), h = o.hidden_size(), i = o.intermediate_size();
  const auto l = static_cast<double>(o.num_hidden_layers());
  const std::string width = o.embedding_size() > 0 ? "embedding_size" : "hidden_size";
  return {
      {"embeddings.word_embeddings.weight", {o.vocab_size(), e}, "vocab_size, " + width},
      {"embeddings.position_embeddings.weight", {o.max_position_embeddings(), e}, "max_position_embeddings, " + width},
      {"embeddings.token_type_embeddings.weight", {o.type_vocab_size(), e}, "type_vocab_size, " + width},
      {"encoder.layer.0.attention.self.query.weight", {h, h}, "hidden_size, hidden_size", 4 * l},
      {"encoder.layer.0.intermediate.dense.weight", {i, h}, "intermediate_size, hidden_size", l},
      {"encoder.layer.0.output.dense.weight", {h, i}, "hidden_size, intermediate_size", l}};
}

Architecture bert_architecture() {
  Architecture a;
  a.model_type = "bert";
  a.class_prefix = "Bert";
  a.encoder_name = "bert";
  a.tokenizer = "WordPiece";
  a.positions = PositionScheme::Absolute;
  a.token_type_ids = true;
  a.sequence_pooler = true;
  a.make_encoder = make_bert_encoder;
  a.make_sequence_head = make_bert_sequence_head;
  a.make_lm_head = make_bert_lm_head;
  a.tied_keys = {"cls.predictions.decoder.weight", "cls.predictions.decoder.bias"};
  a.check_config = check_bert_config;
  a.sized_tensors = bert_sized_tensors;
  a.layers.embeddings = {"embeddings."};
  a.layers.layers = "encoder.layer.";
  use_hf_fields<BertFields>(a);
  return a;
}

}  // namespace unif::models
