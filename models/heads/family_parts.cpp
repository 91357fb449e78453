// Shared head parts: see family_parts.h.
#include "models/heads/family_parts.h"

#include "models/layers/activations.h"
#include "models/layers/init.h"
#include "models/layers/linear.h"

namespace unif::models {

ClassificationHeadImpl::ClassificationHeadImpl(const EncoderConfig& o, int64_t num_labels, const std::string& act) {
  act_ = act == "tanh"
             ? std::function<torch::Tensor(const torch::Tensor&)>([](const torch::Tensor& x) { return torch::tanh(x); })
             : activation(act);
  dense = register_module("dense", torch::nn::Linear(o.hidden_size(), o.hidden_size()));
  dropout = register_module("dropout",
                            Dropout(o.classifier_dropout() >= 0 ? o.classifier_dropout() : o.hidden_dropout_prob()));
  out_proj = register_module("out_proj", torch::nn::Linear(o.hidden_size(), num_labels));
  init_bert_weights(*this, o.initializer_range());
}

torch::Tensor ClassificationHeadImpl::forward(const torch::Tensor& features) {
  torch::Tensor x = dropout(features.select(1, 0));
  x = dropout(act_(linear(dense, x)));
  return linear(out_proj, x);
}

namespace {
class ClassificationSequenceHead : public SequenceHead {
 public:
  ClassificationSequenceHead(torch::nn::Module& owner, const EncoderConfig& o, int64_t num_labels,
                             const std::string& act) {
    classifier_ = owner.register_module("classifier", ClassificationHead(o, num_labels, act));
  }
  torch::Tensor forward(const EncoderOutput& encoded) override { return classifier_(encoded.last_hidden_state); }

 private:
  ClassificationHead classifier_{nullptr};
};
}  // namespace

std::unique_ptr<SequenceHead> make_classification_head(torch::nn::Module& owner, const EncoderConfig& options,
                                                       int64_t num_labels, const std::string& act) {
  return std::make_unique<ClassificationSequenceHead>(owner, options, num_labels, act);
}

TiedDecoderImpl::TiedDecoderImpl(int64_t vocab_size) { bias = register_parameter("bias", torch::zeros({vocab_size})); }

torch::Tensor TiedDecoderImpl::forward(const torch::Tensor& hidden, const torch::Tensor& weight) {
  return at::linear(hidden, weight, bias);
}

}  // namespace unif::models
