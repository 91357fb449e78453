// The run configuration: YAML text -> overrides -> RunConfig, every check in one pass (SPEC §3), and
// RunConfig -> YAML. The read functions below are the schema: the keys they ask for are the keys
// that exist, and any other key is reported as unknown.
#include "framework/config/run_config.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <type_traits>

#include <yaml-cpp/yaml.h>

#include "framework/common/hf_dir.h"
#include "framework/config/config_keys.h"
#include "framework/config/did_you_mean.h"
#include "framework/config/hf_names.h"
#include "framework/config/yaml_reader.h"

namespace unif::framework {

using detail::Context;
using detail::Section;

namespace {

const std::vector<std::string> kTaskNames = task_names();  // framework/common/task.h's rows, in order
const std::vector<std::string> kTruncateMethods{"LIFO", "FIFO", "longer-FO", "longest_first"};
const std::vector<std::string> kHiddenActs{"gelu", "gelu_new", "relu"};  // models::BertOptions
const std::vector<std::string> kOptimizers{"adamw", "sgd", "lamb"};
const std::vector<std::string> kSchedules{"linear", "constant", "cosine"};
const std::vector<std::string> kNonFinite{"error", "skip"};
const std::vector<std::string> kAdversarialMethods{"none", "fgm", "pgd", "freelb", "freeat", "smart", "rdrop"};
const std::vector<std::string> kSpanMetrics{"auto", "squad", "cmrc"};
const std::vector<std::string> kPrecisions{"fp32", "bf16", "fp16"};
// A learning rate float32 can hold: the update lr·u is computed in float32, so an lr past its largest
// finite value (about 3.4e38) makes every parameter inf/NaN at the first step.
const detail::NumberRule kLearningRate{"a number > 0 that float32 can hold (at most 3.4e38)",
                                       [](double v) { return v > 0 && v <= 3.4028234663852886e38; }};
const detail::IntRule kSeqLength{"an integer >= 3 ([CLS] + one token + [SEP])",
                                 [](int64_t v) { return v >= 3; }};

std::string str(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// ---- YAML -> RunConfig: one function per section -----------------------------------------------

void read_bert(Section s, BertOverrides& b) {
  s.integer("vocab_size", b.vocab_size, detail::kPositiveInt);
  s.integer("hidden_size", b.hidden_size, detail::kPositiveInt);
  s.integer("num_hidden_layers", b.num_hidden_layers, detail::kPositiveInt);
  const YAML::Node heads = s.integer("num_attention_heads", b.num_attention_heads, detail::kPositiveInt);
  s.integer("intermediate_size", b.intermediate_size, detail::kPositiveInt);
  s.choice("hidden_act", b.hidden_act, kHiddenActs);
  s.number("hidden_dropout_prob", b.hidden_dropout_prob, detail::kUnitHalfOpen);
  s.number("attention_probs_dropout_prob", b.attention_probs_dropout_prob, detail::kUnitHalfOpen);
  s.integer("max_position_embeddings", b.max_position_embeddings, detail::kPositiveInt);
  s.integer("type_vocab_size", b.type_vocab_size, detail::kPositiveInt);
  s.number("initializer_range", b.initializer_range, detail::kNonNegativeNumber);
  s.number("layer_norm_eps", b.layer_norm_eps, detail::kPositiveNumber);
  const YAML::Node pad = s.integer("pad_token_id", b.pad_token_id, detail::kNonNegativeInt);
  s.number("classifier_dropout", b.classifier_dropout, detail::kUnitHalfOpen, /*nullable=*/true);

  if (b.hidden_size && b.num_attention_heads && *b.hidden_size % *b.num_attention_heads != 0)
    s.context().report(s.path("num_attention_heads"), heads,
                       "expected a divisor of hidden_size (" + std::to_string(*b.hidden_size) + "), got " +
                           std::to_string(*b.num_attention_heads));
  if (b.pad_token_id && b.vocab_size && *b.pad_token_id >= *b.vocab_size)
    s.context().report(s.path("pad_token_id"), pad,
                       "expected an id below vocab_size (" + std::to_string(*b.vocab_size) + "), got " +
                           std::to_string(*b.pad_token_id));
}

void read_model(Section s, ModelConfig& m) {
  s.string("pretrained", m.pretrained, /*nullable=*/true);
  m.pretrained = expand_model_path(m.pretrained);  // $UNIF_HOME/models/NAME: scripts/fetch-model.sh
  read_bert(s.section("bert"), m.bert);
  s.string("vocab", m.vocab, /*nullable=*/true);
  const bool lower_given = s.boolean("do_lower_case", m.do_lower_case).IsDefined();
  if (!m.pretrained.empty()) {
    try {
      const std::filesystem::path hf = resolve_hf_dir(m.pretrained);
      // Left out: the pretrained tokenizer's setting (tokenizer_config.json), else true, as HF's
      // BertTokenizer.from_pretrained.
      if (!lower_given)
        if (const auto lower = read_do_lower_case(hf)) m.do_lower_case = *lower;
      // model.vocab left out: <pretrained>/vocab.txt, filled in here so that every user of the
      // config (unif train, the C++ API) sees the file (docs/cpp-api.md).
      std::error_code ec;
      if (m.vocab.empty() && std::filesystem::is_regular_file(hf / "vocab.txt", ec)) m.vocab = (hf / "vocab.txt").string();
    } catch (const UserError& e) {
      s.context().report(s.path("pretrained"), e.what());
    }
  }
  const YAML::Node len = s.integer("max_seq_length", m.max_seq_length, kSeqLength);
  s.choice("truncate_method", m.truncate_method, kTruncateMethods);
  s.boolean("sparse_embeddings", m.sparse_embeddings);
  s.number("mlm_probability", m.mlm_probability, detail::kUnitLeftOpen);
  s.boolean("whole_word_mask", m.whole_word_mask);

  if (m.bert.max_position_embeddings && m.max_seq_length > *m.bert.max_position_embeddings)
    s.context().report(s.path("max_seq_length"), len,
                       "expected at most model.bert.max_position_embeddings (" +
                           std::to_string(*m.bert.max_position_embeddings) + "), got " +
                           std::to_string(m.max_seq_length));
}

void read_data(Section s, DataConfig& d, Task task) {
  s.string("train", d.train, /*nullable=*/true);
  s.string("dev", d.dev, /*nullable=*/true);
  s.string("test", d.test, /*nullable=*/true);

  // Task-specific defaults, when the file leaves the key out (see DataConfig).
  if (task == Task::TokenClassification) {
    d.text_fields = {"tokens"};
    d.label_field = "tags";
  } else if (task == Task::SpanExtraction) {
    d.text_fields = {"question", "context"};
    d.label_field = "answers";
  }
  const YAML::Node fields = s.strings("text_fields", d.text_fields, /*scalar_ok=*/true);
  s.string("label_field", d.label_field, /*nullable=*/false);

  const YAML::Node labels = s.raw("labels");
  if (labels.IsDefined() && !labels.IsNull()) {
    Context& ctx = s.context();
    const size_t before = ctx.problems().size();
    std::vector<std::string> values;
    s.strings("labels", values, /*scalar_ok=*/false);
    if (ctx.problems().size() == before) {
      std::set<std::string> seen;
      for (const auto& v : values)
        if (!seen.insert(v).second) ctx.report(s.path("labels"), labels, "duplicate label '" + v + "'");
      if (values.empty()) ctx.report(s.path("labels"), labels, "expected a non-empty list of labels or null");
      if (task == Task::Regression || task == Task::SpanExtraction || task == Task::MaskedLm)
        ctx.report(s.path("labels"), labels, "expected null for task " + to_string(task) + ", got a list");
      d.labels = std::move(values);
      d.labels_given = true;
    }
  }

  const size_t n = d.text_fields.size();
  std::string want;
  if (task == Task::TokenClassification && n != 1)
    want = "exactly 1 field (the token list) for token_classification";
  else if (task == Task::MaskedLm && n != 1)
    want = "exactly 1 field (the text) for masked_lm";
  else if (task == Task::SpanExtraction && n != 2)
    want = "exactly 2 fields (question, context) for span_extraction";
  else if (n < 1 || n > 2)
    want = "1 field (a text) or 2 (a text pair)";
  if (!want.empty())
    s.context().report(s.path("text_fields"), fields, "expected " + want + ", got " + std::to_string(n));
  if (n == 2 && d.text_fields[0] == d.text_fields[1])
    s.context().report(s.path("text_fields"), fields, "expected two different fields, got '" +
                                                          d.text_fields[0] + "' twice");
}

void read_optimizer(Section s, OptimizerConfig& o) {
  s.choice("name", o.name, kOptimizers);
  s.number("lr", o.lr, kLearningRate);
  s.number("weight_decay", o.weight_decay, detail::kNonNegativeNumber);
  const YAML::Node betas = s.raw("betas");
  if (betas.IsDefined()) {
    double b[2] = {0, 0};
    bool ok = betas.IsSequence() && betas.size() == 2;
    for (std::size_t i = 0; ok && i < 2; ++i) {
      const auto v = detail::to_number(betas[i]);
      ok = v.has_value() && detail::kUnitHalfOpen.ok(v.value_or(0));
      b[i] = v.value_or(0);
    }
    if (ok) {
      o.beta1 = b[0];
      o.beta2 = b[1];
    } else {
      std::string got = detail::describe(betas);
      if (betas.IsSequence()) {
        got = "[";
        for (std::size_t i = 0; i < betas.size(); ++i) got += (i ? ", " : "") + detail::describe(betas[i]);
        got += "]";
      }
      s.context().report(s.path("betas"), betas, "expected a list of 2 numbers in [0, 1), got " + got);
    }
  }
  s.number("eps", o.eps, detail::kPositiveNumber);
  const YAML::Node momentum = s.number("momentum", o.momentum, detail::kUnitHalfOpen);
  if (o.momentum != 0.0 && o.name != "sgd")
    s.context().report(s.path("momentum"), momentum,
                       "expected 0 for optimizer " + o.name + " (momentum is sgd's), got " + str(o.momentum));
}

void read_schedule(Section s, ScheduleConfig& c) {
  s.choice("name", c.name, kSchedules);
  s.number("warmup_ratio", c.warmup_ratio, detail::kUnitClosed);
  s.integer("warmup_steps", c.warmup_steps, detail::kNonNegativeInt);
}

void read_loss(Section s, LossConfig& l) {
  s.number("label_smoothing", l.label_smoothing, detail::kUnitHalfOpen);
  s.number("focal_gamma", l.focal_gamma, detail::kNonNegativeNumber);
  const YAML::Node w = s.raw("class_weights");
  if (!w.IsDefined() || w.IsNull()) return;
  if (w.IsScalar() && w.Scalar() == "balanced") {
    l.class_weights_mode = "balanced";
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
    s.context().report(s.path("class_weights"), w,
                       "expected null, balanced, or a non-empty list of numbers > 0 (one per label), got " +
                           detail::describe(w));
    return;
  }
  l.class_weights_mode = "list";
  l.class_weights = std::move(values);
}

void read_early_stopping(Section s, EarlyStoppingConfig& e) {
  s.integer("patience", e.patience, detail::kNonNegativeInt);
  s.string("metric", e.metric, /*nullable=*/true);
  s.number("min_delta", e.min_delta, detail::kNonNegativeNumber);
}

void read_training(Section s, TrainingConfig& t) {
  s.integer("batch_size", t.batch_size, detail::kPositiveInt);
  const YAML::Node epochs = s.integer("epochs", t.epochs, detail::kNonNegativeInt);
  s.integer("max_steps", t.max_steps, detail::kNonNegativeInt);
  s.integer("grad_accum_steps", t.grad_accum_steps, detail::kPositiveInt);
  read_optimizer(s.section("optimizer"), t.optimizer);
  read_schedule(s.section("schedule"), t.schedule);
  s.number("max_grad_norm", t.max_grad_norm, detail::kNonNegativeNumber);
  s.number("layerwise_lr_decay", t.layerwise_lr_decay, detail::kUnitLeftOpen);
  s.choice("precision", t.precision, kPrecisions);
  s.boolean("shuffle", t.shuffle);
  const YAML::Node grouped = s.boolean("group_by_length", t.group_by_length);
  s.integer("log_every", t.log_every, detail::kPositiveInt);
  s.integer("eval_every", t.eval_every, detail::kNonNegativeInt);
  s.integer("save_every", t.save_every, detail::kNonNegativeInt);
  s.integer("keep_checkpoints", t.keep_checkpoints, detail::kPositiveInt);
  s.string("resume", t.resume, /*nullable=*/false);  // auto | never | overwrite | a path (checked at train time)
  s.choice("nonfinite", t.nonfinite, kNonFinite);
  read_loss(s.section("loss"), t.loss);
  read_early_stopping(s.section("early_stopping"), t.early_stopping);

  if (t.epochs < 1 && t.max_steps == 0)
    s.context().report(s.path("epochs"), epochs,
                       "expected a positive integer when training.max_steps is 0, got " +
                           std::to_string(t.epochs));
  if (t.group_by_length && !t.shuffle)
    s.context().report(s.path("group_by_length"), grouped,
                       "expected false when training.shuffle is false (length grouping shuffles within "
                       "mega-batches), got true");
}

void read_parallel(Section s, ParallelConfig& p) {
  const YAML::Node devices = s.strings("devices", p.devices, /*scalar_ok=*/true);
  s.integer("threads_per_replica", p.threads_per_replica, detail::kNonNegativeInt);

  if (p.devices.empty())
    s.context().report(s.path("devices"), devices, "expected at least one device, got an empty list");
  for (std::size_t i = 0; i < p.devices.size(); ++i) {
    const std::string& d = p.devices[i];
    const std::string where = s.path("devices") + "[" + std::to_string(i) + "]";
    const YAML::Node item = devices.IsSequence() ? devices[i] : devices;
    bool ok = d == "cpu" || (d == "auto" && p.devices.size() == 1);
    if (d.rfind("cuda:", 0) == 0 && d.size() > 5) {
      ok = d.find_first_not_of("0123456789", 5) == std::string::npos;
    }
    if (d == "auto" && p.devices.size() > 1)
      s.context().report(where, item, "expected 'auto' alone (devices: auto), got it in a list of " +
                                          std::to_string(p.devices.size()));
    else if (!ok)
      s.context().report(where, item, "expected cpu, cuda:N or auto, got '" + d + "'" +
                                          did_you_mean(d, {"cpu", "auto", "cuda:0"}));
  }
}

void read_adversarial(Section s, AdversarialConfig& a) {
  s.choice("method", a.method, kAdversarialMethods);
  const YAML::Node eps = s.number("epsilon", a.epsilon, detail::kNonNegativeNumber);
  s.number("alpha", a.alpha, detail::kNonNegativeNumber);
  s.integer("steps", a.steps, detail::kPositiveInt);
  s.number("init_mag", a.init_mag, detail::kNonNegativeNumber);
  s.number("smart_lambda", a.smart_lambda, detail::kNonNegativeNumber);
  s.number("smart_momentum", a.smart_momentum, detail::kUnitClosed);
  s.number("smart_bregman", a.smart_bregman, detail::kNonNegativeNumber);
  s.number("rdrop_alpha", a.rdrop_alpha, detail::kNonNegativeNumber);

  if (a.epsilon == 0.0 && (a.method == "fgm" || a.method == "pgd" || a.method == "freeat"))
    s.context().report(s.path("epsilon"), eps,
                       "expected a number > 0 for method " + a.method + " (0 = unbounded is FreeLB's), got 0");
}

void read_span(Section s, SpanConfig& sp) {
  s.integer("doc_stride", sp.doc_stride, detail::kPositiveInt);
  s.integer("max_query_length", sp.max_query_length, detail::kPositiveInt);
  s.integer("max_answer_length", sp.max_answer_length, detail::kPositiveInt);
  s.integer("n_best_size", sp.n_best_size, detail::kPositiveInt);
  s.choice("metric", sp.metric, kSpanMetrics);
}

void read_distill(Section s, DistillConfig& d) {
  s.string("teacher", d.teacher, /*nullable=*/true);
  d.teacher = expand_model_path(d.teacher);
  s.number("temperature", d.temperature, detail::kPositiveNumber);
  s.number("alpha", d.alpha, detail::kUnitClosed);
}

void read_run(Section s, RunConfig& c) {
  std::string task = to_string(c.task);
  s.choice("task", task, kTaskNames);
  c.task = parse_task(task);
  s.string("output_dir", c.output_dir, /*nullable=*/false);
  s.integer("seed", c.seed, detail::kNonNegativeInt);
  read_model(s.section("model"), c.model);
  read_data(s.section("data"), c.data, c.task);
  read_training(s.section("training"), c.training);
  read_parallel(s.section("parallel"), c.parallel);
  read_adversarial(s.section("adversarial"), c.adversarial);
  read_span(s.section("span"), c.span);
  read_distill(s.section("distill"), c.distill);
  const LossConfig& loss = c.training.loss;
  const bool loss_task = c.task == Task::Classification || c.task == Task::TokenClassification;
  if (!loss_task && !(loss == LossConfig{}))
    s.context().report("training.loss", "expected the defaults (label_smoothing 0, focal_gamma 0, class_weights "
                       "null) for task " + to_string(c.task) + ": these losses apply to classification and "
                       "token_classification");
  if (loss.class_weights_mode == "list" && c.data.labels_given && loss.class_weights.size() != c.data.labels.size())
    s.context().report("training.loss.class_weights", "expected one weight per label (" +
                       std::to_string(c.data.labels.size()) + " in data.labels), got " +
                       std::to_string(loss.class_weights.size()));
  if (c.training.early_stopping.patience > 0 && c.data.dev.empty())
    s.context().report("training.early_stopping.patience", "expected 0 without data.dev (early stopping watches "
                       "the dev evaluations), got " + std::to_string(c.training.early_stopping.patience));
  if (!c.distill.teacher.empty() && c.task != Task::Classification && c.task != Task::TokenClassification &&
      c.task != Task::SpanExtraction)
    s.context().report("distill.teacher", "expected null for task " + to_string(c.task) + ": distillation supports "
                       "classification, token_classification and span_extraction");
  if (c.task == Task::MaskedLm && c.adversarial.method != "none")
    s.context().report("adversarial.method", "expected none for task masked_lm, got " + c.adversarial.method);
  if (c.task == Task::SpanExtraction && c.model.max_seq_length < 5)
    s.context().report("model.max_seq_length", "expected at least 5 for span_extraction ([CLS] question [SEP] "
                       "context [SEP] with one piece each), got " + std::to_string(c.model.max_seq_length));
  if ((c.adversarial.method == "smart" || c.adversarial.method == "rdrop") && c.task == Task::Regression)
    s.context().report("adversarial.method", "expected none, fgm, pgd, freelb or freeat for task regression (" +
                       c.adversarial.method + "'s KL term needs a probability output, which regression has not), got " +
                       c.adversarial.method);
  if (c.training.precision == "fp16")
    for (const auto& d : c.parallel.devices)
      if (d == "cpu") {
        s.context().report("training.precision", "expected fp32 or bf16 with CPU devices (LibTorch's CPU autocast "
                           "has no float16, and fp16 is for GPUs), got fp16 with parallel.devices: cpu; use bf16 "
                           "on CPUs or cuda:N devices");
        break;
      }
  if (c.adversarial.method == "freeat" && c.training.grad_accum_steps > 1)
    s.context().report("training.grad_accum_steps", "expected 1 with adversarial.method freeat (it steps the "
                       "optimizer on every replay), got " + std::to_string(c.training.grad_accum_steps));
}

// ---- overrides ----------------------------------------------------------------------------------

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
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
  if (purpose == Purpose::Eval && c.data.dev.empty())
    out.push_back(src + "data.dev: required for evaluation (a .jsonl or .tsv file)");
  return out;
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
                    "; expected an HF model directory (config.json, vocab.txt, model weights)");
    else if (!c.model.pretrained.empty() && c.model.vocab.empty())
      out.push_back(src + "model.pretrained: '" + c.model.pretrained +
                    "' has no vocab.txt; set model.vocab to the model's WordPiece vocabulary");
    else
      check_file(src, "model.vocab", c.model.vocab, out);
    check_file(src, "data.train", c.data.train, out);
    check_file(src, "data.dev", c.data.dev, out);
    check_file(src, "data.test", c.data.test, out);
  }
  if (purpose == Purpose::Eval) check_file(src, "data.dev", c.data.dev, out);
  return out;
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
      if (edit_distance(last, u.key) == 0) same.push_back(k);
      else if (!closest_match(u.key, {last}).empty()) near.push_back(k);
    }
    const auto& pick = !same.empty() ? same : near;
    if (pick.size() != 1) continue;
    std::string& line = ctx.problems()[u.index];
    const std::string marker = "unknown key '" + u.key + "'";
    const auto at = line.find(marker);
    if (at != std::string::npos) line.insert(at + marker.size(), " (did you mean '" + pick.front() + "'?)");
  }
}

// ---- RunConfig -> YAML ---------------------------------------------------------------------------

/// The shortest decimal that reads back as exactly `v`, always with a '.' or an exponent.
std::string format_number(double v) {
  char buf[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

/// A string value, double-quoted when a YAML reader would take it for a number or a boolean (a
/// label named 1 or yes), so that config.yaml means the same to other YAML libraries.
void emit_string(YAML::Emitter& out, const std::string& value) {
  const YAML::Node plain(value);
  if (detail::to_number(plain) || detail::to_bool(plain))
    out << YAML::DoubleQuoted << value;
  else
    out << value;
}

void emit_text(YAML::Emitter& out, const char* key, const std::string& value) {
  out << YAML::Key << key << YAML::Value;
  if (value.empty())
    out << YAML::Null;
  else
    emit_string(out, value);
}

void emit_list(YAML::Emitter& out, const char* key, const std::vector<std::string>& values) {
  out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const auto& v : values) emit_string(out, v);
  out << YAML::EndSeq;
}

template <class T>
void emit_optional(YAML::Emitter& out, const char* key, const std::optional<T>& value) {
  if (!value) return;
  out << YAML::Key << key << YAML::Value;
  if constexpr (std::is_same_v<T, double>)
    out << format_number(*value);
  else
    out << *value;
}

void emit_bert(YAML::Emitter& out, const BertOverrides& b) {
  out << YAML::Key << "bert" << YAML::Value;
  if (b.empty()) {
    out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
    return;
  }
  out << YAML::BeginMap;
  emit_optional(out, "vocab_size", b.vocab_size);
  emit_optional(out, "hidden_size", b.hidden_size);
  emit_optional(out, "num_hidden_layers", b.num_hidden_layers);
  emit_optional(out, "num_attention_heads", b.num_attention_heads);
  emit_optional(out, "intermediate_size", b.intermediate_size);
  emit_optional(out, "hidden_act", b.hidden_act);
  emit_optional(out, "hidden_dropout_prob", b.hidden_dropout_prob);
  emit_optional(out, "attention_probs_dropout_prob", b.attention_probs_dropout_prob);
  emit_optional(out, "max_position_embeddings", b.max_position_embeddings);
  emit_optional(out, "type_vocab_size", b.type_vocab_size);
  emit_optional(out, "initializer_range", b.initializer_range);
  emit_optional(out, "layer_norm_eps", b.layer_norm_eps);
  emit_optional(out, "pad_token_id", b.pad_token_id);
  emit_optional(out, "classifier_dropout", b.classifier_dropout);
  out << YAML::EndMap;
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

ConfigError::ConfigError(std::vector<std::string> lines)
    : UserError(join_lines(lines)), problems(std::move(lines)) {}

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
  } catch (const YAML::Exception& e) {
    throw ConfigError({source_name + ": invalid YAML: " + e.msg});
  }

  RunConfig cfg;
  cfg.source = source_name;
  if (root.IsDefined() && !root.IsNull() && !root.IsMap()) {
    ctx.report("", root, "expected a mapping of keys (task, model, data, training, ...) at the top level, got " +
                             detail::describe(root));
    throw ConfigError(std::move(ctx.problems()));
  }
  if (!root.IsMap()) root.reset(YAML::Node(YAML::NodeType::Map));
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

RunConfig load_config(const std::filesystem::path& file, const std::vector<std::string>& overrides,
                      Purpose purpose) {
  const std::string name = file.string();
  std::error_code ec;
  if (!std::filesystem::exists(file, ec))
    throw ConfigError({name + ": cannot read the config file: no such file"});
  if (std::filesystem::is_directory(file, ec))
    throw ConfigError({name + ": cannot read the config file: it is a directory, expected a .yaml file"});
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ConfigError({name + ": cannot read the config file: " + std::strerror(errno)});
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ConfigError({name + ": cannot read the config file: read error"});
  RunConfig cfg = parse_config(text.str(), name, overrides, purpose);
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

void validate_for(const RunConfig& cfg, Purpose purpose) {
  auto problems = purpose_problems(cfg, purpose);
  if (!problems.empty()) throw ConfigError(std::move(problems));
}

std::string to_yaml(const RunConfig& c) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "task" << YAML::Value << to_string(c.task);
  emit_text(out, "output_dir", c.output_dir);
  out << YAML::Key << "seed" << YAML::Value << c.seed;

  out << YAML::Key << "model" << YAML::Value << YAML::BeginMap;
  emit_text(out, "pretrained", c.model.pretrained);
  emit_bert(out, c.model.bert);
  emit_text(out, "vocab", c.model.vocab);
  out << YAML::Key << "do_lower_case" << YAML::Value << c.model.do_lower_case;
  out << YAML::Key << "max_seq_length" << YAML::Value << c.model.max_seq_length;
  out << YAML::Key << "truncate_method" << YAML::Value << c.model.truncate_method;
  out << YAML::Key << "sparse_embeddings" << YAML::Value << c.model.sparse_embeddings;
  out << YAML::Key << "mlm_probability" << YAML::Value << format_number(c.model.mlm_probability);
  out << YAML::Key << "whole_word_mask" << YAML::Value << c.model.whole_word_mask;
  out << YAML::EndMap;

  out << YAML::Key << "data" << YAML::Value << YAML::BeginMap;
  emit_text(out, "train", c.data.train);
  emit_text(out, "dev", c.data.dev);
  emit_text(out, "test", c.data.test);
  emit_list(out, "text_fields", c.data.text_fields);
  emit_text(out, "label_field", c.data.label_field);
  if (c.data.labels_given)
    emit_list(out, "labels", c.data.labels);
  else
    out << YAML::Key << "labels" << YAML::Value << YAML::Null;
  out << YAML::EndMap;

  const TrainingConfig& t = c.training;
  out << YAML::Key << "training" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "batch_size" << YAML::Value << t.batch_size;
  out << YAML::Key << "epochs" << YAML::Value << t.epochs;
  out << YAML::Key << "max_steps" << YAML::Value << t.max_steps;
  out << YAML::Key << "grad_accum_steps" << YAML::Value << t.grad_accum_steps;
  out << YAML::Key << "optimizer" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << t.optimizer.name;
  out << YAML::Key << "lr" << YAML::Value << format_number(t.optimizer.lr);
  out << YAML::Key << "weight_decay" << YAML::Value << format_number(t.optimizer.weight_decay);
  out << YAML::Key << "betas" << YAML::Value << YAML::Flow << YAML::BeginSeq
      << format_number(t.optimizer.beta1) << format_number(t.optimizer.beta2) << YAML::EndSeq;
  out << YAML::Key << "eps" << YAML::Value << format_number(t.optimizer.eps);
  out << YAML::Key << "momentum" << YAML::Value << format_number(t.optimizer.momentum);
  out << YAML::EndMap;
  out << YAML::Key << "schedule" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << t.schedule.name;
  out << YAML::Key << "warmup_ratio" << YAML::Value << format_number(t.schedule.warmup_ratio);
  out << YAML::Key << "warmup_steps" << YAML::Value << t.schedule.warmup_steps;
  out << YAML::EndMap;
  out << YAML::Key << "max_grad_norm" << YAML::Value << format_number(t.max_grad_norm);
  out << YAML::Key << "layerwise_lr_decay" << YAML::Value << format_number(t.layerwise_lr_decay);
  out << YAML::Key << "precision" << YAML::Value << t.precision;
  out << YAML::Key << "shuffle" << YAML::Value << t.shuffle;
  out << YAML::Key << "group_by_length" << YAML::Value << t.group_by_length;
  out << YAML::Key << "log_every" << YAML::Value << t.log_every;
  out << YAML::Key << "eval_every" << YAML::Value << t.eval_every;
  out << YAML::Key << "save_every" << YAML::Value << t.save_every;
  out << YAML::Key << "keep_checkpoints" << YAML::Value << t.keep_checkpoints;
  emit_text(out, "resume", t.resume);
  out << YAML::Key << "nonfinite" << YAML::Value << t.nonfinite;
  out << YAML::Key << "loss" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "label_smoothing" << YAML::Value << format_number(t.loss.label_smoothing);
  out << YAML::Key << "focal_gamma" << YAML::Value << format_number(t.loss.focal_gamma);
  out << YAML::Key << "class_weights" << YAML::Value;
  if (t.loss.class_weights_mode == "balanced") {
    out << "balanced";
  } else if (t.loss.class_weights_mode == "list") {
    out << YAML::Flow << YAML::BeginSeq;
    for (double w : t.loss.class_weights) out << format_number(w);
    out << YAML::EndSeq;
  } else {
    out << YAML::Null;
  }
  out << YAML::EndMap;
  out << YAML::Key << "early_stopping" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "patience" << YAML::Value << t.early_stopping.patience;
  emit_text(out, "metric", t.early_stopping.metric);
  out << YAML::Key << "min_delta" << YAML::Value << format_number(t.early_stopping.min_delta);
  out << YAML::EndMap;
  out << YAML::EndMap;

  out << YAML::Key << "parallel" << YAML::Value << YAML::BeginMap;
  emit_list(out, "devices", c.parallel.devices);
  out << YAML::Key << "threads_per_replica" << YAML::Value << c.parallel.threads_per_replica;
  out << YAML::EndMap;

  const AdversarialConfig& a = c.adversarial;
  out << YAML::Key << "adversarial" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "method" << YAML::Value << a.method;
  out << YAML::Key << "epsilon" << YAML::Value << format_number(a.epsilon);
  out << YAML::Key << "alpha" << YAML::Value << format_number(a.alpha);
  out << YAML::Key << "steps" << YAML::Value << a.steps;
  out << YAML::Key << "init_mag" << YAML::Value << format_number(a.init_mag);
  out << YAML::Key << "smart_lambda" << YAML::Value << format_number(a.smart_lambda);
  out << YAML::Key << "smart_momentum" << YAML::Value << format_number(a.smart_momentum);
  out << YAML::Key << "smart_bregman" << YAML::Value << format_number(a.smart_bregman);
  out << YAML::Key << "rdrop_alpha" << YAML::Value << format_number(a.rdrop_alpha);
  out << YAML::EndMap;

  const SpanConfig& sp = c.span;
  out << YAML::Key << "span" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "doc_stride" << YAML::Value << sp.doc_stride;
  out << YAML::Key << "max_query_length" << YAML::Value << sp.max_query_length;
  out << YAML::Key << "max_answer_length" << YAML::Value << sp.max_answer_length;
  out << YAML::Key << "n_best_size" << YAML::Value << sp.n_best_size;
  out << YAML::Key << "metric" << YAML::Value << sp.metric;
  out << YAML::EndMap;

  if (!c.distill.teacher.empty()) {  // absent = off (SPEC §7)
    out << YAML::Key << "distill" << YAML::Value << YAML::BeginMap;
    emit_text(out, "teacher", c.distill.teacher);
    out << YAML::Key << "temperature" << YAML::Value << format_number(c.distill.temperature);
    out << YAML::Key << "alpha" << YAML::Value << format_number(c.distill.alpha);
    out << YAML::EndMap;
  }

  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

// ---- changes between two configs ------------------------------------------------------------------

namespace {

// Leaf key paths of a YAML mapping, in document order, each with its value as flow YAML text.
void flatten(const YAML::Node& node, const std::string& prefix, std::vector<std::pair<std::string, std::string>>& out) {
  if (node.IsMap()) {
    for (const auto& kv : node) flatten(kv.second, prefix.empty() ? kv.first.Scalar() : prefix + "." + kv.first.Scalar(), out);
    return;
  }
  YAML::Emitter e;
  e << YAML::Flow << node;
  out.emplace_back(prefix, e.c_str());
}

}  // namespace

std::vector<std::string> config_changes(const std::string& before, const RunConfig& now) {
  std::vector<std::pair<std::string, std::string>> old_keys, new_keys;
  try {
    const YAML::Node old = YAML::Load(before);
    if (!old.IsMap()) return {};
    flatten(old, "", old_keys);
  } catch (const YAML::Exception&) {
    return {};
  }
  flatten(YAML::Load(to_yaml(now)), "", new_keys);
  std::map<std::string, std::string> old_map(old_keys.begin(), old_keys.end()), new_map(new_keys.begin(), new_keys.end());
  std::vector<std::string> out;
  for (const auto& [key, value] : new_keys) {
    const auto it = old_map.find(key);
    if (it == old_map.end()) out.push_back(key + " (absent) -> " + value);
    else if (it->second != value) out.push_back(key + " " + it->second + " -> " + value);
  }
  for (const auto& [key, value] : old_keys)
    if (!new_map.count(key)) out.push_back(key + " " + value + " -> (absent)");
  return out;
}

// ---- equality --------------------------------------------------------------------------------------

bool operator==(const BertOverrides& a, const BertOverrides& b) {
  return a.vocab_size == b.vocab_size && a.hidden_size == b.hidden_size &&
         a.num_hidden_layers == b.num_hidden_layers && a.num_attention_heads == b.num_attention_heads &&
         a.intermediate_size == b.intermediate_size && a.hidden_act == b.hidden_act &&
         a.hidden_dropout_prob == b.hidden_dropout_prob &&
         a.attention_probs_dropout_prob == b.attention_probs_dropout_prob &&
         a.max_position_embeddings == b.max_position_embeddings && a.type_vocab_size == b.type_vocab_size &&
         a.initializer_range == b.initializer_range && a.layer_norm_eps == b.layer_norm_eps &&
         a.pad_token_id == b.pad_token_id && a.classifier_dropout == b.classifier_dropout;
}
bool operator==(const ModelConfig& a, const ModelConfig& b) {
  return a.pretrained == b.pretrained && a.bert == b.bert && a.vocab == b.vocab &&
         a.do_lower_case == b.do_lower_case && a.max_seq_length == b.max_seq_length &&
         a.truncate_method == b.truncate_method && a.sparse_embeddings == b.sparse_embeddings &&
         a.mlm_probability == b.mlm_probability && a.whole_word_mask == b.whole_word_mask;
}
bool operator==(const DataConfig& a, const DataConfig& b) {
  return a.train == b.train && a.dev == b.dev && a.test == b.test && a.text_fields == b.text_fields &&
         a.label_field == b.label_field && a.labels == b.labels && a.labels_given == b.labels_given;
}
bool operator==(const OptimizerConfig& a, const OptimizerConfig& b) {
  return a.name == b.name && a.lr == b.lr && a.weight_decay == b.weight_decay && a.beta1 == b.beta1 &&
         a.beta2 == b.beta2 && a.eps == b.eps && a.momentum == b.momentum;
}
bool operator==(const ScheduleConfig& a, const ScheduleConfig& b) {
  return a.name == b.name && a.warmup_ratio == b.warmup_ratio && a.warmup_steps == b.warmup_steps;
}
bool operator==(const TrainingConfig& a, const TrainingConfig& b) {
  return a.batch_size == b.batch_size && a.epochs == b.epochs && a.max_steps == b.max_steps &&
         a.grad_accum_steps == b.grad_accum_steps && a.optimizer == b.optimizer && a.schedule == b.schedule &&
         a.max_grad_norm == b.max_grad_norm && a.layerwise_lr_decay == b.layerwise_lr_decay && a.precision == b.precision &&
         a.shuffle == b.shuffle && a.group_by_length == b.group_by_length && a.log_every == b.log_every && a.eval_every == b.eval_every &&
         a.save_every == b.save_every && a.keep_checkpoints == b.keep_checkpoints && a.resume == b.resume &&
         a.nonfinite == b.nonfinite &&
         a.loss == b.loss && a.early_stopping == b.early_stopping;
}
bool operator==(const LossConfig& a, const LossConfig& b) {
  return a.label_smoothing == b.label_smoothing && a.focal_gamma == b.focal_gamma &&
         a.class_weights_mode == b.class_weights_mode && a.class_weights == b.class_weights;
}
bool operator==(const EarlyStoppingConfig& a, const EarlyStoppingConfig& b) {
  return a.patience == b.patience && a.metric == b.metric && a.min_delta == b.min_delta;
}
bool operator==(const DistillConfig& a, const DistillConfig& b) {
  return a.teacher == b.teacher && a.temperature == b.temperature && a.alpha == b.alpha;
}
bool operator==(const ParallelConfig& a, const ParallelConfig& b) {
  return a.devices == b.devices && a.threads_per_replica == b.threads_per_replica;
}
bool operator==(const AdversarialConfig& a, const AdversarialConfig& b) {
  return a.method == b.method && a.epsilon == b.epsilon && a.alpha == b.alpha && a.steps == b.steps &&
         a.init_mag == b.init_mag && a.smart_lambda == b.smart_lambda && a.smart_momentum == b.smart_momentum &&
         a.smart_bregman == b.smart_bregman && a.rdrop_alpha == b.rdrop_alpha;
}
bool operator==(const SpanConfig& a, const SpanConfig& b) {
  return a.doc_stride == b.doc_stride && a.max_query_length == b.max_query_length &&
         a.max_answer_length == b.max_answer_length && a.n_best_size == b.n_best_size && a.metric == b.metric;
}
bool operator==(const RunConfig& a, const RunConfig& b) {
  return a.task == b.task && a.output_dir == b.output_dir && a.seed == b.seed && a.model == b.model &&
         a.data == b.data && a.training == b.training && a.parallel == b.parallel &&
         a.adversarial == b.adversarial && a.span == b.span && a.distill == b.distill;
}

}  // namespace unif::framework
