#include "framework/config/model_meta.h"

#include "framework/config/config_fields.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include <yaml-cpp/yaml.h>

#include "framework/common/error.h"
#include "framework/config/yaml_reader.h"
#include "framework/config/yaml_writer.h"

namespace unif::framework {

ModelMeta model_meta(const RunConfig& cfg, std::vector<std::string> labels) {
  ModelMeta m;
  m.task = cfg.task;
  m.labels = std::move(labels);
  m.text_fields = cfg.data.text_fields;
  m.label_field = cfg.data.label_field;
  m.max_seq_length = cfg.model.max_seq_length;
  m.do_lower_case = cfg.model.do_lower_case;
  m.truncate_method = cfg.model.truncate_method;
  m.span = cfg.span;
  m.long_text = cfg.data.long_text;
  m.long_text_stride = cfg.data.long_text_stride;
  m.long_text_pooling = cfg.data.long_text_pooling;
  return m;
}

void write_model_meta(const std::filesystem::path& file, const ModelMeta& meta) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "task" << YAML::Value << to_string(meta.task);
  out << YAML::Key << "labels" << YAML::Value;
  detail::emit_list(out, meta.labels);
  out << YAML::Key << "text_fields" << YAML::Value;
  detail::emit_list(out, meta.text_fields);
  out << YAML::Key << "label_field" << YAML::Value;
  detail::emit_string(out, meta.label_field);
  out << YAML::Key << "max_seq_length" << YAML::Value << meta.max_seq_length;
  out << YAML::Key << "do_lower_case" << YAML::Value << meta.do_lower_case;
  out << YAML::Key << "truncate_method" << YAML::Value;
  detail::emit_string(out, meta.truncate_method);
  if (meta.long_text != "truncate") {  // windows over long texts, as the model was trained
    out << YAML::Key << "long_text" << YAML::Value << meta.long_text;
    out << YAML::Key << "long_text_stride" << YAML::Value << meta.long_text_stride;
    out << YAML::Key << "long_text_pooling" << YAML::Value << meta.long_text_pooling;
  }
  if (meta.task == Task::SpanExtraction) {
    out << YAML::Key << "span" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "doc_stride" << YAML::Value << meta.span.doc_stride;
    out << YAML::Key << "max_query_length" << YAML::Value << meta.span.max_query_length;
    out << YAML::Key << "max_answer_length" << YAML::Value << meta.span.max_answer_length;
    out << YAML::Key << "n_best_size" << YAML::Value << meta.span.n_best_size;
    out << YAML::Key << "metric" << YAML::Value << name_of(meta.span.metric);
    if (meta.span.unanswerable) {  // SQuAD 2.0 style: the model may answer nothing
      out << YAML::Key << "unanswerable" << YAML::Value << true;
      out << YAML::Key << "null_score_diff_threshold" << YAML::Value << meta.span.null_score_diff_threshold;
      out << YAML::Key << "verifier" << YAML::Value << meta.span.verifier;
      out << YAML::Key << "verifier_weight" << YAML::Value << meta.span.verifier_weight;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  auto tmp = file;
  tmp += ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << "# unif model metadata (docs/spec.md, section 4)\n" << out.c_str() << "\n";
    f.flush();
    if (!f) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw UserError(file.string() + ": cannot write");
    }
  }
  std::filesystem::rename(tmp, file);
}

ModelMeta read_model_meta(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) throw UserError(file.string() + ": cannot read model metadata");
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in || in.bad()) throw UserError(file.string() + ": cannot read model metadata");
  if (const auto bad = detail::invalid_utf8(text.str()); !bad.empty())
    throw UserError(file.string() + ": " + bad + "; unif.yaml must be UTF-8");
  if (const auto bad = detail::unprintable_yaml(text.str()); !bad.empty()) throw UserError(file.string() + ": " + bad);
  YAML::Node root;
  try {
    root = YAML::Load(text.str());
  } catch (const YAML::Exception& e) { throw UserError(file.string() + ": invalid YAML: " + e.what()); }
  if (!root.IsMap()) throw UserError(file.string() + ": expected a mapping");
  ModelMeta m;
  auto get_in = [&](const YAML::Node& node, const std::string& key, auto& into) {
    if (!node[key]) return;
    try {
      into = node[key].template as<std::decay_t<decltype(into)>>();
    } catch (const YAML::Exception&) { throw UserError(file.string() + ": " + key + ": has the wrong type"); }
  };
  auto get = [&](const char* key, auto& into) { get_in(root, key, into); };
  std::string task = to_string(m.task);
  get("task", task);
  m.task = parse_task(task);
  get("labels", m.labels);
  get("text_fields", m.text_fields);
  get("label_field", m.label_field);
  get("max_seq_length", m.max_seq_length);
  get("do_lower_case", m.do_lower_case);
  get("truncate_method", m.truncate_method);
  if (std::find(detail::kTruncateMethods.begin(), detail::kTruncateMethods.end(), m.truncate_method) ==
      detail::kTruncateMethods.end())
    throw UserError(file.string() + ": truncate_method: expected LIFO, FIFO, longer-FO or longest_first, got '" +
                    m.truncate_method + "'");
  get("long_text", m.long_text);
  get("long_text_stride", m.long_text_stride);
  get("long_text_pooling", m.long_text_pooling);
  if (std::find(detail::kLongText.begin(), detail::kLongText.end(), m.long_text) == detail::kLongText.end() ||
      std::find(detail::kLongTextPooling.begin(), detail::kLongTextPooling.end(), m.long_text_pooling) ==
          detail::kLongTextPooling.end() ||
      m.long_text_stride < 0 || m.long_text_stride > m.max_seq_length - 2)
    throw UserError(file.string() +
                    ": long_text: expected truncate or windows, long_text_pooling mean or max and "
                    "long_text_stride in [0, max_seq_length - 2]");
  if (const auto span = root["span"]) {
    if (!span.IsMap()) throw UserError(file.string() + ": span: expected a mapping");
    get_in(span, "doc_stride", m.span.doc_stride);
    get_in(span, "max_query_length", m.span.max_query_length);
    get_in(span, "max_answer_length", m.span.max_answer_length);
    get_in(span, "n_best_size", m.span.n_best_size);
    std::string metric = name_of(m.span.metric);
    get_in(span, "metric", metric);
    get_in(span, "unanswerable", m.span.unanswerable);
    get_in(span, "null_score_diff_threshold", m.span.null_score_diff_threshold);
    get_in(span, "verifier", m.span.verifier);
    get_in(span, "verifier_weight", m.span.verifier_weight);
    if (m.span.doc_stride < 1 || m.span.max_query_length < 1 || m.span.max_answer_length < 1 || m.span.n_best_size < 1)
      throw UserError(file.string() +
                      ": span: doc_stride, max_query_length, max_answer_length and n_best_size "
                      "must be positive integers");
    const auto parsed = enum_from_name<SpanMetric>(metric);
    if (!parsed)
      throw UserError(file.string() + ": span.metric: expected " + join_names<SpanMetric>(", ", " or ") + ", got '" +
                      metric + "'");
    m.span.metric = *parsed;
  }
  return m;
}

}  // namespace unif::framework
