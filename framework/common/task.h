// Task: the fine-tuning task (SPEC §3 `task`), and the one table of what each task decides: its
// config name, its HF head and problem_type, how its data is read, how its loss is normalised and
// what `unif predict` writes. The loaders, the model factory, build, evaluate, predict and the trainer
// read a row here instead of switching on the task. Header only, no Torch: the config library and
// the models both include it. The metric family of a task is framework/metrics/metric_set.h's; the
// model-family half of HF class names (Bert + ForSequenceClassification) is models/architectures.h's.
//
// Example:
//   const TaskSpec& t = task_spec(Task::TokenClassification);
//   t.name;      // "token_classification"
//   t.hf_head;   // "ForTokenClassification"
//   t.input;     // TaskInput::Tokens
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace unif {

enum class Task {
  Classification,
  Multilabel,
  Regression,
  TokenClassification,
  SpanExtraction,
  MaskedLm,
  Embedding,
  ReplacedTokenDetection
};

/// What one example's text fields are (and so the default text_fields / label_field, the number of
/// fields, the token types a model needs).
enum class TaskInput {
  Text,             // 1 text, or 2 (a sentence pair); label field `label`
  Tokens,           // 1 field holding a token list; label field `tags` (one tag per token)
  QuestionContext,  // the question field, then the context field; label field `answers`
  MlmText,          // 1 text field, no labels (masks are drawn from the text; framework/data/mlm.h)
  Texts,            // 2+ text fields, each encoded alone (anchor, positive, negatives); label field `score`
};

/// What the label field of an example holds (and what a label set is collected from).
enum class TaskLabels {
  OneClass,  // one label name; a label set of >= 2 names
  ClassSet,  // a list of label names; a label set
  Value,     // one number; no label set
  TagList,   // a list of tag names, one per token; a label set
  Answers,   // SQuAD-style answers; no label set
  None,      // masked_lm, replaced_token_detection: no labels
  Score,     // embedding: an optional number (similarity-scored pairs); absent for in-batch-negative losses
};

/// The loss's denominator Z (SPEC §5): the number of examples, or of labelled tokens. A loss that
/// couples the examples of a batch (embedding's in-batch negatives) is computed on the whole batch
/// and given as the sum form Z·loss, so that it is divided by Z like the others.
enum class LossNormalizer { Examples, LabeledTokens };

/// What `unif predict` writes for one input (SPEC §4).
enum class PredictKind { Label, Labels, Value, Tags, Answer, Masks, Embedding };

/// One row per task.
struct TaskSpec {
  Task task;
  const char* name;          // the config's `task` value (SPEC §3)
  const char* hf_head;       // HF head class suffix: <Family>ForSequenceClassification, ...
  const char* problem_type;  // HF config.json problem_type of the head ("" for none)
  TaskInput input;
  TaskLabels labels;
  LossNormalizer normalizer;
  bool loss_options;      // training.loss (label smoothing, focal, class weights) applies
  bool distillation;      // distill.teacher is supported
  bool probabilities;     // the head's output is a distribution (SMART's and R-Drop's KL term apply)
  bool logits_per_token;  // logits are (L, ...) per example, cut to the example's length
  PredictKind output;
};

inline constexpr std::array<TaskSpec, 8> kTaskSpecs{{
    {Task::Classification, "classification", "ForSequenceClassification", "single_label_classification",
     TaskInput::Text, TaskLabels::OneClass, LossNormalizer::Examples, true, true, true, false, PredictKind::Label},
    {Task::Multilabel, "multilabel", "ForSequenceClassification", "multi_label_classification", TaskInput::Text,
     TaskLabels::ClassSet, LossNormalizer::Examples, false, false, true, false, PredictKind::Labels},
    {Task::Regression, "regression", "ForSequenceClassification", "regression", TaskInput::Text, TaskLabels::Value,
     LossNormalizer::Examples, false, false, false, false, PredictKind::Value},
    {Task::TokenClassification, "token_classification", "ForTokenClassification", "", TaskInput::Tokens,
     TaskLabels::TagList, LossNormalizer::LabeledTokens, true, true, true, true, PredictKind::Tags},
    {Task::SpanExtraction, "span_extraction", "ForQuestionAnswering", "", TaskInput::QuestionContext,
     TaskLabels::Answers, LossNormalizer::Examples, false, true, true, true, PredictKind::Answer},
    {Task::MaskedLm, "masked_lm", "ForMaskedLM", "", TaskInput::MlmText, TaskLabels::None,
     LossNormalizer::LabeledTokens, false, false, true, false, PredictKind::Masks},
    {Task::Embedding, "embedding", "Model", "", TaskInput::Texts, TaskLabels::Score, LossNormalizer::Examples, false,
     false, false, false, PredictKind::Embedding},
    // ELECTRA pretraining: Z counts the generator's masked tokens; the discriminator's term is scaled
    // to its real tokens (models/electra/pretraining.h). Its outputs are two model directories.
    {Task::ReplacedTokenDetection, "replaced_token_detection", "ForPreTraining", "", TaskInput::MlmText,
     TaskLabels::None, LossNormalizer::LabeledTokens, false, false, false, false, PredictKind::Masks},
}};

/// The row of `task`.
constexpr const TaskSpec& task_spec(Task task) { return kTaskSpecs[static_cast<std::size_t>(task)]; }

/// "classification" | "multilabel" | "regression" | "token_classification" | "span_extraction" | "masked_lm" |
/// "embedding" | "replaced_token_detection"
inline std::string to_string(Task task) { return task_spec(task).name; }

/// The task named `name` (to_string's inverse); nullopt for any other name. framework::parse_task
/// is the user-facing form (an `error:` listing the names).
inline std::optional<Task> find_task(const std::string& name) {
  for (const auto& t : kTaskSpecs)
    if (name == t.name) return t.task;
  return std::nullopt;
}

/// Every task name, in enum order.
inline std::vector<std::string> task_names() {
  std::vector<std::string> out;
  for (const auto& t : kTaskSpecs) out.emplace_back(t.name);
  return out;
}

/// Whether the task's labels are names from a label set (data.labels, config.json's id2label).
constexpr bool has_label_set(Task task) {
  const TaskLabels l = task_spec(task).labels;
  return l == TaskLabels::OneClass || l == TaskLabels::ClassSet || l == TaskLabels::TagList;
}

/// The default text fields and label field of a task's records (SPEC §3 data.text_fields /
/// data.label_field, and what a plain HF model directory reads).
struct TaskFields {
  std::vector<std::string> text_fields;
  std::string label_field;
};
inline TaskFields default_fields(Task task) {
  switch (task_spec(task).input) {
    case TaskInput::Tokens: return {{"tokens"}, "tags"};
    case TaskInput::QuestionContext: return {{"question", "context"}, "answers"};
    case TaskInput::Texts: return {{"anchor", "positive"}, "score"};
    case TaskInput::Text:
    case TaskInput::MlmText: break;
  }
  return {{"text"}, "label"};
}

/// The token types (segments) an input of `text_fields` fields feeds a model: 2 for question /
/// context, 1 for a token list, an MLM text or texts encoded one by one, else the number of text
/// fields (at least 1).
inline int64_t segment_count(TaskInput input, std::size_t text_fields) {
  switch (input) {
    case TaskInput::QuestionContext: return 2;
    case TaskInput::Tokens:
    case TaskInput::MlmText:
    case TaskInput::Texts: return 1;
    case TaskInput::Text: break;
  }
  return static_cast<int64_t>(text_fields < 1 ? 1 : text_fields);
}

/// The head's output size for `labels` label names: 1 for regression, else the label count (at
/// least 1). Span extraction (2, start/end) and masked_lm (vocab) ignore it.
inline int64_t head_num_labels(Task task, std::size_t labels) {
  return task == Task::Regression ? 1 : static_cast<int64_t>(labels < 1 ? 1 : labels);
}

/// The task of a HF head: `head` is the class name without the family prefix
/// ("ForSequenceClassification"). A sequence head is multilabel or regression by its problem_type,
/// and (as HF's BertForSequenceClassification decides its loss) regression when problem_type is
/// empty and num_labels is 1; else classification. nullopt for a class that is no task head here
/// (Model, ForPreTraining, ...).
inline std::optional<Task> task_from_hf_head(const std::string& head, const std::string& problem_type,
                                             int64_t num_labels) {
  if (head == task_spec(Task::Classification).hf_head) {
    for (const auto& t : kTaskSpecs)
      if (t.hf_head == head && !problem_type.empty() && problem_type == t.problem_type) return t.task;
    return problem_type.empty() && num_labels == 1 ? Task::Regression : Task::Classification;
  }
  for (const auto& t : kTaskSpecs)
    if (head == t.hf_head) return t.task;
  return std::nullopt;
}

}  // namespace unif
