// bench_parallel: training-step throughput of one CPU replica with T intra-op threads (LocalEngine)
// against T CPU replicas with one thread each (DataParallelEngine), and the data-parallel overhead
// per step: the reduction onto the master (gradients, outputs) and the copy of the stepped master
// back into the replicas. Model: random-init BERT, hidden 256 (--hidden), 4 layers (--layers), heads
// hidden / 64, intermediate 4 x hidden, vocab 30522 with sparse word-embedding gradients (the config
// default), dropout 0.1; batch 16 (--batch) of length 128 (--length), classification; a step is
// forward + backward + global-norm clip + AdamW, as the trainer.
//
//   build/bin/bench_parallel [--steps N] [--warmup N] [--threads T] [--hidden H] [--layers L]
//                            [--batch B] [--length L]
//
// With WORLD_SIZE > 1 (torchrun's variables, see bench/bench_distributed.sh) each process is one
// rank of a c10d group running the same step through DistributedEngine (1 local replica, T
// threads): every rank computes its slice of the batch of 16, and rank 0 prints one row, whose
// "reduce ms" is the time in collectives per step (gradient all-reduce / all-gather at the step,
// output gathers per pass) and "sync ms" the time spent waiting for the slower rank before them
// (a timed barrier, DistributedOptions::separate_waits).
//
// Figures and the command used are recorded in docs/performance.md ("Data parallel").
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <ATen/Parallel.h>
#include <torch/types.h>

#include "framework/common/runtime.h"
#include "framework/engines/data_parallel.h"
#include "framework/engines/distributed_engine.h"
#include "framework/parallel/process_group.h"
#include "framework/engines/local_engine.h"
#include "framework/train/optimizer.h"
#include "models/heads/factory.h"

using namespace unif;
using Clock = std::chrono::steady_clock;

namespace {

int64_t g_batch = 16, g_length = 128, g_hidden = 256, g_layers = 4;  // set from the command line

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Figures {
  double step_s = 0, reduce_s = 0, sync_s = 0;
  int64_t nonembedding = 0;  // parameters outside the embeddings (for the FLOP count)
};

// The machine's float32 GEMM rate through Torch in GFLOP/s: one 1024^3 product at a time (using
// the BLAS's own threads), or `concurrent` products at once on as many threads (the rate of
// single-threaded BLAS, OPENBLAS_NUM_THREADS=1, across the cores). The larger is the reference.
double matmul_rate(int concurrent) {
  const int64_t n = 1024;
  const int reps = 10;
  auto a = torch::randn({n, n}), b = torch::randn({n, n});
  torch::mm(a, b);  // warm-up
  auto t0 = Clock::now();
  if (concurrent == 1) {
    for (int i = 0; i < reps; ++i) torch::mm(a, b);
    return 2.0 * n * n * n * reps / since(t0) / 1e9;
  }
  std::vector<std::thread> pool;
  for (int t = 0; t < concurrent; ++t)
    pool.emplace_back([&] {
      at::set_num_threads(1);
      for (int i = 0; i < reps; ++i) torch::mm(a, b);
    });
  for (auto& th : pool) th.join();
  return 2.0 * n * n * n * reps * concurrent / since(t0) / 1e9;
}

models::Batch make_batch(int64_t vocab) {
  torch::manual_seed(1);
  models::Batch b;
  b.input_ids = torch::randint(1, vocab, {g_batch, g_length}, torch::kLong);
  b.token_type_ids = torch::zeros({g_batch, g_length}, torch::kLong);
  b.attention_mask = torch::ones({g_batch, g_length}, torch::kLong);
  b.labels = torch::randint(0, 2, {g_batch}, torch::kLong);
  return b;
}

// `replicas` == 0: LocalEngine with `threads` intra-op threads; else DataParallelEngine. With a
// process group, that engine inside a DistributedEngine.
Figures measure(int64_t replicas, int64_t threads, int steps, int warmup,
                std::shared_ptr<framework::ProcessGroup> group = nullptr) {
  torch::manual_seed(42);
  auto o = models::EncoderConfig()
               .hidden_size(g_hidden)
               .num_hidden_layers(g_layers)
               .num_attention_heads(std::max<int64_t>(1, g_hidden / 64))
               .intermediate_size(4 * g_hidden)
               .sparse_embeddings(true);
  std::shared_ptr<models::TaskModel> model = models::make_encoder_task_model(unif::Task::Classification, o, 2);
  model->train();
  std::vector<std::pair<std::string, torch::Tensor>> named;
  int64_t nonembedding = 0;
  for (auto& p : model->named_parameters()) {
    named.emplace_back(p.key(), p.value());
    if (p.key().find("embeddings.") == std::string::npos) nonembedding += p.value().numel();
  }
  framework::OptimizerOptions oo;
  auto optimizer = framework::make_optimizer(framework::bert_param_groups(named, 0.01, 1.0, g_layers, nullptr), oo);
  double optimizer_s = 0;
  auto step = [&] {
    const auto t0 = Clock::now();
    framework::clip_grad_norm(optimizer->params(), 1.0);
    optimizer->step(1e-4);
    optimizer->zero_grad();
    optimizer_s += since(t0);
  };
  std::unique_ptr<framework::GradientEngine> engine;
  framework::DataParallelEngine* dp = nullptr;
  if (replicas == 0) {
    at::set_num_threads(static_cast<int>(threads));
    engine = std::make_unique<framework::LocalEngine>(model, step);
  } else {
    framework::DataParallelOptions dpo;
    dpo.devices.assign(static_cast<size_t>(replicas), torch::kCPU);
    dpo.threads_per_replica = threads;
    auto e = std::make_unique<framework::DataParallelEngine>(model, step, dpo);
    dp = e.get();
    engine = std::move(e);
  }
  framework::DistributedEngine* dist = nullptr;
  if (group) {
    framework::DistributedOptions dio;
    dio.separate_waits = true;
    auto e = std::make_unique<framework::DistributedEngine>(group, model, std::move(engine), dio);
    dist = e.get();
    engine = std::move(e);
  }
  const auto batch = make_batch(o.vocab_size());
  Figures f;
  f.nonembedding = nonembedding;
  for (int i = 0; i < warmup + steps; ++i) {
    optimizer_s = 0;
    const auto t0 = Clock::now();
    engine->run(batch, {}, 1.0 / g_batch, false);
    const auto t1 = Clock::now();
    engine->optimizer_step();
    const double step_s = since(t0), opt_total = since(t1);
    if (dist && i < warmup) dist->reset_timing();
    if (i < warmup) continue;
    f.step_s += step_s / steps;
    if (dp) {
      f.reduce_s += dp->last_timing().reduce_s / steps;
      f.sync_s += (opt_total - optimizer_s) / steps;  // copying the master into the replicas
    }
  }
  if (dist) {
    f.reduce_s = (dist->timing().gradient_s + dist->timing().output_s) / steps;
    f.sync_s = dist->timing().wait_s / steps;
  }
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  init_runtime(argc, argv);
  int steps = 5, warmup = 1;
  int64_t threads = 2;
  int only = 0;  // --replicas N: measure that configuration alone (one process each: its own peak memory)
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--steps"))
      steps = std::max(1, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--warmup"))
      warmup = std::max(0, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--threads"))
      threads = std::max(1, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--hidden"))
      g_hidden = std::max(64, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--layers"))
      g_layers = std::max(1, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--batch"))
      g_batch = std::max(1, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--length"))
      g_length = std::max(8, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--replicas"))
      only = std::max(1, std::atoi(argv[i + 1]));
    else {
      std::fprintf(stderr,
                   "usage: bench_parallel [--steps N] [--warmup N] [--threads T] [--hidden H] [--layers L] "
                   "[--batch B] [--length L] [--replicas N]\n"
                   "  --replicas 1: only 1 replica x T threads; N > 1: only N replicas x 1 thread\n");
      return 2;
    }
  }
  const auto env = framework::read_dist_env();
  if (!env || env->rank == 0) {
    std::printf("BERT h%lld L%lld A%lld I%lld, batch %lld x %lld, AdamW; %d steps after %d warm-up; %d cores\n",
                static_cast<long long>(g_hidden), static_cast<long long>(g_layers),
                static_cast<long long>(std::max<int64_t>(1, g_hidden / 64)), static_cast<long long>(4 * g_hidden),
                static_cast<long long>(g_batch), static_cast<long long>(g_length), steps, warmup, available_cores());
    std::printf("%-24s %10s %10s %12s %10s %10s %9s\n", "config", "samples/s", "step ms", "reduce ms", "sync ms",
                "overhead", "GFLOP/s");
  }
  // overhead: (reduce + sync) / step in one process; reduce / step for ranks (sync is waiting there).
  auto row = [&](const std::string& name, const Figures& f, bool ranks = false) {
    const double overhead = ranks ? f.reduce_s : f.reduce_s + f.sync_s;
    // As bench_train_step: 6 x N_nonembedding x tokens plus attention 12 x layers x B x L^2 x H.
    const double tokens = static_cast<double>(g_batch * g_length);
    const double flops = 6.0 * static_cast<double>(f.nonembedding) * tokens +
                         12.0 * static_cast<double>(g_layers * g_batch * g_length * g_length * g_hidden);
    std::printf("%-24s %10.2f %10.1f %12.2f %10.2f %9.1f%% %9.1f\n", name.c_str(), g_batch / f.step_s, 1e3 * f.step_s,
                1e3 * f.reduce_s, 1e3 * f.sync_s, 100.0 * overhead / f.step_s, flops / f.step_s / 1e9);
    std::fflush(stdout);
  };
  const auto t = std::to_string(threads);
  if (env) {
    auto group = framework::ProcessGroup::join(*env);
    const auto f = measure(0, threads, steps, warmup, group);
    if (group->rank() == 0)
      row(std::to_string(group->size()) + " processes x " + t + " thread" + (threads > 1 ? "s" : ""), f, true);
    group->barrier();
    return 0;
  }
  const int blas = blas_threads();  // the replicas' engine sets 1 (unless OPENBLAS_NUM_THREADS)
  if (only <= 1) row("1 replica x " + t + " threads", measure(0, threads, steps, warmup));
  if (only != 1) {
    const int64_t n = only > 1 ? only : threads;
    row(std::to_string(n) + " replicas x 1 thread", measure(n, 1, steps, warmup));
  }
  if (blas > 0) set_blas_threads(blas);
  at::set_num_threads(static_cast<int>(threads));
  const double one = matmul_rate(1), many = matmul_rate(static_cast<int>(threads));
  std::printf("matmul 1024^3 float32: %.1f GFLOP/s one at a time, %.1f GFLOP/s %lld at once (reference: %.1f)\n", one,
              many, static_cast<long long>(threads), std::max(one, many));
  return 0;
}
