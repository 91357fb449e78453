// Architectures: one row per model family (config.json's `model_type`), the table every loader
// consults, as HF's AutoModel mapping. A row says how the family's task models are built, what HF
// calls them (<class_prefix><task head>, e.g. BertForSequenceClassification), where its encoder sits
// in a checkpoint, which tokenizer and position scheme it uses and whether it reads token_type_ids.
// Nothing outside a family's folder (models/bert/, ...) knows its layer names. Today one row: bert.
//
// Adding a family (RoBERTa, XLM-R, DistilBERT, ELECTRA, ALBERT, DeBERTa-v3, ModernBERT): its modules
// and heads in models/<family>/, one row below, and (where it needs one) the tokenizer or position
// scheme its row names.
//
// Example:
//   const Architecture& a = architecture("bert");              // std::invalid_argument for others
//   auto model = a.make_task_model(Task::Classification, options, /*num_labels=*/2);
//   hf_class_name(a, Task::SpanExtraction);                     // "BertForQuestionAnswering"
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "framework/common/task.h"
#include "models/bert/options.h"
#include "models/heads/bert_task_model.h"

namespace unif::models {

/// The tokenizer files and algorithm of a family. Only WordPiece is implemented.
enum class TokenizerKind { WordPiece, ByteLevelBpe, SentencePiece };

/// How positions enter the model: learned absolute embeddings (BERT), absolute with an offset of
/// pad_token_id + 1 (RoBERTa), relative (DeBERTa), rotary (ModernBERT). Only Absolute is implemented.
enum class PositionScheme { Absolute, Offset, Relative, Rotary };

struct Architecture {
  const char* model_type;         // config.json's model_type
  const char* class_prefix;       // HF class names: <class_prefix>Model, <class_prefix>ForMaskedLM, ...
  const char* checkpoint_prefix;  // the encoder's key prefix in a task model's checkpoint ("bert.")
  TokenizerKind tokenizer;
  PositionScheme positions;
  bool token_type_ids;            // the model reads token types (sentence pairs as segments 0 and 1)
  /// A freshly initialised task model of `task` (HF init, default torch generator). num_labels is
  /// ignored by span extraction (start/end) and masked LM (vocab_size). std::invalid_argument on bad options.
  std::shared_ptr<BertTaskModel> (*make_task_model)(Task task, const BertOptions& options, int64_t num_labels);
};

/// Every row, in the order error messages list them.
const std::vector<Architecture>& architectures();

/// The row of `model_type`, or nullptr.
const Architecture* find_architecture(const std::string& model_type);

/// The row of `model_type`; std::invalid_argument naming the supported model types otherwise.
const Architecture& architecture(const std::string& model_type);

/// The supported model types, quoted and comma-separated: "\"bert\"".
std::string supported_model_types();

/// The HF class name of `task`'s head in family `arch`: BertForSequenceClassification, ...
std::string hf_class_name(const Architecture& arch, Task task);

/// The task HF `architectures` (its first entry) + problem_type + num_labels ask for; the one rule
/// every loader uses. No entry is read as <family>ForSequenceClassification; a sequence head is
/// multilabel / regression by problem_type, and regression when problem_type is empty and num_labels
/// is 1 (as HF's BertForSequenceClassification picks its loss), else classification. nullopt for a
/// class that is no task head of a known family (BertModel, BertForPreTraining, ...).
std::optional<Task> task_from_hf(const std::vector<std::string>& hf_architectures, const std::string& problem_type,
                                 int64_t num_labels);

}  // namespace unif::models
