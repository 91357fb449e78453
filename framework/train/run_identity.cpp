#include "framework/train/run_identity.h"

#include <filesystem>
#include <set>

#include "framework/train/early_stopping.h"

namespace unif::framework {

namespace {

// Keys whose values are file paths: equal when they name the same file ("data/x.jsonl",
// "./data/x.jsonl" and "data//x.jsonl/" are one file), resolved against the current directory.
const std::set<std::string> kPathKeys{"model.pretrained", "model.vocab", "data.train"};
// Keys added to the identity after checkpoints were first written: a checkpoint without them was
// written before they were checked, and is not refused for their absence.
const std::set<std::string> kAddedLater{
    "model.mlm_probability", "model.whole_word_mask", "training.best_metric", "model.crf",
    "crf.constrained",       "span.verifier",         "model.early_exit",     "data.long_text",
    "data.long_text_stride"};

std::string same_file_form(const std::string& path) {
  if (path.empty()) return path;
  std::error_code ec;
  auto p = std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec);
  if (ec) p = std::filesystem::path(path).lexically_normal();
  auto s = p.string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

bool same_value(const std::string& key, const nlohmann::json& a, const nlohmann::json& b) {
  if (kPathKeys.count(key) && a.is_string() && b.is_string())
    return same_file_form(a.get<std::string>()) == same_file_form(b.get<std::string>());
  return a == b;
}

}  // namespace

using nlohmann::json;

json run_identity(const RunConfig& cfg, const LabelSet& labels, const torch::nn::Module& model, int64_t train_entries) {
  int64_t tensors = 0, params = 0;
  for (const auto& p : model.named_parameters()) {
    ++tensors;
    params += p.value().numel();
  }
  // nlohmann's ordered_json keeps this order for the messages; a plain object sorts the keys,
  // which is as good for comparing.
  json id = json::object();
  id["task"] = to_string(cfg.task);
  id["seed"] = cfg.seed;
  id["model.pretrained"] = cfg.model.pretrained;
  id["model.vocab"] = cfg.model.vocab;
  id["model.do_lower_case"] = cfg.model.do_lower_case;
  id["model.max_seq_length"] = cfg.model.max_seq_length;
  id["model.truncate_method"] = cfg.model.truncate_method;
  id["model.shape"] = std::to_string(tensors) + " tensors, " + std::to_string(params) + " parameters";
  id["data.train"] = cfg.data.train;
  id["data.text_fields"] = cfg.data.text_fields;
  id["data.label_field"] = cfg.data.label_field;
  id["labels"] = labels.names;
  id["train_entries"] = train_entries;  // examples (span extraction: windows) read from data.train
  id["training.batch_size"] = cfg.training.batch_size;
  id["training.grad_accum_steps"] = cfg.training.grad_accum_steps;
  id["training.shuffle"] = cfg.training.shuffle;
  id["training.group_by_length"] = cfg.training.group_by_length;
  id["training.optimizer.name"] = name_of(cfg.training.optimizer.name);
  id["adversarial.method"] = name_of(cfg.adversarial.method);
  id["training.best_metric"] = best_metric_name(cfg);     // the saved best value is of this metric
  if (task_spec(cfg.task).input == TaskInput::MlmText) {  // which tokens are masked, each epoch
    id["model.mlm_probability"] = cfg.model.mlm_probability;
    id["model.whole_word_mask"] = cfg.model.whole_word_mask;
  }
  if (cfg.task == Task::ReplacedTokenDetection) {  // the generator and the loss it trains with
    id["model.generator.config"] = cfg.model.generator.config;
    id["electra.rtd_weight"] = cfg.electra.rtd_weight;
  }
  if (cfg.task == Task::TokenClassification) {  // the loss and the decoding; forbidden moves are fixed
    id["model.crf"] = cfg.model.crf;
    id["crf.constrained"] = cfg.crf.constrained;
  }
  if (cfg.task == Task::Classification) id["model.early_exit"] = cfg.model.early_exit;  // what trains
  if (task_spec(cfg.task).input == TaskInput::Text) {  // the training entries: texts or their windows
    id["data.long_text"] = cfg.data.long_text;
    id["data.long_text_stride"] = cfg.data.long_text_stride;
  }
  if (cfg.task == Task::SpanExtraction) {
    id["span.doc_stride"] = cfg.span.doc_stride;
    id["span.max_query_length"] = cfg.span.max_query_length;
    id["span.verifier"] = cfg.span.verifier;
  }
  return id;
}

namespace {
std::string show(const json& v) {
  if (v.is_string()) return "'" + v.get<std::string>() + "'";
  if (v.is_array() && v.size() > 6) return "[" + std::to_string(v.size()) + " entries]";
  return v.dump();
}
}  // namespace

std::vector<std::string> identity_changes(const json& stored, const json& current) {
  std::vector<std::string> out;
  for (const auto& [key, value] : current.items()) {
    if (!stored.contains(key)) {
      if (!kAddedLater.count(key)) out.push_back(key + ": (absent) -> " + show(value));
    } else if (!same_value(key, stored.at(key), value)) {
      if (value.is_array() && stored.at(key).is_array() && value.size() > 6 && value.size() == stored.at(key).size())
        out.push_back(key + ": changed (" + std::to_string(value.size()) + " entries)");
      else
        out.push_back(key + ": " + show(stored.at(key)) + " -> " + show(value));
    }
  }
  for (const auto& [key, value] : stored.items())
    if (!current.contains(key)) out.push_back(key + ": " + show(value) + " -> (absent)");
  return out;
}

}  // namespace unif::framework
