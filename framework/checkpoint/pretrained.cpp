// Building BERT task models from HF directories and saving them back: see pretrained.h.
#include "framework/checkpoint/pretrained.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <set>
#include <stdexcept>

#include "framework/common/error.h"
#include "framework/common/strings.h"
#include "framework/common/hf_dir.h"
#include "framework/common/json_input.h"
#include "models/architectures.h"
#include "models/heads/factory.h"

namespace unif::framework {

namespace fs = std::filesystem;

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
// gamma/beta -> weight/bias (as HF's _fix_key), and add the encoder's prefix (`bert.`, ...) to plain
// <Family>Model saves (keys that name a tensor of the encoder without it).
TensorMap normalise_keys(TensorMap weights, const std::string& prefix, const torch::nn::Module& encoder) {
  std::set<std::string> encoder_keys;
  for (const auto& item : encoder.named_parameters()) encoder_keys.insert(item.key());
  for (const auto& item : encoder.named_buffers()) encoder_keys.insert(item.key());
  TensorMap out;
  bool has_prefix =
      std::any_of(weights.begin(), weights.end(), [&](const auto& kv) { return starts_with(kv.first, prefix); });
  for (auto& [key, tensor] : weights) {
    std::string name = key;
    if (ends_with(name, "embeddings.position_ids")) continue;
    if (ends_with(name, "LayerNorm.gamma")) name = name.substr(0, name.size() - 5) + "weight";
    if (ends_with(name, "LayerNorm.beta")) name = name.substr(0, name.size() - 4) + "bias";
    if (!has_prefix && (encoder_keys.count(name) || starts_with(name, "pooler."))) name = prefix + name;
    out[name] = std::move(tensor);
  }
  return out;
}

std::string format_number(const char* format, double v) {
  char text[48];
  std::snprintf(text, sizeof text, format, v);
  return text;
}

std::string bytes_string(double bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  size_t unit = 0;
  for (; bytes >= 1024.0 && unit + 1 < std::size(units); ++unit) bytes /= 1024.0;
  return format_number("%.3g", bytes) + " " + units[unit];
}

// The number in a cgroup limit file ("max" or absent: none).
uint64_t cgroup_limit(const char* file) {
  std::ifstream in(file);
  std::string text;
  if (!(in >> text) || text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return UINT64_MAX;
  try {
    return std::stoull(text);
  } catch (const std::exception&) { return UINT64_MAX; }
}

// Parameters a checkpoint of another head (or a bare encoder) legitimately lacks.
bool is_head_key(const std::string& name, const std::string& prefix) {
  return !starts_with(name, prefix) || starts_with(name, prefix + "pooler.");
}

}  // namespace

Task task_from_config(const HfConfig& config) {
  // A class that is no task head (BertModel, BertForPreTraining): a fresh sequence head.
  const auto task = models::task_from_hf(config.architectures, config.problem_type, config.num_labels);
  return task ? *task : *models::task_from_hf({}, config.problem_type, config.num_labels);
}

void check_checkpoint_shapes(const models::EncoderConfig& options, const std::string& config_source,
                             const fs::path& weights) {
  const models::Architecture& arch = models::architecture(options.model_type());
  const TensorShapes shapes = read_weight_shapes(weights);
  const std::string prefix = arch.checkpoint_prefix();
  for (const auto& t : arch.sized_tensors(options)) {
    // HF's names, with the encoder's prefix or (a plain <Family>Model save) without it.
    auto it = shapes.find(prefix + t.name);
    if (it == shapes.end()) it = shapes.find(t.name);
    if (it == shapes.end() || it->second == t.shape) continue;
    throw UserError(config_source + ": its " + t.dims + " make " + it->first + " " + shape_string(t.shape) + ", but " +
                    weights.string() + " holds it as " + shape_string(it->second) +
                    ": the config does not describe this checkpoint");
  }
}

uint64_t memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  uint64_t bytes = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : UINT64_MAX;
  bytes = std::min(bytes, cgroup_limit("/sys/fs/cgroup/memory.max"));                    // cgroup v2
  bytes = std::min(bytes, cgroup_limit("/sys/fs/cgroup/memory/memory.limit_in_bytes"));  // cgroup v1
  return bytes;
}

void check_model_memory(const models::EncoderConfig& options, const std::string& config_source, double copies,
                        uint64_t memory) {
  const double parameters = models::parameter_estimate(options);
  const double bytes = parameters * 4.0 * copies;  // float32
  if (bytes <= static_cast<double>(memory)) return;
  // The tensor that holds the most of them, to name the keys to lower.
  const auto tensors = models::architecture(options.model_type()).sized_tensors(options);
  const models::SizedTensor* largest = nullptr;
  double largest_count = -1;
  for (const auto& t : tensors) {
    double n = t.copies;
    for (int64_t d : t.shape) n *= static_cast<double>(d);
    if (n > largest_count) largest = &t, largest_count = n;
  }
  std::string where;
  if (largest != nullptr)
    where = "; " + format_number("%.3g", largest_count) + " of them in " +
            (largest->copies > 1 ? format_number("%.3g", largest->copies) + " tensors like " : std::string()) +
            largest->name + " " + shape_string(largest->shape) + " (" + largest->dims + ")";
  throw UserError(config_source + ": its sizes make a model of about " + format_number("%.3g", parameters) +
                  " parameters" + where + ", which need " + bytes_string(bytes) +
                  (copies > 1
                       ? " (" + format_number("%g", copies) + " float32 copies: weights, gradients, optimizer state)"
                       : " as float32") +
                  ", more than this machine's " + bytes_string(static_cast<double>(memory)) + " of memory");
}

PretrainedModel load_pretrained(const fs::path& given, const PretrainedOptions& options) {
  if (!fs::is_directory(given)) throw UserError("model directory '" + given.string() + "' does not exist");
  const fs::path dir = resolve_hf_dir(given);
  const fs::path config_file = dir / "config.json";
  if (!fs::is_regular_file(config_file))
    throw UserError("model directory '" + dir.string() + "' has no config.json (expected a HF-format BERT directory)");
  return load_pretrained(dir, read_hf_config(config_file), options);
}

PretrainedModel load_pretrained(const fs::path& dir, std::optional<Task> task, std::optional<int64_t> num_labels) {
  PretrainedOptions options;
  options.task = task;
  options.num_labels = num_labels;
  return load_pretrained(dir, options);
}

PretrainedModel load_pretrained(const fs::path& given, HfConfig config, const PretrainedOptions& options) {
  const fs::path dir = resolve_hf_dir(given);
  const std::string config_file =
      options.config_source.empty() ? (dir / "config.json").string() : options.config_source;
  // The family's row (architectures.h), as read_hf_config found it from model_type.
  const models::Architecture* arch = &models::architecture(config.bert.model_type());
  const std::string prefix = arch->checkpoint_prefix();

  PretrainedModel result;
  result.task = options.task ? *options.task : task_from_config(config);
  const int64_t num_labels = result.task == Task::SpanExtraction ? 2 : options.num_labels.value_or(config.num_labels);
  models::EncoderConfig bert = config.bert;
  bert.sparse_embeddings(options.sparse_embeddings);
  bert.unpad_inputs(options.unpad_inputs);
  bert.gradient_checkpointing(options.gradient_checkpointing);
  // Before any tensor is allocated: the checkpoint's shapes (its header) against the config's, and
  // what the config asks for against the memory (a checkpoint may lack some of its tensors).
  check_checkpoint_shapes(bert, config_file, weights_file(dir));
  check_model_memory(bert, config_file, 1);
  try {
    result.model = models::make_encoder_task_model(result.task, bert, num_labels);
  } catch (const std::invalid_argument& e) { throw UserError(config_file + ": " + e.what()); }

  TensorMap weights = normalise_keys(read_weights(dir), prefix, result.model->encoder());
  // HF's tied copies (an MLM decoder's weight is the word embedding table, its bias the head's own).
  for (const auto& key : arch->tied_keys) weights.erase(key);
  if (options.fresh_mismatched_head) {
    // A new label set: head weights of another shape are left out (reported as missing, so freshly
    // initialised), as HF's ignore_mismatched_sizes does.
    auto params = result.model->named_parameters();
    for (auto it = weights.begin(); it != weights.end();) {
      const auto* p = params.find(it->first);
      if (is_head_key(it->first, prefix) && p != nullptr && !p->sizes().equals(it->second.sizes()))
        it = weights.erase(it);
      else
        ++it;
    }
  }
  {
    std::vector<std::string> names;
    for (const auto& [name, t] : weights) names.push_back(name);
    result.model->adopt_checkpoint_modules(names);
  }
  result.report = load_state_dict(*result.model, weights);
  if (options.strict) {
    std::vector<std::string> encoder_missing;
    for (const auto& name : result.report.missing)
      if (!is_head_key(name, prefix)) encoder_missing.push_back(name);
    if (!encoder_missing.empty())
      throw UserError("checkpoint in '" + dir.string() + "' lacks " + std::to_string(encoder_missing.size()) +
                      " encoder weight(s) named by config.json: " + join_some(encoder_missing) + " (expected HF " +
                      arch->class_prefix + "Model names, each starting with " + prefix + ")");
  }

  config.bert = bert;
  config.architectures = {models::hf_class_name(*arch, result.task)};
  config.problem_type = task_spec(result.task).problem_type;
  if (static_cast<int64_t>(config.id2label.size()) != num_labels) config.id2label.clear();
  config.num_labels = num_labels;
  result.config = std::move(config);
  return result;
}

void save_pretrained(const fs::path& dir, const models::EncoderTaskModel& model, HfConfig config) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw UserError("cannot create model directory '" + dir.string() + "': " + ec.message());
  TensorMap tensors = state_dict(model);
  for (auto it = tensors.begin(); it != tensors.end();)
    it = ends_with(it->first, "position_ids") ? tensors.erase(it) : std::next(it);
  // A base model (<Family>Model, no head: an embedder) is saved as HF's save_pretrained saves one,
  // its keys without the family prefix (embeddings.*, encoder.*, not bert.embeddings.*).
  if (std::string(task_spec(model.kind()).hf_head) == "Model") {
    const std::string prefix = model.architecture().checkpoint_prefix();
    TensorMap bare;
    for (auto& [name, t] : tensors)
      bare.emplace(name.compare(0, prefix.size(), prefix) == 0 ? name.substr(prefix.size()) : name, t);
    tensors = std::move(bare);
  }
  write_safetensors(dir / "model.safetensors", tensors);

  config.bert = model.options();
  config.architectures = {models::hf_architecture(model)};
  config.problem_type = task_spec(model.kind()).problem_type;
  config.num_labels = model.num_labels();
  write_hf_config(dir / "config.json", config);
}

}  // namespace unif::framework
