#include "framework/train/trainer.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <csignal>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <thread>

#include <ATen/CPUGeneratorImpl.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "framework/checkpoint/atomic_file.h"
#include "framework/checkpoint/safetensors.h"
#include "framework/common/error.h"
#include "framework/common/precision.h"
#include "framework/common/runtime.h"
#include "framework/data/batching.h"
#include "framework/metrics/classification.h"
#include "framework/metrics/multilabel.h"
#include "framework/metrics/regression.h"
#include "framework/metrics/sequence_labeling.h"
#include "framework/metrics/span.h"
#include "framework/text/unicode.h"
#include "framework/parallel/auto_devices.h"
#include "framework/parallel/data_parallel.h"
#include "framework/parallel/process_group.h"
#include "framework/train/build.h"
#include "framework/train/loss_scaler.h"
#include "framework/train/model_dir.h"
#include "framework/train/output_lock.h"
#include "framework/train/run_identity.h"
#include "framework/train/step_policy.h"
#include "models/heads/loss.h"

namespace unif::framework {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::atomic<bool> g_stop{false};
extern "C" void on_signal(int) { g_stop.store(true); }

MetricKind metric_kind(Task task) { return metric_kind_for_task(to_string(task)); }


std::string fmt_num(double v, int prec = 4) {
  std::ostringstream o;
  o << std::setprecision(prec) << v;
  return o.str();
}

std::string fmt_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  auto t = static_cast<int64_t>(s + 0.5);
  std::ostringstream o;
  if (t >= 3600) o << t / 3600 << "h";
  if (t >= 60) o << std::setw(t >= 3600 ? 2 : 1) << std::setfill('0') << (t / 60) % 60 << "m";
  o << std::setw(t >= 60 ? 2 : 1) << std::setfill('0') << t % 60 << "s";
  return o.str();
}

}  // namespace

double loss_normalizer(Task task, const models::Batch& b, const torch::Tensor& class_weights) {
  const bool tokens = task == Task::TokenClassification || task == Task::MaskedLm;
  if (class_weights.defined() && (tokens || task == Task::Classification))
    return models::loss_normalizer(b.labels, class_weights);
  if (tokens) return static_cast<double>((b.labels != -100).sum().item<int64_t>());
  return static_cast<double>(b.size());
}

std::vector<int64_t> word_predictions(const EncodedExample& e, const Example& ex, const torch::Tensor& logits,
                                      int64_t fallback) {
  std::vector<int64_t> out(ex.texts.size(), fallback);
  auto arg = logits.argmax(-1);
  auto a = arg.accessor<int64_t, 1>();
  for (size_t p = 0; p < e.word_start.size() && static_cast<int64_t>(p) < arg.size(0); ++p)
    if (e.word_start[p] >= 0) out[static_cast<size_t>(e.word_start[p])] = a[static_cast<int64_t>(p)];
  return out;
}

Evaluation evaluate(models::TaskModel& model, Task task, const TaskData& data, const LabelSet& labels,
                    int64_t batch_size, const torch::Tensor& class_weights, bool sort_by_length,
                    WorkerPool* workers) {
  torch::NoGradGuard no_grad;
  torch::Device device = torch::kCPU;  // evaluation runs on the model's device
  for (const auto& p : model.parameters()) {
    device = p.device();
    break;
  }
  const bool was_training = model.is_training();
  model.eval();
  Evaluation ev;
  const auto n = static_cast<int64_t>(data.encoded.size());
  if (task == Task::MaskedLm) {  // the fixed evaluation masks; no logits kept (M x V each batch)
    double loss_sum = 0.0, z = 0.0;
    for (int64_t start = 0; start < n; start += batch_size) {
      std::vector<int64_t> idx;
      for (int64_t i = start; i < std::min(n, start + batch_size); ++i) idx.push_back(i);
      auto batch = to_device(collate_mlm(data.encoded, idx, data.mlm, kEvalEpoch), device);  // the model's device
      loss_sum += model.forward(batch).example_losses.sum().item<double>();
      z += loss_normalizer(task, batch);
    }
    if (was_training) model.train();
    if (z > 0) {
      ev.metrics["loss"] = loss_sum / z;
      ev.metrics["perplexity"] = std::exp(loss_sum / z);
    }
    return ev;
  }
  ev.logits.resize(static_cast<size_t>(n));
  double loss_sum = 0.0;
  double z = 0;
  bool labeled = true;
  // Batches of similar lengths pad less; each output goes back to its entry's index.
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  if (sort_by_length)
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return data.encoded[static_cast<size_t>(a)].input_ids.size() > data.encoded[static_cast<size_t>(b)].input_ids.size();
    });
  const int64_t batches = (n + batch_size - 1) / batch_size;
  // Per batch: its loss sum and normaliser (summed in batch order below, whichever worker ran it).
  std::vector<double> batch_loss(static_cast<size_t>(batches), 0.0), batch_z(static_cast<size_t>(batches), 0.0);
  std::vector<char> batch_labeled(static_cast<size_t>(batches), 1);
  auto run_batch = [&](int64_t k) {
    const int64_t start = k * batch_size;
    std::vector<int64_t> idx(order.begin() + start, order.begin() + std::min(n, start + batch_size));
    auto batch = to_device(collate(task, data.encoded, data.examples, idx, labels.size()), device);
    auto out = model.forward(batch);
    out.logits = out.logits.to(torch::kCPU);  // metrics read them on the CPU
    if (batch.labels.defined()) {
      batch_loss[static_cast<size_t>(k)] = out.example_losses.sum().item<double>();
      batch_z[static_cast<size_t>(k)] = loss_normalizer(task, batch, class_weights);
    } else {
      batch_labeled[static_cast<size_t>(k)] = 0;
    }
    for (size_t b = 0; b < idx.size(); ++b) {
      auto row = out.logits[static_cast<int64_t>(b)];
      if (task == Task::TokenClassification || task == Task::SpanExtraction)
        row = row.narrow(0, 0, static_cast<int64_t>(data.encoded[static_cast<size_t>(idx[b])].input_ids.size()));
      ev.logits[static_cast<size_t>(idx[b])] = row.contiguous();  // distinct entries per batch
    }
  };
  if (workers == nullptr || workers->size() <= 1 || !device.is_cpu() || batches <= 1) {
    for (int64_t k = 0; k < batches; ++k) run_batch(k);
  } else {
    ScopedBlasThreads blas(1);  // each worker's products on its own thread, all at once
    workers->run(batches, run_batch);
  }
  for (int64_t k = 0; k < batches; ++k) {
    loss_sum += batch_loss[static_cast<size_t>(k)];
    z += batch_z[static_cast<size_t>(k)];
    if (!batch_labeled[static_cast<size_t>(k)]) labeled = false;
  }
  if (was_training) model.train();
  if (task == Task::SpanExtraction) {
    std::vector<std::vector<const EncodedExample*>> windows(data.examples.size());
    std::vector<std::vector<torch::Tensor>> logits(data.examples.size());
    for (int64_t i = 0; i < n; ++i) {
      const auto& e = data.encoded[static_cast<size_t>(i)];
      windows[static_cast<size_t>(e.example)].push_back(&e);
      logits[static_cast<size_t>(e.example)].push_back(ev.logits[static_cast<size_t>(i)]);
    }
    ev.answers.resize(data.examples.size());
    for (size_t x = 0; x < data.examples.size(); ++x) {
      auto best = decode_spans(data.examples[x], windows[x], logits[x], data.span.max_answer_length,
                                data.span.n_best_size);
      if (!best.empty()) ev.answers[x] = std::move(best.front());
    }
  }
  if (!labeled || n == 0) return ev;
  switch (task) {
    case Task::Classification: {
      std::vector<int64_t> t, p;
      for (int64_t i = 0; i < n; ++i) {
        t.push_back(data.examples[static_cast<size_t>(i)].labels.at(0));
        p.push_back(ev.logits[static_cast<size_t>(i)].argmax().item<int64_t>());
      }
      ev.metrics = classification_metrics(t, p, labels.size());
      break;
    }
    case Task::Multilabel: {
      std::vector<std::vector<int64_t>> t, p;
      for (int64_t i = 0; i < n; ++i) {
        t.push_back(data.examples[static_cast<size_t>(i)].labels);
        auto on = (ev.logits[static_cast<size_t>(i)] > 0).nonzero().flatten();
        p.emplace_back(on.data_ptr<int64_t>(), on.data_ptr<int64_t>() + on.numel());
      }
      ev.metrics = multilabel_metrics_from_sets(t, p, labels.size());
      break;
    }
    case Task::Regression: {
      std::vector<double> t, p;
      for (int64_t i = 0; i < n; ++i) {
        t.push_back(data.examples[static_cast<size_t>(i)].value);
        p.push_back(ev.logits[static_cast<size_t>(i)].flatten()[0].item<double>());
      }
      ev.metrics = regression_metrics(t, p);
      break;
    }
    case Task::TokenClassification: {
      std::vector<std::vector<std::string>> t, p;
      int64_t outside = labels.index.count("O") ? labels.index.at("O") : 0;
      for (int64_t i = 0; i < n; ++i) {
        const auto& ex = data.examples[static_cast<size_t>(i)];
        std::vector<std::string> tt, pp;
        for (auto l : ex.labels) tt.push_back(labels.names[static_cast<size_t>(l)]);
        for (auto l : word_predictions(data.encoded[static_cast<size_t>(i)], ex, ev.logits[static_cast<size_t>(i)], outside))
          pp.push_back(labels.names[static_cast<size_t>(l)]);
        t.push_back(std::move(tt));
        p.push_back(std::move(pp));
      }
      ev.metrics = token_metrics(t, p);
      break;
    }
    case Task::SpanExtraction: {
      std::vector<std::string> predictions;
      std::vector<std::vector<std::string>> golds;
      bool chinese = false;
      for (size_t x = 0; x < data.examples.size(); ++x) {
        predictions.push_back(ev.answers[x].text);
        golds.emplace_back();
        for (const auto& a : data.examples[x].answers) golds.back().push_back(a.text);
        if (!chinese)
          for (char32_t c : unicode::decode_utf8(data.examples[x].texts.at(1)))
            if (c >= 0x4E00 && c <= 0x9FFF) { chinese = true; break; }
      }
      const auto squad = squad_metrics(predictions, golds), cmrc = cmrc_metrics(predictions, golds);
      const bool use_cmrc = data.span.metric == "cmrc" || (data.span.metric == "auto" && chinese);
      const auto& main = use_cmrc ? cmrc : squad;
      ev.metrics["exact_match"] = main.at("exact_match");
      ev.metrics["f1"] = main.at("f1");
      ev.metrics["squad_exact_match"] = squad.at("exact_match");
      ev.metrics["squad_f1"] = squad.at("f1");
      ev.metrics["cmrc_exact_match"] = cmrc.at("exact_match");
      ev.metrics["cmrc_f1"] = cmrc.at("f1");
      break;
    }
    case Task::MaskedLm: break;  // handled above
  }
  ev.metrics["loss"] = z > 0 ? loss_sum / z : 0.0;
  return ev;
}

// ---------------------------------------------------------------------------------------------

struct Trainer::State {
  RunConfig cfg;
  TrainerParts parts;
  fs::path out_dir;
  std::unique_ptr<OutputDirLock> lock;  // the writer's, for the whole run
  std::shared_ptr<spdlog::logger> log;
  std::ofstream metrics;
  std::unique_ptr<Optimizer> optimizer;
  std::unique_ptr<Schedule> schedule;
  std::unique_ptr<adversarial::Strategy> strategy;
  std::unique_ptr<adversarial::GradientEngine> engine;
  std::unique_ptr<LossScaler> scaler;  // training.precision fp16 only
  torch::Device home = torch::kCPU;    // the master model's device (make_engine puts it on a GPU)
  std::unique_ptr<WorkerPool> eval_workers;  // evaluation threads: the CPU replicas of the set-up

  // Position: `step` optimizer steps done; the next batch is batch `batch_in_epoch` of `epoch`.
  int64_t step = 0, epoch = 0, batch_in_epoch = 0;
  int64_t batches_per_epoch = 0, steps_per_epoch = 0, total_steps = 0;
  double best_metric = std::numeric_limits<double>::quiet_NaN();  // NaN: no evaluation yet
  int64_t best_step = -1;
  // training.early_stopping: the best value of its metric so far (NaN: none yet), evaluations since
  // the last improvement by more than min_delta, and whether the run has stopped for it.
  double es_best = std::numeric_limits<double>::quiet_NaN();
  int64_t es_wait = 0;
  bool es_stopped = false;
  bool tty = false;
  // In a multi-process run only rank 0 writes files (SPEC §6); the others train and evaluate alike.
  bool writer = true;

  // training.nonfinite (SPEC §7): optimizer_step() takes no update when the step's loss or the
  // gradient norm is not finite on any rank, and says so here; fit() then stops or counts the skip.
  bool loss_nonfinite = false;  // the step's loss (set by fit() before the optimizer step)
  double step_loss = 0.0;
  bool step_nonfinite = false;  // this step's update was not taken
  std::string nonfinite_what;   // what was not finite, for the message
  int64_t skipped_steps = 0;    // with nonfinite: skip, over the whole run (kept in checkpoints)
  int64_t skips_in_a_row = 0;   // non-finite steps since the last update (this process)
  bool step_empty = false;      // this step's Z is 0: nothing to predict, no update

  void write_metrics(json j) {
    if (!writer) return;
    metrics << j.dump() << "\n";
    metrics.flush();
  }
  double lr() const { return cfg.training.optimizer.lr * schedule->multiplier(step); }
  void optimizer_step() {
    // The decision order is framework/train/step_policy.h's: Z = 0, the loss, fp16 overflow, the norm.
    StepFacts facts;
    facts.empty = step_empty;
    facts.loss_finite = !loss_nonfinite;
    facts.scaled = scaler != nullptr;
    if (scaler && !step_empty && !loss_nonfinite) {  // fp16: unscale the reduced gradients
      std::vector<torch::Tensor> params;
      for (const auto& p : optimizer->params()) params.push_back(p.tensor);
      facts.grads_finite = scaler->unscale(params);
      facts.scale_at_floor = scaler->at_floor();
    }
    StepOutcome outcome = step_outcome(facts);
    double norm = 0.0;
    if (outcome == StepOutcome::Update) {
      norm = clip_grad_norm(optimizer->params(), cfg.training.max_grad_norm);
      if (!std::isfinite(norm)) outcome = StepOutcome::NonFinite;
    }
    // The ranks decide together (their losses and reduced gradients agree, but one rank must never
    // step while another skips: their parameters would part for good). Z, the loss and a scaler
    // overflow are the same on every rank; the norm is of the reduced gradients.
    const bool mine = outcome == StepOutcome::NonFinite;
    const auto group = default_process_group();
    const bool any = group ? group->any(mine) : mine;
    if (any) {
      if (!step_nonfinite)
        nonfinite_what = loss_nonfinite        ? "the loss is " + fmt_num(step_loss)
                         : facts.scale_at_floor && !facts.grads_finite
                             ? "the gradients are not finite even at the smallest fp16 loss scale (" +
                                   fmt_num(scaler->scale()) + ")"
                         : mine ? "the gradient norm is " + fmt_num(norm)
                                : "the loss or gradient norm is not finite on another rank";
      step_nonfinite = true;
    }
    if (any || outcome != StepOutcome::Update) {
      optimizer->zero_grad();  // no update: parameters and optimizer state stay as they were
      return;
    }
    optimizer->step(lr());
    optimizer->zero_grad();
  }
};

Trainer::Trainer(RunConfig cfg) : Trainer(cfg, build_trainer_parts(cfg)) {}

Trainer::Trainer(RunConfig cfg, TrainerParts parts) : s_(std::make_unique<State>()) {
  auto& s = *s_;
  s.cfg = std::move(cfg);
  s.parts = std::move(parts);
  const auto& t = s.cfg.training;
  if (s.parts.train.encoded.empty()) throw UserError("data.train: no training examples");
  // Everything that can fail on the configuration alone (devices, the gradient strategy, the
  // optimizer) is set up before output_dir is touched: a bad config leaves no train.log behind.
  s.out_dir = s.cfg.output_dir;
  const auto group = default_process_group();
  s.writer = !group || group->rank() == 0;
  const auto n = static_cast<int64_t>(s.parts.train.encoded.size());
  s.batches_per_epoch = (n + t.batch_size - 1) / t.batch_size;
  s.steps_per_epoch = (s.batches_per_epoch + t.grad_accum_steps - 1) / t.grad_accum_steps;
  s.total_steps = t.max_steps > 0 ? t.max_steps : t.epochs * s.steps_per_epoch;
  const int64_t warmup = t.schedule.warmup_steps > 0
                             ? t.schedule.warmup_steps
                             : static_cast<int64_t>(std::ceil(t.schedule.warmup_ratio * static_cast<double>(s.total_steps)));
  s.schedule = std::make_unique<Schedule>(t.schedule.name, warmup, s.total_steps);

  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (auto& p : s.parts.model->named_parameters()) named.emplace_back(p.key(), p.value());
  int64_t layers = 0;
  for (auto& [name, _] : named) {
    auto pos = name.find("encoder.layer.");
    if (pos != std::string::npos) layers = std::max<int64_t>(layers, std::stoll(name.substr(pos + 14)) + 1);
  }
  OptimizerOptions oo;
  oo.name = t.optimizer.name;
  oo.weight_decay = t.optimizer.weight_decay;
  oo.beta1 = t.optimizer.beta1;
  oo.beta2 = t.optimizer.beta2;
  oo.eps = t.optimizer.eps;
  oo.momentum = t.optimizer.momentum;
  s.optimizer = make_optimizer(bert_param_groups(named, t.optimizer.weight_decay, t.layerwise_lr_decay, layers), oo);
  s.strategy = make_strategy(s.cfg.adversarial);
  // parallel.devices: auto becomes this machine's fastest set-up for the model's size (SPEC §7),
  // said first in the log; s.cfg keeps "auto" (config.yaml, resume checks).
  const auto parallel = resolve_parallel(s.cfg.parallel, s.parts.model->word_embeddings()->weight.size(1), t.batch_size);
  const Precision precision = parse_precision(t.precision);
  s.engine = make_engine(parallel.config, s.parts.model, [this] { s_->optimizer_step(); }, precision);  // cuda:N on a CPU build
  if (precision == Precision::FP16) s.scaler = std::make_unique<LossScaler>();
  for (const auto& p : s.parts.model->parameters()) {
    s.home = p.device();
    break;
  }
  if (const auto cpus = std::count(parallel.config.devices.begin(), parallel.config.devices.end(), "cpu"); cpus > 1)
    s.eval_workers = std::make_unique<WorkerPool>(cpus);
  if (s.writer) {
    std::error_code ec;
    fs::create_directories(s.out_dir, ec);
    if (ec) throw UserError("output_dir: cannot create '" + s.out_dir.string() + "': " + ec.message());
    if (::access(s.out_dir.c_str(), W_OK) != 0)
      throw UserError("output_dir: '" + s.out_dir.string() + "' is not writable");
    s.lock = std::make_unique<OutputDirLock>(s.out_dir);  // before anything in it is touched
    // training.resume: overwrite: start over in this output_dir. Only what a run writes goes (other
    // files of the user's stay), before the log file is opened below.
    if (t.resume == "overwrite")
      for (const char* name : {"checkpoints", "final", "best", "tensorboard", "metrics.jsonl", "train.log", "config.yaml"}) {
        std::error_code rm;
        fs::remove_all(s.out_dir / name, rm);
        if (rm) throw UserError("training.resume: overwrite: cannot remove " + (s.out_dir / name).string() + ": " + rm.message());
      }
  }

  // Logging: console + train.log; only one logger of this name per process. Ranks other than 0
  // log warnings only, to stderr, prefixed with their rank.
  spdlog::drop("unif");
  std::vector<spdlog::sink_ptr> sinks{std::make_shared<spdlog::sinks::stderr_sink_mt>()};
  if (s.writer) sinks.push_back(std::make_shared<spdlog::sinks::basic_file_sink_mt>((s.out_dir / "train.log").string()));
  s.log = std::make_shared<spdlog::logger>("unif", sinks.begin(), sinks.end());
  s.log->set_pattern(s.writer ? "[%Y-%m-%d %H:%M:%S] %v" : "[%Y-%m-%d %H:%M:%S] [rank " + std::to_string(group->rank()) + "] %v");
  if (!s.writer) s.log->set_level(spdlog::level::warn);
  s.log->flush_on(spdlog::level::info);
  s.tty = s.writer && ::isatty(2) != 0;
  if (!parallel.note.empty()) s.log->info("{}", parallel.note);
  const auto& devices = parallel.config.devices;
  if (precision == Precision::BF16 && std::find(devices.begin(), devices.end(), "cpu") != devices.end()) {
    const double slowdown = cpu_bf16_matmul_slowdown();
    if (slowdown > kBf16SlowdownWarning)
      s.log->warn("training.precision bf16 on a CPU: this LibTorch multiplies bfloat16 matrices {:.0f}x slower than "
                  "float32 here (no fast bfloat16 GEMM for this CPU in this build), so bf16 trains slower, not faster; fp32 is "
                  "the faster choice on this machine (docs/performance.md)", slowdown);
  }
}

Trainer::~Trainer() = default;

void Trainer::request_stop() { g_stop.store(true); }

namespace {

// The step of a checkpoint directory named exactly "step-<digits>", else -1 (temporary
// "step-N.tmp-PID" directories of an interrupted save never count).
int64_t checkpoint_step(const fs::path& dir) {
  const auto name = dir.filename().string();
  if (name.size() <= 5 || name.rfind("step-", 0) != 0) return -1;
  if (name.find_first_not_of("0123456789", 5) != std::string::npos || name.size() > 23) return -1;
  return std::stoll(name.substr(5));
}

// Complete checkpoints under `dir`, oldest first.
std::vector<std::pair<int64_t, fs::path>> complete_checkpoints(const fs::path& dir) {
  std::vector<std::pair<int64_t, fs::path>> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const auto step = checkpoint_step(e.path());
    if (step >= 0 && is_complete(e.path())) out.emplace_back(step, e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

fs::path newest_complete_checkpoint(const fs::path& dir) {
  auto all = complete_checkpoints(dir);
  return all.empty() ? fs::path() : all.back().second;
}

// A resumed run repeats the steps after its checkpoint: metrics.jsonl keeps only the lines of
// steps up to `step` (lines a killed run wrote later, and a torn last line, are dropped) and no
// "test" line (the resumed run scores the test set at its end), so the file reads as if the run
// had never stopped. Returns how many lines were dropped.
int64_t trim_metrics(const fs::path& file, int64_t step) {
  std::ifstream in(file);
  if (!in) return 0;
  std::vector<std::string> keep;
  int64_t dropped = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const auto j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    // A test line is written once, at the end of a run: a resumed run writes its own.
    const bool test = j.is_object() && j.value("split", std::string()) == "test";
    if (!test && j.is_object() && j.contains("step") && j.at("step").is_number_integer() &&
        j.at("step").get<int64_t>() <= step)
      keep.push_back(line);
    else
      ++dropped;
  }
  in.close();
  if (dropped > 0)
    detail::write_file_atomic(file, [&](std::ostream& out) {
      for (const auto& l : keep) out << l << "\n";
    });
  return dropped;
}

// After every save: the directory must be complete (a custom save_model that wrote nothing, or
// forgot the COMPLETE marker, must not be reported as saved).
void require_complete(const fs::path& dir, const char* what) {
  if (!is_complete(dir))
    throw UserError(dir.string() + ": the " + std::string(what) +
                    " save left no complete directory (no COMPLETE marker): save_model must write the model "
                    "files, call extra(tmp) for checkpoints, write COMPLETE last and rename the directory into "
                    "place (docs/cpp-api.md)");
}

std::string metrics_line(const MetricSet& m) {
  std::string line;
  for (const auto& [k, v] : m) line += " " + k + "=" + fmt_num(v);
  return line;
}

}  // namespace

int Trainer::fit() {
  auto& s = *s_;
  const auto& t = s.cfg.training;
  g_stop.store(false);
  auto old_int = std::signal(SIGINT, on_signal);
  auto old_term = std::signal(SIGTERM, on_signal);
  struct Restore {
    decltype(old_int) i, t;
    ~Restore() { std::signal(SIGINT, i), std::signal(SIGTERM, t); }
  } restore{old_int, old_term};

  // Resume. Leftovers of a save that was killed half-way are restored (complete) or removed first.
  const fs::path ckpt_root = s.out_dir / "checkpoints";
  if (s.writer)
    for (const auto& dir : {s.out_dir, ckpt_root})
      for (const auto& note : recover_interrupted_saves(dir)) s.log->info("{}", note);
  fs::path resume_from;
  if (t.resume == "auto") resume_from = newest_complete_checkpoint(ckpt_root);
  else if (t.resume != "never" && t.resume != "overwrite") {  // overwrite: cleared in the constructor
    resume_from = t.resume;
    if (!is_complete(resume_from))
      throw UserError("training.resume: '" + t.resume + "' is not a complete checkpoint directory (no COMPLETE marker)");
  } else if (!complete_checkpoints(ckpt_root).empty()) {
    throw UserError("output_dir: '" + s.out_dir.string() +
                    "' already holds checkpoints; set training.resume: auto to continue them, training.resume: overwrite "
                    "to start over here (the previous run's files are removed), or choose another output_dir");
  }
  const json identity = run_identity(s.cfg, s.parts.labels, *s.parts.model,
                                     static_cast<int64_t>(s.parts.train.encoded.size()));
  if (!resume_from.empty()) {
    // The checkpoint must come from a run with the same identity (run_identity.h): another batch
    // size, max_seq_length, task, data file... would resume at a position that means something else.
    std::ifstream f(resume_from / "trainer_state.json");
    const json st = json::parse(f, nullptr, /*allow_exceptions=*/false);
    if (st.is_object() && st.contains("identity") && st.at("identity").is_object()) {
      const auto changes = identity_changes(st.at("identity"), identity);
      if (!changes.empty()) {
        std::string what;
        for (const auto& c : changes) what += (what.empty() ? "" : "; ") + c;
        throw UserError("output_dir '" + s.out_dir.string() + "': checkpoint '" + resume_from.string() +
                        "' was written by a run with other settings (" + what +
                        "); these change the data order or the model's shape, so training cannot continue from it. "
                        "To start fresh, train into a new output_dir or set training.resume: overwrite (removes the "
                        "previous run's files); to continue, restore the old values (see " +
                        (s.out_dir / "config.yaml").string() + "); docs/spec.md §8 lists what may change on resume");
      }
    } else if (st.is_object()) {
      s.log->warn("{}: this checkpoint stores no run identity (written by an older unif): resuming without checking "
                  "that batch size, max_seq_length, data and labels are unchanged", resume_from.string());
    }
  }
  torch::manual_seed(static_cast<uint64_t>(s.cfg.seed));
  std::string previous_config;  // the resumed run's resolved config (YAML), for the changes logged below
  if (!resume_from.empty()) {
    s.parts.load_model(resume_from);
    const fs::path optimizer_file = resume_from / "optimizer.safetensors";
    s.optimizer->load_state(read_safetensors(optimizer_file).tensors, optimizer_file.string());
    auto rng = read_safetensors(resume_from / "rng.safetensors").tensors;
    {
      auto gen = at::detail::getDefaultCPUGenerator();
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_state(rng.at("torch_cpu"));
    }
    std::ifstream f(resume_from / "trainer_state.json");
    json st;
    try {
      st = json::parse(f);
      s.step = st.at("step").get<int64_t>();
      s.epoch = st.at("epoch").get<int64_t>();
      s.batch_in_epoch = st.at("batch_in_epoch").get<int64_t>();
      // null before the first evaluation (no best yet): keep NaN.
      if (st.contains("best_metric") && !st.at("best_metric").is_null())
        s.best_metric = st.at("best_metric").get<double>();
      s.best_step = st.value("best_step", int64_t{-1});
      s.skipped_steps = st.value("skipped_steps", int64_t{0});
      if (st.contains("early_stopping")) {
        const auto& es = st.at("early_stopping");
        if (!es.at("best").is_null()) s.es_best = es.at("best").get<double>();
        s.es_wait = es.at("wait").get<int64_t>();
        // Whether the run stays stopped is this run's patience's call: patience 0 (off) or a larger
        // one continues a run that an earlier patience stopped.
        s.es_stopped = t.early_stopping.patience > 0 && s.es_wait >= t.early_stopping.patience;
      }
      if (st.contains("config") && st.at("config").is_string()) previous_config = st.at("config").get<std::string>();
      if (s.scaler && st.contains("loss_scale"))
        s.scaler->restore(st.at("loss_scale").get<double>(), st.at("loss_scale_good_steps").get<int64_t>(),
                          st.value("loss_scale_skipped_steps", int64_t{0}));
    } catch (const json::exception& e) {
      throw UserError((resume_from / "trainer_state.json").string() + ": invalid trainer state (" + e.what() + ")");
    }
    // Strategy state (SMART's momentum teacher), when the strategy has any.
    const fs::path strategy_file = resume_from / "strategy.safetensors";
    if (fs::exists(strategy_file))
      s.strategy->load_state(read_safetensors(strategy_file).tensors, strategy_file.string());
    else if (s.cfg.adversarial.method == "smart" && s.cfg.adversarial.smart_bregman > 0.0)
      s.log->info("{} has no strategy.safetensors: smart's teacher restarts from the resumed parameters "
                  "(the resume is not exact)", resume_from.string());
    s.log->info("resumed from {} (step {}, epoch {}, batch {})", resume_from.string(), s.step, s.epoch, s.batch_in_epoch);
    // What differs from the resumed run's config (checkpoints before it was stored: output_dir/config.yaml).
    if (previous_config.empty()) {
      std::ifstream old(s.out_dir / "config.yaml", std::ios::binary);
      std::ostringstream text;
      text << old.rdbuf();
      previous_config = text.str();
    }
    const auto changed = config_changes(previous_config, s.cfg);
    if (!changed.empty()) {
      std::string what;
      for (const auto& c : changed) what += (what.empty() ? "" : "; ") + c;
      s.log->info("changed on resume: {}", what);
    }
  }
  // A run that has nothing left to train: say so plainly and change nothing (config.yaml, metrics,
  // models). Its final/ is written when a kill came between the last checkpoint and final/.
  const bool nothing_to_train = !resume_from.empty() && (s.step >= s.total_steps || s.es_stopped);
  if (nothing_to_train && is_complete(s.out_dir / "final")) {
    s.log->info("output_dir '{}' holds a finished run ({} at step {} of {}; its final model is {}): nothing to train, "
                "nothing changed. To train again from the start here set training.resume: overwrite (the previous "
                "run's files are removed), to train longer raise training.max_steps or training.epochs, or choose "
                "another output_dir", s.out_dir.string(), s.es_stopped ? "stopped early" : "done", s.step,
                s.total_steps, (s.out_dir / "final").string());
    return 0;
  }
  if (const auto group = default_process_group())
    group->check_same({s.step, s.epoch, s.batch_in_epoch, s.total_steps, static_cast<int64_t>(s.parts.train.encoded.size()),
                       t.batch_size, t.grad_accum_steps},
                      "(step, epoch, batch in epoch, total steps, training examples, batch size, accumulation)");
  if (!resume_from.empty()) s.engine->parameters_loaded();  // replicas / other ranks take the loaded parameters
  for (const auto& note : s.parts.notes) s.log->info("{}", note);
  if (s.writer && !resume_from.empty())
    if (const auto dropped = trim_metrics(s.out_dir / "metrics.jsonl", s.step))
      s.log->info("metrics.jsonl: dropped {} line{} written after step {} by the interrupted run", dropped,
                  dropped == 1 ? "" : "s", s.step);
  // The resolved config (SPEC §4), for `unif train` and API runs alike; written once the run is
  // known to start or to resume (a refused resume keeps the old run's config.yaml).
  if (s.writer && !nothing_to_train) detail::write_text_file_atomic(s.out_dir / "config.yaml", to_yaml(s.cfg));
  if (s.writer) s.metrics.open(s.out_dir / "metrics.jsonl", std::ios::app);
  if (s.writer && !s.metrics) throw UserError("output_dir: cannot write " + (s.out_dir / "metrics.jsonl").string());

  // Span extraction trains on context windows: a long context gives several per example.
  const std::string entries =
      s.parts.train.encoded.size() == s.parts.train.examples.size() || s.parts.train.examples.empty()
          ? std::to_string(s.parts.train.encoded.size()) + " examples"
          : std::to_string(s.parts.train.examples.size()) + " examples (" +
                std::to_string(s.parts.train.encoded.size()) + " windows)";
  s.log->info("training: {}, batch {} x accum {}, {} steps/epoch, {} steps; method {} ({} pass{}/step); precision {}",
              entries, t.batch_size, t.grad_accum_steps, s.steps_per_epoch, s.total_steps,
              s.strategy->name(), s.strategy->passes_per_step(), s.strategy->passes_per_step() == 1 ? "" : "es",
              t.precision);
  if (const auto group = default_process_group()) {
    std::string shares;
    for (const auto& sh : shard_batch(t.batch_size, group->size())) shares += (shares.empty() ? "" : " + ") + std::to_string(sh.size);
    std::string devices;
    for (const auto& d : s.cfg.parallel.devices) devices += (devices.empty() ? "" : ", ") + d;
    s.log->info("distributed: {} processes, backend {}, this is rank {} (the writer); each batch of {} is split {} "
                "over the ranks; parallel.devices [{}] in each rank",
                group->size(), group->backend(), group->rank(), t.batch_size, shares, devices);
  }

  int64_t saved_step = -1;  // the step of the last checkpoint this run wrote
  // training.nonfinite: the run stops at `step` with exit 3, keeping the last complete checkpoint.
  // `broken_model`: skipping batches cannot help, so skip is not suggested.
  const auto stop_nonfinite = [&](int64_t step, const std::string& what, bool broken_model) {
    const auto last = newest_complete_checkpoint(ckpt_root);
    const auto msg = fmt::format(
        "training.nonfinite: step {}: {}; the run stops with {} ({}; no final/ written). "
        "Lower training.optimizer.lr or training.max_grad_norm{}",
        step, what, broken_model ? "no further update" : "the update not taken",
        last.empty() ? std::string("no checkpoint was saved") : "the last complete checkpoint " + last.string() + " is kept",
        broken_model ? "" : ", check the data, or set training.nonfinite: skip");
    if (s.tty) std::fputs("\n", stderr);
    std::fprintf(stderr, "error: %s\n", msg.c_str());
    if (s.writer) s.log->sinks()[1]->log(spdlog::details::log_msg("unif", spdlog::level::err, "error: " + msg));
    return 3;
  };
  const auto parameters_finite = [&] {
    torch::NoGradGuard no_grad;
    for (const auto& p : s.optimizer->params())
      if (!torch::isfinite(p.tensor).all().item<bool>()) return false;
    return true;
  };
  const auto group = default_process_group();
  // Rank 0 writes alone; the others wait for it on the store (ProcessGroup::writer_done), under
  // UNIF_DIST_SAVE_TIMEOUT rather than the collectives' timeout.
  const auto writer_done = [&] {
    if (group) group->writer_done();
  };
  auto save_checkpoint = [&] {
    saved_step = s.step;
    if (!s.writer) return writer_done();
    // Test hook: a slow save (a large model, a network filesystem), for the multi-process tests.
    if (const char* ms = std::getenv("UNIF_TEST_SLOW_SAVE_MS"))
      std::this_thread::sleep_for(std::chrono::milliseconds(std::atol(ms)));
    const auto dir = ckpt_root / ("step-" + std::to_string(s.step));
    std::error_code ec;
    fs::create_directories(ckpt_root, ec);
    torch::Tensor rng_state;
    {
      auto gen = at::detail::getDefaultCPUGenerator();
      std::lock_guard<std::mutex> lock(gen.mutex());
      rng_state = gen.get_state();
    }
    s.parts.save_model(dir, [&](const fs::path& tmp) {
      write_safetensors(tmp / "optimizer.safetensors", s.optimizer->state());
      write_safetensors(tmp / "rng.safetensors", {{"torch_cpu", rng_state}});
      const auto strategy_state = s.strategy->state();
      if (!strategy_state.empty()) write_safetensors(tmp / "strategy.safetensors", strategy_state);
      json st{{"step", s.step}, {"epoch", s.epoch}, {"batch_in_epoch", s.batch_in_epoch},
              {"best_metric", std::isfinite(s.best_metric) ? json(s.best_metric) : json(nullptr)},
              {"best_step", s.best_step}, {"seed", s.cfg.seed}, {"skipped_steps", s.skipped_steps},
              {"identity", identity}, {"config", to_yaml(s.cfg)},
              {"early_stopping", {{"best", std::isfinite(s.es_best) ? json(s.es_best) : json(nullptr)},
                                  {"wait", s.es_wait}, {"stopped", s.es_stopped}}}};
      if (s.scaler) {
        st["loss_scale"] = s.scaler->scale();
        st["loss_scale_good_steps"] = s.scaler->good_steps();
        st["loss_scale_skipped_steps"] = s.scaler->skipped_steps();
      }
      detail::write_text_file_atomic(tmp / "trainer_state.json", st.dump(2) + "\n");
    });
    require_complete(dir, "checkpoint");
    if (!fs::exists(dir / "trainer_state.json"))
      throw UserError(dir.string() + ": the checkpoint has no trainer_state.json: save_model must call extra(tmp) "
                      "before writing COMPLETE (docs/cpp-api.md)");
    auto all = complete_checkpoints(ckpt_root);
    while (static_cast<int64_t>(all.size()) > t.keep_checkpoints) {
      fs::remove_all(all.front().second, ec);
      all.erase(all.begin());
    }
    s.log->info("saved checkpoint {}", dir.string());
    writer_done();
  };

  auto run_eval = [&] {
    if (s.parts.dev.encoded.empty()) return;
    Evaluation ev;
    {
      // The evaluation runs alone on this thread: BLAS on every core, whatever the replicas set.
      ScopedBlasThreads blas(available_cores());
      ev = evaluate(*s.parts.model, s.cfg.task, s.parts.dev, s.parts.labels, t.batch_size, s.parts.class_weights,
                    /*sort_by_length=*/true, s.eval_workers.get());
    }
    json j{{"split", "dev"}, {"step", s.step}};
    for (auto& [k, v] : ev.metrics) j[k] = v;
    s.write_metrics(j);
    std::string line;
    for (auto& [k, v] : ev.metrics) line += " " + k + "=" + fmt_num(v);
    if (s.tty) std::fputs("\r\033[K", stderr);
    s.log->info("dev @ step {}:{}", s.step, line);
    const auto key = main_metric(metric_kind(s.cfg.task));
    const auto better = [](const std::string& name, double v, double best) {
      return std::isnan(best) || (lower_is_better(name) ? v < best : v > best);
    };
    auto it = ev.metrics.find(key);
    if (it != ev.metrics.end() && std::isfinite(it->second) && better(key, it->second, s.best_metric)) {
      s.best_metric = it->second;
      s.best_step = s.step;
      if (s.writer) {
        s.parts.save_model(s.out_dir / "best", {});
        require_complete(s.out_dir / "best", "best model");
      }
      s.log->info("new best {}={} -> {}", key, fmt_num(it->second), (s.out_dir / "best").string());
    }
    // Early stopping (HF EarlyStoppingCallback): the wait restarts on an improvement by more than
    // min_delta over the best value so far; any improvement updates the best value.
    const auto& es = t.early_stopping;
    if (es.patience > 0) {
      const std::string name = es.metric.empty() ? key : es.metric;
      const auto found = ev.metrics.find(name);
      if (found == ev.metrics.end()) {
        std::string have;
        for (const auto& [k, v] : ev.metrics) have += (have.empty() ? "" : ", ") + k;
        throw UserError("training.early_stopping.metric: '" + name + "' is not a dev metric of task " +
                        to_string(s.cfg.task) + " (expected one of " + have + ")");
      }
      const double v = found->second;
      const bool lower = lower_is_better(name);
      const bool significant = std::isnan(s.es_best) || (lower ? s.es_best - v : v - s.es_best) > es.min_delta;
      if (better(name, v, s.es_best)) s.es_best = v;
      s.es_wait = significant ? 0 : s.es_wait + 1;
      if (s.es_wait >= es.patience && s.step < s.total_steps) {  // at the last step the run ends anyway
        s.es_stopped = true;
        s.log->info("early stopping: dev {} has not improved by more than {} for {} evaluation{} (best {}); "
                    "stopping at step {}", name, fmt_num(es.min_delta), s.es_wait, s.es_wait == 1 ? "" : "s",
                    fmt_num(s.es_best), s.step);
      }
    }
    writer_done();  // after every evaluation: the ranks need not agree bit for bit on "new best"
  };

  s.parts.model->train();
  s.optimizer->zero_grad();
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t step0 = s.step, skipped0 = s.skipped_steps;
  double window_loss = 0.0;
  double window_z = 0;
  int64_t window_samples = 0;
  auto window_t = t0;
  // Seconds spent evaluating and saving: left out of samples_per_s and train_s (training only).
  double window_pause = 0.0, paused = 0.0;
  bool interrupted = false;
  const auto n = static_cast<int64_t>(s.parts.train.encoded.size());
  // Each epoch's order is a pure function of (seed, epoch): exact resume needs only the position.
  std::vector<int64_t> lengths;
  if (t.group_by_length)
    for (const auto& e : s.parts.train.encoded) lengths.push_back(static_cast<int64_t>(e.input_ids.size()));
  const auto order_of = [&](int64_t epoch) {
    return t.group_by_length ? length_grouped_order(lengths, t.batch_size, static_cast<uint64_t>(s.cfg.seed), epoch)
                             : epoch_order(n, static_cast<uint64_t>(s.cfg.seed), epoch, t.shuffle);
  };
  std::vector<int64_t> order = order_of(s.epoch);

  if (s.es_stopped)
    s.log->info("early stopping: the run already stopped at step {} (resumed from its checkpoint)", s.step);
  while (s.step < s.total_steps && !s.es_stopped) {
    // A signal may reach only some ranks (or reach them at different steps): the ranks stop
    // together, at the same step, so that rank 0 saves the checkpoint every rank resumes from.
    if (group ? group->any(g_stop.load()) : g_stop.load()) {
      interrupted = true;
      break;
    }
    // The micro-batches of this step: up to grad_accum_steps batches, never across an epoch end.
    std::vector<models::Batch> micro;
    double z = 0;
    for (int64_t k = 0; k < t.grad_accum_steps && s.batch_in_epoch < s.batches_per_epoch; ++k, ++s.batch_in_epoch) {
      std::vector<int64_t> idx(order.begin() + s.batch_in_epoch * t.batch_size,
                               order.begin() + std::min(n, (s.batch_in_epoch + 1) * t.batch_size));
      // On the master's device (a GPU: pinned, non-blocking), where the engine and strategy work.
      if (s.cfg.task == Task::MaskedLm)  // masks of this epoch (mlm.h): any device count, exact resume
        micro.push_back(to_device(collate_mlm(s.parts.train.encoded, idx, s.parts.train.mlm, s.epoch), s.home));
      else
        micro.push_back(to_device(collate(s.cfg.task, s.parts.train.encoded, s.parts.train.examples, idx,
                                          s.parts.labels.size()), s.home));
      z += loss_normalizer(s.cfg.task, micro.back(), s.parts.class_weights);
    }
    double loss_sum = 0.0;
    bool stepped = false;
    // fp16: the loss scaler's factor rides on 1/Z into every backward of the step.
    const double scale = (z > 0 ? 1.0 / static_cast<double>(z) : 0.0) * (s.scaler ? s.scaler->scale() : 1.0);
    s.loss_nonfinite = s.step_nonfinite = false;
    s.step_empty = z == 0;
    for (auto& b : micro) {
      auto r = s.strategy->accumulate(*s.engine, b, scale, s.cfg.seed, s.step);
      loss_sum += r.loss_sum;
      stepped = stepped || r.stepped;
      window_samples += b.size();
    }
    const double step_lr = s.lr();
    s.step_loss = loss_sum * scale;
    s.loss_nonfinite = !std::isfinite(loss_sum);  // the global batch's loss: the same on every rank
    if (!stepped) s.engine->optimizer_step();
    else if (s.loss_nonfinite && !s.step_nonfinite)  // a strategy that steps itself (freeat)
      s.step_nonfinite = true, s.nonfinite_what = "the loss is " + fmt_num(s.step_loss);
    if (s.step_nonfinite) {
      if (t.nonfinite == "error") return stop_nonfinite(s.step + 1, s.nonfinite_what, false);
      ++s.skipped_steps;
      ++s.skips_in_a_row;
      if (s.tty) std::fputs("\r\033[K", stderr);
      s.log->warn("step {}: {}: update skipped (training.nonfinite: skip; {} skipped so far)", s.step + 1,
                  s.nonfinite_what, s.skipped_steps);
      // skip is for a few bad batches; a model whose every step fails is broken, and training it on
      // would end in a final/ that predicts nothing (exit 0 with an all-NaN or overflowing model).
      if (!parameters_finite())
        return stop_nonfinite(s.step + 1, "the model's parameters are not finite (an earlier update overflowed them)",
                              true);
      if (s.skips_in_a_row >= std::max<int64_t>(2, s.steps_per_epoch))
        return stop_nonfinite(s.step + 1, fmt::format("{} steps in a row (a whole epoch) were not finite: the model, "
                                                      "not a few batches, is broken", s.skips_in_a_row),
                              true);
    } else if (s.step_empty) {
      if (s.tty) std::fputs("\r\033[K", stderr);
      s.log->info("step {}: nothing to predict in this batch (no {} token): no update", s.step + 1,
                  s.cfg.task == Task::MaskedLm ? "masked" : "labelled");
    } else {
      s.skips_in_a_row = 0;
    }
    ++s.step;
    if (s.scaler && s.scaler->update() && !s.step_nonfinite)
      s.log->warn("step {}: non-finite gradients under fp16 loss scaling: the update was skipped ({} so far); loss "
                  "scale now {}", s.step, s.scaler->skipped_steps(), s.scaler->scale());
    if (!s.step_nonfinite) {  // a skipped step's loss stays out of the logged average
      window_loss += loss_sum;
      window_z += z;
    }
    if (s.batch_in_epoch >= s.batches_per_epoch) {
      ++s.epoch;
      s.batch_in_epoch = 0;
      order = order_of(s.epoch);
    }
    const bool epoch_end = s.batch_in_epoch == 0;
    const double epoch_f = static_cast<double>(s.epoch) + static_cast<double>(s.batch_in_epoch) / static_cast<double>(s.batches_per_epoch);
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - t0).count();
    const double eta = elapsed / static_cast<double>(s.step - step0) * static_cast<double>(s.total_steps - s.step);
    if (s.step % t.log_every == 0 || s.step == s.total_steps || s.step_nonfinite) {
      const double dt = std::chrono::duration<double>(now - window_t).count() - window_pause;
      const double sps = dt > 0 ? static_cast<double>(window_samples) / dt : 0.0;
      // No loss when nothing in the window had a target (every step skipped, or Z = 0): null in
      // metrics.jsonl, "n/a" in the log, never a made-up 0.
      const double loss = window_z > 0 ? window_loss / static_cast<double>(window_z)
                                       : std::numeric_limits<double>::quiet_NaN();
      json record{{"split", "train"}, {"step", s.step}, {"epoch", epoch_f},
                  {"loss", std::isfinite(loss) ? json(loss) : json(nullptr)}, {"lr", step_lr},
                  {"samples_per_s", sps}, {"train_s", elapsed - paused}};
      if (t.nonfinite == "skip") record["skipped_steps"] = s.skipped_steps;
      s.write_metrics(record);
      const auto line = fmt::format("step {}/{} epoch {:.2f} loss {} lr {:.3g} {:.1f} samples/s ETA {}", s.step,
                                    s.total_steps, epoch_f, window_z > 0 ? fmt::format("{:.4f}", loss) : "n/a", step_lr,
                                    sps, fmt_duration(eta));
      if (s.tty) {
        std::fprintf(stderr, "\r\033[K%s", line.c_str());
        std::fflush(stderr);
        s.log->sinks()[1]->log(spdlog::details::log_msg("unif", spdlog::level::info, line));
      } else {
        s.log->info("{}", line);
      }
      window_loss = 0.0, window_z = 0, window_samples = 0, window_t = now, window_pause = 0.0;
    }
    const bool last = s.step == s.total_steps;
    const auto pause_t = std::chrono::steady_clock::now();
    if ((t.eval_every > 0 && s.step % t.eval_every == 0) || (t.eval_every == 0 && epoch_end) || last) {
      run_eval();
      // Every rank stops at the same step, even should their dev metrics differ in the last bit.
      if (t.early_stopping.patience > 0 && group) s.es_stopped = group->any(s.es_stopped);
    }
    if ((t.save_every > 0 && s.step % t.save_every == 0) || (t.save_every == 0 && epoch_end) || last ||
        (s.es_stopped && saved_step != s.step)) {
      // Never a checkpoint (or final/) of parameters an update made inf or NaN.
      if (!s.step_nonfinite && !parameters_finite())
        return stop_nonfinite(s.step, "the update made the model's parameters non-finite", true);
      save_checkpoint();
    }
    const double pause = std::chrono::duration<double>(std::chrono::steady_clock::now() - pause_t).count();
    window_pause += pause, paused += pause;
  }
  if (s.tty) std::fputs("\n", stderr);
  if (interrupted) {
    if (saved_step != s.step) save_checkpoint();
    s.log->info("interrupted: checkpoint saved at step {}; run again with resume: auto to continue", s.step);
    return 130;
  }
  if (s.step > step0 && s.skipped_steps - skipped0 == s.step - step0)
    return stop_nonfinite(s.step, fmt::format("every step of the run ({}) was skipped as non-finite", s.step - step0), true);
  if (!parameters_finite()) return stop_nonfinite(s.step, "the model's parameters are not finite", true);
  if (s.writer) {
    s.parts.save_model(s.out_dir / "final", {});
    require_complete(s.out_dir / "final", "final model");
  }
  // data.test (SPEC §7): scored once, with the final model.
  std::string test_summary;
  if (!s.parts.test.encoded.empty()) {
    Evaluation ev;
    {
      ScopedBlasThreads blas(available_cores());
      ev = evaluate(*s.parts.model, s.cfg.task, s.parts.test, s.parts.labels, t.batch_size, s.parts.class_weights,
                    /*sort_by_length=*/true, s.eval_workers.get());
    }
    json j{{"split", "test"}, {"step", s.step}};
    for (auto& [k, v] : ev.metrics) j[k] = v;
    s.write_metrics(j);
    test_summary = "; test (" + s.parts.test.file.string() + ", final model):" + metrics_line(ev.metrics);
  }
  if (s.es_stopped)
    s.log->info("stopped early at step {} of {} (training.early_stopping); best model in {}", s.step, s.total_steps,
                (s.out_dir / "best").string());
  s.log->info("done: {} steps in {}{}; final model in {}{}", s.step,
              fmt_duration(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()),
              t.nonfinite == "skip" ? fmt::format(", {} skipped (non-finite)", s.skipped_steps) : "",
              (s.out_dir / "final").string(), test_summary);
  return 0;
}

}  // namespace unif::framework
