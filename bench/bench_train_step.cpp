// bench_train_step: end-to-end throughput of one BERT training step (forward, backward, clipping,
// AdamW) at hidden 256, 4 layers, 4 heads, intermediate 1024, seq 128, batch 16 (random weights,
// random token ids, dropout 0.1 as in training), beside this machine's own float32 matmul rate
// measured in the same run. bench/hf_train_step.py is HF's twin (same shapes, same phases).
//
//   build/bin/bench_train_step [--steps N] [--warmup N] [--batch B] [--seq L] [--dropout P]
//                              [--hidden H] [--layers N] [--heads A] [--intermediate I] [--vocab V]
//                              [--precision fp32|bf16|fp16] [--device cpu|cuda:N] [--profile trace.json]
//                              [--checkpointing]
//   e.g. all-MiniLM-L6-v2's shape: --hidden 384 --layers 6 --heads 12 --intermediate 1536 --vocab 30522
//
// Prints the time of each phase (forward, backward, clip, optimizer, zero_grad) besides the step,
// and the process's peak memory: resident set size on a CPU, the caching allocator's peak on a GPU.
// --checkpointing: training.gradient_checkpointing (each layer run again in backward).
// --profile writes one measured step's operator trace (Torch's legacy profiler, chrome://tracing
// format); bench/profile_summary.py sums it per operator.
//
// Achieved GFLOP/s counts 6 * N_nonembedding * tokens (forward + backward of every weight matrix)
// plus attention 12 * layers * B * L^2 * H (QK^T and AV, forward + backward).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/csrc/autograd/profiler_legacy.h>

#include "framework/common/precision.h"
#include "framework/common/runtime.h"
#include "framework/train/optimizer.h"
#include "models/heads/factory.h"

using namespace unif;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Waits for the device's queued work (a GPU runs asynchronously), so that wall time is its time.
void sync(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

// The device's float32 GEMM rate through Torch (the same BLAS / cuBLAS the model uses), in GFLOP/s.
double matmul_gflops(int64_t n, int reps, const torch::Device& device) {
  auto a = torch::randn({n, n}).to(device), b = torch::randn({n, n}).to(device);
  auto c = torch::mm(a, b);  // warm-up
  sync(device);
  auto t0 = Clock::now();
  for (int i = 0; i < reps; ++i) c = torch::mm(a, b);
  sync(device);
  return 2.0 * n * n * n * reps / seconds_since(t0) / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  init_runtime(argc, argv);
  int steps = 10, warmup = 2;
  int64_t B = 16, L = 128, H = 256, layers = 4, heads = 4, inter = 1024, vocab = 21128;
  double dropout = 0.1;
  bool checkpointing = false;
  std::string profile;
  Precision precision = Precision::FP32;
  torch::Device device = torch::kCPU;
  for (int i = 1; i < argc; i += 2) {
    if (!std::strcmp(argv[i], "--checkpointing")) {  // a flag: no value
      checkpointing = true;
      --i;
      continue;
    }
    if (i + 1 >= argc) break;
    if (!std::strcmp(argv[i], "--steps"))
      steps = std::stoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--warmup"))
      warmup = std::stoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--batch"))
      B = std::stoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--seq"))
      L = std::stoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--dropout"))
      dropout = std::stod(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--hidden"))
      H = std::stoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--layers"))
      layers = std::stoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--heads"))
      heads = std::stoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--intermediate"))
      inter = std::stoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--vocab"))
      vocab = std::stoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--profile"))
      profile = argv[i + 1];
    else if (!std::strcmp(argv[i], "--precision"))
      precision = parse_precision(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--device"))
      device = torch::Device(argv[i + 1]);
  }
  torch::manual_seed(0);
  models::EncoderConfig opt;
  opt.vocab_size(vocab)
      .hidden_size(H)
      .num_hidden_layers(layers)
      .num_attention_heads(heads)
      .intermediate_size(inter)
      .max_position_embeddings(512)
      .sparse_embeddings(true)
      .hidden_dropout_prob(dropout)
      .attention_probs_dropout_prob(dropout)
      .gradient_checkpointing(checkpointing);
  auto model = models::make_encoder_task_model(unif::Task::Classification, opt, 7);
  model->to(device);
  model->train();
  std::vector<std::pair<std::string, torch::Tensor>> named;
  int64_t n_nonemb = 0;
  for (auto& p : model->named_parameters()) {
    named.emplace_back(p.key(), p.value());
    if (p.key().find("embeddings.") == std::string::npos) n_nonemb += p.value().numel();
  }
  auto optimizer = framework::make_optimizer(framework::bert_param_groups(named, 0.01, 1.0, 4, nullptr), {});

  models::Batch batch;
  batch.input_ids = torch::randint(1000, vocab, {B, L}, torch::kInt64);
  batch.token_type_ids = torch::zeros({B, L}, torch::kInt64);
  batch.attention_mask = torch::ones({B, L}, torch::kInt64);
  batch.labels = torch::randint(0, 7, {B}, torch::kInt64);
  batch.input_ids = batch.input_ids.to(device);
  batch.token_type_ids = batch.token_type_ids.to(device);
  batch.attention_mask = batch.attention_mask.to(device);
  batch.labels = batch.labels.to(device);
  // fp16 (GPUs): a constant loss scale, as the trainer's before its first overflow.
  const double loss_scale = precision == Precision::FP16 ? 65536.0 : 1.0;

  double phase[5] = {0, 0, 0, 0, 0};  // forward, backward, clip, optimizer, zero_grad
  auto step = [&] {
    auto t = Clock::now();
    auto lap = [&](int i) {
      const auto now = Clock::now();
      phase[i] += std::chrono::duration<double>(now - t).count();
      t = now;
    };
    auto out = [&] {
      AutocastGuard autocast(precision, device.type());  // as the engine: around the forward only
      return model->forward(batch);
    }();
    auto loss = out.example_losses.sum() * (loss_scale / static_cast<double>(B));
    sync(device);
    lap(0);
    loss.backward();
    sync(device);
    lap(1);
    framework::clip_grad_norm(optimizer->params(), 1.0);
    sync(device);
    lap(2);
    optimizer->step(1e-4);
    sync(device);
    lap(3);
    optimizer->zero_grad();
    sync(device);
    lap(4);
  };
  for (int i = 0; i < warmup; ++i) step();
  for (double& p : phase) p = 0.0;
  auto t0 = Clock::now();
  for (int i = 0; i < steps; ++i) step();
  const double dt = seconds_since(t0) / steps;
  double ms[5];
  for (int i = 0; i < 5; ++i) ms[i] = phase[i] / steps * 1e3;
  if (!profile.empty()) {
    torch::autograd::profiler::RecordProfile guard(profile);
    step();
  }
  const double tokens = static_cast<double>(B * L);
  const double flops = 6.0 * static_cast<double>(n_nonemb) * tokens + 12.0 * layers * B * L * L * H;
  const double peak = matmul_gflops(device.is_cuda() ? 8192 : 1024, 20, device);
  std::printf(
      "bench_train_step: hidden %lld, %lld layers, %lld heads, intermediate %lld, vocab %lld, "
      "batch %lld x seq %lld, dropout %.2f, %s, %s, %d threads\n",
      static_cast<long long>(H), static_cast<long long>(layers), static_cast<long long>(heads),
      static_cast<long long>(inter), static_cast<long long>(vocab), static_cast<long long>(B),
      static_cast<long long>(L), dropout, to_string(precision).c_str(), device.str().c_str(), at::get_num_threads());
  std::printf("  non-embedding parameters: %lld\n", static_cast<long long>(n_nonemb));
  std::printf("  step: %.1f ms   %.1f samples/s   %.0f tokens/s\n", dt * 1e3, B / dt, tokens / dt);
  std::printf("  phases (ms): forward %.1f  backward %.1f  clip %.1f  optimizer %.1f  zero_grad %.1f\n", ms[0], ms[1],
              ms[2], ms[3], ms[4]);
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("  gradient checkpointing: %s   peak resident memory: %.0f MiB\n", checkpointing ? "on" : "off",
              static_cast<double>(usage.ru_maxrss) / 1024.0);
  std::printf("  achieved: %.1f GFLOP/s   matmul %d^3 float32: %.1f GFLOP/s   ratio: %.0f%%\n", flops / dt / 1e9,
              device.is_cuda() ? 8192 : 1024, peak, 100.0 * flops / dt / 1e9 / peak);
  return 0;
}
