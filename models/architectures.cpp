// The architecture table and the HF class name <-> task lookup: see architectures.h.
#include "models/architectures.h"

#include <cctype>
#include <limits>
#include <stdexcept>

#include "models/albert/family.h"
#include "models/bert/family.h"
#include "models/deberta_v2/family.h"
#include "models/distilbert/family.h"
#include "models/electra/family.h"
#include "models/modernbert/family.h"
#include "models/mpnet/family.h"
#include "models/roberta/family.h"

namespace unif::models {

const std::vector<Architecture>& architectures() {
  // One row per family, built in the family's folder; this order is the order messages list them in.
  static const std::vector<Architecture> rows{
      bert_architecture(),       roberta_architecture(),    xlm_roberta_architecture(),
      distilbert_architecture(), electra_architecture(),    albert_architecture(),
      deberta_v2_architecture(), modernbert_architecture(), mpnet_architecture(),
  };
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
  if (a.positions != PositionScheme::Offset) return options.max_position_embeddings();
  const int64_t padding_idx = a.position_padding_idx >= 0 ? a.position_padding_idx : options.pad_token_id();
  return options.max_position_embeddings() - (padding_idx + 1);
}

int64_t usable_token_types(const EncoderConfig& options) {
  // A family that reads token types reads none when type_vocab_size is 0 (DeBERTa-v3).
  return architecture(options.model_type()).token_type_ids && options.type_vocab_size() > 0
             ? options.type_vocab_size()
             : std::numeric_limits<int64_t>::max();
}

std::optional<int64_t> encoder_layer_index(const Architecture& arch, const std::string& name) {
  const std::string list = arch.checkpoint_prefix() + arch.layers.layers;
  if (arch.layers.layers.empty() || name.compare(0, list.size(), list) != 0) return std::nullopt;
  size_t end = list.size();
  while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
  if (end == list.size() || end == name.size() || name[end] != '.') return std::nullopt;
  return std::stoll(name.substr(list.size(), end - list.size()));
}

std::optional<int64_t> encoder_depth(const Architecture& arch, const std::string& name) {
  const std::string prefix = arch.checkpoint_prefix();
  if (name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  const auto under = [&](const std::string& p) { return name.compare(prefix.size(), p.size(), p) == 0; };
  for (const auto& p : arch.layers.with_first_layer)
    if (under(p)) return 1;
  for (const auto& p : arch.layers.embeddings)
    if (under(p)) return 0;
  if (const auto layer = encoder_layer_index(arch, name)) return *layer + 1;
  return std::nullopt;
}

std::optional<Task> task_from_hf(const std::vector<std::string>& hf_architectures, const std::string& problem_type,
                                 int64_t num_labels) {
  const std::string sequence_head = task_spec(Task::Classification).hf_head;
  if (hf_architectures.empty()) return task_from_hf_head(sequence_head, problem_type, num_labels);
  const std::string& name = hf_architectures.front();
  for (const auto& a : architectures()) {
    const std::string prefix = a.class_prefix;
    if (name.compare(0, prefix.size(), prefix) == 0)
      if (auto task = task_from_hf_head(name.substr(prefix.size()), problem_type, num_labels))
        if (*task != Task::ReplacedTokenDetection || a.replaced_token_detection) return task;
  }
  return std::nullopt;
}

}  // namespace unif::models
