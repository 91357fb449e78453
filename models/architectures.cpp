// The architecture table and the HF class name <-> task lookup: see architectures.h.
#include "models/architectures.h"

#include <limits>
#include <stdexcept>

#include "models/albert/family.h"
#include "models/bert/family.h"
#include "models/bert/fields.h"
#include "models/deberta_v2/family.h"
#include "models/distilbert/family.h"
#include "models/electra/family.h"
#include "models/modernbert/family.h"
#include "models/roberta/family.h"

namespace unif::models {

const std::vector<Architecture>& architectures() {
  // model_type, class prefix, encoder name, tokenizer, positions, token types, pooled sequence head,
  // encoder, sequence head, MLM head, tied checkpoint keys, config reader, config writer, config checks,
  // sized tensors[, token head].
  // clang-format off
  static const std::vector<Architecture> rows{
      {"bert", "Bert", "bert", TokenizerKind::WordPiece, PositionScheme::Absolute, true, true, make_bert_encoder,
       make_bert_sequence_head, make_bert_lm_head, {"cls.predictions.decoder.weight", "cls.predictions.decoder.bias"},
       read_hf_fields<BertFields>, write_hf_fields<BertFields>, check_bert_config, bert_sized_tensors},
      {"roberta", "Roberta", "roberta", TokenizerKind::ByteLevelBpe, PositionScheme::Offset, false, false,
       make_roberta_encoder, make_roberta_sequence_head, make_roberta_lm_head,
       {"lm_head.decoder.weight", "lm_head.decoder.bias"}, read_roberta_config, write_roberta_config,
       check_roberta_config, bert_sized_tensors},
      {"xlm-roberta", "XLMRoberta", "roberta", TokenizerKind::SentencePieceFairseq, PositionScheme::Offset, false, false,
       make_roberta_encoder, make_roberta_sequence_head, make_roberta_lm_head,
       {"lm_head.decoder.weight", "lm_head.decoder.bias"}, read_roberta_config, write_roberta_config,
       check_roberta_config, bert_sized_tensors},
      {"distilbert", "DistilBert", "distilbert", TokenizerKind::WordPiece, PositionScheme::Absolute, false, false,
       make_distilbert_encoder, make_distilbert_sequence_head, make_distilbert_lm_head, {"vocab_projector.weight"},
       read_distilbert_config, write_distilbert_config, check_distilbert_config, distilbert_sized_tensors},
      {"electra", "Electra", "electra", TokenizerKind::WordPiece, PositionScheme::Absolute, true, false,
       make_electra_encoder, make_electra_sequence_head, make_electra_lm_head, {"generator_lm_head.weight"},
       read_electra_config, write_electra_config, check_bert_config, electra_sized_tensors},
      {"albert", "Albert", "albert", TokenizerKind::SentencePiece, PositionScheme::Absolute, false, true,
       make_albert_encoder, make_bert_sequence_head, make_albert_lm_head,
       {"predictions.decoder.weight", "predictions.decoder.bias"}, read_albert_config, write_albert_config,
       check_albert_config, albert_sized_tensors},
      // DeBERTa-v2/v3: token types only when type_vocab_size > 0 (v3: none, usable_token_types).
      {"deberta-v2", "DebertaV2", "deberta", TokenizerKind::SentencePieceDeberta, PositionScheme::Relative, true, false,
       make_deberta_v2_encoder, make_deberta_v2_sequence_head, make_deberta_v2_lm_head,
       {"cls.predictions.decoder.weight", "cls.predictions.decoder.bias"}, read_deberta_v2_config,
       write_deberta_v2_config, check_deberta_v2_config, deberta_v2_sized_tensors},
      // ModernBERT: rotary positions, no token types; token and span heads run its prediction head.
      {"modernbert", "ModernBert", "model", TokenizerKind::ByteLevelBpe, PositionScheme::Rotary, false, false,
       make_modernbert_encoder, make_modernbert_sequence_head, make_modernbert_lm_head, {"decoder.weight"},
       read_modernbert_config, write_modernbert_config, check_modernbert_config, modernbert_sized_tensors,
       make_modernbert_token_head},
  };
  // clang-format on
  return rows;
}

const Architecture* find_architecture(const std::string& model_type) {
  for (const auto& a : architectures())
    if (model_type == a.model_type) return &a;
  return nullptr;
}

std::string supported_model_types() {
  std::string out;
  for (const auto& a : architectures()) out += (out.empty() ? "\"" : ", \"") + std::string(a.model_type) + "\"";
  return out;
}

const Architecture& architecture(const std::string& model_type) {
  if (const Architecture* a = find_architecture(model_type)) return *a;
  throw std::invalid_argument("model_type \"" + model_type +
                              "\" is not supported (supported model types: " + supported_model_types() + ")");
}

std::string hf_class_name(const Architecture& arch, Task task) {
  return std::string(arch.class_prefix) + task_spec(task).hf_head;
}

double parameter_estimate(const EncoderConfig& options) {
  double total = 0;
  for (const auto& t : architecture(options.model_type()).sized_tensors(options)) {
    double n = t.copies;
    for (int64_t d : t.shape) n *= static_cast<double>(d);
    total += n;
  }
  return total;
}

int64_t max_input_length(const EncoderConfig& options) {
  const Architecture& a = architecture(options.model_type());
  return options.max_position_embeddings() - (a.positions == PositionScheme::Offset ? options.pad_token_id() + 1 : 0);
}

int64_t usable_token_types(const EncoderConfig& options) {
  // A family that reads token types reads none when type_vocab_size is 0 (DeBERTa-v3).
  return architecture(options.model_type()).token_type_ids && options.type_vocab_size() > 0
             ? options.type_vocab_size()
             : std::numeric_limits<int64_t>::max();
}

std::optional<Task> task_from_hf(const std::vector<std::string>& hf_architectures, const std::string& problem_type,
                                 int64_t num_labels) {
  const std::string sequence_head = task_spec(Task::Classification).hf_head;
  if (hf_architectures.empty()) return task_from_hf_head(sequence_head, problem_type, num_labels);
  const std::string& name = hf_architectures.front();
  for (const auto& a : architectures()) {
    const std::string prefix = a.class_prefix;
    if (name.compare(0, prefix.size(), prefix) == 0)
      if (auto task = task_from_hf_head(name.substr(prefix.size()), problem_type, num_labels)) return task;
  }
  return std::nullopt;
}

}  // namespace unif::models
