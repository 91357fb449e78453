// Architectures: one row per model family (config.json's `model_type`), the table every loader
// consults, as HF's AutoModel mapping. A row says how the family's config.json reads and writes,
// how its encoder and family-specific heads are built, what HF calls its classes
// (<class_prefix><task head>, e.g. RobertaForSequenceClassification), where its encoder sits in a
// checkpoint and where its layers sit in it (layer-wise LR decay, training.freeze), which keys of a
// checkpoint are tied copies, which tokenizer and position scheme it uses and whether it reads
// token_type_ids. Nothing outside a family's folder (models/bert/, models/roberta/, ...) knows its
// layer names or its config.json keys.
//
// Adding a family, all in models/<family>/ but for the last three:
//   - its modules and heads (family.h, family.cpp), built on models/layers/ and the EncoderConfig
//     (models/encoder_config.h);
//   - the fields it alone reads, as a config type (config.h: a FamilyConfigOf<F> with TORCH_ARG
//     fields, its own validate()), reached with EncoderConfig::family<F>();
//   - its config.json keys as a field list (models/hf_fields.h: defaults() and visit(v));
//   - `Architecture <family>_architecture()` filling the row field by field (layer layout included);
//   - one line in architectures.cpp's list (and its #include), its sources in models/CMakeLists.txt
//     (and tests/fuzz/CMakeLists.txt), and its tests (tests/fixtures/families/<family>, the parity
//     and regression lists); a new tokenizer kind, where it needs one, is one row of
//     framework/text/tokenizer_kinds.h, which the row names (Architecture::tokenizer).
//
// Example:
//   const Architecture& a = architecture("roberta");           // std::invalid_argument for others
//   auto model = make_task_model(Task::Classification, options, /*num_labels=*/2);  // heads/factory.h
//   hf_class_name(a, Task::SpanExtraction);                     // "RobertaForQuestionAnswering"
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>
#include <torch/nn/module.h>

#include "framework/common/task.h"
#include "models/encoder_config.h"
#include "models/encoder_model.h"

namespace unif::models {

class HfJson;

/// How positions enter the model: learned absolute embeddings (BERT), absolute with an offset of
/// pad_token_id + 1 (RoBERTa), relative (DeBERTa), rotary (ModernBERT).
enum class PositionScheme { Absolute, Offset, Relative, Rotary };

/// A parameter of the encoder whose shape config.json's sizes decide: its checkpoint name under the
/// encoder (without Architecture::checkpoint_prefix()), its shape, the config keys that size each
/// dimension (the family's names) and how many parameters of that shape the encoder has (one per
/// layer, ...; a double: a crafted config's counts multiply beyond any integer). Read before a model is built: a
/// checkpoint's shapes are compared with it, and the parameters a config asks for are counted from it.
struct SizedTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::string dims;  // e.g. "vocab_size, hidden_size"
  double copies = 1;
};

/// Where the encoder's layers sit among its parameter names (after Architecture::checkpoint_prefix()),
/// for layer-wise LR decay and training.freeze (encoder_depth).
struct LayerLayout {
  /// Name prefixes at depth 0: the embeddings and their projection.
  std::vector<std::string> embeddings;
  /// The layer list: the parameters of layer N start with "<layers>N.".
  std::string layers;
  /// Name prefixes that go with the first layer (depth 1): parameters every layer reads.
  std::vector<std::string> with_first_layer;
  /// What training.freeze.layers counts, in messages ("the model's N <unit>").
  std::string unit = "encoder layers";
};

/// A family's row, built by models/<family>/family.cpp field by field.
struct Architecture {
  const char* model_type = "";    // config.json's model_type
  const char* class_prefix = "";  // HF class names: <class_prefix>Model, <class_prefix>ForMaskedLM, ...
  const char* encoder_name = "";  // the encoder's module name: checkpoint keys start with "<encoder_name>."
  /// The tokenizer kind, a row of framework/text/tokenizer_kinds.h by name ("WordPiece",
  /// "ByteLevelBPE", "SentencePieceFairseq", "SentencePiece", "SentencePieceDeberta", "WordPieceMPNet").
  const char* tokenizer = "WordPiece";
  PositionScheme positions = PositionScheme::Absolute;
  /// PositionScheme::Offset: the id whose rows pad the position table, positions starting after it;
  /// negative: pad_token_id (RoBERTa). MPNet's is 1 whatever pad_token_id says (HF's MPNetEmbeddings).
  int64_t position_padding_idx = -1;
  bool token_type_ids = false;   // the model reads token types (a pair's second segment is type 1)
  bool sequence_pooler = false;  // sequence heads read the encoder's pooler (BERT, ALBERT)
  /// <class_prefix>ForPreTraining is a replaced-token discriminator (ELECTRA's; task
  /// replaced_token_detection, models/electra/pretraining.h); other families' are not ours to read.
  bool replaced_token_detection = false;
  /// The family's encoder, HF-initialised (default torch generator); std::invalid_argument on bad options.
  std::shared_ptr<EncoderModel> (*make_encoder)(const EncoderConfig& options, bool add_pooling_layer) = nullptr;
  /// The family's sequence-classification head, its modules registered on `owner`.
  std::unique_ptr<SequenceHead> (*make_sequence_head)(torch::nn::Module& owner, const EncoderConfig& options,
                                                      int64_t num_labels) = nullptr;
  /// The family's masked-LM head, its modules registered on `owner`, its decoder tied to `encoder`'s
  /// word embeddings.
  std::unique_ptr<LmHead> (*make_lm_head)(torch::nn::Module& owner, EncoderModel& encoder) = nullptr;
  /// Checkpoint keys HF writes as tied copies of other parameters (MLM decoders): dropped on load.
  std::vector<std::string> tied_keys;
  /// config.json -> options (the family's defaults first, then every key present); the writer
  /// sets the family's keys on a JSON object; the keys the family knows. From the family's field
  /// list (models/hf_fields.h): read_hf_fields<F>, write_hf_fields<F>, hf_field_keys<F>.
  /// std::invalid_argument naming the key.
  void (*read_config)(const HfJson& config, EncoderConfig& options) = nullptr;
  void (*write_config)(const EncoderConfig& options, nlohmann::json& config) = nullptr;
  std::set<std::string> (*config_keys)() = nullptr;
  /// After read_config has read a whole config: the checks that relate its keys (ids within
  /// vocab_size, heads dividing the hidden size, ...); std::invalid_argument naming the key.
  void (*check_config)(const HfJson& config, const EncoderConfig& options) = nullptr;
  /// The encoder's large parameters (embeddings, each layer's weight matrices), from the options alone.
  std::vector<SizedTensor> (*sized_tensors)(const EncoderConfig& options) = nullptr;
  /// The family's token-classification / span-extraction head (its modules registered on `owner`,
  /// `num_outputs` logits per position); nullptr: BERT's dropout + classifier (qa_outputs).
  std::unique_ptr<TokenHead> (*make_token_head)(torch::nn::Module& owner, const EncoderConfig& options,
                                                int64_t num_outputs) = nullptr;
  /// The encoder's layers by parameter name.
  LayerLayout layers;

  std::string checkpoint_prefix() const { return std::string(encoder_name) + "."; }
};

/// Every row, in the order error messages list them.
const std::vector<Architecture>& architectures();

/// The row of `model_type`, or nullptr.
const Architecture* find_architecture(const std::string& model_type);

/// The row of `model_type`; std::invalid_argument naming the supported model types otherwise.
const Architecture& architecture(const std::string& model_type);

/// The supported model types, quoted and comma-separated: "\"bert\", \"roberta\", ...".
std::string supported_model_types();

/// The HF class name of `task`'s head in family `arch`: BertForSequenceClassification, ...
std::string hf_class_name(const Architecture& arch, Task task);

/// About how many parameters the encoder of `options` has (its SizedTensors; biases and norms
/// left out), as a double: the sizes of a crafted config overflow any integer type.
double parameter_estimate(const EncoderConfig& options);

/// The longest input (in tokens, specials included) the model's position embeddings hold:
/// max_position_embeddings, less the padding id + 1 where positions are offset (RoBERTa, MPNet).
int64_t max_input_length(const EncoderConfig& options);

/// How many token types a pair may use with this model: type_vocab_size where the family reads
/// token types from a pair template that sets them, else unlimited (RoBERTa's pairs are all type 0;
/// DeBERTa-v3, type_vocab_size 0, reads none).
int64_t usable_token_types(const EncoderConfig& options);

/// The encoder layer a parameter of `arch`'s task model belongs to (its name under
/// checkpoint_prefix() starts with the row's layer list and a number), or nullopt.
std::optional<int64_t> encoder_layer_index(const Architecture& arch, const std::string& name);

/// A parameter's depth in `arch`'s encoder: 0 for the embeddings (and their projection), i+1 for
/// encoder layer i (and what goes with the first layer), nullopt for the rest (pooler, heads).
/// Layer-wise LR decay and training.freeze go by it.
std::optional<int64_t> encoder_depth(const Architecture& arch, const std::string& name);

/// The task HF `architectures` (its first entry) + problem_type + num_labels ask for; the one rule
/// every loader uses. No entry is read as <family>ForSequenceClassification; a sequence head is
/// multilabel / regression by problem_type, and regression when problem_type is empty and num_labels
/// is 1 (as HF's BertForSequenceClassification picks its loss), else classification. nullopt for a
/// class that is no task head of a known family (BertModel, BertForPreTraining, ...).
std::optional<Task> task_from_hf(const std::vector<std::string>& hf_architectures, const std::string& problem_type,
                                 int64_t num_labels);

}  // namespace unif::models
