// make_bert_task_model and HF naming of the heads: see factory.h.
#include "models/heads/factory.h"

#include "models/heads/masked_lm.h"
#include "models/heads/sequence_classification.h"
#include "models/heads/span_extraction.h"
#include "models/heads/token_classification.h"

namespace unif::models {

std::shared_ptr<BertTaskModel> make_bert_task_model(TaskKind kind, const BertOptions& options, int64_t num_labels) {
  switch (kind) {
    case TaskKind::Classification:
    case TaskKind::Multilabel:
    case TaskKind::Regression:
      return std::make_shared<BertForSequenceClassificationImpl>(options, num_labels, kind);
    case TaskKind::TokenClassification:
      return std::make_shared<BertForTokenClassificationImpl>(options, num_labels);
    case TaskKind::SpanExtraction:
      return std::make_shared<BertForQuestionAnsweringImpl>(options);
    case TaskKind::MaskedLm:
      return std::make_shared<BertForMaskedLMImpl>(options);
  }
  throw std::invalid_argument("unknown TaskKind");
}

std::string hf_architecture(TaskKind kind) {
  switch (kind) {
    case TaskKind::TokenClassification: return "BertForTokenClassification";
    case TaskKind::SpanExtraction: return "BertForQuestionAnswering";
    case TaskKind::MaskedLm: return "BertForMaskedLM";
    default: return "BertForSequenceClassification";
  }
}

std::string hf_problem_type(TaskKind kind) {
  switch (kind) {
    case TaskKind::Classification: return "single_label_classification";
    case TaskKind::Multilabel: return "multi_label_classification";
    case TaskKind::Regression: return "regression";
    default: return "";
  }
}

}  // namespace unif::models
