// ELECTRA pretraining: see pretraining.h.
#include "models/electra/pretraining.h"

#include <algorithm>
#include <mutex>
#include <stdexcept>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/functional/loss.h>

#include "models/electra/family.h"
#include "models/full_precision.h"
#include "models/layers/activations.h"
#include "models/layers/init.h"
#include "models/layers/linear.h"

namespace unif::models {

namespace F = torch::nn::functional;

EncoderConfig default_generator_options(const EncoderConfig& d) {
  EncoderConfig g = d;
  const int64_t hidden = std::max<int64_t>(1, d.hidden_size() / 4);
  const int64_t head_width = std::max<int64_t>(1, d.hidden_size() / std::max<int64_t>(1, d.num_attention_heads()));
  const int64_t heads = hidden % head_width == 0 ? std::max<int64_t>(1, hidden / head_width) : 1;
  g.embedding_size(d.embedding_width())
      .hidden_size(hidden)
      .num_attention_heads(heads)
      .intermediate_size(std::max<int64_t>(1, d.intermediate_size() / 4));
  return g;
}

// ---- the discriminator ----------------------------------------------------------------------------

ElectraForPreTrainingImpl::ElectraForPreTrainingImpl(const EncoderConfig& options)
    : EncoderTaskModel(options, /*add_pooling_layer=*/false) {
  auto predictions = register_module("discriminator_predictions", std::make_shared<torch::nn::Module>());
  const int64_t h = options.hidden_size();
  dense_ = predictions->register_module("dense", torch::nn::Linear(h, h));
  dense_prediction_ = predictions->register_module("dense_prediction", torch::nn::Linear(h, 1));
  init_bert_weights(*predictions, options.initializer_range());
  predictions_ = predictions.get();
}

torch::Tensor ElectraForPreTrainingImpl::detect(const Batch& batch) {
  const EncoderOutput encoded = encode(batch, torch::Tensor());
  const auto act = activation(options().hidden_act());
  return full_precision(linear(dense_prediction_, act(linear(dense_, encoded.last_hidden_state)))).squeeze(-1);
}

ModelOutput ElectraForPreTrainingImpl::forward(const Batch& batch, const torch::Tensor& word_embedding_delta) {
  if (word_embedding_delta.defined())
    throw std::invalid_argument("replaced-token detection takes no word-embedding perturbation");
  ModelOutput out;
  out.logits = detect(batch);  // (B, L)
  if (!batch.labels.defined()) return out;
  const auto mask = attention_mask_or_ones(batch.attention_mask, batch.input_ids).to(out.logits.scalar_type());
  const auto bce =
      F::binary_cross_entropy_with_logits(out.logits, batch.labels.to(out.logits.scalar_type()),
                                          F::BinaryCrossEntropyWithLogitsFuncOptions().reduction(torch::kNone));
  out.example_losses = weighted((bce * mask).sum(1), batch);
  out.loss_count = static_cast<int64_t>(mask.sum().item<double>());
  return out;
}

std::shared_ptr<TaskModel> ElectraForPreTrainingImpl::clone_model() const {
  auto copy = std::make_shared<ElectraForPreTrainingImpl>(options());
  copy_module_state(*this, *copy);
  return copy;
}

// ---- the two together -----------------------------------------------------------------------------

void share_electra_embeddings(EncoderModel& discriminator, EncoderModel& generator) {
  auto* d = dynamic_cast<ElectraModelImpl*>(&discriminator);
  auto* g = dynamic_cast<ElectraModelImpl*>(&generator);
  if (d == nullptr || g == nullptr)
    throw std::invalid_argument("replaced-token detection needs ELECTRA models (model_type electra)");
  const EncoderConfig &a = d->options, &b = g->options;
  const auto differs = [](const char* what, int64_t x, int64_t y) {
    return std::invalid_argument(std::string("the generator shares the discriminator's embeddings, so its ") + what +
                                 " must be the discriminator's " + std::to_string(x) + ", got " + std::to_string(y));
  };
  if (a.embedding_width() != b.embedding_width())
    throw differs("embedding_size", a.embedding_width(), b.embedding_width());
  if (a.vocab_size() != b.vocab_size()) throw differs("vocab_size", a.vocab_size(), b.vocab_size());
  if (a.max_position_embeddings() != b.max_position_embeddings())
    throw differs("max_position_embeddings", a.max_position_embeddings(), b.max_position_embeddings());
  if (a.type_vocab_size() != b.type_vocab_size())
    throw differs("type_vocab_size", a.type_vocab_size(), b.type_vocab_size());
  g->unregister_module("embeddings");
  g->embeddings = d->embeddings;
}

ElectraPretrainingModel::ElectraPretrainingModel(std::shared_ptr<ElectraForPreTrainingImpl> discriminator,
                                                 std::shared_ptr<EncoderForMaskedLMImpl> generator, double rtd_weight)
    : discriminator_(std::move(discriminator)), generator_(std::move(generator)), rtd_weight_(rtd_weight) {
  share_electra_embeddings(discriminator_->encoder(), generator_->encoder());
  // The discriminator's modules under their own names, then the generator's under `generator.`.
  for (const auto& child : discriminator_->named_children()) register_module(child.key(), child.value());
  register_module("generator", generator_);
}

torch::Tensor ElectraPretrainingModel::sample(const Batch& batch, const torch::Tensor& logits) {
  if (!batch.uniforms.defined())
    throw std::invalid_argument("replaced-token detection: the batch has no uniforms to sample with (Batch::uniforms)");
  const auto labels = batch.labels.reshape({-1});
  const auto picked = labels.ne(-100).nonzero().flatten();  // (M), the order of the logits' rows
  const auto u = batch.uniforms.reshape({-1}).index_select(0, picked).to(logits.device(), torch::kFloat64);
  // The inverse CDF: the first id whose cumulative probability reaches u.
  const auto cdf = logits.detach().to(torch::kFloat64).softmax(-1).cumsum(-1);  // (M, V)
  const auto ids = cdf.lt(u.unsqueeze(1)).sum(-1).clamp_max(logits.size(-1) - 1);
  auto samples = torch::full_like(labels, -100);
  samples.index_put_({picked}, ids.to(samples.device()));
  return samples.view_as(batch.labels);
}

ModelOutput ElectraPretrainingModel::forward(const Batch& batch, const torch::Tensor& word_embedding_delta) {
  if (word_embedding_delta.defined())
    throw std::invalid_argument("replaced-token detection takes no word-embedding perturbation");
  if (!batch.labels.defined()) {  // no masks: the discriminator's logits on the text as it is
    ModelOutput out;
    out.logits = discriminator_->detect(batch);
    return out;
  }
  return run(batch, nullptr);
}

ModelOutput ElectraPretrainingModel::forward_with_samples(const Batch& batch, const torch::Tensor& samples) {
  if (!batch.labels.defined() || samples.sizes() != batch.labels.sizes())
    throw std::invalid_argument("forward_with_samples: a masked batch and samples (B, L) like its labels");
  return run(batch, &samples);
}

ModelOutput ElectraPretrainingModel::run(const Batch& batch, const torch::Tensor* given) {
  // 1. The generator on the masked text: logits (M, V) at the selected positions, l_b summed.
  const ModelOutput mlm = generator_->forward(batch);
  const auto labels = batch.labels.to(torch::kLong);
  const auto flat_labels = labels.reshape({-1});
  const auto picked = flat_labels.ne(-100).nonzero().flatten();
  const int64_t b = labels.size(0), l = labels.size(1);
  const auto example_of = picked.div(l, /*rounding_mode=*/"floor");
  auto stats = torch::zeros({b, kStatCount}, torch::TensorOptions().dtype(torch::kFloat32).device(labels.device()));
  {
    torch::NoGradGuard no_grad;
    const auto right = mlm.logits.argmax(-1).eq(flat_labels.index_select(0, picked)).to(torch::kFloat32);
    stats.select(1, kStatMlmLoss).copy_(mlm.example_losses.detach().to(torch::kFloat32));
    stats.select(1, kStatMlmCorrect).index_add_(0, example_of, right);
    stats.select(1, kStatMasked).index_add_(0, example_of, torch::ones_like(right));
  }
  // 2. Samples in place of the selected tokens (no gradient reaches the generator through them).
  const torch::Tensor samples = given ? given->to(labels.device(), torch::kLong) : sample(batch, mlm.logits);
  const auto original = torch::where(labels.ne(-100), labels, batch.input_ids);
  const auto detect_ids = torch::where(labels.ne(-100), samples, original);
  const auto mask = attention_mask_or_ones(batch.attention_mask, batch.input_ids);
  const auto replaced = detect_ids.ne(original).logical_and(mask.ne(0));
  // 3. The discriminator on the text with the samples.
  Batch detect_batch = batch;
  detect_batch.input_ids = detect_ids;
  const auto logits = discriminator_->detect(detect_batch);  // (B, L)
  const auto real = mask.to(logits.scalar_type());
  const auto bce = F::binary_cross_entropy_with_logits(
      logits, replaced.to(logits.scalar_type()), F::BinaryCrossEntropyWithLogitsFuncOptions().reduction(torch::kNone));
  auto rtd = (bce * real).sum(1);
  if (batch.sample_weights.defined()) rtd = rtd * batch.sample_weights.to(rtd.scalar_type());
  {
    torch::NoGradGuard no_grad;
    const auto right = logits.gt(0).eq(replaced).to(torch::kFloat32) * real.to(torch::kFloat32);
    stats.select(1, kStatRtdLoss).copy_(rtd.detach().to(torch::kFloat32));
    stats.select(1, kStatRtdCorrect).copy_(right.sum(1));
    stats.select(1, kStatReplaced).copy_(replaced.to(torch::kFloat32).sum(1));
    stats.select(1, kStatTokens).copy_(real.to(torch::kFloat32).sum(1));
  }
  const auto masked = static_cast<double>(picked.size(0));
  // The global batch's M / T when the pipeline gave it; else this batch's own (a device sync).
  double ratio = batch.token_ratio;
  if (ratio <= 0) {
    const double tokens = real.sum().item<double>();
    ratio = tokens > 0 ? masked / tokens : 0.0;
  }
  ModelOutput out;
  out.logits = stats;
  out.example_losses = mlm.example_losses + (rtd_weight_ * ratio) * rtd;
  out.loss_count = picked.size(0);
  return out;
}

namespace {

// Copies into each tensor of `to` the tensor of the same name in the first of `from` that has it
// (new storage); std::logic_error where none has it or the shapes differ.
void copy_by_name(const std::vector<torch::OrderedDict<std::string, torch::Tensor>>& from,
                  torch::OrderedDict<std::string, torch::Tensor> to) {
  torch::NoGradGuard no_grad;
  for (auto& item : to) {
    const torch::Tensor* source = nullptr;
    for (const auto& f : from)
      if ((source = f.find(item.key())) != nullptr) break;
    if (source == nullptr || source->sizes() != item.value().sizes())
      throw std::logic_error("ElectraPretrainingModel: no tensor '" + item.key() + "' of the generator's shape");
    item.value().set_data(source->detach().clone());
  }
}

}  // namespace

std::shared_ptr<EncoderForMaskedLMImpl> ElectraPretrainingModel::standalone_generator() const {
  // Building the copy draws initial weights from the global generator, overwritten at once: its
  // state is put back, so that a save does not move the run's random stream (dropout), and a run
  // resumed from a checkpoint draws what the uninterrupted one drew.
  at::Generator global = at::detail::getDefaultCPUGenerator();
  at::Tensor state;
  {
    std::lock_guard<std::mutex> lock(global.mutex());
    state = global.get_state();
  }
  auto g = std::make_shared<EncoderForMaskedLMImpl>(generator_->options());
  {
    std::lock_guard<std::mutex> lock(global.mutex());
    global.set_state(state);
  }
  copy_by_name({generator_->named_parameters(), discriminator_->named_parameters()}, g->named_parameters());
  copy_by_name({generator_->named_buffers(), discriminator_->named_buffers()}, g->named_buffers());
  g->train(generator_->is_training());
  return g;
}

void ElectraPretrainingModel::set_generator(const EncoderForMaskedLMImpl& standalone) {
  copy_by_name({standalone.named_parameters()}, generator_->named_parameters());
  copy_by_name({standalone.named_buffers()}, generator_->named_buffers());
}

std::shared_ptr<TaskModel> ElectraPretrainingModel::clone_model() const {
  auto discriminator = std::dynamic_pointer_cast<ElectraForPreTrainingImpl>(discriminator_->clone_model());
  // A fresh generator that shares the copy's embeddings, then the generator's own values.
  auto generator = std::make_shared<EncoderForMaskedLMImpl>(generator_->options());
  auto copy = std::make_shared<ElectraPretrainingModel>(discriminator, generator, rtd_weight_);
  copy_module_state(*generator_, *generator);
  copy->train(is_training());
  return copy;
}

void ElectraPretrainingModel::train(bool on) {
  TaskModel::train(on);
  discriminator_->train(on);
}

}  // namespace unif::models
