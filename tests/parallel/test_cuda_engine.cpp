// GPU replicas (label cuda, built only where LibTorch has CUDA): the SPEC §5 invariance on GPUs — one
// step on cuda:0, on two replicas sharing cuda:0, and (with two GPUs) on [cuda:0, cuda:1] through
// NCCL, equals one CPU device, sparse word-embedding gradients included — and bf16 / fp16 forward
// passes on a GPU with float32 master weights. Where no GPU (or no second GPU) is visible a case prints
// UNIF_SKIPPED_NO_GPU and ctest reports it as skipped.
#include <catch2/catch.hpp>

#include <cmath>
#include <iostream>
#include <mutex>
#include <map>
#include <string>

#include <torch/cuda.h>
#include <torch/torch.h>

#include <ATen/CPUGeneratorImpl.h>

#include "adversarial/smart.h"
#include "framework/common/precision.h"
#include "framework/engines/data_parallel.h"
#include "framework/engines/local_engine.h"
#include "framework/train/loss_scaler.h"
#include "framework/train/trainer.h"
#include "models/heads/factory.h"

using namespace unif;

namespace {

bool have_gpus(int64_t n) {
  if (torch::cuda::is_available() && static_cast<int64_t>(torch::cuda::device_count()) >= n) return true;
  std::cout << "UNIF_SKIPPED_NO_GPU (needs " << n << " visible GPU(s))\n";
  return false;
}

std::shared_ptr<models::TaskModel> tiny_bert(unif::Task kind, int64_t labels) {
  torch::manual_seed(9);
  auto o = models::EncoderConfig()
               .vocab_size(150)
               .hidden_size(32)
               .num_hidden_layers(2)
               .num_attention_heads(4)
               .intermediate_size(64)
               .max_position_embeddings(32)
               .hidden_dropout_prob(0.0)
               .attention_probs_dropout_prob(0.0)
               .initializer_range(0.2)
               .sparse_embeddings(true);
  auto model = models::make_encoder_task_model(kind, o, labels);
  model->train();
  return model;
}

models::Batch batch_of(int64_t b, int64_t l, bool tokens) {
  torch::manual_seed(13);
  models::Batch batch;
  batch.input_ids = torch::randint(1, 150, {b, l}, torch::kLong);
  batch.token_type_ids = torch::zeros({b, l}, torch::kLong);
  auto lengths = torch::randint(4, l + 1, {b}, torch::kLong);
  batch.attention_mask = (torch::arange(l, torch::kLong).unsqueeze(0) < lengths.unsqueeze(1)).to(torch::kLong);
  batch.input_ids = batch.input_ids * batch.attention_mask;
  batch.labels = tokens ? torch::randint(0, 4, {b, l}, torch::kLong).masked_fill(batch.attention_mask == 0, -100)
                        : torch::randint(0, 4, {b}, torch::kLong);
  return batch;
}

struct Step {
  std::map<std::string, torch::Tensor> grads, params;  // on the CPU, dense
  double loss = 0.0;
};

// One SGD step (lr 1) with the engine `make` builds around a fresh copy of `proto` placed on `home`.
template <class Make>
Step sgd_step(const models::TaskModel& proto, const torch::Device& home, const models::Batch& batch, double z,
              Make make) {
  auto model = proto.clone_model();
  model->to(home);
  Step out;
  auto step = [&] {
    torch::NoGradGuard no_grad;
    for (auto& p : model->named_parameters()) {
      auto& g = p.value().mutable_grad();
      REQUIRE(g.defined());
      auto d = g.is_sparse() ? g.to_dense() : g;
      out.grads[p.key()] = d.cpu().clone();
      p.value().sub_(d);
      g.reset();
    }
  };
  auto engine = make(model, step);
  out.loss = engine->run(framework::to_device(batch, home), {}, 1.0 / z, false).loss_sum;
  engine->optimizer_step();
  for (auto& p : model->named_parameters()) out.params[p.key()] = p.value().detach().cpu().clone();
  return out;
}

Step local(const models::TaskModel& proto, const torch::Device& d, const models::Batch& b, double z) {
  return sgd_step(proto, d, b, z, [](auto m, auto s) { return std::make_unique<framework::LocalEngine>(m, s); });
}

Step replicas(const models::TaskModel& proto, const std::vector<torch::Device>& devices, const models::Batch& b,
              double z) {
  return sgd_step(proto, devices[0], b, z, [&](auto m, auto s) {
    framework::DataParallelOptions o;
    o.devices = devices;
    return std::make_unique<framework::DataParallelEngine>(m, s, o);
  });
}

void require_close(const Step& a, const Step& ref) {
  CHECK(a.loss == Approx(ref.loss).epsilon(1e-4));
  for (const auto& [name, g] : ref.grads) {
    INFO(name);
    CHECK(torch::allclose(a.grads.at(name), g, 1e-4, 1e-6));
    CHECK(torch::allclose(a.params.at(name), ref.params.at(name), 1e-4, 1e-6));
  }
}

}  // namespace

TEST_CASE("GPU: one step on cuda:0 and on two replicas sharing it equals one CPU device", "[cuda]") {
  if (!have_gpus(1)) return;
  const torch::Device gpu("cuda:0");
  for (bool tokens : {false, true}) {
    INFO((tokens ? "token classification" : "classification"));
    auto proto = tiny_bert(tokens ? unif::Task::TokenClassification : unif::Task::Classification, 4);
    const auto batch = batch_of(7, 12, tokens);  // uneven shards on 2 replicas
    const double z = tokens ? static_cast<double>((batch.labels != -100).sum().item<int64_t>()) : 7.0;
    const auto cpu = local(*proto, torch::kCPU, batch, z);
    require_close(local(*proto, gpu, batch, z), cpu);
    require_close(replicas(*proto, {gpu, gpu}, batch, z), cpu);
  }
}

TEST_CASE("GPU: one step on [cuda:0, cuda:1] (NCCL reduce and broadcast) equals one CPU device", "[cuda]") {
  if (!have_gpus(2)) return;
  auto proto = tiny_bert(unif::Task::Classification, 4);
  const auto batch = batch_of(9, 10, false);
  const auto cpu = local(*proto, torch::kCPU, batch, 9.0);
  require_close(replicas(*proto, {torch::Device("cuda:0"), torch::Device("cuda:1")}, batch, 9.0), cpu);
  // Sparse word-embedding rows of both replicas reach the master (a replica's rows dropped would
  // leave rows of the reference gradient at zero).
  const std::string words = "bert.embeddings.word_embeddings.weight";
  CHECK(torch::equal(
      cpu.grads.at(words).abs().sum(1) > 0,
      replicas(*proto, {torch::Device("cuda:0"), torch::Device("cuda:1")}, batch, 9.0).grads.at(words).abs().sum(1) >
          0));
}

TEST_CASE("GPU: bf16 and fp16 forward passes track fp32 and keep float32 master weights", "[cuda]") {
  if (!have_gpus(1)) return;
  const torch::Device gpu("cuda:0");
  auto proto = tiny_bert(unif::Task::Classification, 4);
  const auto batch = framework::to_device(batch_of(8, 16, false), gpu);
  auto run = [&](Precision p, double loss_scale) {
    auto model = proto->clone_model();
    model->to(gpu);
    framework::LocalEngine engine(
        model, [] {}, p);
    auto r = engine.run(batch, {}, loss_scale / 8.0, false);
    for (const auto& q : model->parameters()) {
      CHECK(q.scalar_type() == torch::kFloat);
      if (q.grad().defined()) CHECK(q.grad().scalar_type() == torch::kFloat);
    }
    CHECK(r.output.logits.scalar_type() == torch::kFloat);
    return std::make_pair(r.loss_sum / 8.0, r.output.logits.cpu());
  };
  const auto fp32 = run(Precision::FP32, 1.0);
  for (Precision p : {Precision::BF16, Precision::FP16}) {
    INFO(to_string(p));
    const auto low = run(p, p == Precision::FP16 ? 65536.0 : 1.0);
    CHECK(std::abs(low.first - fp32.first) <= 0.02 * std::abs(fp32.first));
    CHECK((low.second - fp32.second).abs().max().item<double>() > 0.0);  // it really ran in low precision
  }
}

TEST_CASE("GPU: SMART's and R-Drop's symmetric KL takes targets and labels from another device", "[cuda]") {
  if (!have_gpus(1)) return;
  const torch::Device gpu("cuda:0");
  // Token classification: a replica's logits on its GPU, the targets gathered on the master's
  // device (here the CPU) and the labels of the master's batch.
  const auto batch = batch_of(4, 8, true);
  torch::manual_seed(2);
  const auto logits = torch::randn({4, 8, 4}), target = torch::randn({4, 8, 4});
  const auto on_cpu = adversarial::symmetric_kl(logits, target, batch, 0);
  const auto mixed = adversarial::symmetric_kl(logits.to(gpu), target, batch, 0);
  CHECK(mixed.device() == gpu);
  CHECK(mixed.cpu().item<double>() == Approx(on_cpu.item<double>()).epsilon(1e-5));
}

TEST_CASE("GPU: masked_lm evaluation runs on the model's device", "[cuda]") {
  if (!have_gpus(1)) return;
  auto model = tiny_bert(unif::Task::MaskedLm, 2);
  model->to(torch::Device("cuda:0"));
  framework::TaskData data;
  for (int i = 0; i < 6; ++i) {
    framework::EncodedExample e;
    e.input_ids = {101, 5 + i, 6 + i, 7, 102};
    e.word_start = {-1, 0, 1, 2, -1};
    data.encoded.push_back(e);
  }
  data.mlm.mask_id = 3;
  data.mlm.vocab_size = 150;
  data.mlm.probability = 0.5;
  const auto ev = framework::evaluate(*model, unif::Task::MaskedLm, data, {}, 4);
  CHECK(ev.metrics.count("loss") == 1);
  CHECK(std::isfinite(ev.metrics.at("loss")));
}

TEST_CASE("GPU: dropout masks on GPUs follow the global CPU generator (exact resume), one per replica", "[cuda]") {
  if (!have_gpus(1)) return;
  const torch::Device gpu("cuda:0");
  torch::manual_seed(9);
  auto o = models::EncoderConfig()
               .vocab_size(150)
               .hidden_size(32)
               .num_hidden_layers(2)
               .num_attention_heads(4)
               .intermediate_size(64)
               .max_position_embeddings(32)
               .hidden_dropout_prob(0.3)
               .attention_probs_dropout_prob(0.3);
  auto proto = models::make_encoder_task_model(unif::Task::Classification, o, 4);
  const auto batch = batch_of(8, 16, false);
  // One pass from a saved CPU generator state, the device generators left wherever they are: the
  // same masks, hence the same loss, each time (the checkpoint holds only the CPU state).
  auto loss_from = [&](const torch::Tensor& state, auto make_engine) {
    {
      auto gen = at::detail::getDefaultCPUGenerator();
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_state(state);
    }
    auto model = proto->clone_model();
    model->to(gpu);
    model->train();
    auto engine = make_engine(model);
    engine->run(framework::to_device(batch, gpu), {}, 1.0, false);  // advances every generator
    return engine->run(framework::to_device(batch, gpu), {}, 1.0, false).loss_sum;
  };
  torch::Tensor state;
  {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    state = gen.get_state();
  }
  auto local = [](auto m) { return std::make_unique<framework::LocalEngine>(m, [] {}); };
  const double a = loss_from(state, local);
  torch::cuda::manual_seed_all(12345);  // the device generators moved (another run, a resume)
  const double b = loss_from(state, local);
  CHECK(a == b);
  auto shared = [&](auto m) {
    framework::DataParallelOptions opt;
    opt.devices = {gpu, gpu};  // two replicas on one GPU: each its own generator
    return std::make_unique<framework::DataParallelEngine>(
        m, [] {}, opt);
  };
  const double c = loss_from(state, shared);
  torch::cuda::manual_seed_all(777);
  const double d = loss_from(state, shared);
  CHECK(c == d);
}
