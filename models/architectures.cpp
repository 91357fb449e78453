// The architecture table and the HF class name <-> task lookup: see architectures.h.
#include "models/architectures.h"

#include <stdexcept>

#include "models/heads/factory.h"

namespace unif::models {

const std::vector<Architecture>& architectures() {
  static const std::vector<Architecture> rows{
      {"bert", "Bert", "bert.", TokenizerKind::WordPiece, PositionScheme::Absolute, /*token_type_ids=*/true,
       make_bert_task_model},
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
  throw std::invalid_argument("model_type \"" + model_type + "\" is not supported (supported model types: " +
                              supported_model_types() + ")");
}

std::string hf_class_name(const Architecture& arch, Task task) {
  return std::string(arch.class_prefix) + task_spec(task).hf_head;
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
