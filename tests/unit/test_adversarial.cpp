// Unit tests of unif::adversarial on a toy task model (embedding → tanh → masked mean → linear):
// perturbation algebra (norms, normalize, project, padding), each strategy's degenerate cases
// (fgm ε=0 and freelb K=1 equal plain training, smart λ=0 too), the ε ball and padding invariants
// of every δ handed to the engine, FreeAT's optimizer steps, seeded noise, SMART's gradient against
// direct autograd. (make_strategy, which maps the config to these classes, is tested with the
// training library: tests/unit/test_make_strategy.cpp.)
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <torch/autograd.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/linear.h>

#include "adversarial/fgm.h"
#include "adversarial/freeat.h"
#include "adversarial/freelb.h"
#include "adversarial/perturbation.h"
#include "adversarial/pgd.h"
#include "adversarial/smart.h"
#include "framework/engines/local_engine.h"

using namespace unif;
using namespace unif::adversarial;

namespace {

constexpr int64_t kVocab = 20, kHidden = 6, kClasses = 3;

// Toy classifier: logits = W·mean_l(tanh(E + δ)) + b over real tokens; per-example cross-entropy,
// or (regression labels) squared error on logit 0.
class ToyModel final : public models::TaskModel {
 public:
  ToyModel() {
    emb_ = register_module("emb", torch::nn::Embedding(kVocab, kHidden));
    out_ = register_module("out", torch::nn::Linear(kHidden, kClasses));
  }
  models::ModelOutput forward(const models::Batch& batch, const torch::Tensor& delta) override {
    auto e = emb_(batch.input_ids);  // (B, L, H)
    if (delta.defined()) e = e + delta;
    const auto mask = batch.attention_mask.to(torch::kFloat32).unsqueeze(-1);  // (B, L, 1)
    const auto pooled = (torch::tanh(e) * mask).sum(1) / mask.sum(1);          // (B, H)
    models::ModelOutput o;
    o.logits = out_(pooled);  // (B, C)
    if (batch.labels.defined()) {
      if (batch.labels.is_floating_point())
        o.example_losses = (o.logits.select(1, 0) - batch.labels).pow(2);
      else
        o.example_losses = torch::nn::functional::cross_entropy(
            o.logits, batch.labels, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
      o.loss_count = batch.size();
    }
    return o;
  }
  torch::nn::Embedding word_embeddings() override { return emb_; }
  std::shared_ptr<models::TaskModel> clone_model() const override { return nullptr; }

 private:
  torch::nn::Embedding emb_{nullptr};
  torch::nn::Linear out_{nullptr};
};

std::shared_ptr<ToyModel> make_model() {
  torch::manual_seed(7);
  return std::make_shared<ToyModel>();
}

// 3 examples of lengths 5, 3, 2 padded to 5.
models::Batch make_batch() {
  models::Batch b;
  b.input_ids = torch::tensor({3, 4, 5, 6, 7, 8, 9, 10, 0, 0, 11, 12, 0, 0, 0}, torch::kLong).view({3, 5});
  b.token_type_ids = torch::zeros({3, 5}, torch::kLong);
  b.attention_mask = torch::tensor({1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0}, torch::kLong).view({3, 5});
  b.labels = torch::tensor({0, 2, 1}, torch::kLong);
  return b;
}

// Wraps LocalEngine and records every δ it is handed and every optimizer step.
class SpyEngine final : public GradientEngine {
 public:
  explicit SpyEngine(std::shared_ptr<models::TaskModel> model)
      : inner_(std::move(model), [this] { ++optimizer_steps; }) {}
  PassResult run(const models::Batch& batch, const torch::Tensor& delta, double scale, bool want) override {
    deltas.push_back(delta.defined() ? delta.clone() : torch::Tensor());
    ++calls;
    return inner_.run(batch, delta, scale, want);
  }
  PassResult run_custom(const models::Batch& batch, const PassRequest& request) override {
    deltas.push_back(request.delta.defined() ? request.delta.clone() : torch::Tensor());
    ++calls;
    return inner_.run_custom(batch, request);
  }
  int64_t embedding_dim() const override { return inner_.embedding_dim(); }
  void optimizer_step() override { inner_.optimizer_step(); }
  std::vector<torch::Tensor> parameters() override { return inner_.parameters(); }
  models::ModelOutput forward_with(const models::Batch& batch, const std::vector<torch::Tensor>& params) override {
    deltas.push_back(torch::Tensor());
    ++calls;
    return inner_.forward_with(batch, params);
  }

  std::vector<torch::Tensor> deltas;
  int64_t calls = 0;
  int64_t optimizer_steps = 0;

 private:
  framework::LocalEngine inner_;
};

std::map<std::string, torch::Tensor> grads_of(torch::nn::Module& m) {
  std::map<std::string, torch::Tensor> g;
  for (const auto& p : m.named_parameters())
    g[p.key()] = p.value().grad().defined() ? p.value().grad().clone() : torch::Tensor();
  return g;
}

// One accumulate() of `strategy` on a fresh toy model; returns its gradients (and the spy).
std::map<std::string, torch::Tensor> step_grads(Strategy& strategy, const models::Batch& batch,
                                                StepResult* result = nullptr,
                                                std::vector<torch::Tensor>* deltas = nullptr, int64_t step = 0) {
  auto model = make_model();
  SpyEngine engine(model);
  auto r = strategy.accumulate(engine, batch, 1.0 / static_cast<double>(batch.size()), 42, step);
  CHECK(r.passes == strategy.passes_per_step());
  CHECK(engine.calls == strategy.passes_per_step());
  if (result) *result = r;
  if (deltas) *deltas = engine.deltas;
  return grads_of(*model);
}

void check_same(const std::map<std::string, torch::Tensor>& a, const std::map<std::string, torch::Tensor>& b,
                double rtol = 1e-6, double atol = 1e-7) {
  REQUIRE(a.size() == b.size());
  for (const auto& [k, v] : a) {
    INFO(k);
    REQUIRE(v.defined());
    REQUIRE(b.at(k).defined());
    CHECK(torch::allclose(v, b.at(k), rtol, atol));
  }
}

bool padding_zero(const torch::Tensor& delta, const models::Batch& batch) {
  const auto pad = batch.attention_mask.eq(0).unsqueeze(-1).expand_as(delta);
  return delta.masked_select(pad).abs().max().item<double>() == 0.0;
}

}  // namespace

TEST_CASE("per-example norms, normalize and project mask padding", "[unit][adversarial]") {
  auto batch = make_batch();
  const auto mask = padding_mask(batch);
  REQUIRE(mask.sizes() == torch::IntArrayRef({3, 5, 1}));
  torch::manual_seed(1);
  auto x = torch::randn({3, 5, kHidden});
  // Norms ignore padding: example 2 (length 2) only counts its first two positions.
  const auto norms = example_norms(x, mask);
  CHECK(norms[2].item<double>() == Approx(x[2].narrow(0, 0, 2).norm().item<double>()));
  CHECK(norms[0].item<double>() == Approx(x[0].norm().item<double>()));

  const auto n = normalize(x, mask);
  CHECK(padding_zero(n, batch));
  for (int64_t b = 0; b < 3; ++b) CHECK(example_norms(n, mask)[b].item<double>() == Approx(1.0).epsilon(1e-6));
  // A zero (or padding-only) direction stays 0 instead of dividing by 0.
  CHECK(normalize(torch::zeros_like(x), mask).abs().max().item<double>() == 0.0);

  const auto small = 0.01 * n;  // inside a ball of 0.5: unchanged
  CHECK(torch::allclose(project(small, 0.5, mask), small));
  CHECK(count_outside(small, 0.5, mask) == 0);
  const auto big = 3.0 * n;  // outside: scaled back to norm 0.5
  CHECK(count_outside(big, 0.5, mask) == 3);
  const auto p = project(big, 0.5, mask);
  for (int64_t b = 0; b < 3; ++b) CHECK(example_norms(p, mask)[b].item<double>() == Approx(0.5).epsilon(1e-6));
  CHECK(torch::allclose(p, n * 0.5, 1e-5, 1e-7));
  CHECK(padding_zero(project(x, 0.1, mask), batch));
}

TEST_CASE("fgm with epsilon 0 and freelb with one step equal plain training", "[unit][adversarial]") {
  const auto batch = make_batch();
  NoAdversary none;
  StepResult plain;
  const auto g_none = step_grads(none, batch, &plain);
  Fgm fgm(0.0);
  StepResult r;
  check_same(step_grads(fgm, batch, &r), g_none);
  CHECK(r.loss_sum == Approx(plain.loss_sum));
  FreeLb freelb(0.3, 0.1, 1, 0.0);
  check_same(step_grads(freelb, batch, &r), g_none);
  CHECK(r.loss_sum == Approx(plain.loss_sum));
  Smart smart(0.3, 0.1, 2, /*lambda=*/0.0);
  check_same(step_grads(smart, batch, &r), g_none);
  CHECK(r.loss_sum == Approx(plain.loss_sum));
  // ... and a real ε does change the gradient (the comparison above can fail).
  Fgm fgm_on(1.0);
  const auto g_fgm = step_grads(fgm_on, batch, &r);
  CHECK_FALSE(torch::allclose(g_fgm.at("out.weight"), g_none.at("out.weight"), 1e-6, 1e-7));
  REQUIRE(r.pass_losses.size() == 2);
  CHECK(r.pass_losses[1] > r.pass_losses[0]);  // the adversarial pass raises the loss
}

TEST_CASE("fgm perturbs by exactly epsilon per example - pgd never leaves the epsilon ball", "[unit][adversarial]") {
  const auto batch = make_batch();
  const auto mask = padding_mask(batch);
  std::vector<torch::Tensor> deltas;
  Fgm fgm(0.7);
  step_grads(fgm, batch, nullptr, &deltas);
  REQUIRE(deltas.size() == 2);
  CHECK_FALSE(deltas[0].defined());  // the clean pass
  for (int64_t b = 0; b < 3; ++b) CHECK(example_norms(deltas[1], mask)[b].item<double>() == Approx(0.7).epsilon(1e-5));

  // α large against ε: every step would leave the ball without the projection.
  Pgd pgd(0.2, 0.15, 4);
  StepResult r;
  step_grads(pgd, batch, &r, &deltas);
  REQUIRE(deltas.size() == 5);
  for (size_t i = 1; i < deltas.size(); ++i) {
    INFO("pass " << i);
    CHECK((example_norms(deltas[i], mask) <= 0.2 * (1 + 1e-5)).all().item<bool>());
    CHECK(padding_zero(deltas[i], batch));
  }
  CHECK(r.projected_examples == std::vector<int64_t>{0, 3, 3, 3});
  CHECK(r.pass_losses.size() == 5);
  CHECK(r.pass_losses.back() > r.pass_losses.front());
}

TEST_CASE("padding positions of delta stay zero for every method", "[unit][adversarial]") {
  const auto batch = make_batch();
  std::vector<std::unique_ptr<Strategy>> all;
  all.push_back(std::make_unique<Fgm>(0.5));
  all.push_back(std::make_unique<Pgd>(0.5, 0.3, 3));
  all.push_back(std::make_unique<FreeLb>(0.5, 0.3, 3, 0.8));
  all.push_back(std::make_unique<FreeLb>(0.0, 0.3, 3, 0.8));  // unbounded
  all.push_back(std::make_unique<FreeAt>(0.5, 3));
  all.push_back(std::make_unique<Smart>(0.5, 0.3, 2, 1.0));
  for (auto& s : all) {
    INFO(s->name());
    std::vector<torch::Tensor> deltas;
    step_grads(*s, batch, nullptr, &deltas);
    int64_t perturbed = 0;
    for (const auto& d : deltas)
      if (d.defined()) {
        CHECK(padding_zero(d, batch));
        perturbed += d.abs().max().item<double>() > 0 ? 1 : 0;
      }
    CHECK(perturbed > 0);
  }
}

TEST_CASE("freeat takes K optimizer steps and moves delta by epsilon signs", "[unit][adversarial]") {
  const auto batch = make_batch();
  auto model = make_model();
  SpyEngine engine(model);
  FreeAt freeat(0.05, 4);
  auto r = freeat.accumulate(engine, batch, 1.0 / 3, 42, 0);
  CHECK(r.stepped);
  CHECK(engine.optimizer_steps == 4);
  CHECK(r.passes == 4);
  REQUIRE(engine.deltas.size() == 4);
  CHECK_FALSE(engine.deltas[0].defined());  // δ₀ = 0
  const auto pad = batch.attention_mask.eq(1).unsqueeze(-1).expand_as(engine.deltas[1]);
  // After one replay every real coordinate is ±ε (gδ has no exact zeros here); never beyond.
  CHECK(torch::allclose(engine.deltas[1].masked_select(pad).abs(), torch::full({pad.sum().item<int64_t>()}, 0.05)));
  for (size_t i = 1; i < engine.deltas.size(); ++i) CHECK(engine.deltas[i].abs().max().item<double>() <= 0.05 + 1e-9);
}

TEST_CASE("initial noise depends on (seed, step, micro-batch) only, never the global RNG", "[unit][adversarial]") {
  const auto batch = make_batch();
  FreeLb freelb(0.5, 0.1, 2, 1.0);
  torch::manual_seed(1);
  const auto a = freelb.initial_delta(batch, kHidden, 42, 5, 0);
  torch::manual_seed(2);
  const auto b = freelb.initial_delta(batch, kHidden, 42, 5, 0);
  CHECK(torch::equal(a, b));
  CHECK_FALSE(torch::equal(a, freelb.initial_delta(batch, kHidden, 42, 6, 0)));
  CHECK_FALSE(torch::equal(a, freelb.initial_delta(batch, kHidden, 43, 5, 0)));
  CHECK_FALSE(torch::equal(a, freelb.initial_delta(batch, kHidden, 42, 5, 1)));
  CHECK(padding_zero(a, batch));
  // |δ₀| ≤ init_mag/sqrt(len_b·H) elementwise; the bound is reached in distribution.
  const auto bound = 1.0 / std::sqrt(2.0 * kHidden);
  CHECK(a[2].abs().max().item<double>() <= bound);
  CHECK(a[2].abs().max().item<double>() > 0.5 * bound);
  CHECK(FreeLb(0.5, 0.1, 2, 0.0).initial_delta(batch, kHidden, 42, 5, 0).abs().max().item<double>() == 0.0);

  // Whole strategy: same (seed, step) → same gradient; another step → another one.
  FreeLb s1(0.5, 0.1, 2, 1.0), s2(0.5, 0.1, 2, 1.0), s3(0.5, 0.1, 2, 1.0);
  const auto g1 = step_grads(s1, batch, nullptr, nullptr, 3);
  check_same(step_grads(s2, batch, nullptr, nullptr, 3), g1, 0.0, 0.0);
  CHECK_FALSE(torch::equal(step_grads(s3, batch, nullptr, nullptr, 4).at("out.weight"), g1.at("out.weight")));
}

TEST_CASE("smart's gradient equals autograd of L + lambda*sKL at the final delta", "[unit][adversarial]") {
  const auto batch = make_batch();
  const double lambda = 2.5;
  Smart smart(0.4, 0.2, 2, lambda);
  std::vector<torch::Tensor> deltas;
  StepResult r;
  const auto g = step_grads(smart, batch, &r, &deltas);
  REQUIRE(deltas.size() == 5);  // forward-only clean, 2 ascent, adversarial side, clean side
  const auto delta_star = deltas[3];
  REQUIRE(delta_star.defined());
  CHECK(delta_star.abs().max().item<double>() > 1e-3);  // the ascent moved away from σ = 1e-5 noise
  CHECK(deltas[2].abs().max().item<double>() > 0.0);

  auto model = make_model();
  auto clean = model->forward(batch, {});
  auto adv = model->forward(batch, delta_star);
  const auto la = torch::log_softmax(clean.logits, -1), lb = torch::log_softmax(adv.logits, -1);
  const auto skl = ((la.exp() - lb.exp()) * (la - lb)).sum();
  ((clean.example_losses.sum() + lambda * skl) / 3.0).backward();
  check_same(g, grads_of(*model), 1e-5, 1e-7);
  CHECK(r.loss_sum == Approx(clean.example_losses.sum().item<double>()));
  // symmetric_kl agrees with the formula above and is 0 between equal outputs.
  CHECK(symmetric_kl(clean.logits, adv.logits, batch).item<double>() == Approx(skl.item<double>()));
  CHECK(symmetric_kl(clean.logits, clean.logits, batch).item<double>() == 0.0);
}

TEST_CASE("smart refuses regression with a clear message", "[unit][adversarial]") {
  auto batch = make_batch();
  batch.labels = torch::tensor({0.5f, 1.5f, -1.0f});
  auto model = make_model();
  SpyEngine engine(model);
  Smart smart(0.3, 0.1, 1, 1.0);
  CHECK_THROWS_WITH(smart.accumulate(engine, batch, 1.0 / 3, 42, 0),
                    Catch::Contains("smart needs a probability output") && Catch::Contains("regression"));
  CHECK(engine.calls == 1);  // refused after the forward-only pass, before any gradient
  for (const auto& p : model->parameters()) CHECK_FALSE(p.grad().defined());
}

namespace {

struct TwoSteps {
  std::map<std::string, torch::Tensor> first, second;  // gradients of step 0 and step 1
  std::vector<torch::Tensor> theta0, theta1;           // parameters before step 0 and before step 1
};

// Step 0 (SGD lr 0.5 on its gradient), then the gradient of step 1, on a fresh toy model.
TwoSteps two_steps(Strategy& strategy, const models::Batch& batch) {
  auto model = make_model();
  TwoSteps out;
  for (const auto& p : model->parameters()) out.theta0.push_back(p.detach().clone());
  framework::LocalEngine engine(model, [&model] {
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters()) {
      p.sub_(0.5 * p.grad());
      p.mutable_grad().reset();
    }
  });
  const double scale = 1.0 / static_cast<double>(batch.size());
  strategy.accumulate(engine, batch, scale, 42, 0);
  out.first = grads_of(*model);
  engine.optimizer_step();
  for (const auto& p : model->parameters()) out.theta1.push_back(p.detach().clone());
  strategy.accumulate(engine, batch, scale, 42, 1);
  out.second = grads_of(*model);
  return out;
}

}  // namespace

TEST_CASE("smart's Bregman term: zero at the first step and with momentum 0, exact at step 2", "[unit][adversarial]") {
  const auto batch = make_batch();
  Smart plain(0.4, 0.2, 2, 1.5);  // μ = 0: the regularizer alone
  const auto ref = two_steps(plain, batch);
  CHECK(plain.teacher().empty());
  CHECK(plain.state().empty());

  // One more forward-only pass (the teacher) per step.
  Smart counted(0.4, 0.2, 2, 1.5, /*bregman=*/1.0, /*momentum=*/0.9);
  std::vector<torch::Tensor> deltas;
  step_grads(counted, batch, nullptr, &deltas);  // checks passes == passes_per_step() == 6
  CHECK(counted.passes_per_step() == 6);

  // β = 0: θ̃ = θ at every step, the term's gradient is 0 (sKL is minimal at equal outputs).
  Smart beta0(0.4, 0.2, 2, 1.5, /*bregman=*/2.0, /*momentum=*/0.0);
  const auto b0 = two_steps(beta0, batch);
  check_same(b0.first, ref.first, 1e-6, 1e-8);
  check_same(b0.second, ref.second, 1e-6, 1e-8);

  // β = 0.5: the same first step (θ̃ = θ₀); at step 2 θ̃ = 0.5·θ₁ + 0.5·θ₀ ≠ θ₁ and the gradient moves by
  // exactly ∇θ μ·(1/Z)·Σ_b sKL_b(f(θ₁), f(θ̃)).
  const double mu = 2.0;
  Smart half(0.4, 0.2, 2, 1.5, mu, /*momentum=*/0.5);
  const auto h = two_steps(half, batch);
  check_same(h.first, ref.first, 1e-6, 1e-8);
  REQUIRE(half.teacher().size() == h.theta1.size());
  for (size_t i = 0; i < h.theta1.size(); ++i)
    CHECK(torch::allclose(half.teacher()[i], 0.5 * h.theta1[i] + 0.5 * h.theta0[i], 1e-6, 1e-7));
  CHECK_FALSE(torch::allclose(h.second.at("out.weight"), ref.second.at("out.weight"), 1e-4, 1e-6));

  auto student = make_model(), teacher = make_model();
  {
    torch::NoGradGuard no_grad;
    auto sp = student->parameters(), tp = teacher->parameters();
    for (size_t i = 0; i < sp.size(); ++i) {
      sp[i].copy_(h.theta1[i]);
      tp[i].copy_(half.teacher()[i]);
    }
  }
  const auto target = teacher->forward(batch, {}).logits.detach();
  (mu * symmetric_kl(student->forward(batch, {}).logits, target, batch) / 3.0).backward();
  const auto bregman = grads_of(*student);
  for (const auto& [k, g] : bregman) {
    INFO(k);
    CHECK(torch::allclose(h.second.at(k) - ref.second.at(k), g, 1e-4, 1e-7));
  }

  // The teacher survives a checkpoint: state() → load_state() → the same next step.
  Smart restored(0.4, 0.2, 2, 1.5, mu, 0.5);
  restored.load_state(half.state(), "strategy.safetensors");
  REQUIRE(restored.teacher().size() == half.teacher().size());
  for (size_t i = 0; i < half.teacher().size(); ++i) CHECK(torch::equal(restored.teacher()[i], half.teacher()[i]));
  CHECK(restored.state().at("smart.teacher_step").item<int64_t>() == 1);
  auto bad = half.state();
  bad.erase("smart.teacher_step");
  CHECK_THROWS_AS(restored.load_state(bad, "x.safetensors"), StrategyError);  // the trainer reports it as a UserError
}
