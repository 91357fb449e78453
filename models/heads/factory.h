// make_encoder_task_model: the one place a Task becomes a concrete head, on the encoder of
// options.model_type()'s family (models/architectures.h).
//
// Example:
//   auto model = make_encoder_task_model(Task::Classification, opt, /*num_labels=*/2);
//   ModelOutput out = model->forward(batch);
#pragma once
#include <memory>

#include "framework/common/task.h"
#include "models/encoder_config.h"
#include "models/heads/encoder_task_model.h"

namespace unif::models {

/// A freshly initialised head of `kind` on a new encoder of options.model_type()'s family (HF init,
/// default torch generator).
/// num_labels is ignored for SpanExtraction (always start/end) and MaskedLm (vocab_size). Throws std::invalid_argument
/// on bad options.
std::shared_ptr<EncoderTaskModel> make_encoder_task_model(Task kind, const EncoderConfig& options, int64_t num_labels);

/// The family row of a model made here: an encoder task model's, a distillation's student's;
/// nullptr for any other TaskModel (a custom model).
const Architecture* architecture_of(const TaskModel& model);

/// The HF class name of `model`: <family prefix><task head>, e.g. RobertaForTokenClassification.
std::string hf_architecture(const EncoderTaskModel& model);

}  // namespace unif::models
