// The run configuration: YAML text -> overrides -> RunConfig, every check in one pass (SPEC §3). The
// keys are config_fields.h's lists, read by one visitor; the checks across keys follow, one check()
// per section. Any key a section's list does not name is reported as unknown. (RunConfig -> YAML is
// config_writer.cpp; equality config_equality.cpp.)
#include "framework/config/run_config.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <type_traits>

#include <yaml-cpp/yaml.h>

#include "framework/common/hf_dir.h"
#include "framework/common/hub_cache.h"
#include "framework/common/strings.h"
#include "framework/config/config_fields.h"
#include "framework/config/config_keys.h"
#include "framework/config/did_you_mean.h"
#include "framework/config/hf_names.h"
#include "framework/text/tokenizer_kinds.h"
#include "framework/config/yaml_reader.h"
#include "framework/metrics/metric_set.h"

namespace unif::framework {

using detail::Context;
using detail::Null;
using detail::OneOrList;
using detail::Section;

namespace {

const std::vector<std::string> kTaskNames = task_names();  // framework/common/task.h's rows, in order

std::string str(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// ---- YAML -> RunConfig: Fields (config_fields.h) read, then one check() per section -------------

template <class S>
void read_section(Section s, S& section, const RunConfig& root);

/// Before a section's keys are read: defaults that depend on keys read earlier.
template <class S>
void prepare(S&, const RunConfig&) {}

void prepare(DataConfig& d, const RunConfig& root) {
  // Task-specific defaults, when the file leaves the key out (see DataConfig).
  TaskFields fields = default_fields(root.task);
  d.text_fields = std::move(fields.text_fields);
  d.label_field = std::move(fields.label_field);
}

/// A YAML value as JSON (model.config): plain numbers and booleans as such, null as null, every
/// other scalar a string; mappings need scalar keys. "" and the value read when fine, else what is wrong.
std::string yaml_to_json(const YAML::Node& node, nlohmann::json& out) {
  if (!node.IsDefined() || node.IsNull()) {
    out = nullptr;
  } else if (node.IsMap()) {
    out = nlohmann::json::object();
    for (const auto& kv : node) {
      if (!kv.first.IsScalar()) return "a key that is " + detail::describe(kv.first) + " (keys are field names)";
      nlohmann::json v;
      if (auto e = yaml_to_json(kv.second, v); !e.empty()) return e;
      out[kv.first.Scalar()] = std::move(v);
    }
  } else if (node.IsSequence()) {
    out = nlohmann::json::array();
    for (const auto& item : node) {
      nlohmann::json v;
      if (auto e = yaml_to_json(item, v); !e.empty()) return e;
      out.push_back(std::move(v));
    }
  } else if (const auto i = detail::to_int(node)) {
    out = *i;
  } else if (const auto d = detail::to_number(node)) {
    out = *d;
  } else if (const auto b = detail::to_bool(node)) {
    out = *b;
  } else {
    out = node.Scalar();
  }
  return "";
}

/// Right after key `key` of a section is read (model.pretrained's files fill the keys after it).
template <class S>
void after_key(Section&, S&, const char*) {}

void after_key(Section& s, ModelConfig& m, const char* key) {
  if (std::strcmp(key, "pretrained") == 0) m.pretrained = expand_model_path(m.pretrained);  // $UNIF_HOME/models/NAME
  if (std::strcmp(key, "do_lower_case") != 0 || m.pretrained.empty()) return;
  try {
    const std::filesystem::path hf = resolve_hf_dir(m.pretrained);
    // Left out: the pretrained tokenizer's setting (tokenizer_config.json), else true, as HF's
    // BertTokenizer.from_pretrained.
    if (!s.has("do_lower_case"))
      if (const auto lower = read_do_lower_case(hf)) m.do_lower_case = *lower;
    // model.vocab left out: <pretrained>/vocab.txt, filled in here so that every user of the
    // config (unif train, the C++ API) sees the file (docs/cpp-api.md).
    std::error_code ec;
    if (m.vocab.empty() && std::filesystem::is_regular_file(hf / "vocab.txt", ec))
      m.vocab = (hf / "vocab.txt").string();
  } catch (const UserError& e) { s.context().report(s.path("pretrained"), e.what()); }
}

/// Reads each key of section S into `t`, converting and range-checking by the key's `how`.
template <class S>
struct ReadVisitor {
  Section& s;
  S& t;
  const RunConfig& root;

  template <class... How>
  void operator()(const char* k, const How&... how) {
    read(k, how...);
    after_key(s, t, k);
  }

 private:
  void read(const char* k, int64_t S::*m, const detail::IntRule& rule) { s.integer(k, t.*m, rule); }
  void read(const char* k, double S::*m, const detail::NumberRule& rule) { s.number(k, t.*m, rule); }
  void read(const char* k, bool S::*m) { s.boolean(k, t.*m); }
  void read(const char* k, Task S::*m) {
    std::string task = to_string(t.*m);
    s.choice(k, task, kTaskNames);
    t.*m = parse_task(task);
  }
  void read(const char* k, std::string S::*m, Null null) { s.string(k, t.*m, null == Null::Allowed); }
  void read(const char* k, std::string S::*m, const std::vector<std::string>& allowed) { s.choice(k, t.*m, allowed); }
  void read(const char* k, std::vector<std::string> S::*m, OneOrList) { s.strings(k, t.*m, /*scalar_ok=*/true); }
  template <class E, class = std::enable_if_t<std::is_enum_v<E>>>
  void read(const char* k, E S::*m) {
    s.choice(k, t.*m);
  }
  void read(const char* k, std::optional<int64_t> S::*m, const detail::IntRule& rule) { s.integer(k, t.*m, rule); }
  void read(const char* k, std::optional<double> S::*m, const detail::NumberRule& rule, Null null = Null::Rejected) {
    s.number(k, t.*m, rule, null == Null::Allowed);
  }
  void read(const char* k, std::optional<std::string> S::*m, const std::vector<std::string>& allowed) {
    if (const YAML::Node node = s.raw(k); node.IsDefined() && node.IsNull()) return;  // null = unset
    s.choice(k, t.*m, allowed);
  }
  // A boolean that may be unset (null: decided elsewhere, e.g. by the pretrained directory).
  void read(const char* k, std::optional<bool> S::*m) {
    const YAML::Node node = s.raw(k);
    if (!node.IsDefined() || node.IsNull()) return;
    if (const auto b = detail::to_bool(node))
      t.*m = *b;
    else
      s.context().report(s.path(k), node, "expected true, false or null, got " + detail::describe(node));
  }
  // A list of numbers, each by `rule` (a single number is a one-entry list).
  template <class T, class R>
  void read_numbers(const char* k, std::vector<T>& out, const R& rule) {
    const YAML::Node node = s.raw(k);
    if (!node.IsDefined() || node.IsNull()) return;
    std::vector<T> values;
    const auto take = [&](const YAML::Node& item, const std::string& where) {
      std::optional<T> v;
      if constexpr (std::is_integral_v<T>)
        v = detail::to_int(item);
      else
        v = detail::to_number(item);
      if (v && rule.ok(*v)) {
        values.push_back(*v);
        return true;
      }
      s.context().report(where, item, std::string("expected ") + rule.expected + ", got " + detail::describe(item));
      return false;
    };
    if (node.IsSequence()) {
      for (std::size_t i = 0; i < node.size(); ++i)
        if (!take(node[i], s.path(k) + "[" + std::to_string(i) + "]")) return;
    } else if (!take(node, s.path(k))) {
      return;
    }
    out = std::move(values);
  }
  void read(const char* k, std::vector<int64_t> S::*m, const detail::IntRule& rule) { read_numbers(k, t.*m, rule); }
  void read(const char* k, std::vector<double> S::*m, const detail::NumberRule& rule) { read_numbers(k, t.*m, rule); }
  // model.config: a mapping of HF config fields, kept as JSON (the family's reader checks them).
  void read(const char* k, nlohmann::json S::*m) {
    const YAML::Node node = s.raw(k);
    if (!node.IsDefined() || node.IsNull()) return;
    if (!node.IsMap()) {
      s.context().report(
          s.path(k), node,
          "expected a mapping of HF config fields (e.g. {hidden_dropout_prob: 0.2}), got " + detail::describe(node));
      return;
    }
    nlohmann::json value;
    if (const std::string e = yaml_to_json(node, value); !e.empty())
      s.context().report(s.path(k), node, "expected a mapping of HF config fields, got " + e);
    else
      t.*m = std::move(value);
  }

  // data.labels: null (labels_given false) or a list of strings.
  void read(const char* k, std::vector<std::string> S::*labels, bool S::*given) {
    const YAML::Node node = s.raw(k);
    if (!node.IsDefined() || node.IsNull()) return;
    Context& ctx = s.context();
    const size_t before = ctx.problems().size();
    std::vector<std::string> values;
    s.strings(k, values, /*scalar_ok=*/false);
    if (ctx.problems().size() != before) return;
    t.*labels = std::move(values);
    t.*given = true;
  }

  // betas: [first, second], each by `rule`.
  void read(const char* k, double S::*first, double S::*second, const detail::NumberRule& rule) {
    const YAML::Node node = s.raw(k);
    if (!node.IsDefined()) return;
    double b[2] = {0, 0};
    bool ok = node.IsSequence() && node.size() == 2;
    for (std::size_t i = 0; ok && i < 2; ++i) {
      const auto v = detail::to_number(node[i]);
      ok = v.has_value() && rule.ok(v.value_or(0));
      b[i] = v.value_or(0);
    }
    if (ok) {
      t.*first = b[0];
      t.*second = b[1];
      return;
    }
    std::string got = detail::describe(node);
    if (node.IsSequence()) {
      got = "[";
      for (std::size_t i = 0; i < node.size(); ++i) got += (i ? ", " : "") + detail::describe(node[i]);
      got += "]";
    }
    const std::string each = rule.expected;  // "a number in [0, 1)"
    s.context().report(s.path(k), node,
                       "expected a list of 2 numbers" + each.substr(std::strlen("a number")) + ", got " + got);
  }

  // training.loss.class_weights: null, balanced, or a non-empty list of numbers > 0.
  void read(const char* k, ClassWeights S::*mode, std::vector<double> S::*weights) {
    const YAML::Node w = s.raw(k);
    if (!w.IsDefined() || w.IsNull()) return;
    if (const auto named = w.IsScalar() ? enum_from_name<ClassWeights>(w.Scalar()) : std::nullopt) {
      t.*mode = *named;
      return;
    }
    std::vector<double> values;
    bool ok = w.IsSequence() && w.size() > 0;
    for (std::size_t i = 0; ok && i < w.size(); ++i) {
      const auto v = detail::to_number(w[i]);
      ok = v.has_value() && *v > 0.0 && std::isfinite(*v);
      values.push_back(v.value_or(0));
    }
    if (!ok) {
      s.context().report(s.path(k), w,
                         "expected null, " + join_names<ClassWeights>(", ") +
                             ", or a non-empty list of numbers > 0 (one per label), got " + detail::describe(w));
      return;
    }
    t.*mode = ClassWeights::List;
    t.*weights = std::move(values);
  }

  // distill.intermediate.layers: uniform, or a non-empty list of [student, teacher] pairs of layer
  // numbers >= 1 (null: none).
  void read(const char* k, LayerMap S::*mode, std::vector<int64_t> S::*pairs) {
    const YAML::Node w = s.raw(k);
    if (!w.IsDefined() || w.IsNull()) return;
    if (const auto named = w.IsScalar() ? enum_from_name<LayerMap>(w.Scalar()) : std::nullopt) {
      t.*mode = *named;
      return;
    }
    std::vector<int64_t> values;
    bool ok = w.IsSequence() && w.size() > 0;
    for (std::size_t i = 0; ok && i < w.size(); ++i) {
      ok = w[i].IsSequence() && w[i].size() == 2;
      for (std::size_t j = 0; ok && j < 2; ++j) {
        const auto v = detail::to_int(w[i][j]);
        ok = v.has_value() && *v >= 1;
        values.push_back(v.value_or(0));
      }
    }
    if (!ok) {
      s.context().report(
          s.path(k), w,
          "expected uniform or a non-empty list of [student, teacher] layer pairs (layers from 1), got " +
              detail::describe(w));
      return;
    }
    t.*mode = LayerMap::Pairs;
    t.*pairs = std::move(values);
  }

  // training.resume: a name of Resume's table, else a checkpoint path.
  void read(const char* k, Resume S::*mode, std::string S::*path) {
    std::string value = t.*mode == Resume::Path ? t.*path : name_of(t.*mode);
    s.string(k, value, /*nullable=*/false);
    t.*mode = enum_from_name<Resume>(value).value_or(Resume::Path);
    t.*path = t.*mode == Resume::Path ? value : "";
  }

  template <class Sub, class = std::enable_if_t<detail::is_section<Sub>::value>>
  void read(const char* k, Sub S::*m, int = 0) {
    read_section(s.section(k), t.*m, root);
  }
};

// ---- the checks: defaults that depend on other keys, and checks across keys -----------------------

/// After a section's keys are read: the checks across its keys (and the sections read before).
template <class S>
void check(Section&, S&, const RunConfig&) {}

void check(Section& s, BertOverrides& b, const RunConfig&) {
  if (b.hidden_size && b.num_attention_heads && *b.hidden_size % *b.num_attention_heads != 0)
    s.context().report(s.path("num_attention_heads"), s.raw("num_attention_heads"),
                       "expected a divisor of hidden_size (" + std::to_string(*b.hidden_size) + "), got " +
                           std::to_string(*b.num_attention_heads));
  if (b.pad_token_id && b.vocab_size && *b.pad_token_id >= *b.vocab_size)
    s.context().report(s.path("pad_token_id"), s.raw("pad_token_id"),
                       "expected an id below vocab_size (" + std::to_string(*b.vocab_size) + "), got " +
                           std::to_string(*b.pad_token_id));
}

void check(Section& s, ModelConfig& m, const RunConfig&) {
  if (!hub::is_revision(m.revision))  // a name the cache's refs/ folder can hold
    s.context().report(s.path("revision"), s.raw("revision"),
                       "expected a Hub revision (a branch, tag or commit, e.g. main), got '" + m.revision + "'");
  if (m.bert.max_position_embeddings && m.max_seq_length > *m.bert.max_position_embeddings)
    s.context().report(s.path("max_seq_length"), s.raw("max_seq_length"),
                       "expected at most model.bert.max_position_embeddings (" +
                           std::to_string(*m.bert.max_position_embeddings) + "), got " +
                           std::to_string(m.max_seq_length));
}

void check(Section& s, DataConfig& d, const RunConfig& root) {
  const Task task = root.task;
  Context& ctx = s.context();
  if (d.long_text == "windows") {
    if (task_spec(task).input != TaskInput::Text || d.text_fields.size() != 1)
      ctx.report(s.path("long_text"), s.raw("long_text"),
                 "expected truncate for task " + to_string(task) +
                     (task_spec(task).input == TaskInput::Text ? " with a text pair" : "") +
                     ": windows cut one text (classification, multilabel, regression with one text field)");
    if (d.long_text_stride > root.model.max_seq_length - 2)
      ctx.report(s.path("long_text_stride"), s.raw("long_text_stride"),
                 "expected at most model.max_seq_length - 2 (" + std::to_string(root.model.max_seq_length - 2) +
                     ", a window's text) so that the windows cover the text, got " +
                     std::to_string(d.long_text_stride));
  }
  if (d.labels_given) {
    const YAML::Node labels = s.raw("labels");
    std::set<std::string> seen;
    for (const auto& v : d.labels)
      if (!seen.insert(v).second) ctx.report(s.path("labels"), labels, "duplicate label '" + v + "'");
    if (d.labels.empty()) ctx.report(s.path("labels"), labels, "expected a non-empty list of labels or null");
    if (!has_label_set(task))
      ctx.report(s.path("labels"), labels, "expected null for task " + to_string(task) + ", got a list");
  }

  const YAML::Node fields = s.raw("text_fields");
  const size_t n = d.text_fields.size();
  std::string want;
  switch (task_spec(task).input) {  // how many fields each kind of input reads
    case TaskInput::Tokens:
      if (n != 1) want = "exactly 1 field (the token list) for " + to_string(task);
      break;
    case TaskInput::MlmText:
      if (n != 1) want = "exactly 1 field (the text) for " + to_string(task);
      break;
    case TaskInput::QuestionContext:
      if (n != 2) want = "exactly 2 fields (question, context) for " + to_string(task);
      break;
    case TaskInput::Text:
      if (n < 1 || n > 2) want = "1 field (a text) or 2 (a text pair)";
      break;
    case TaskInput::Texts:
      if (n < 2)
        want = "2 or more fields for " + to_string(task) + " (anchor, positive[, negatives...]; or a scored pair)";
      break;
  }
  if (!want.empty()) ctx.report(s.path("text_fields"), fields, "expected " + want + ", got " + std::to_string(n));
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j)
      if (d.text_fields[i] == d.text_fields[j]) {
        ctx.report(s.path("text_fields"), fields,
                   std::string(n == 2 ? "expected two different fields" : "expected different fields") + ", got '" +
                       d.text_fields[i] + "' twice");
        i = n;
        break;
      }
  if (d.retrieval.given()) {
    const YAML::Node r = s.raw("retrieval");
    if (task != Task::Embedding)
      ctx.report(s.path("retrieval"), r,
                 "expected null for task " + to_string(task) + " (a retrieval dev set is task embedding's)");
    else if (d.retrieval.queries.empty() || d.retrieval.corpus.empty())
      ctx.report(s.path("retrieval"), r,
                 std::string("expected both queries and corpus (two JSONL files), got no ") +
                     (d.retrieval.queries.empty() ? "queries" : "corpus"));
  }
}

void check(Section& s, OptimizerConfig& o, const RunConfig&) {
  if (o.momentum != 0.0 && o.name != OptimizerKind::Sgd)
    s.context().report(s.path("momentum"), s.raw("momentum"),
                       "expected 0 for optimizer " + name_of(o.name) + " (momentum is " + name_of(OptimizerKind::Sgd) +
                           "'s), got " + str(o.momentum));
}

void check(Section& s, TrainingConfig& t, const RunConfig&) {
  if (t.epochs < 1 && t.max_steps == 0)
    s.context().report(s.path("epochs"), s.raw("epochs"),
                       "expected a positive integer when training.max_steps is 0, got " + std::to_string(t.epochs));
  // report_to: "tensorboard"; "none" alone (HF's spelling) = nothing besides metrics.jsonl.
  const YAML::Node report_to = s.raw("report_to");
  for (std::size_t i = 0; i < t.report_to.size(); ++i) {
    const std::string& r = t.report_to[i];
    if (r == "tensorboard" || (r == "none" && t.report_to.size() == 1)) continue;
    s.context().report(
        s.path("report_to") + (report_to.IsSequence() ? "[" + std::to_string(i) + "]" : ""),
        report_to.IsSequence() ? report_to[i] : report_to,
        "expected tensorboard (or none alone), got '" + r + "'" + did_you_mean(r, {"tensorboard", "none"}));
  }
  if (t.report_to == std::vector<std::string>{"none"}) t.report_to.clear();
  if (t.group_by_length && !t.shuffle)
    s.context().report(s.path("group_by_length"), s.raw("group_by_length"),
                       "expected false when training.shuffle is false (length grouping shuffles within "
                       "mega-batches), got true");
}

void check(Section& s, ParallelConfig& p, const RunConfig&) {
  const YAML::Node devices = s.raw("devices");
  if (p.devices.empty())
    s.context().report(s.path("devices"), devices, "expected at least one device, got an empty list");
  for (std::size_t i = 0; i < p.devices.size(); ++i) {
    const std::string& d = p.devices[i];
    const std::string where = s.path("devices") + "[" + std::to_string(i) + "]";
    const YAML::Node item = devices.IsSequence() ? devices[i] : devices;
    bool ok = d == "cpu" || (d == "auto" && p.devices.size() == 1);
    if (d.rfind("cuda:", 0) == 0 && d.size() > 5) { ok = d.find_first_not_of("0123456789", 5) == std::string::npos; }
    if (d == "auto" && p.devices.size() > 1)
      s.context().report(
          where, item,
          "expected 'auto' alone (devices: auto), got it in a list of " + std::to_string(p.devices.size()));
    else if (!ok)
      s.context().report(where, item,
                         "expected cpu, cuda:N or auto, got '" + d + "'" + did_you_mean(d, {"cpu", "auto", "cuda:0"}));
  }
}

void check(Section& s, AdversarialConfig& a, const RunConfig&) {
  using M = AdversarialMethod;
  if (a.epsilon == 0.0 && (a.method == M::Fgm || a.method == M::Pgd || a.method == M::FreeAt))
    s.context().report(s.path("epsilon"), s.raw("epsilon"),
                       "expected a number > 0 for method " + name_of(a.method) + " (0 = unbounded is FreeLB's), got 0");
}

void check(Section& s, EmbeddingConfig& e, const RunConfig& root) {
  Context& ctx = s.context();
  const bool scored = e.loss == "cosent" || e.loss == "cosine";
  if (scored && root.task == Task::Embedding && root.data.text_fields.size() != 2)
    ctx.report(s.path("loss"), s.raw("loss"),
               "expected mnrl or cached_mnrl with " + std::to_string(root.data.text_fields.size()) +
                   " data.text_fields (" + e.loss + " scores a pair of texts against data.label_field), got " + e.loss);
  if (e.symmetric && scored)
    ctx.report(s.path("symmetric"), s.raw("symmetric"),
               "expected false for loss " + e.loss + " (symmetric is mnrl's and cached_mnrl's), got true");
  if (!e.matryoshka_weights.empty() && e.matryoshka_weights.size() != e.matryoshka_dims.size())
    ctx.report(s.path("matryoshka_weights"), s.raw("matryoshka_weights"),
               "expected one weight per matryoshka_dims entry (" + std::to_string(e.matryoshka_dims.size()) +
                   "), got " + std::to_string(e.matryoshka_weights.size()));
  std::set<int64_t> dims;
  for (auto d : e.matryoshka_dims)
    if (!dims.insert(d).second) {
      ctx.report(s.path("matryoshka_dims"), s.raw("matryoshka_dims"),
                 "expected distinct sizes, got " + std::to_string(d) + " twice");
      break;
    }
}

void check(Section& s, DistillConfig& d, const RunConfig&) {
  d.teacher = expand_model_path(d.teacher);
  // The section given without `layers`: uniform (absent: logits only).
  const YAML::Node inter = s.raw("intermediate");
  if (inter.IsDefined() && inter.IsMap() && !inter["layers"].IsDefined()) d.intermediate.layers = LayerMap::Uniform;
  if (d.intermediate.on() && d.teacher.empty())
    s.context().report(s.path("intermediate"), inter, "expected distill.teacher with distill.intermediate");
}

void check(Section& s, RunConfig& c, const RunConfig&) {
  const LossConfig& loss = c.training.loss;
  if (!task_spec(c.task).loss_options && !(loss == LossConfig{}))
    s.context().report("training.loss",
                       "expected the defaults (label_smoothing 0, focal_gamma 0, class_weights "
                       "null) for task " +
                           to_string(c.task) +
                           ": these losses apply to classification and "
                           "token_classification");
  if (loss.class_weights_mode == ClassWeights::List && c.data.labels_given &&
      loss.class_weights.size() != c.data.labels.size())
    s.context().report("training.loss.class_weights",
                       "expected one weight per label (" + std::to_string(c.data.labels.size()) +
                           " in data.labels), got " + std::to_string(loss.class_weights.size()));
  // training.best_metric and early_stopping.metric: a dev metric of the task.
  const auto names = metric_names(metric_kind(c.task));
  const std::pair<const char*, const std::string*> metric_keys[] = {
      {"training.best_metric", &c.training.best_metric},
      {"training.early_stopping.metric", &c.training.early_stopping.metric}};
  for (const auto& [key, value] : metric_keys) {
    if (value->empty() || std::find(names.begin(), names.end(), *value) != names.end()) continue;
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    s.context().report(key, "expected a dev metric of task " + to_string(c.task) + " (" + list + "), got '" + *value +
                                "'" + did_you_mean(*value, names));
  }
  if (c.training.early_stopping.patience > 0 && c.data.dev.empty() && !c.data.retrieval.given())
    s.context().report("training.early_stopping.patience",
                       "expected 0 without data.dev or data.retrieval (early stopping watches "
                       "the dev evaluations), got " +
                           std::to_string(c.training.early_stopping.patience));
  if (!c.distill.teacher.empty() && !task_spec(c.task).distillation)
    s.context().report("distill.teacher", "expected null for task " + to_string(c.task) +
                                              ": distillation supports "
                                              "classification, token_classification and span_extraction");
  using M = AdversarialMethod;
  const M method = c.adversarial.method;
  if ((task_spec(c.task).input == TaskInput::MlmText || c.task == Task::Embedding) && method != M::None)
    s.context().report("adversarial.method",
                       "expected " + name_of(M::None) + " for task " + to_string(c.task) + ", got " + name_of(method) +
                           (c.task == Task::Embedding ? " (an in-batch-negative loss is not a sum of per-example "
                                                        "losses to perturb)"
                                                      : ""));
  if (c.task != Task::Embedding && (c.model.pooling || c.model.normalize))
    s.context().report(c.model.pooling ? "model.pooling" : "model.normalize",
                       "expected null for task " + to_string(c.task) + " (pooling and normalize are task embedding's)");
  if (c.model.crf && c.task != Task::TokenClassification)
    s.context().report("model.crf", "expected false for task " + to_string(c.task) +
                                        ": a CRF tags sequences (task token_classification)");
  if (c.model.early_exit && c.task != Task::Classification)
    s.context().report("model.early_exit", "expected false for task " + to_string(c.task) +
                                               ": the exits read a class distribution's entropy (task classification)");
  if (!c.model.generator.config.empty() && c.task != Task::ReplacedTokenDetection)
    s.context().report("model.generator.config",
                       "expected {} for task " + to_string(c.task) +
                           ": the generator is ELECTRA pretraining's (task replaced_token_detection)");
  if (c.model.early_exit && !c.distill.teacher.empty())
    s.context().report("distill.teacher",
                       "expected null with model.early_exit: the exits learn from the model's own head");
  if (c.model.crf && !(loss == LossConfig{}))
    s.context().report("training.loss",
                       "expected the defaults with model.crf (label_smoothing 0, focal_gamma 0, class_weights "
                       "null): the CRF's loss is the tag sequence's negative log-likelihood");
  if (c.task == Task::SpanExtraction && c.span.verifier && !c.distill.teacher.empty())
    s.context().report("distill.teacher",
                       "expected null with span.verifier: distillation matches the start and end distributions only");
  if (c.model.crf && !c.distill.teacher.empty())
    s.context().report("distill.teacher",
                       "expected null with model.crf: distillation matches per-token distributions, which a "
                       "CRF's sequence scores are not");
  if (c.task == Task::SpanExtraction && c.model.max_seq_length < 5)
    s.context().report("model.max_seq_length",
                       "expected at least 5 for span_extraction ([CLS] question [SEP] "
                       "context [SEP] with one piece each), got " +
                           std::to_string(c.model.max_seq_length));
  if ((method == M::Smart || method == M::RDrop) && !task_spec(c.task).probabilities)
    s.context().report("adversarial.method",
                       "expected none, fgm, pgd, freelb or freeat for task regression (" + name_of(method) +
                           "'s KL term needs a probability output, which regression has not), got " + name_of(method));
  if (c.training.precision == Precision::FP16)
    for (const auto& d : c.parallel.devices)
      if (d == "cpu") {
        s.context().report("training.precision",
                           "expected fp32 or bf16 with CPU devices (LibTorch's CPU autocast "
                           "has no float16, and fp16 is for GPUs), got fp16 with parallel.devices: cpu; use bf16 "
                           "on CPUs or cuda:N devices");
        break;
      }
  if (method == M::FreeAt && c.training.grad_accum_steps > 1)
    s.context().report("training.grad_accum_steps",
                       "expected 1 with adversarial.method freeat (it steps the "
                       "optimizer on every replay), got " +
                           std::to_string(c.training.grad_accum_steps));
}

/// A section: its defaults that depend on earlier keys, its keys, its checks. The Section, when it
/// ends, reports the keys present that Fields<S> does not list.
template <class S>
void read_section(Section s, S& section, const RunConfig& root) {
  prepare(section, root);
  ReadVisitor<S> v{s, section, root};
  detail::Fields<S>::visit(v);
  check(s, section, root);
}

void read_run(Section s, RunConfig& c) { read_section(std::move(s), c, c); }

// ---- overrides ----------------------------------------------------------------------------------

/// YAML merge keys (`<<: *defaults`, or a list of anchors): the merged mappings' keys are set on the
/// mapping that holds `<<` where it has no key of that name (its own keys win; among merged
/// mappings the first wins, as YAML 1.1 says), then `<<` is removed: the reader sees plain keys.
/// A `<<` whose value is not a mapping (or a list of them) is reported.
void expand_merge_keys(YAML::Node node, Context& ctx, const std::string& path, int depth = 0) {
  if (depth > 64) return;  // aliases nested this deep: left for the reader's own checks
  if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i)
      expand_merge_keys(node[i], ctx, path + "[" + std::to_string(i) + "]", depth + 1);
    return;
  }
  if (!node.IsMap()) return;
  const YAML::Node& view = node;  // look-ups that add no key
  if (const YAML::Node merge = view["<<"]; merge.IsDefined()) {
    std::vector<YAML::Node> sources;
    if (merge.IsMap()) sources.push_back(merge);
    if (merge.IsSequence())
      for (const auto& m : merge) sources.push_back(m);
    bool ok = merge.IsMap() || merge.IsSequence();
    for (const auto& m : sources) ok = ok && m.IsMap();
    if (!ok) {
      ctx.report(
          path.empty() ? "<<" : path + ".<<", merge,
          "a merge key takes a mapping or a list of mappings (e.g. <<: *defaults), got " + detail::describe(merge));
      node.remove("<<");
    } else {
      node.remove("<<");
      for (auto& m : sources) {
        expand_merge_keys(m, ctx, path, depth + 1);  // an anchor with merges of its own
        for (const auto& kv : m) {
          if (!kv.first.IsScalar()) continue;  // left for the reader to report
          const auto key = kv.first.as<std::string>();
          if (!view[key].IsDefined()) node[key] = kv.second;
        }
      }
    }
  }
  for (auto kv : node)
    if (kv.first.IsScalar())
      expand_merge_keys(kv.second, ctx, (path.empty() ? "" : path + ".") + kv.first.Scalar(), depth + 1);
}

/// Sets root[keys[i]][keys[i+1]]... = value, making (or replacing with) mappings on the way.
void set_path(YAML::Node node, const std::vector<std::string>& keys, std::size_t i, const YAML::Node& value) {
  if (i + 1 == keys.size()) {
    node[keys[i]] = value;
    return;
  }
  if (!node[keys[i]].IsMap()) node[keys[i]] = YAML::Node(YAML::NodeType::Map);
  set_path(node[keys[i]], keys, i + 1, value);  // a temporary: Node's operator= would rebind the tree
}

/// Whether `key` is a section of the schema (a mapping of keys, e.g. training or training.optimizer).
bool is_section(const std::string& key) {
  for (const auto& k : config_keys())
    if (k.rfind(key + ".", 0) == 0) return true;
  return false;
}

/// The first key of section `key` in the schema, without the section's prefix.
std::string first_key_in(const std::string& key) {
  for (const auto& k : config_keys())
    if (k.rfind(key + ".", 0) == 0) return k.substr(key.size() + 1);
  return "KEY";
}

/// Applies each "a.b=v" to root (a mapping). Malformed overrides are reported and skipped; unknown
/// keys are left for the reader to report (with "did you mean" and "from --set").
void apply_overrides(YAML::Node& root, const std::vector<std::string>& overrides, Context& ctx) {
  for (const auto& text : overrides) {
    const auto eq = text.find('=');
    const std::string key = eq == std::string::npos ? "" : trim(text.substr(0, eq));
    std::vector<std::string> keys;
    for (std::size_t start = 0; eq != std::string::npos;) {
      const auto dot = key.find('.', start);
      keys.push_back(key.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    bool empty_part = keys.empty();
    for (const auto& k : keys) empty_part = empty_part || k.empty();
    if (eq == std::string::npos || empty_part) {
      ctx.problems().push_back(ctx.source() + ": --set '" + text +
                               "': expected KEY=VALUE with a dotted key, e.g. training.batch_size=16");
      continue;
    }
    YAML::Node value;
    try {
      value = YAML::Load(text.substr(eq + 1));
    } catch (const YAML::Exception& e) {
      ctx.problems().push_back(ctx.source() + ": " + key + ": the --set value is not valid YAML (" + e.msg +
                               ") (from --set " + text + ")");
      continue;
    }
    // An empty (or null) value for a whole section would reset every key in it to its default.
    if (value.IsNull() && is_section(key)) {
      ctx.problems().push_back(ctx.source() + ": --set '" + text + "': " + key +
                               " is a section; set its keys one at a time (e.g. " + key + "." + first_key_in(key) +
                               "=...)");
      continue;
    }
    ctx.record_override(key, text);
    set_path(root, keys, 0, value);
  }
}

/// " (relative paths resolve against the current directory, /cwd)" for a relative `path`.
std::string relative_hint(const std::string& path) {
  if (std::filesystem::path(path).is_absolute()) return "";
  std::error_code ec;
  const auto cwd = std::filesystem::current_path(ec);
  return " (relative paths resolve against the current directory" + (ec ? std::string() : ", " + cwd.string()) +
         ", not the config file's folder)";
}

/// The files a run reads must exist: checked here, before anything is written, naming the key.
void check_file(const std::string& src, const char* key, const std::string& path, std::vector<std::string>& out) {
  std::error_code ec;
  const bool dir = std::filesystem::is_directory(path, ec);
  if (path.empty() || (!dir && std::filesystem::exists(path, ec))) return;  // a file, a pipe, /dev/stdin
  out.push_back(src + key + ": '" + path + "' " + (dir ? "is a directory, expected a file" : "does not exist") +
                relative_hint(path));
}

std::vector<std::string> purpose_problems(const RunConfig& c, Purpose purpose) {
  const std::string src = c.source.string() + ": ";
  std::vector<std::string> out;
  if (purpose == Purpose::Train) {
    if (c.data.train.empty()) out.push_back(src + "data.train: required for training (a .jsonl or .tsv file)");
    if (c.model.pretrained.empty() && c.model.vocab.empty())
      out.push_back(src + "model.vocab: required when model.pretrained is null (a vocab.txt file)");
  }
#ifndef UNIF_WITH_CUDA
  // CUDA devices need a LibTorch with CUDA (UNIF_TORCH=pypi builds one): say so before any work.
  if (purpose == Purpose::Train)
    for (std::size_t i = 0; i < c.parallel.devices.size(); ++i)
      if (c.parallel.devices[i].rfind("cuda:", 0) == 0)
        out.push_back(src + "parallel.devices[" + std::to_string(i) + "]: '" + c.parallel.devices[i] +
                      "' needs a CUDA build of unif, and this one was built against a LibTorch without CUDA "
                      "(use cpu or auto here, or build with UNIF_TORCH=pypi scripts/setup.sh)");
#endif
  if (purpose == Purpose::Eval && c.data.dev.empty() && !c.data.retrieval.given())
    out.push_back(src +
                  "data.dev: required for evaluation (a .jsonl or .tsv file; or data.retrieval for task embedding)");
  return out;
}

// Whether an HF directory holds a tokenizer of any family (the family's own loader names what is
// missing when the files do not fit its model_type).
bool holds_tokenizer(const std::string& pretrained, Task task) {
  try {
    // ELECTRA pretraining may go on from a previous run's pair (discriminator/ and generator/).
    if (task == Task::ReplacedTokenDetection &&
        has_tokenizer_files(std::filesystem::path(pretrained) / "discriminator"))
      return true;
    return has_tokenizer_files(resolve_hf_dir(pretrained));
  } catch (const UserError&) { return false; }
}

/// load_config's checks on the file system: the files and directories the run will read exist,
/// each problem naming its key (parse_config, on text, does not look at the disk).
std::vector<std::string> path_problems(const RunConfig& c, Purpose purpose) {
  const std::string src = c.source.string() + ": ";
  std::vector<std::string> out;
  if (purpose == Purpose::Train) {
    std::error_code ec;
    if (!c.model.pretrained.empty() && !std::filesystem::is_directory(c.model.pretrained, ec))
      out.push_back(src + "model.pretrained: '" + c.model.pretrained + "' is not a directory" +
                    (std::filesystem::exists(c.model.pretrained, ec) ? "" : " (no such file or directory)") +
                    relative_hint(c.model.pretrained) +
                    "; expected an HF model directory (config.json, vocab.txt, model weights) or a Hub id "
                    "(org/name)");
    else if (!c.model.pretrained.empty() && c.model.vocab.empty() && !holds_tokenizer(c.model.pretrained, c.task))
      out.push_back(src + "model.pretrained: '" + c.model.pretrained + "' has no tokenizer files (" +
                    tokenizer_files_text() + "); set model.vocab to the model's WordPiece vocabulary");
    else
      check_file(src, "model.vocab", c.model.vocab, out);
    check_file(src, "data.train", c.data.train, out);
    check_file(src, "data.dev", c.data.dev, out);
    check_file(src, "data.test", c.data.test, out);
  }
  if (purpose == Purpose::Eval) check_file(src, "data.dev", c.data.dev, out);
  check_file(src, "data.retrieval.queries", c.data.retrieval.queries, out);
  check_file(src, "data.retrieval.corpus", c.data.retrieval.corpus, out);
  if (purpose == Purpose::Train)
    for (auto& p : overwrite_problems(c)) out.push_back(std::move(p));
  return out;
}

/// Whether `inner` is `outer` or lies under it, both made absolute with symbolic links resolved
/// as far as they exist.
bool inside(const std::filesystem::path& inner, const std::filesystem::path& outer) {
  std::error_code ec;
  const auto a = std::filesystem::weakly_canonical(std::filesystem::absolute(inner, ec), ec);
  const auto b = std::filesystem::weakly_canonical(std::filesystem::absolute(outer, ec), ec);
  auto ia = a.begin();
  for (auto ib = b.begin(); ib != b.end(); ++ib, ++ia) {
    if (ib->empty() && std::next(ib) == b.end()) break;  // a trailing separator
    if (ia == a.end() || *ia != *ib) return false;
  }
  return true;
}

/// Unknown keys that belong to another section ("training.lr"): "did you mean 'training.optimizer.lr'?"
/// when exactly one accepted key ends in the same name (or a close one).
void suggest_moved_keys(Context& ctx) {
  const auto keys = config_keys();
  for (const auto& u : ctx.unknown()) {
    if (u.suggested || u.index >= ctx.problems().size()) continue;
    std::vector<std::string> same, near;
    for (const auto& k : keys) {
      const std::string last = k.substr(k.rfind('.') == std::string::npos ? 0 : k.rfind('.') + 1);
      if (k == u.path) continue;
      if (edit_distance(last, u.key) == 0)
        same.push_back(k);
      else if (!closest_match(u.key, {last}).empty())
        near.push_back(k);
    }
    const auto& pick = !same.empty() ? same : near;
    if (pick.size() != 1) continue;
    std::string& line = ctx.problems()[u.index];
    const std::string marker = "unknown key '" + u.key + "'";
    const auto at = line.find(marker);
    if (at != std::string::npos) line.insert(at + marker.size(), " (did you mean '" + pick.front() + "'?)");
  }
}

}  // namespace

// ---- public API ----------------------------------------------------------------------------------

namespace {
std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += (out.empty() ? "" : "\n") + l;
  return out;
}
}  // namespace

ConfigError::ConfigError(std::vector<std::string> lines) : UserError(join_lines(lines)), problems(std::move(lines)) {}

Task parse_task(const std::string& name) {
  if (const auto task = find_task(name)) return *task;
  std::string all;
  for (const auto& n : kTaskNames) all += (all.empty() ? "" : " | ") + n;
  throw UserError("unknown task '" + name + "': expected one of " + all + did_you_mean(name, kTaskNames));
}

bool BertOverrides::empty() const { return *this == BertOverrides{}; }

RunConfig parse_config(const std::string& yaml_text, const std::string& source_name,
                       const std::vector<std::string>& overrides, Purpose purpose) {
  Context ctx(source_name);
  if (const auto bad = detail::invalid_utf8(yaml_text); !bad.empty())
    throw ConfigError({source_name + ": " + bad + "; a config file must be UTF-8"});
  if (const auto bad = detail::unprintable_yaml(yaml_text); !bad.empty()) throw ConfigError({source_name + ": " + bad});
  for (const auto& text : overrides) {
    if (const auto bad = detail::invalid_utf8(text); !bad.empty())
      throw ConfigError({source_name + ": --set: an override is not valid UTF-8 (" + bad + ")"});
    if (const auto bad = detail::unprintable_yaml(text); !bad.empty())
      throw ConfigError({source_name + ": --set: an override holds a " + bad.substr(bad.find("control"))});
  }
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    throw ConfigError({source_name + ": line " + std::to_string(e.mark.line + 1) + ", column " +
                       std::to_string(e.mark.column + 1) + ": invalid YAML: " + e.msg});
  } catch (const YAML::Exception& e) { throw ConfigError({source_name + ": invalid YAML: " + e.msg}); }

  RunConfig cfg;
  cfg.source = source_name;
  if (root.IsDefined() && !root.IsNull() && !root.IsMap()) {
    ctx.report("", root,
               "expected a mapping of keys (task, model, data, training, ...) at the top level, got " +
                   detail::describe(root));
    throw ConfigError(std::move(ctx.problems()));
  }
  if (!root.IsMap()) root.reset(YAML::Node(YAML::NodeType::Map));
  expand_merge_keys(root, ctx, "");
  ctx.record_file_paths(root);
  apply_overrides(root, overrides, ctx);
  read_run(Section(ctx, "", root), cfg);  // the Section reports unknown top-level keys when it ends
  suggest_moved_keys(ctx);
  suggest_hf_names(ctx);  // HF TrainingArguments names: the unif key that does the same

  auto& problems = ctx.problems();
  if (problems.empty())
    for (auto& p : purpose_problems(cfg, purpose)) problems.push_back(std::move(p));
  if (!problems.empty()) throw ConfigError(std::move(problems));
  return cfg;
}

RunConfig load_config(const std::filesystem::path& file, const std::vector<std::string>& overrides, Purpose purpose) {
  const std::string name = file.string();
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) throw ConfigError({name + ": cannot read the config file: no such file"});
  if (std::filesystem::is_directory(file, ec))
    throw ConfigError({name + ": cannot read the config file: it is a directory, expected a .yaml file"});
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ConfigError({name + ": cannot read the config file: " + std::strerror(errno)});
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ConfigError({name + ": cannot read the config file: read error"});
  RunConfig cfg = parse_config(text.str(), name, overrides, purpose);
  if (purpose != Purpose::Eval) {  // evaluation reads --model, not model.pretrained
    // Hub ids: their snapshot folders in the Hugging Face cache (downloaded when absent), read
    // again as overrides so that what model.pretrained's files fill in (vocab, do_lower_case) is filled.
    std::vector<std::string> resolved = overrides, problems;
    bool changed = false;
    auto hub = [&](const char* key, const std::string& value, const std::string& revision) {
      if (!is_hub_model_name(value)) return;
      try {
        resolved.push_back(std::string(key) + "=" + nlohmann::json(resolve_model(value, revision, "")).dump());
        changed = true;
      } catch (const UserError& e) { problems.push_back(name + ": " + key + ": " + e.what()); }
    };
    hub("model.pretrained", cfg.model.pretrained, cfg.model.revision);
    hub("distill.teacher", cfg.distill.teacher, "main");
    if (!problems.empty()) throw ConfigError(std::move(problems));
    if (changed) cfg = parse_config(text.str(), name, resolved, purpose);
  }
  auto problems = path_problems(cfg, purpose);
  if (!problems.empty()) throw ConfigError(std::move(problems));
  return cfg;
}

std::vector<std::string> config_keys() {
  Context ctx("schema");
  RunConfig cfg;
  read_run(Section(ctx, "", YAML::Node(YAML::NodeType::Map)), cfg);
  const auto& asked = ctx.asked();
  std::vector<std::string> leaves;
  for (const auto& p : asked) {
    bool parent = false;
    for (const auto& q : asked) parent = parent || q.rfind(p + ".", 0) == 0;
    if (!parent) leaves.push_back(p);
  }
  return leaves;
}

std::vector<std::string> overwrite_problems(const RunConfig& c) {
  std::vector<std::string> out;
  if (c.training.resume != Resume::Overwrite || c.output_dir.empty()) return out;
  const std::pair<const char*, const std::string*> reads[] = {{"model.pretrained", &c.model.pretrained},
                                                              {"model.vocab", &c.model.vocab},
                                                              {"distill.teacher", &c.distill.teacher},
                                                              {"data.train", &c.data.train},
                                                              {"data.dev", &c.data.dev},
                                                              {"data.test", &c.data.test},
                                                              {"data.retrieval.queries", &c.data.retrieval.queries},
                                                              {"data.retrieval.corpus", &c.data.retrieval.corpus}};
  for (const auto& [key, path] : reads) {
    if (path->empty()) continue;
    for (const char* name : kOverwriteRemoves) {
      const auto removed = std::filesystem::path(c.output_dir) / name;
      if (!inside(*path, removed)) continue;
      out.push_back(c.source.string() + ": " + key + ": '" + *path + "' lies inside '" + removed.string() +
                    "', which training.resume: overwrite removes before training starts over; copy it out of " +
                    c.output_dir + " first, train into another output_dir, or use training.resume: never (keeps " +
                    "what is there and refuses when checkpoints exist)");
      break;
    }
  }
  return out;
}

void validate_for(const RunConfig& cfg, Purpose purpose) {
  auto problems = purpose_problems(cfg, purpose);
  if (!problems.empty()) throw ConfigError(std::move(problems));
}

}  // namespace unif::framework
