// make_bert_task_model: the one place a Task becomes a concrete BERT head (the bert row of
// models/architectures.h builds through it).
//
// Example:
//   auto model = make_bert_task_model(Task::Classification, opt, /*num_labels=*/2);
//   ModelOutput out = model->forward(batch);
#pragma once
#include <memory>

#include "framework/common/task.h"
#include "models/bert/options.h"
#include "models/heads/bert_task_model.h"

namespace unif::models {

/// A freshly initialised head of `kind` on a new BertModel (HF init, default torch generator).
/// num_labels is ignored for SpanExtraction (always start/end) and MaskedLm (vocab_size). Throws std::invalid_argument on bad options.
std::shared_ptr<BertTaskModel> make_bert_task_model(Task kind, const BertOptions& options, int64_t num_labels);

/// The HF class name of `kind`'s BERT head (the bert row of architectures.h): BertForSequenceClassification,
/// BertForTokenClassification, BertForQuestionAnswering, BertForMaskedLM.
std::string hf_architecture(Task kind);

}  // namespace unif::models
