// The BERT family's row parts: see family.h.
#include "models/bert/family.h"

#include <nlohmann/json.hpp>

#include "models/bert/bert_model.h"
#include "models/layers/dropout.h"
#include "models/layers/init.h"
#include "models/layers/linear.h"
#include "models/bert/lm_head.h"
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

void read_bert_config(const HfJson& r, EncoderConfig& b) {
  r.size("vocab_size", [&](int64_t v) { b.vocab_size(v); });
  r.size("hidden_size", [&](int64_t v) { b.hidden_size(v); });
  r.size("num_hidden_layers", [&](int64_t v) { b.num_hidden_layers(v); });
  r.size("num_attention_heads", [&](int64_t v) { b.num_attention_heads(v); });
  r.size("intermediate_size", [&](int64_t v) { b.intermediate_size(v); });
  r.string("hidden_act", [&](const std::string& v) { b.hidden_act(v); });
  r.probability("hidden_dropout_prob", [&](double v) { b.hidden_dropout_prob(v); });
  r.probability("attention_probs_dropout_prob", [&](double v) { b.attention_probs_dropout_prob(v); });
  r.size("max_position_embeddings", [&](int64_t v) { b.max_position_embeddings(v); });
  // 0: no token types (DeBERTa-v3); the families that read token types check it is >= 1.
  r.size(
      "type_vocab_size", [&](int64_t v) { b.type_vocab_size(v); }, /*min=*/0);
  r.non_negative_number("initializer_range", [&](double v) { b.initializer_range(v); });
  r.positive_number("layer_norm_eps", [&](double v) { b.layer_norm_eps(v); });
  if (const auto* v = r.find("pad_token_id"); v == nullptr || !v->is_null())
    r.integer("pad_token_id", [&](int64_t x) { b.pad_token_id(x); });
  r.probability(
      "classifier_dropout", [&](double v) { b.classifier_dropout(v); }, /*nullable=*/true, -1.0);
  r.string("position_embedding_type", [&](const std::string& v) {
    if (v != "absolute") r.fail("position_embedding_type", "only \"absolute\" is supported, got \"" + v + "\"");
  });
}

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

void write_bert_config(const EncoderConfig& b, nlohmann::json& j) {
  j["vocab_size"] = b.vocab_size();
  j["hidden_size"] = b.hidden_size();
  j["num_hidden_layers"] = b.num_hidden_layers();
  j["num_attention_heads"] = b.num_attention_heads();
  j["intermediate_size"] = b.intermediate_size();
  j["hidden_act"] = b.hidden_act();
  j["hidden_dropout_prob"] = b.hidden_dropout_prob();
  j["attention_probs_dropout_prob"] = b.attention_probs_dropout_prob();
  j["max_position_embeddings"] = b.max_position_embeddings();
  j["type_vocab_size"] = b.type_vocab_size();
  j["initializer_range"] = b.initializer_range();
  j["layer_norm_eps"] = b.layer_norm_eps();
  j["pad_token_id"] = b.pad_token_id();
  j["classifier_dropout"] =
      b.classifier_dropout() < 0 ? nlohmann::json(nullptr) : nlohmann::json(b.classifier_dropout());
  if (!j.contains("position_embedding_type")) j["position_embedding_type"] = "absolute";
}

}  // namespace unif::models
