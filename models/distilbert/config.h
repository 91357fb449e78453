// DistilBertConfig: the config.json fields DistilBERT alone reads
// (EncoderConfig::family<DistilBertConfig>()).
#pragma once
#include "models/encoder_config.h"

namespace unif::models {

/// Dropout before qa_outputs (qa_dropout) and before the sequence classifier (seq_classif_dropout),
/// negative = none; fixed sinusoidal position embeddings. Defaults: DistilBertConfig's.
class DistilBertConfig : public FamilyConfigOf<DistilBertConfig> {
  TORCH_ARG(double, qa_dropout) = 0.1;
  TORCH_ARG(double, seq_classif_dropout) = 0.2;
  TORCH_ARG(bool, sinusoidal_pos_embds) = false;

 public:
  void validate(const EncoderConfig& /*config*/) const override {
    if (qa_dropout() >= 0) config_checks::probability(qa_dropout(), "qa_dropout");
    if (seq_classif_dropout() >= 0) config_checks::probability(seq_classif_dropout(), "seq_classif_dropout");
  }
  double span_head_dropout() const override { return qa_dropout(); }
};

}  // namespace unif::models
