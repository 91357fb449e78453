// make_bert_task_model and the BERT heads' HF names: see factory.h.
#include "models/heads/factory.h"

#include "models/architectures.h"
#include "models/heads/masked_lm.h"
#include "models/heads/sequence_classification.h"
#include "models/heads/span_extraction.h"
#include "models/heads/token_classification.h"

namespace unif::models {

std::shared_ptr<BertTaskModel> make_bert_task_model(Task kind, const BertOptions& options, int64_t num_labels) {
  switch (kind) {
    case Task::Classification:
    case Task::Multilabel:
    case Task::Regression:
      return std::make_shared<BertForSequenceClassificationImpl>(options, num_labels, kind);
    case Task::TokenClassification:
      return std::make_shared<BertForTokenClassificationImpl>(options, num_labels);
    case Task::SpanExtraction:
      return std::make_shared<BertForQuestionAnsweringImpl>(options);
    case Task::MaskedLm:
      return std::make_shared<BertForMaskedLMImpl>(options);
  }
  throw std::invalid_argument("unknown Task");
}

std::string hf_architecture(Task kind) { return hf_class_name(architecture("bert"), kind); }

}  // namespace unif::models
