#include "framework/train/trainer.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <csignal>
#include <fstream>
#include <iomanip>
#include <optional>
#include <sstream>
#include <thread>

#include <spdlog/spdlog.h>

#include "framework/checkpoint/atomic_file.h"
#include "framework/common/error.h"
#include "framework/common/precision.h"
#include "framework/common/runtime.h"
#include "framework/data/batching.h"
#include "framework/engines/auto_devices.h"
#include "framework/engines/data_parallel.h"
#include "framework/engines/make_engine.h"
#include "framework/metrics/classification.h"
#include "framework/metrics/multilabel.h"
#include "framework/metrics/regression.h"
#include "framework/metrics/sequence_labeling.h"
#include "framework/metrics/span.h"
#include "framework/model/model_dir.h"
#include "framework/parallel/process_group.h"
#include "models/heads/encoder_task_model.h"
#include "framework/text/unicode.h"
#include "framework/train/build.h"
#include "framework/train/cadence.h"
#include "framework/train/checkpoints.h"
#include "framework/train/early_stopping.h"
#include "framework/train/freeze.h"
#include "framework/train/loss_scaler.h"
#include "framework/train/optimizer_step.h"
#include "framework/train/output_lock.h"
#include "framework/train/run_identity.h"
#include "framework/train/run_log.h"
#include "framework/train/step_runner.h"
#include "framework/train/trainer_state.h"
#include "models/architectures.h"
#include "models/heads/factory.h"
#include "models/heads/loss.h"

namespace unif::framework {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::atomic<bool> g_stop{false};
extern "C" void on_signal(int) { g_stop.store(true); }

// A strategy's StrategyError (input it cannot work with, framework/engines/gradient_engine.h) is a
// UserError to the person running unif: `error: <what>`, exit 2.
template <class F>
auto as_user_error(F&& call) -> decltype(call()) {
  try {
    return call();
  } catch (const StrategyError& e) { throw UserError(e.what()); }
}

// How many of the replicas are on CPUs.
int64_t cpu_replicas(const std::vector<torch::Device>& devices) {
  return std::count_if(devices.begin(), devices.end(), [](const torch::Device& d) { return d.is_cpu(); });
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The trainer: its parts (State), set up once; fit() is the loop over named pieces below.

namespace {

// What the next `train` line of metrics.jsonl reports: the steps since the previous line. Seconds
// spent evaluating and saving are left out of samples_per_s and train_s (training only).
struct StepWindow {
  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now(), since = start;
  double loss = 0.0, z = 0.0;  // Σ l_b and Z of the steps taken
  int64_t samples = 0;
  double paused = 0.0, paused_total = 0.0;
  void add(double loss_sum, double step_z) { loss += loss_sum, z += step_z; }
  void pause(double seconds) { paused += seconds, paused_total += seconds; }
  double since_start() const { return std::chrono::duration<double>(Clock::now() - start).count(); }
};

}  // namespace

struct Trainer::State {
  RunConfig cfg;
  TrainerParts parts;
  fs::path out_dir, ckpt_root;
  std::shared_ptr<ProcessGroup> group;  // the ranks of a multi-process run; null in one process
  bool writer = true;                   // only rank 0 writes files (SPEC §6); the others train alike
  std::unique_ptr<OutputDirLock> lock;  // the writer's, for the whole run
  std::unique_ptr<RunLog> log;
  std::unique_ptr<Optimizer> optimizer;
  std::unique_ptr<Schedule> schedule;
  std::unique_ptr<LossScaler> scaler;     // training.precision fp16 only
  Precision precision = Precision::FP32;  // training.precision, auto resolved (make_engine)
  std::string precision_note;             // auto: what was measured, for train.log
  std::unique_ptr<OptimizerStep> stepper;
  std::unique_ptr<adversarial::Strategy> strategy;
  std::unique_ptr<GradientEngine> engine;
  std::unique_ptr<EarlyStopping> early_stopping;
  torch::Device home = torch::kCPU;          // the master model's device (make_engine puts it on a GPU)
  std::unique_ptr<WorkerPool> eval_workers;  // evaluation threads: the CPU replicas of the set-up

  TrainerState st;  // position, best, skipped steps (what a checkpoint holds)
  int64_t batches_per_epoch = 0, steps_per_epoch = 0, total_steps = 0;
  nlohmann::json identity;
  int64_t saved_step = -1;     // the step of the last checkpoint this run wrote
  int64_t skips_in_a_row = 0;  // non-finite steps since the last update (this process)
  std::vector<int64_t> order;  // this epoch's example order

  // ---- the parts the constructor sets up ----
  void plan_steps();
  FrozenParameters make_optimizer();
  ResolvedDevices make_engine();
  void choose_auto_precision(const ResolvedDevices& parallel);
  void prepare_output_dir();
  void open_log(const ResolvedDevices& parallel, const FrozenParameters& frozen);

  // ---- the pieces of fit() ----
  std::optional<int> start();
  int finish(bool interrupted, int64_t step0, int64_t skipped0, const StepWindow& window);
  fs::path resume_point() const;
  void check_identity(const fs::path& checkpoint, const TrainerState& saved) const;
  std::string previous_config(const TrainerState& saved) const;
  void check_changes(const fs::path& checkpoint, const std::vector<std::string>& changes) const;
  void restore(const fs::path& checkpoint, const CheckpointContent& saved, const std::vector<std::string>& changes);
  std::vector<int64_t> order_of(int64_t epoch) const;
  std::vector<models::Batch> next_batches(double& z);
  int stop_nonfinite(int64_t step, const std::string& what, bool broken_model) const;
  bool parameters_finite() const;
  void save_checkpoint();
  MetricSet score(const TaskData& data, const char* split);
  void evaluate_dev();
  std::string score_test();
  void log_start() const;
  int account_step(const OptimizerStep::Report& report, bool empty);
  void log_step(StepWindow& window, double lr, int64_t step0) const;
  void writer_done() const {
    // Rank 0 writes alone; the others wait for it on the store (ProcessGroup::writer_done), under
    // UNIF_DIST_SAVE_TIMEOUT rather than the collectives' timeout.
    if (group) group->writer_done();
  }
};

Trainer::Trainer(RunConfig cfg, std::shared_ptr<ProcessGroup> group)
    : Trainer(cfg, build_trainer_parts(cfg), std::move(group)) {}

Trainer::Trainer(RunConfig cfg, TrainerParts parts, std::shared_ptr<ProcessGroup> group)
    : s_(std::make_unique<State>()) {
  auto& s = *s_;
  s.cfg = std::move(cfg);
  s.parts = std::move(parts);
  if (s.parts.train.encoded.empty()) throw UserError("data.train: no training examples");
  s.out_dir = s.cfg.output_dir;
  s.ckpt_root = s.out_dir / "checkpoints";
  s.group = std::move(group);
  s.writer = !s.group || s.group->rank() == 0;
  s.st.seed = s.cfg.seed;
  // Everything that can fail on the configuration alone (devices, the gradient strategy, the
  // optimizer) is set up before output_dir is touched: a bad config leaves no train.log behind.
  s.plan_steps();
  const FrozenParameters frozen = s.make_optimizer();
  const ResolvedDevices parallel = s.make_engine();
  if (s.writer) s.prepare_output_dir();
  s.open_log(parallel, frozen);
}

// Steps per epoch, the run's total and the learning-rate schedule over it.
void Trainer::State::plan_steps() {
  const auto& t = cfg.training;
  const auto n = static_cast<int64_t>(parts.train.encoded.size());
  batches_per_epoch = (n + t.batch_size - 1) / t.batch_size;
  steps_per_epoch = (batches_per_epoch + t.grad_accum_steps - 1) / t.grad_accum_steps;
  total_steps = t.max_steps > 0 ? t.max_steps : t.epochs * steps_per_epoch;
  const int64_t warmup =
      t.schedule.warmup_steps > 0
          ? t.schedule.warmup_steps
          : static_cast<int64_t>(std::ceil(t.schedule.warmup_ratio * static_cast<double>(total_steps)));
  schedule = std::make_unique<Schedule>(t.schedule.name, warmup, total_steps);
}

// training.freeze (before the optimizer, which leaves frozen parameters out, and the engine), the
// optimizer's parameter groups, the adversarial strategy and early stopping.
FrozenParameters Trainer::State::make_optimizer() {
  const auto& t = cfg.training;
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (auto& p : parts.model->named_parameters()) named.emplace_back(p.key(), p.value());
  // The model's family (none for a custom TaskModel) says where its encoder layers are.
  const models::Architecture* arch = models::architecture_of(*parts.model);
  FrozenParameters frozen = freeze_parameters(named, t.freeze, arch);
  OptimizerOptions oo;
  oo.name = t.optimizer.name;
  oo.weight_decay = t.optimizer.weight_decay;
  oo.beta1 = t.optimizer.beta1;
  oo.beta2 = t.optimizer.beta2;
  oo.eps = t.optimizer.eps;
  oo.momentum = t.optimizer.momentum;
  optimizer = framework::make_optimizer(
      bert_param_groups(named, t.optimizer.weight_decay, t.layerwise_lr_decay, frozen.layers, arch), oo);
  strategy = make_strategy(cfg.adversarial);
  early_stopping = std::make_unique<EarlyStopping>(t.early_stopping, best_metric_name(cfg), cfg.task);
  return frozen;
}

// parallel.devices (auto becomes this machine's fastest set-up for the model's size, SPEC §7; cfg
// keeps "auto" for config.yaml and resume checks), the optimizer step and the gradient engine.
ResolvedDevices Trainer::State::make_engine() {
  const auto& t = cfg.training;
  ResolvedDevices parallel = resolve_devices(parse_devices(cfg.parallel.devices), group.get(),
                                             parts.model->word_embeddings()->weight.size(1), t.batch_size);
  precision = t.precision;
  if (precision == Precision::Auto) choose_auto_precision(parallel);
  if (precision == Precision::FP16) scaler = std::make_unique<LossScaler>();
  stepper =
      std::make_unique<OptimizerStep>(*optimizer, *schedule, t.optimizer.lr, t.max_grad_norm, scaler.get(), group);
  OptimizerStep* step = stepper.get();
  EngineOptions engine_options;
  engine_options.devices = parallel.devices;
  engine_options.threads_per_replica = cfg.parallel.threads_per_replica;
  engine_options.precision = precision;
  engine_options.group = group;
  engine = framework::make_engine(
      parts.model, [step] { step->run(); }, engine_options);
  for (const auto& p : parts.model->parameters()) {
    home = p.device();
    break;
  }
  const auto cpus = cpu_replicas(parallel.devices);
  if (cpus > 1) eval_workers = std::make_unique<WorkerPool>(cpus);
  return parallel;
}

// training.precision auto: the model's own product timed in float32 and bfloat16 on the first
// device, as many rows as one replica's share of a batch of full-length texts; every rank takes
// rank 0's choice, so that all run the same arithmetic.
void Trainer::State::choose_auto_precision(const ResolvedDevices& parallel) {
  int64_t hidden = parts.model->word_embeddings()->weight.size(1), intermediate = 4 * hidden;
  if (const auto* m = dynamic_cast<const models::EncoderTaskModel*>(parts.model.get())) {
    hidden = m->options().hidden_size();
    intermediate = m->options().intermediate_size();
  }
  const auto replicas = std::max<int64_t>(1, static_cast<int64_t>(parallel.devices.size()));
  const int64_t rows = std::clamp<int64_t>(cfg.training.batch_size / replicas, 1, 64) * cfg.model.max_seq_length;
  const auto device = parallel.devices.front();
  const int threads = device.is_cpu() && cpu_replicas(parallel.devices) > 1 ? 1 : 0;  // as each replica runs
  PrecisionChoice choice = choose_precision(device, std::min<int64_t>(rows, 8192), hidden, intermediate, threads);
  if (group) {
    std::vector<torch::Tensor> pick{torch::tensor({choice.precision == Precision::BF16 ? 1.0 : 0.0}, torch::kFloat64)};
    group->broadcast(pick, 0);
    choice.precision = pick[0].item<double>() > 0.5 ? Precision::BF16 : Precision::FP32;
    if (group->rank() != 0) choice.why += "; rank 0's measurement decides: " + name_of(choice.precision);
  }
  precision = choice.precision;
  precision_note = choice.why;
}

// output_dir created, writable and locked; training.resume: overwrite removes what a run writes
// (other files of the user's stay) before the log file is opened.
void Trainer::State::prepare_output_dir() {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) throw UserError("output_dir: cannot create '" + out_dir.string() + "': " + ec.message());
  if (::access(out_dir.c_str(), W_OK) != 0) throw UserError("output_dir: '" + out_dir.string() + "' is not writable");
  lock = std::make_unique<OutputDirLock>(out_dir);  // before anything in it is touched
  if (cfg.training.resume != Resume::Overwrite) return;
  // Nothing goes while the run still reads from it (a model started from this run's own final/).
  if (auto problems = overwrite_problems(cfg); !problems.empty()) throw ConfigError(std::move(problems));
  for (const char* name : kOverwriteRemoves) {
    std::error_code rm;
    fs::remove_all(out_dir / name, rm);
    if (rm)
      throw UserError("training.resume: overwrite: cannot remove " + (out_dir / name).string() + ": " + rm.message());
  }
}

// train.log, and its first lines: the devices chosen, what is frozen, a bf16 set-up that is slower.
void Trainer::State::open_log(const ResolvedDevices& parallel, const FrozenParameters& frozen) {
  log = std::make_unique<RunLog>(out_dir, writer, group ? static_cast<int>(group->rank()) : -1);
  if (!parallel.note.empty()) log->info("{}", parallel.note);
  if (!precision_note.empty()) log->info("{}", precision_note);
  if (!frozen.summary.empty()) log->info("training.freeze: {}", frozen.summary);
  if (precision == Precision::BF16 && cpu_replicas(parallel.devices) > 0 && !cpu_features().bf16)
    log->warn(
        "training.precision bf16 on a CPU: this CPU has no bfloat16 instructions (avx512_bf16, amx_bf16), and this "
        "LibTorch multiplies bfloat16 matrices about {:.0f}x slower than float32 here, so bf16 trains slower, not "
        "faster; fp32 is the faster choice on this machine (docs/performance.md)",
        cpu_bf16_matmul_slowdown());
}

Trainer::~Trainer() = default;

void Trainer::request_stop() { g_stop.store(true); }

namespace {

std::string metrics_line(const MetricSet& m) {
  std::string line;
  for (const auto& [k, v] : m) line += " " + k + "=" + fmt_num(v);
  return line;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += (out.empty() ? "" : "; ") + l;
  return out;
}

// SIGINT / SIGTERM request a clean stop while fit() runs; the previous handlers come back after.
struct SignalGuard {
  using Handler = void (*)(int);
  Handler old_int, old_term;
  SignalGuard() {
    g_stop.store(false);
    old_int = std::signal(SIGINT, on_signal);
    old_term = std::signal(SIGTERM, on_signal);
  }
  ~SignalGuard() { std::signal(SIGINT, old_int), std::signal(SIGTERM, old_term); }
};

}  // namespace

// The checkpoint to continue from (training.resume), or an empty path to start fresh.
fs::path Trainer::State::resume_point() const {
  const auto& resume = cfg.training.resume_path;
  if (cfg.training.resume == Resume::Auto) return newest_complete_checkpoint(ckpt_root);
  if (cfg.training.resume == Resume::Path) {  // never, overwrite (cleared in the constructor): start fresh
    if (!is_complete(resume))
      throw UserError("training.resume: '" + resume + "' is not a complete checkpoint directory (no COMPLETE marker)");
    return resume;
  }
  if (!complete_checkpoints(ckpt_root).empty())
    throw UserError(
        "output_dir: '" + out_dir.string() +
        "' already holds checkpoints; set training.resume: auto to continue them, training.resume: overwrite "
        "to start over here (the previous run's files are removed), or choose another output_dir");
  return {};
}

// The checkpoint must come from a run with the same identity (run_identity.h): another batch size,
// max_seq_length, task, data file... would resume at a position that means something else.
void Trainer::State::check_identity(const fs::path& checkpoint, const TrainerState& saved) const {
  if (saved.identity.is_null()) {
    log->warn(
        "{}: this checkpoint stores no run identity (written by an older unif): resuming without checking "
        "that batch size, max_seq_length, data and labels are unchanged",
        checkpoint.string());
    return;
  }
  const auto changes = identity_changes(saved.identity, identity);
  if (changes.empty()) return;
  throw UserError("output_dir '" + out_dir.string() + "': checkpoint '" + checkpoint.string() +
                  "' was written by a run with other settings (" + joined(changes) +
                  "); these change the data order or the model's shape, so training cannot continue from it. "
                  "To start fresh, train into a new output_dir or set training.resume: overwrite (removes the "
                  "previous run's files); to continue, restore the old values (see " +
                  (out_dir / "config.yaml").string() + "); docs/spec.md §8 lists what may change on resume");
}

// Weights, optimizer state, the CPU generator (every dropout stream follows it), the position and
// counters, the loss scale and the strategy's state; then what changed since that run is logged.
void Trainer::State::restore(const fs::path& checkpoint, const CheckpointContent& saved,
                             const std::vector<std::string>& changes) {
  parts.load_model(checkpoint);
  optimizer->load_state(saved.optimizer, (checkpoint / "optimizer.safetensors").string());
  set_cpu_rng_state(saved.rng);
  const auto seed = st.seed;
  st = saved.state;
  st.seed = seed;
  early_stopping->resume(saved.state.early_stopping);
  if (scaler && saved.state.loss_scale)
    scaler->restore(saved.state.loss_scale->scale, saved.state.loss_scale->good_steps,
                    saved.state.loss_scale->skipped_steps);
  // Strategy state (SMART's momentum teacher), when the strategy has any.
  if (!saved.strategy.empty())
    as_user_error([&] { strategy->load_state(saved.strategy, (checkpoint / "strategy.safetensors").string()); });
  else if (cfg.adversarial.method == AdversarialMethod::Smart && cfg.adversarial.smart_bregman > 0.0)
    log->info(
        "{} has no strategy.safetensors: smart's teacher restarts from the resumed parameters "
        "(the resume is not exact)",
        checkpoint.string());
  log->info("resumed from {} (step {}, epoch {}, batch {})", checkpoint.string(), st.step, st.epoch, st.batch_in_epoch);
  if (!changes.empty()) log->info("changed on resume: {}", joined(changes));
}

// The resumed run's config (checkpoints written before it was stored there: output_dir/config.yaml).
std::string Trainer::State::previous_config(const TrainerState& saved) const {
  if (!saved.config.empty()) return saved.config;
  std::ifstream old(out_dir / "config.yaml", std::ios::binary);
  std::ostringstream text;
  text << old.rdbuf();
  return text.str();
}

// training.resume: auto continues the run in output_dir only when what changed extends or watches
// it (kResumeExtends); a run with another learning rate, loss, method... is another run, and
// continuing it silently would mix the two (a sweep over --set into one output_dir). An explicit
// checkpoint in training.resume continues it with the new settings.
// `changes`: config_changes() of the resumed run's config (previous_config) and this one.
void Trainer::State::check_changes(const fs::path& checkpoint, const std::vector<std::string>& changes) const {
  if (cfg.training.resume != Resume::Auto) return;
  static const char* const kResumeExtends[] = {
      "training.max_steps",       "training.epochs",           "training.log_every", "training.eval_every",
      "training.save_every",      "training.keep_checkpoints", "training.resume",    "training.early_stopping.",
      "training.eval_batch_size", "training.report_to",        "parallel.",          "data.test"};
  std::vector<std::string> other;
  for (const auto& line : changes) {
    const std::string key = line.substr(0, line.find(' '));
    bool extends = false;
    for (const char* k : kResumeExtends) {
      const std::string prefix = k;
      extends = extends || key == prefix || (prefix.back() == '.' && key.rfind(prefix, 0) == 0) ||
                key.rfind(prefix + "[", 0) == 0;
    }
    if (!extends) other.push_back(line);
  }
  if (other.empty()) return;
  throw UserError("output_dir '" + out_dir.string() + "' holds a run with other settings (" + joined(other) +
                  "); training.resume: auto continues a run only when what changed extends it (max_steps, epochs, "
                  "early stopping, the log/eval/save cadences, devices). To start over here with the new settings set "
                  "training.resume: overwrite (the previous run's files are removed); to continue that run with the "
                  "new settings set training.resume: " +
                  checkpoint.string() + "; or train into another output_dir");
}

// Each epoch's order is a pure function of (seed, epoch): exact resume needs only the position.
std::vector<int64_t> Trainer::State::order_of(int64_t epoch) const {
  const auto& t = cfg.training;
  if (!t.group_by_length)
    return epoch_order(static_cast<int64_t>(parts.train.encoded.size()), static_cast<uint64_t>(cfg.seed), epoch,
                       t.shuffle);
  std::vector<int64_t> lengths;
  for (const auto& e : parts.train.encoded) lengths.push_back(static_cast<int64_t>(e.input_ids.size()));
  return length_grouped_order(lengths, t.batch_size, static_cast<uint64_t>(cfg.seed), epoch);
}

// The micro-batches of the next step: up to grad_accum_steps batches, never across an epoch end, on
// the master's device (a GPU: pinned, non-blocking), where the engine and strategy work. `z`: their
// loss normaliser Z (SPEC §5).
std::vector<models::Batch> Trainer::State::next_batches(double& z) {
  const auto& t = cfg.training;
  const auto n = static_cast<int64_t>(parts.train.encoded.size());
  std::vector<models::Batch> micro;
  z = 0;
  const bool masked_text = task_spec(cfg.task).input == TaskInput::MlmText;
  double tokens = 0;  // real tokens of the step's masked texts
  for (int64_t k = 0; k < t.grad_accum_steps && st.batch_in_epoch < batches_per_epoch; ++k, ++st.batch_in_epoch) {
    std::vector<int64_t> idx(order.begin() + st.batch_in_epoch * t.batch_size,
                             order.begin() + std::min(n, (st.batch_in_epoch + 1) * t.batch_size));
    if (masked_text) {  // masks of this epoch (mlm.h): any device count, exact resume
      micro.push_back(to_device(collate_mlm(parts.train.encoded, idx, parts.train.mlm, st.epoch), home));
      tokens += micro.back().attention_mask.sum().item<double>();
    } else {
      micro.push_back(
          to_device(collate(cfg.task, parts.train.encoded, parts.train.examples, idx, parts.labels.size()), home));
    }
    z += loss_normalizer(cfg.task, micro.back(), parts.class_weights);
  }
  // The step's masked tokens over its real tokens (Batch::token_ratio), which every replica needs.
  if (masked_text && tokens > 0)
    for (auto& b : micro) b.token_ratio = z / tokens;
  return micro;
}

// training.nonfinite: the run stops at `step` with exit 3, keeping the last complete checkpoint.
// `broken_model`: skipping batches cannot help, so skip is not suggested.
int Trainer::State::stop_nonfinite(int64_t step, const std::string& what, bool broken_model) const {
  const auto last = newest_complete_checkpoint(ckpt_root);
  log->error(
      fmt::format("training.nonfinite: step {}: {}; the run stops with {} ({}; no final/ written). "
                  "Lower training.optimizer.lr or training.max_grad_norm{}",
                  step, what, broken_model ? "no further update" : "the update not taken",
                  last.empty() ? std::string("no checkpoint was saved")
                               : "the last complete checkpoint " + last.string() + " is kept",
                  broken_model ? "" : ", check the data, or set training.nonfinite: skip"));
  return 3;
}

bool Trainer::State::parameters_finite() const {
  torch::NoGradGuard no_grad;
  for (const auto& p : optimizer->params())
    if (!torch::isfinite(p.tensor).all().item<bool>()) return false;
  return true;
}

void Trainer::State::save_checkpoint() {
  saved_step = st.step;
  if (!writer) return writer_done();
  // Test hook: a slow save (a large model, a network filesystem), for the multi-process tests.
  if (const char* ms = std::getenv("UNIF_TEST_SLOW_SAVE_MS"))
    std::this_thread::sleep_for(std::chrono::milliseconds(std::atol(ms)));
  const auto dir = ckpt_root / ("step-" + std::to_string(st.step));
  std::error_code ec;
  fs::create_directories(ckpt_root, ec);
  CheckpointContent content;
  content.rng = cpu_rng_state();
  content.state = st;
  content.state.identity = identity;
  content.state.config = to_yaml(cfg);
  content.state.early_stopping = early_stopping->state();
  if (scaler) content.state.loss_scale = LossScaleState{scaler->scale(), scaler->good_steps(), scaler->skipped_steps()};
  parts.save_model(dir, [&](const fs::path& tmp) {
    content.optimizer = optimizer->state();
    content.strategy = strategy->state();
    write_checkpoint_files(tmp, content);
  });
  require_complete(dir, "checkpoint");
  if (!fs::exists(dir / "trainer_state.json"))
    throw UserError(dir.string() +
                    ": the checkpoint has no trainer_state.json: save_model must call extra(tmp) "
                    "before writing COMPLETE (docs/cpp-api.md)");
  prune_checkpoints(ckpt_root, cfg.training.keep_checkpoints);
  log->info("saved checkpoint {}", dir.string());
  writer_done();
}

// The metrics of `data` (dev or test) with the model as it is, written to metrics.jsonl under `split`.
MetricSet Trainer::State::score(const TaskData& data, const char* split) {
  Evaluation ev;
  {
    // The evaluation runs alone on this thread: BLAS on every core, whatever the replicas set.
    ScopedBlasThreads blas(available_cores());
    if (!data.encoded.empty())
      ev = evaluate(*parts.model, cfg.task, data, parts.labels, cfg.training.evaluation_batch_size(),
                    parts.class_weights, /*sort_by_length=*/true, eval_workers.get());
    // data.retrieval's ranking metrics join the dev evaluation's.
    if (std::string_view(split) == "dev" && parts.score_retrieval)
      for (const auto& [k, v] : parts.score_retrieval()) ev.metrics[k] = v;
  }
  json j{{"split", split}, {"step", st.step}};
  for (auto& [k, v] : ev.metrics) j[k] = v;
  log->metrics(j);
  return std::move(ev.metrics);
}

// A dev evaluation: metrics.jsonl and the log, best/ on a new best of training.best_metric (the
// task's main metric by default), early stopping's counters.
void Trainer::State::evaluate_dev() {
  if (parts.dev.encoded.empty() && !parts.score_retrieval) return;
  const auto metrics = score(parts.dev, "dev");
  log->info("dev @ step {}:{}", st.step, metrics_line(metrics));
  const auto key = best_metric_name(cfg);
  const auto it = metrics.find(key);
  if (it != metrics.end() && std::isfinite(it->second) && improves(key, it->second, st.best_metric)) {
    st.best_metric = it->second;
    st.best_step = st.step;
    if (writer) {
      parts.save_model(out_dir / "best", {});
      require_complete(out_dir / "best", "best model");
    }
    log->info("new best {}={} -> {}", key, fmt_num(it->second), (out_dir / "best").string());
  }
  if (const auto stop = early_stopping->update(metrics, st.step, st.step == total_steps)) log->info("{}", *stop);
  writer_done();  // after every evaluation: the ranks need not agree bit for bit on "new best"
}

// data.test (SPEC §7): scored once, with the final model; the summary for the run's last line.
std::string Trainer::State::score_test() {
  if (parts.test.encoded.empty()) return "";
  return "; test (" + parts.test.file.string() + ", final model):" + metrics_line(score(parts.test, "test"));
}

// The run's first lines: what is trained how (and, multi-process, how the ranks share it).
void Trainer::State::log_start() const {
  const auto& t = cfg.training;
  // Span extraction trains on context windows: a long context gives several per example.
  const std::string entries = parts.train.encoded.size() == parts.train.examples.size() || parts.train.examples.empty()
                                  ? std::to_string(parts.train.encoded.size()) + " examples"
                                  : std::to_string(parts.train.examples.size()) + " examples (" +
                                        std::to_string(parts.train.encoded.size()) + " windows)";
  log->info("training: {}, batch {} x accum {}, {} steps/epoch, {} steps; method {} ({} pass{}/step); precision {}",
            entries, t.batch_size, t.grad_accum_steps, steps_per_epoch, total_steps, strategy->name(),
            strategy->passes_per_step(), strategy->passes_per_step() == 1 ? "" : "es", name_of(precision));
  if (!group) return;
  std::string shares;
  for (const auto& sh : shard_batch(t.batch_size, group->size()))
    shares += (shares.empty() ? "" : " + ") + std::to_string(sh.size);
  std::string devices;
  for (const auto& d : cfg.parallel.devices) devices += (devices.empty() ? "" : ", ") + d;
  log->info(
      "distributed: {} processes, backend {}, this is rank {} (the writer); each batch of {} is split {} "
      "over the ranks; parallel.devices [{}] in each rank",
      group->size(), group->backend(), group->rank(), t.batch_size, shares, devices);
}

// training.nonfinite after a step (returns the exit code when the run stops, else 0), and a step
// with nothing to predict.
int Trainer::State::account_step(const OptimizerStep::Report& report, bool empty) {
  if (report.nonfinite) {
    if (cfg.training.nonfinite == NonFinite::Error) return stop_nonfinite(st.step + 1, report.what, false);
    ++st.skipped_steps;
    ++skips_in_a_row;
    log->warn("step {}: {}: update skipped (training.nonfinite: skip; {} skipped so far)", st.step + 1, report.what,
              st.skipped_steps);
    // skip is for a few bad batches; a model whose every step fails is broken, and training it on
    // would end in a final/ that predicts nothing (exit 0 with an all-NaN or overflowing model).
    if (!parameters_finite())
      return stop_nonfinite(st.step + 1, "the model's parameters are not finite (an earlier update overflowed them)",
                            true);
    if (skips_in_a_row >= std::max<int64_t>(2, steps_per_epoch))
      return stop_nonfinite(st.step + 1,
                            fmt::format("{} steps in a row (a whole epoch) were not finite: the model, "
                                        "not a few batches, is broken",
                                        skips_in_a_row),
                            true);
  } else if (empty) {
    log->info("step {}: nothing to predict in this batch (no {} token): no update", st.step + 1,
              task_spec(cfg.task).input == TaskInput::MlmText ? "masked" : "labelled");
  } else {
    skips_in_a_row = 0;
  }
  return 0;
}

// A `train` line in metrics.jsonl and the log for the steps of `window`, which then starts anew.
void Trainer::State::log_step(StepWindow& window, double lr, int64_t step0) const {
  const auto& t = cfg.training;
  const auto now = StepWindow::Clock::now();
  const double elapsed = std::chrono::duration<double>(now - window.start).count();
  const double eta = elapsed / static_cast<double>(st.step - step0) * static_cast<double>(total_steps - st.step);
  const double dt = std::chrono::duration<double>(now - window.since).count() - window.paused;
  const double sps = dt > 0 ? static_cast<double>(window.samples) / dt : 0.0;
  const double epoch_f =
      static_cast<double>(st.epoch) + static_cast<double>(st.batch_in_epoch) / static_cast<double>(batches_per_epoch);
  // No loss when nothing in the window had a target (every step skipped, or Z = 0): null in
  // metrics.jsonl, "n/a" in the log, never a made-up 0.
  const double loss = window.z > 0 ? window.loss / window.z : std::numeric_limits<double>::quiet_NaN();
  json record{{"split", "train"},
              {"step", st.step},
              {"epoch", epoch_f},
              {"loss", std::isfinite(loss) ? json(loss) : json(nullptr)},
              {"lr", lr},
              {"samples_per_s", sps},
              {"train_s", elapsed - window.paused_total}};
  if (t.nonfinite == NonFinite::Skip) record["skipped_steps"] = st.skipped_steps;
  log->metrics(record);
  log->progress(st.step, total_steps,
                fmt::format("epoch {:.2f} loss {} lr {:.3g} {:.1f} samples/s ETA {}", epoch_f,
                            window.z > 0 ? fmt::format("{:.4f}", loss) : "n/a", lr, sps, fmt_duration(eta)));
  window.loss = 0.0, window.z = 0.0, window.samples = 0, window.since = now, window.paused = 0.0;
}

// Before the first step: interrupted saves recovered, the resume point checked and restored, the
// run's files opened. A value when there is nothing to do (the exit code).
std::optional<int> Trainer::State::start() {
  const auto& t = cfg.training;
  // Leftovers of a save that was killed half-way are restored (complete) or removed first.
  if (writer)
    for (const auto& dir : {out_dir, ckpt_root})
      for (const auto& note : recover_interrupted_saves(dir)) log->info("{}", note);
  const fs::path resume_from = resume_point();
  identity = run_identity(cfg, parts.labels, *parts.model, static_cast<int64_t>(parts.train.encoded.size()));
  CheckpointContent saved;
  std::vector<std::string> changes;  // the keys whose values differ from the resumed run's
  if (!resume_from.empty()) {
    saved = read_checkpoint_files(resume_from);
    check_identity(resume_from, saved.state);
    changes = config_changes(previous_config(saved.state), cfg);
    check_changes(resume_from, changes);
  }
  torch::manual_seed(static_cast<uint64_t>(cfg.seed));
  if (!resume_from.empty()) restore(resume_from, saved, changes);
  // A run that has nothing left to train: say so plainly and change nothing (config.yaml, metrics,
  // models). Its final/ is written when a kill came between the last checkpoint and final/.
  const bool nothing_to_train = !resume_from.empty() && (st.step >= total_steps || early_stopping->stopped());
  if (nothing_to_train && is_complete(out_dir / "final")) {
    log->info(
        "output_dir '{}' holds a finished run ({} at step {} of {}; its final model is {}): nothing to train, "
        "nothing changed. To train again from the start here set training.resume: overwrite (the previous "
        "run's files are removed), to train longer raise training.max_steps or training.epochs, or choose "
        "another output_dir",
        out_dir.string(), early_stopping->stopped() ? "stopped early" : "done", st.step, total_steps,
        (out_dir / "final").string());
    return 0;
  }
  if (group)
    group->check_same({st.step, st.epoch, st.batch_in_epoch, total_steps,
                       static_cast<int64_t>(parts.train.encoded.size()), t.batch_size, t.grad_accum_steps},
                      "(step, epoch, batch in epoch, total steps, training examples, batch size, accumulation)");
  if (!resume_from.empty()) engine->parameters_loaded();  // replicas / other ranks take the loaded parameters
  for (const auto& note : parts.notes) log->info("{}", note);
  if (writer && !resume_from.empty())
    if (const auto dropped = trim_metrics(out_dir / "metrics.jsonl", st.step))
      log->info("metrics.jsonl: dropped {} line{} written after step {} by the interrupted run", dropped,
                dropped == 1 ? "" : "s", st.step);
  // The resolved config (SPEC §4), for `unif train` and API runs alike; written once the run is
  // known to start or to resume (a refused resume keeps the old run's config.yaml).
  if (writer && !nothing_to_train) detail::write_text_file_atomic(out_dir / "config.yaml", to_yaml(cfg));
  log->open_metrics(out_dir / "metrics.jsonl");
  if (std::find(t.report_to.begin(), t.report_to.end(), "tensorboard") != t.report_to.end())
    log->open_events(out_dir / "tensorboard");
  log_start();
  return std::nullopt;
}

// After the last step: the checkpoint of an interrupted run, or final/, the test set and the last lines.
int Trainer::State::finish(bool interrupted, int64_t step0, int64_t skipped0, const StepWindow& window) {
  const auto& t = cfg.training;
  if (interrupted) {
    if (saved_step != st.step) save_checkpoint();
    log->info("interrupted: checkpoint saved at step {}; run again with resume: auto to continue", st.step);
    return 130;
  }
  if (st.step > step0 && st.skipped_steps - skipped0 == st.step - step0)
    return stop_nonfinite(st.step, fmt::format("every step of the run ({}) was skipped as non-finite", st.step - step0),
                          true);
  if (!parameters_finite()) return stop_nonfinite(st.step, "the model's parameters are not finite", true);
  if (writer) {
    parts.save_model(out_dir / "final", {});
    require_complete(out_dir / "final", "final model");
  }
  const std::string test_summary = score_test();
  if (early_stopping->stopped())
    log->info("stopped early at step {} of {} (training.early_stopping); best model in {}", st.step, total_steps,
              (out_dir / "best").string());
  // The run's best dev result restated last, where the user looks (training may have moved past it).
  if (st.best_step >= 0)
    log->info("best dev {}={} at step {}: {}", best_metric_name(cfg), fmt_num(st.best_metric), st.best_step,
              (out_dir / "best").string());
  log->info("done: {} steps in {}{}; final model in {}{}", st.step, fmt_duration(window.since_start()),
            t.nonfinite == NonFinite::Skip ? fmt::format(", {} skipped (non-finite)", st.skipped_steps) : "",
            (out_dir / "final").string(), test_summary);
  return 0;
}

int Trainer::fit() {
  auto& s = *s_;
  const auto& t = s.cfg.training;
  SignalGuard signals;
  if (const auto code = s.start()) return *code;  // nothing to train

  StepRunner runner(*s.engine, *s.strategy, *s.stepper, s.scaler.get(), s.cfg.seed);
  const Cadence cadence(t);
  s.parts.model->train();
  s.optimizer->zero_grad();
  StepWindow window;  // what the next train line reports
  const int64_t step0 = s.st.step, skipped0 = s.st.skipped_steps;
  bool interrupted = false;
  s.order = s.order_of(s.st.epoch);
  if (s.early_stopping->stopped())
    s.log->info("early stopping: the run already stopped at step {} (resumed from its checkpoint)", s.st.step);
  while (s.st.step < s.total_steps && !s.early_stopping->stopped()) {
    // A signal may reach only some ranks (or reach them at different steps): the ranks stop
    // together, at the same step, so that rank 0 saves the checkpoint every rank resumes from.
    if (s.group ? s.group->any(g_stop.load()) : g_stop.load()) {
      interrupted = true;
      break;
    }
    double z = 0;
    auto micro = s.next_batches(z);
    const StepReport r = as_user_error([&] { return runner.run(micro, z, s.st.step); });
    window.samples += r.samples;
    if (const int code = s.account_step(r.outcome, r.empty())) return code;
    ++s.st.step;
    if (s.scaler && s.scaler->update() && !r.outcome.nonfinite)
      s.log->warn(
          "step {}: non-finite gradients under fp16 loss scaling: the update was skipped ({} so far); loss "
          "scale now {}",
          s.st.step, s.scaler->skipped_steps(), s.scaler->scale());
    if (!r.outcome.nonfinite) window.add(r.loss_sum, z);  // a skipped step's loss stays out of the logged average
    if (s.st.batch_in_epoch >= s.batches_per_epoch) {
      ++s.st.epoch;
      s.st.batch_in_epoch = 0;
      s.order = s.order_of(s.st.epoch);
    }
    const bool epoch_end = s.st.batch_in_epoch == 0, last = s.st.step == s.total_steps;
    if (cadence.log_due(s.st.step, last, r.outcome.nonfinite))
      s.log_step(window, r.lr, step0);
    else
      s.log->tick(s.st.step, s.total_steps);
    const auto pause_t = std::chrono::steady_clock::now();
    if (cadence.eval_due(s.st.step, epoch_end, last)) {
      s.evaluate_dev();
      // Every rank stops at the same step, even should their dev metrics differ in the last bit.
      if (s.early_stopping->enabled() && s.group && s.group->any(s.early_stopping->stopped()))
        s.early_stopping->force_stop();
    }
    if (cadence.save_due(s.st.step, epoch_end, last) || (s.early_stopping->stopped() && s.saved_step != s.st.step)) {
      // Never a checkpoint (or final/) of parameters an update made inf or NaN.
      if (!r.outcome.nonfinite && !s.parameters_finite())
        return s.stop_nonfinite(s.st.step, "the update made the model's parameters non-finite", true);
      s.save_checkpoint();
    }
    window.pause(std::chrono::duration<double>(std::chrono::steady_clock::now() - pause_t).count());
  }
  s.log->end_progress();

  return s.finish(interrupted, step0, skipped0, window);
}

}  // namespace unif::framework
