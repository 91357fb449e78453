// ELECTRA pretraining (replaced-token detection, Clark et al. 2020) as HF's two classes trained
// together: a generator ElectraForMaskedLM (by default a quarter of the discriminator's width) and
// a discriminator ElectraForPreTraining, sharing their embeddings (word, position and token-type
// tables and their LayerNorm: one module, whose parameters are listed once, the discriminator's;
// each side keeps its own `embeddings_project` where its width differs from embedding_size).
//
// One pass on a masked batch (framework/data/mlm.h: labels hold the original id at the M selected
// positions, -100 elsewhere; input_ids the generator's input, 80% [MASK] / 10% random / 10% kept):
//   1. the generator predicts the selected positions: mlm_b = Σ cross-entropy over b's positions;
//   2. each selected position is replaced by a sample of the generator's distribution there, without
//      gradient: the inverse CDF of softmax(logits) at the position's uniform (Batch::uniforms, drawn
//      from the data seed), so a sample depends on the example, never on the replica that draws it;
//   3. the discriminator reads the original text with the samples in place and tells, per real token,
//      whether it was replaced (a sample equal to the original counts as original, as in ELECTRA):
//      rtd_b = Σ binary cross-entropy with logits over b's real tokens (attention_mask 1).
// l_b = mlm_b + λ · r · rtd_b with r = M / T of the global batch (Batch::token_ratio; 0: this
// batch's), and loss_count = M: Σ_b l_b / M = mean MLM loss + λ · mean RTD loss, HF's two losses as
// ELECTRA adds them (λ = electra.rtd_weight, 50).
//
// Outputs: logits (B, 7) per example, the sums the dev metrics are made of (kStat* columns).
#pragma once
#include <memory>

#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include "models/heads/encoder_task_model.h"
#include "models/heads/masked_lm.h"

namespace unif::models {

/// The generator's options by default: the discriminator's with a quarter of its hidden size and
/// intermediate size, and as many heads as keep the discriminator's head width (at least 1).
EncoderConfig default_generator_options(const EncoderConfig& discriminator);

/// ElectraForPreTraining: the encoder, then `discriminator_predictions` (dense H→H, hidden_act,
/// dense_prediction H→1): one logit per position (B, L), "replaced" when positive. With labels (B, L)
/// 1 = replaced, 0 = original: l_b = Σ over b's real tokens of BCE-with-logits, loss_count = real tokens.
class ElectraForPreTrainingImpl : public EncoderTaskModel {
 public:
  explicit ElectraForPreTrainingImpl(const EncoderConfig& options);
  ModelOutput forward(const Batch& batch, const torch::Tensor& word_embedding_delta = {}) override;
  std::shared_ptr<TaskModel> clone_model() const override;
  Task kind() const override { return Task::ReplacedTokenDetection; }
  int64_t num_labels() const override { return 2; }
  /// Per position logits (B, L) of a batch.
  torch::Tensor detect(const Batch& batch);

 private:
  torch::nn::Module* predictions_ = nullptr;
  torch::nn::Linear dense_{nullptr}, dense_prediction_{nullptr};
};
TORCH_MODULE(ElectraForPreTraining);

/// The two models trained together (see above). Parameters: the discriminator's under its own names
/// (`electra.*`, `discriminator_predictions.*`), then the generator's under `generator.` (without
/// the shared embeddings).
class ElectraPretrainingModel final : public TaskModel {
 public:
  /// Columns of the (B, 7) per-example statistics forward() returns as logits.
  enum Stat : int64_t {
    kStatMlmLoss,     // Σ cross-entropy over the selected positions
    kStatMlmCorrect,  // selected positions where the generator's argmax is the original
    kStatMasked,      // selected positions (M_b)
    kStatRtdLoss,     // Σ BCE over the real tokens
    kStatRtdCorrect,  // real tokens the discriminator classifies right
    kStatReplaced,    // real tokens replaced by a sample that differs from the original
    kStatTokens,      // real tokens (T_b)
    kStatCount
  };

  /// Shares the discriminator's embeddings with the generator (both ELECTRA; the same
  /// embedding_size, vocabulary, positions and token types: std::invalid_argument otherwise).
  ElectraPretrainingModel(std::shared_ptr<ElectraForPreTrainingImpl> discriminator,
                          std::shared_ptr<EncoderForMaskedLMImpl> generator, double rtd_weight);

  ModelOutput forward(const Batch& batch, const torch::Tensor& word_embedding_delta = {}) override;
  /// forward() with given samples (B, L) at the selected positions (-100 elsewhere) instead of
  /// drawing them: HF parity tests with a reference's samples.
  ModelOutput forward_with_samples(const Batch& batch, const torch::Tensor& samples);
  /// The generator's samples (B, L) at the selected positions of `batch` (-100 elsewhere) from its
  /// logits (M, V) at those positions and the batch's uniforms.
  static torch::Tensor sample(const Batch& batch, const torch::Tensor& logits);

  torch::nn::Embedding word_embeddings() override { return discriminator_->word_embeddings(); }
  std::shared_ptr<TaskModel> clone_model() const override;
  /// The discriminator follows too (its modules are this model's; its own flag is set alike).
  void train(bool on = true) override;

  /// The generator as HF's ElectraForMaskedLM holds it: a deep copy with the shared embeddings
  /// copied in (what `generator/` saves).
  std::shared_ptr<EncoderForMaskedLMImpl> standalone_generator() const;
  /// Sets the generator's own parameters and buffers (all but the shared embeddings) from
  /// `standalone`, an ElectraForMaskedLM of the generator's shape (std::logic_error otherwise).
  void set_generator(const EncoderForMaskedLMImpl& standalone);

  const std::shared_ptr<ElectraForPreTrainingImpl>& discriminator() const { return discriminator_; }
  const std::shared_ptr<EncoderForMaskedLMImpl>& generator() const { return generator_; }
  double rtd_weight() const { return rtd_weight_; }

 private:
  ModelOutput run(const Batch& batch, const torch::Tensor* samples);

  std::shared_ptr<ElectraForPreTrainingImpl> discriminator_;
  std::shared_ptr<EncoderForMaskedLMImpl> generator_;
  double rtd_weight_;
};

/// Makes `generator` read `discriminator`'s embeddings module (its own is dropped from its
/// parameters); both must be ELECTRA encoders with the same embedding sizes (std::invalid_argument).
void share_electra_embeddings(EncoderModel& discriminator, EncoderModel& generator);

}  // namespace unif::models
