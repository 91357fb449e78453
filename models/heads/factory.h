// make_bert_task_model: the one place a TaskKind becomes a concrete BERT head.
//
// Example:
//   auto model = make_bert_task_model(TaskKind::Classification, opt, /*num_labels=*/2);
//   ModelOutput out = model->forward(batch);
#pragma once
#include <memory>

#include "models/bert/options.h"
#include "models/heads/bert_task_model.h"
#include "models/heads/task_kind.h"

namespace unif::models {

/// A freshly initialised head of `kind` on a new BertModel (HF init, default torch generator).
/// num_labels is ignored for SpanExtraction (always start/end) and MaskedLm (vocab_size). Throws std::invalid_argument on bad options.
std::shared_ptr<BertTaskModel> make_bert_task_model(TaskKind kind, const BertOptions& options, int64_t num_labels);

/// The HF class name of `kind`'s head: BertForSequenceClassification, BertForTokenClassification,
/// BertForQuestionAnswering, BertForMaskedLM.
std::string hf_architecture(TaskKind kind);

/// HF `problem_type` of a sequence head (single_label_classification, multi_label_classification,
/// regression); empty for token and span heads.
std::string hf_problem_type(TaskKind kind);

}  // namespace unif::models
