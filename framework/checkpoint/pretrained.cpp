// Building BERT task models from HF directories and saving them back: see pretrained.h.
#include "framework/checkpoint/pretrained.h"

#include <algorithm>
#include <stdexcept>

#include "framework/common/error.h"
#include "framework/common/hf_dir.h"
#include "framework/common/json_input.h"
#include "models/heads/factory.h"

namespace unif::framework {

namespace fs = std::filesystem;
using models::TaskKind;

namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string join_some(const std::vector<std::string>& names, size_t limit = 8) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < limit; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > limit) out += ", ... (" + std::to_string(names.size()) + " in all)";
  return out;
}

// HF checkpoint keys -> our names: drop the legacy position_ids buffer, TF-era LayerNorm
// gamma/beta -> weight/bias (as HF's _fix_key), and add `bert.` to plain BertModel saves.
TensorMap normalise_keys(TensorMap weights) {
  TensorMap out;
  bool has_prefix = std::any_of(weights.begin(), weights.end(), [](const auto& kv) { return starts_with(kv.first, "bert."); });
  for (auto& [key, tensor] : weights) {
    std::string name = key;
    if (ends_with(name, "embeddings.position_ids")) continue;
    if (ends_with(name, "LayerNorm.gamma")) name = name.substr(0, name.size() - 5) + "weight";
    if (ends_with(name, "LayerNorm.beta")) name = name.substr(0, name.size() - 4) + "bias";
    if (!has_prefix && (starts_with(name, "embeddings.") || starts_with(name, "encoder.") || starts_with(name, "pooler.")))
      name = "bert." + name;
    out[name] = std::move(tensor);
  }
  return out;
}

// Parameters a checkpoint of another head (or a bare encoder) legitimately lacks.
bool is_head_key(const std::string& name) { return !starts_with(name, "bert.") || starts_with(name, "bert.pooler."); }

}  // namespace

TaskKind task_from_config(const HfConfig& config) {
  const std::string arch = config.architectures.empty() ? "" : config.architectures.front();
  if (arch == "BertForTokenClassification") return TaskKind::TokenClassification;
  if (arch == "BertForQuestionAnswering") return TaskKind::SpanExtraction;
  if (arch == "BertForMaskedLM") return TaskKind::MaskedLm;
  if (config.problem_type == "multi_label_classification") return TaskKind::Multilabel;
  if (config.problem_type == "regression") return TaskKind::Regression;
  if (arch == "BertForSequenceClassification" && config.problem_type.empty() && config.num_labels == 1)
    return TaskKind::Regression;
  return TaskKind::Classification;
}

PretrainedModel load_pretrained(const fs::path& given, const PretrainedOptions& options) {
  if (!fs::is_directory(given)) throw UserError("model directory '" + given.string() + "' does not exist");
  const fs::path dir = resolve_hf_dir(given);
  const fs::path config_file = dir / "config.json";
  if (!fs::is_regular_file(config_file))
    throw UserError("model directory '" + dir.string() + "' has no config.json (expected a HF-format BERT directory)");
  return load_pretrained(dir, read_hf_config(config_file), options);
}

PretrainedModel load_pretrained(const fs::path& dir, std::optional<TaskKind> task, std::optional<int64_t> num_labels) {
  PretrainedOptions options;
  options.task = task;
  options.num_labels = num_labels;
  return load_pretrained(dir, options);
}

PretrainedModel load_pretrained(const fs::path& given, HfConfig config, const PretrainedOptions& options) {
  const fs::path dir = resolve_hf_dir(given);
  const std::string config_file = (dir / "config.json").string();
  if (config.raw.is_object() && config.raw.contains("model_type") && config.raw["model_type"] != "bert")
    throw UserError(config_file + ": model_type is " + json_excerpt(config.raw["model_type"]) + ", expected \"bert\"");

  PretrainedModel result;
  result.task = options.task ? *options.task : task_from_config(config);
  const int64_t num_labels = result.task == TaskKind::SpanExtraction ? 2 : options.num_labels.value_or(config.num_labels);
  models::BertOptions bert = config.bert;
  bert.sparse_embeddings(options.sparse_embeddings);
  try {
    result.model = models::make_bert_task_model(result.task, bert, num_labels);
  } catch (const std::invalid_argument& e) {
    throw UserError(config_file + ": " + e.what());
  }

  TensorMap weights = normalise_keys(read_weights(dir));
  if (result.task == TaskKind::MaskedLm) {
    // HF's tied copies: the decoder weight is the word embedding table, its bias cls.predictions.bias.
    weights.erase("cls.predictions.decoder.weight");
    weights.erase("cls.predictions.decoder.bias");
  }
  if (options.fresh_mismatched_head) {
    // A new label set: head weights of another shape are left out (reported as missing, so freshly
    // initialised), as HF's ignore_mismatched_sizes does.
    auto params = result.model->named_parameters();
    for (auto it = weights.begin(); it != weights.end();) {
      const auto* p = params.find(it->first);
      if (is_head_key(it->first) && p != nullptr && !p->sizes().equals(it->second.sizes())) it = weights.erase(it);
      else ++it;
    }
  }
  result.report = load_state_dict(*result.model, weights);
  if (options.strict) {
    std::vector<std::string> encoder_missing;
    for (const auto& name : result.report.missing)
      if (!is_head_key(name)) encoder_missing.push_back(name);
    if (!encoder_missing.empty())
      throw UserError("checkpoint in '" + dir.string() + "' lacks " + std::to_string(encoder_missing.size()) +
                      " BERT encoder weight(s) named by config.json: " + join_some(encoder_missing) +
                      " (expected HF BertModel names such as bert.encoder.layer.0.attention.self.query.weight)");
  }

  config.bert = bert;
  config.architectures = {models::hf_architecture(result.task)};
  config.problem_type = models::hf_problem_type(result.task);
  if (static_cast<int64_t>(config.id2label.size()) != num_labels) config.id2label.clear();
  config.num_labels = num_labels;
  result.config = std::move(config);
  return result;
}

void save_pretrained(const fs::path& dir, const models::BertTaskModel& model, HfConfig config) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw UserError("cannot create model directory '" + dir.string() + "': " + ec.message());
  TensorMap tensors = state_dict(model);
  for (auto it = tensors.begin(); it != tensors.end();)
    it = ends_with(it->first, "position_ids") ? tensors.erase(it) : std::next(it);
  write_safetensors(dir / "model.safetensors", tensors);

  config.bert = model.options();
  config.architectures = {models::hf_architecture(model.kind())};
  config.problem_type = models::hf_problem_type(model.kind());
  config.num_labels = model.num_labels();
  write_hf_config(dir / "config.json", config);
}

}  // namespace unif::framework
