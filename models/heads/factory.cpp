// make_encoder_task_model and the BERT heads' HF names: see factory.h.
#include "models/heads/factory.h"

#include "models/architectures.h"
#include "models/electra/pretraining.h"
#include "models/heads/distillation.h"
#include "models/heads/embedding_model.h"
#include "models/heads/masked_lm.h"
#include "models/heads/sequence_classification.h"
#include "models/heads/span_extraction.h"
#include "models/heads/token_classification.h"

namespace unif::models {

std::shared_ptr<EncoderTaskModel> make_encoder_task_model(Task kind, const EncoderConfig& options, int64_t num_labels) {
  switch (kind) {
    case Task::Classification:
    case Task::Multilabel:
    case Task::Regression: return std::make_shared<EncoderForSequenceClassificationImpl>(options, num_labels, kind);
    case Task::TokenClassification: return std::make_shared<EncoderForTokenClassificationImpl>(options, num_labels);
    case Task::SpanExtraction: return std::make_shared<EncoderForQuestionAnsweringImpl>(options);
    case Task::MaskedLm: return std::make_shared<EncoderForMaskedLMImpl>(options);
    case Task::Embedding: return std::make_shared<EncoderForEmbeddingImpl>(options);
    case Task::ReplacedTokenDetection:  // the discriminator; its generator: ElectraPretrainingModel
      if (!architecture(options.model_type()).replaced_token_detection)
        throw std::invalid_argument("task replaced_token_detection: ELECTRA models only (model_type electra), got " +
                                    options.model_type());
      return std::make_shared<ElectraForPreTrainingImpl>(options);
  }
  throw std::invalid_argument("unknown Task");
}

const Architecture* architecture_of(const TaskModel& model) {
  if (const auto* m = dynamic_cast<const EncoderTaskModel*>(&model)) return &m->architecture();
  if (const auto* d = dynamic_cast<const DistillationModel*>(&model)) return &d->student()->architecture();
  if (const auto* p = dynamic_cast<const ElectraPretrainingModel*>(&model)) return &p->discriminator()->architecture();
  return nullptr;
}

std::string hf_architecture(const EncoderTaskModel& model) { return hf_class_name(model.architecture(), model.kind()); }

}  // namespace unif::models
