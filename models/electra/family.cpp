// ELECTRA: see family.h.
#include "models/electra/family.h"

#include <nlohmann/json.hpp>
#include <torch/nn/modules/normalization.h>

#include "models/bert/bert_model.h"
#include "models/bert/family.h"
#include "models/layers/init.h"
#include "models/layers/linear.h"
#include "models/full_precision.h"
#include "models/heads/family_parts.h"
#include "models/bert/fields.h"
#include "models/hf_fields.h"
#include "models/hf_json.h"

namespace unif::models {

ElectraModelImpl::ElectraModelImpl(EncoderConfig options_) : options(std::move(options_)) {
  options.validate();
  embeddings = register_module("embeddings", BertEmbeddings(options));
  if (options.embedding_width() != options.hidden_size())
    embeddings_project =
        register_module("embeddings_project", torch::nn::Linear(options.embedding_width(), options.hidden_size()));
  encoder = register_module("encoder", BertEncoder(options));
  init_bert_weights(*this, options.initializer_range());
}

EncoderOutput ElectraModelImpl::encode(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids,
                                       const torch::Tensor& attention_mask, const torch::Tensor& word_embedding_delta,
                                       bool first_token_only, LayerTap* tap) {
  EncoderOutput out;
  out.embedding_output = embeddings->forward(torch::Tensor(), token_type_ids,
                                             embed_words(embeddings->word_embeddings, input_ids, word_embedding_delta));
  torch::Tensor x = embeddings_project ? linear(embeddings_project, out.embedding_output) : out.embedding_output;
  const torch::Tensor mask = attention_mask_or_ones(attention_mask, input_ids);
  out.last_hidden_state = encoder(x, extended_attention_mask(mask, x.scalar_type()), first_token_only, tap);
  tap_final(tap, options.num_hidden_layers(), out.last_hidden_state);
  return out;
}

namespace {

// ElectraGeneratorPredictions: dense(H, E) → gelu → LayerNorm(E).
class ElectraGeneratorPredictionsImpl : public torch::nn::Module {
 public:
  explicit ElectraGeneratorPredictionsImpl(const EncoderConfig& o) {
    layer_norm = register_module(
        "LayerNorm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({o.embedding_width()}).eps(o.layer_norm_eps())));
    dense = register_module("dense", torch::nn::Linear(o.hidden_size(), o.embedding_width()));
  }
  torch::nn::LayerNorm layer_norm{nullptr};
  torch::nn::Linear dense{nullptr};
};
TORCH_MODULE(ElectraGeneratorPredictions);

class ElectraLm : public LmHead {
 public:
  ElectraLm(torch::nn::Module& owner, EncoderModel& encoder) : encoder_(encoder) {
    const EncoderConfig& o = encoder.encoder_options();
    predictions_ = owner.register_module("generator_predictions", ElectraGeneratorPredictions(o));
    decoder_ = owner.register_module("generator_lm_head", TiedDecoder(o.vocab_size()));
    init_bert_weights(*predictions_, o.initializer_range());
  }
  torch::Tensor forward(const torch::Tensor& hidden) override {
    const torch::Tensor x = predictions_->layer_norm(full_precision(torch::gelu(linear(predictions_->dense, hidden))));
    return decoder_(x, encoder_.word_embeddings()->weight);
  }

 private:
  EncoderModel& encoder_;
  ElectraGeneratorPredictions predictions_{nullptr};
  TiedDecoder decoder_{nullptr};
};

}  // namespace

std::shared_ptr<EncoderModel> make_electra_encoder(const EncoderConfig& options, bool /*add_pooling_layer*/) {
  return std::make_shared<ElectraModelImpl>(options);
}

std::unique_ptr<SequenceHead> make_electra_sequence_head(torch::nn::Module& owner, const EncoderConfig& options,
                                                         int64_t num_labels) {
  return make_classification_head(owner, options, num_labels, "gelu");
}

std::unique_ptr<LmHead> make_electra_lm_head(torch::nn::Module& owner, EncoderModel& encoder) {
  return std::make_unique<ElectraLm>(owner, encoder);
}

namespace {

struct ElectraFields {
  // ElectraConfig's defaults where BertConfig's differ.
  static void defaults(EncoderConfig& c) {
    c.embedding_size(128).hidden_size(256).num_attention_heads(4).intermediate_size(1024);
  }
  template <class V>
  static void visit(V& v) {
    using namespace hf_fields;
    BertFields::visit(v);
    v("embedding_size", UNIF_HF_FIELD(embedding_size), kSize, WriteBy{write_embedding_width});
  }
};

}  // namespace

std::vector<SizedTensor> electra_sized_tensors(const EncoderConfig& o) {
  auto tensors = bert_sized_tensors(o);
  if (o.embedding_width() != o.hidden_size())
    tensors.push_back(
        {"embeddings_project.weight", {o.hidden_size(), o.embedding_width()}, "hidden_size, embedding_size"});
  return tensors;
}

Architecture electra_architecture() {
  Architecture a;
  a.model_type = "electra";
  a.class_prefix = "Electra";
  a.encoder_name = "electra";
  a.tokenizer = "WordPiece";
  a.positions = PositionScheme::Absolute;
  a.token_type_ids = true;
  a.sequence_pooler = false;
  a.replaced_token_detection = true;
  a.make_encoder = make_electra_encoder;
  a.make_sequence_head = make_electra_sequence_head;
  a.make_lm_head = make_electra_lm_head;
  a.tied_keys = {"generator_lm_head.weight"};
  a.check_config = check_bert_config;
  a.sized_tensors = electra_sized_tensors;
  a.layers.embeddings = {"embeddings.", "embeddings_project."};
  a.layers.layers = "encoder.layer.";
  use_hf_fields<ElectraFields>(a);
  return a;
}

}  // namespace unif::models
