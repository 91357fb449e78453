// Objectives beyond plain cross-entropy (docs/objectives.md): training.loss (label smoothing,
// focal, class weights) against hand-computed values and torch's own cross_entropy; distillation's
// loss against hand values; R-Drop's step against autograd of its formula; MLM masking (HF's
// 80/10/10 rule, specials never masked, whole words, determinism per (seed, epoch, example)); the
// MLM head's tied decoder.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <set>

#include <torch/nn/functional/linear.h>
#include <torch/nn/functional/loss.h>
#include <torch/types.h>

#include "adversarial/rdrop.h"
#include "adversarial/smart.h"
#include "framework/data/mlm.h"
#include "framework/text/vocab.h"
#include "framework/engines/local_engine.h"
#include "framework/train/trainer.h"
#include "models/heads/distillation.h"
#include "models/heads/factory.h"
#include "models/heads/loss.h"
#include "models/heads/masked_lm.h"

using namespace unif;
namespace F = torch::nn::functional;

namespace {

// logits giving p = [0.25, 0.75]
torch::Tensor quarter_logits(int64_t n) { return torch::tensor({0.0, std::log(3.0)}).repeat({n, 1}); }

models::EncoderConfig tiny_options(double dropout = 0.0) {
  return models::EncoderConfig()
      .vocab_size(50)
      .hidden_size(16)
      .num_hidden_layers(1)
      .num_attention_heads(2)
      .intermediate_size(32)
      .max_position_embeddings(16)
      .hidden_dropout_prob(dropout)
      .attention_probs_dropout_prob(dropout)
      .initializer_range(0.3);
}

models::Batch small_batch(int64_t b, int64_t l, torch::Tensor labels) {
  torch::manual_seed(5);
  models::Batch batch;
  batch.input_ids = torch::randint(5, 50, {b, l}, torch::kLong);
  batch.token_type_ids = torch::zeros({b, l}, torch::kLong);
  batch.attention_mask = torch::ones({b, l}, torch::kLong);
  batch.labels = std::move(labels);
  return batch;
}

}  // namespace

TEST_CASE("label smoothing: hand value and torch cross_entropy(label_smoothing) with weights", "[objectives]") {
  models::LossOptions o;
  o.label_smoothing = 0.2;
  auto l = models::classification_loss(quarter_logits(1), torch::tensor({1}, torch::kLong), o);
  // q = [0.1, 0.9]: 0.1·(-ln 0.25) + 0.9·(-ln 0.75)
  CHECK(l.item<double>() == Approx(0.39754330131859184).epsilon(1e-6));

  torch::manual_seed(1);
  const auto logits = torch::randn({9, 4}, torch::kDouble);
  const auto y = torch::tensor({0, 1, 2, 3, 3, 2, -100, 1, 0}, torch::kLong);
  o.class_weights = torch::tensor({0.5, 2.0, 1.0, 3.0}, torch::kDouble);
  const double ours =
      models::classification_loss(logits, y, o).sum().item<double>() / models::loss_normalizer(y, o.class_weights);
  const double torch_ref =
      F::cross_entropy(logits, y, F::CrossEntropyFuncOptions().weight(o.class_weights).label_smoothing(0.2))
          .item<double>();
  CHECK(ours == Approx(torch_ref).epsilon(1e-12));
  // The check has teeth: without the weights in Z the value differs.
  CHECK(models::classification_loss(logits, y, o).sum().item<double>() / 8.0 != Approx(torch_ref).epsilon(1e-6));
}

TEST_CASE("focal loss: hand values (Lin et al. -(1-p_y)^gamma log p_y) and gamma 0 = cross-entropy", "[objectives]") {
  models::LossOptions o;
  o.focal_gamma = 2.0;
  auto l = models::classification_loss(quarter_logits(2), torch::tensor({1, 0}, torch::kLong), o);
  CHECK(l[0].item<double>() == Approx(0.017980129528236306).epsilon(1e-6));  // 0.25² · -ln 0.75
  CHECK(l[1].item<double>() == Approx(0.7797905781299385).epsilon(1e-6));    // 0.75² · -ln 0.25
  o.class_weights = torch::tensor({2.0f, 0.5f});
  l = models::classification_loss(quarter_logits(2), torch::tensor({1, 0}, torch::kLong), o);
  CHECK(l[0].item<double>() == Approx(0.5 * 0.017980129528236306).epsilon(1e-6));  // α_t = w_y
  CHECK(l[1].item<double>() == Approx(2.0 * 0.7797905781299385).epsilon(1e-6));

  torch::manual_seed(2);
  const auto logits = torch::randn({6, 3});
  const auto y = torch::tensor({0, 1, 2, 2, -100, 1}, torch::kLong);
  models::LossOptions plain;
  models::LossOptions g0;
  g0.focal_gamma = 0.0;
  g0.label_smoothing = 0.0;
  CHECK(torch::allclose(models::classification_loss(logits, y, plain),
                        F::cross_entropy(logits, y, F::CrossEntropyFuncOptions().reduction(torch::kNone))));
}

// (1 - p)^γ with 0 < γ < 1 has an infinite derivative at p = 1: a confident item (p rounds to 1 in
// float32) must still give finite gradients, and ordinary logits the formula of loss.h.
TEST_CASE("focal loss: gamma in (0, 1) - finite gradients where p rounds to 1 - values as the formula",
          "[objectives]") {
  for (double gamma : {0.5, 0.1, 0.01, 1.0, 2.0}) {
    for (double smoothing : {0.0, 0.1}) {
      INFO("gamma " << gamma << ", label smoothing " << smoothing);
      models::LossOptions o;
      o.focal_gamma = gamma;
      o.label_smoothing = smoothing;
      // p = [1, e^-100] (rounds to 1, 0 in float32) and [1 - 2e-9, 2e-9] (1 - p tiny but not 0), either target.
      auto logits = torch::tensor({{100.0f, 0.0f}, {100.0f, 0.0f}, {0.0f, -20.0f}, {0.0f, -104.0f}}).requires_grad_();
      const auto y = torch::tensor({0, 1, 0, 0}, torch::kLong);
      const auto l = models::classification_loss(logits, y, o);
      l.sum().backward();
      CHECK(torch::isfinite(l).all().item<bool>());
      CHECK(torch::isfinite(logits.grad()).all().item<bool>());
      // Ordinary logits: ℓ = Σ_c q_c (1 - p_c)^γ (-log p_c), in float64 by hand.
      torch::manual_seed(3);
      const auto z = torch::randn({5, 3}, torch::kDouble) * 3;
      const auto t = torch::tensor({0, 2, 1, 1, 0}, torch::kLong);
      const auto p = torch::softmax(z, -1);
      const auto q = torch::one_hot(t, 3).to(torch::kDouble) * (1 - smoothing) + smoothing / 3;
      const auto reference = (q * (1 - p).pow(gamma) * -p.log()).sum(-1);
      const auto value = models::classification_loss(z.to(torch::kFloat), t, o).to(torch::kDouble);
      CHECK(torch::allclose(value, reference, 1e-5, 1e-7));
      // And its gradient, against autograd of the formula where nothing is near p = 1.
      auto zf = z.clone().requires_grad_();
      models::classification_loss(zf, t, o).sum().backward();
      auto zr = z.clone().requires_grad_();
      const auto pr = torch::softmax(zr, -1);
      (q * (1 - pr).pow(gamma) * -pr.log()).sum().backward();
      CHECK(torch::allclose(zf.grad(), zr.grad(), 1e-6, 1e-9));
    }
  }
}

TEST_CASE("class weights: torch's weighted mean with Z = sum of the targets' weights - balanced = n/(C count)",
          "[objectives]") {
  models::LossOptions o;
  o.class_weights = torch::tensor({2.0f, 0.5f});
  const auto y = torch::tensor({0, 1}, torch::kLong);
  const double z = models::loss_normalizer(y, o.class_weights);
  CHECK(z == Approx(2.5));
  const double mean = models::classification_loss(quarter_logits(2), y, o).sum().item<double>() / z;
  CHECK(mean == Approx(1.1665719033862687).epsilon(1e-6));  // (2·-ln .25 + .5·-ln .75) / 2.5
  CHECK(mean ==
        Approx(
            F::cross_entropy(quarter_logits(2), y, F::CrossEntropyFuncOptions().weight(o.class_weights)).item<double>())
            .epsilon(1e-6));
  CHECK(models::loss_normalizer(torch::tensor({0, -100, 1, 1}, torch::kLong), {}) == 3.0);

  const auto w = models::balanced_class_weights({3, 1, 0});  // n = 4, C = 3
  CHECK(w[0].item<double>() == Approx(4.0 / 9.0));
  CHECK(w[1].item<double>() == Approx(4.0 / 3.0));
  CHECK(w[2].item<double>() == 1.0);  // never a target
}

TEST_CASE("heads use training.loss: classification and token classification", "[objectives]") {
  models::LossOptions o;
  o.label_smoothing = 0.1;
  o.focal_gamma = 1.5;
  o.class_weights = torch::tensor({1.0f, 2.0f, 0.5f});
  for (auto kind : {unif::Task::Classification, unif::Task::TokenClassification}) {
    torch::manual_seed(3);
    auto model = models::make_encoder_task_model(kind, tiny_options(), 3);
    model->set_loss_options(o);
    const bool token = kind == unif::Task::TokenClassification;
    auto labels = token ? torch::tensor({{-100, 0, 2, 1, -100}, {-100, 1, 1, -100, -100}}, torch::kLong)
                        : torch::tensor({2, 1}, torch::kLong);
    auto batch = small_batch(2, 5, labels);
    auto out = model->forward(batch);
    auto flat_logits = token ? out.logits.reshape({10, 3}) : out.logits;
    auto expect = models::classification_loss(flat_logits, labels.reshape({-1}), o);
    if (token) expect = expect.view({2, 5}).sum(1);
    CHECK(torch::allclose(out.example_losses, expect));
    // A clone (data-parallel replica) keeps the loss.
    auto copy = std::dynamic_pointer_cast<models::EncoderTaskModel>(model->clone_model());
    CHECK(torch::allclose(copy->forward(batch).example_losses, out.example_losses));
  }
}

TEST_CASE("distillation: a T^2 KL(teacher/T || student/T) + (1-a) CE - hand value and the model wrapper",
          "[objectives]") {
  // student [0, 0], teacher [ln 3, 0], T = 2, target 0
  const auto s = torch::zeros({1, 2}), t = torch::tensor({{std::log(3.0), 0.0}}).to(torch::kFloat);
  const auto kl = models::distillation_kl(unif::Task::Classification, s, t, torch::tensor({0}), 2.0);
  CHECK(kl.item<double>() == Approx(0.03634078287047353).epsilon(1e-5));

  torch::manual_seed(4);
  auto student = models::make_encoder_task_model(unif::Task::Classification, tiny_options(), 2);
  auto teacher = models::make_encoder_task_model(unif::Task::Classification, tiny_options().num_hidden_layers(2), 2);
  models::DistillationModel model(student, teacher, 2.0, 0.3);
  // Exactly the student's parameters, by the student's names.
  std::set<std::string> names, student_names;
  for (const auto& p : model.named_parameters()) names.insert(p.key());
  for (const auto& p : student->named_parameters()) student_names.insert(p.key());
  CHECK(names == student_names);
  auto batch = small_batch(3, 4, torch::tensor({0, 1, 1}, torch::kLong));
  model.train();
  auto out = model.forward(batch);
  auto s_out = student->forward(batch);
  torch::Tensor t_logits;
  {
    torch::NoGradGuard g;
    auto b = batch;
    b.labels = torch::Tensor();
    t_logits = teacher->forward(b).logits;
  }
  const auto pt = torch::softmax(t_logits / 2.0, -1);
  const auto manual_kl = (pt * (pt.log() - torch::log_softmax(s_out.logits / 2.0, -1))).sum(-1);
  CHECK(torch::allclose(out.example_losses, 0.3 * 4.0 * manual_kl + 0.7 * s_out.example_losses, 1e-5, 1e-6));
  out.example_losses.sum().backward();
  for (const auto& p : teacher->parameters()) CHECK_FALSE(p.grad().defined());
  CHECK_FALSE(teacher->is_training());
}

TEST_CASE("rdrop: one twin pass - gradient of mean task loss + alpha/2 symmetric KL with the same dropout masks",
          "[objectives]") {
  const double alpha = 0.7;
  torch::manual_seed(6);
  auto proto = models::make_encoder_task_model(unif::Task::Classification, tiny_options(0.3), 3);
  proto->train();
  auto batch = small_batch(4, 5, torch::tensor({0, 2, 1, 2}, torch::kLong));
  // Strategy on a LocalEngine.
  auto a = proto->clone_model();
  framework::LocalEngine engine(a, [] {});
  adversarial::RDrop rdrop(alpha);
  torch::manual_seed(100);
  auto r = rdrop.accumulate(engine, batch, 0.25, 42, 0);
  CHECK(r.passes == 2);
  // Reference: the formula by hand, two forwards drawing the same masks.
  auto b = proto->clone_model();
  torch::manual_seed(100);
  auto o1 = b->forward(batch), o2 = b->forward(batch);
  const auto l1 = torch::log_softmax(o1.logits, -1), l2 = torch::log_softmax(o2.logits, -1);
  const auto skl = ((l1.exp() - l2.exp()) * (l1 - l2)).sum();
  CHECK(skl.item<double>() > 1e-6);  // dropout made the two passes differ: the KL term is live
  const auto loss = 0.5 * (o1.example_losses.sum() + o2.example_losses.sum()) + alpha * 0.5 * skl;
  (loss * 0.25).backward();
  CHECK(r.loss_sum == Approx(0.5 * (o1.example_losses.sum() + o2.example_losses.sum()).item<double>()).epsilon(1e-6));
  auto pa = a->named_parameters(), pb = b->named_parameters();
  for (const auto& p : pb) {
    INFO(p.key());
    const auto& ga = pa[p.key()].grad();
    REQUIRE(ga.defined());
    CHECK(torch::allclose(ga.is_sparse() ? ga.to_dense() : ga, p.value().grad(), 1e-5, 1e-7));
  }
}

namespace {

framework::EncodedExample mlm_example(int64_t n_pieces, int64_t pieces_per_word = 1) {
  framework::EncodedExample e;
  e.input_ids.push_back(2);  // [CLS]
  e.word_start.push_back(-1);
  for (int64_t i = 0; i < n_pieces; ++i) {
    e.input_ids.push_back(10 + i % 80);
    e.word_start.push_back(i / pieces_per_word);
  }
  e.input_ids.push_back(3);  // [SEP]
  e.word_start.push_back(-1);
  e.token_type_ids.assign(e.input_ids.size(), 0);
  return e;
}

}  // namespace

TEST_CASE("mlm masking: 15% selected - 80% [MASK] 10% random 10% kept - specials never - per (seed epoch example)",
          "[objectives][mlm]") {
  framework::MlmMasking m;
  m.probability = 0.15;
  m.mask_id = 4;
  m.vocab_size = 100;
  m.seed = 42;
  const auto e = mlm_example(200);
  int64_t total = 0, selected = 0, masked = 0, kept = 0;
  std::vector<int64_t> ids, labels;
  for (int64_t index = 0; index < 200; ++index) {
    framework::mlm_mask(e, m, 0, index, ids, labels);
    CHECK(labels.front() == -100);
    CHECK(labels.back() == -100);
    CHECK(ids.front() == 2);
    CHECK(ids.back() == 3);
    for (size_t p = 1; p + 1 < ids.size(); ++p) {
      ++total;
      if (labels[p] == -100) {
        CHECK(ids[p] == e.input_ids[p]);
        continue;
      }
      CHECK(labels[p] == e.input_ids[p]);
      ++selected;
      if (ids[p] == 4)
        ++masked;
      else if (ids[p] == e.input_ids[p])
        ++kept;
    }
  }
  const double sel = static_cast<double>(selected) / static_cast<double>(total);
  CHECK(sel == Approx(0.15).margin(0.01));
  CHECK(static_cast<double>(masked) / static_cast<double>(selected) == Approx(0.8).margin(0.02));
  // kept: 10%, plus random draws that hit the original id (1% of 10%)
  CHECK(static_cast<double>(kept) / static_cast<double>(selected) == Approx(0.101).margin(0.015));

  std::vector<int64_t> a_ids, a_labels, b_ids, b_labels;
  framework::mlm_mask(e, m, 3, 7, a_ids, a_labels);
  framework::mlm_mask(e, m, 3, 7, b_ids, b_labels);
  CHECK(a_ids == b_ids);
  CHECK(a_labels == b_labels);
  framework::mlm_mask(e, m, 4, 7, b_ids, b_labels);
  CHECK(a_labels != b_labels);  // a new epoch draws new masks
  framework::mlm_mask(e, m, 3, 8, b_ids, b_labels);
  CHECK(a_labels != b_labels);  // another example, another draw
}

TEST_CASE("mlm whole-word masking selects whole words within round(n p) pieces", "[objectives][mlm]") {
  framework::MlmMasking m;
  m.probability = 0.15;
  m.whole_word = true;
  m.mask_id = 4;
  m.vocab_size = 100;
  const auto e = mlm_example(60, 3);  // 20 words of 3 pieces; n = 62 tokens -> budget round(9.3) = 9
  std::vector<int64_t> ids, labels;
  for (int64_t index = 0; index < 50; ++index) {
    framework::mlm_mask(e, m, 0, index, ids, labels);
    std::map<int64_t, int> per_word;
    int64_t count = 0;
    for (size_t p = 0; p < labels.size(); ++p)
      if (labels[p] != -100) {
        ++per_word[e.word_start[p]];
        ++count;
      }
    CHECK(count == 9);
    for (const auto& [w, k] : per_word) CHECK(k == 3);
  }
}

TEST_CASE("mlm collate: padding is never a target - batch rows equal mlm_mask of their example", "[objectives][mlm]") {
  framework::MlmMasking m;
  m.mask_id = 4;
  m.vocab_size = 100;
  m.probability = 0.5;
  std::vector<framework::EncodedExample> enc{mlm_example(3), mlm_example(9)};
  auto batch = framework::collate_mlm(enc, {1, 0}, m, 2);
  REQUIRE(batch.labels.sizes() == torch::IntArrayRef({2, 11}));
  std::vector<int64_t> ids, labels;
  framework::mlm_mask(enc[0], m, 2, 0, ids, labels);
  for (size_t p = 0; p < ids.size(); ++p) {
    CHECK(batch.input_ids[1][static_cast<int64_t>(p)].item<int64_t>() == ids[p]);
    CHECK(batch.labels[1][static_cast<int64_t>(p)].item<int64_t>() == labels[p]);
  }
  CHECK((batch.labels[1].narrow(0, 5, 6) == -100).all().item<bool>());
  CHECK((batch.attention_mask[1].narrow(0, 5, 6) == 0).all().item<bool>());
}

TEST_CASE("BertForMaskedLM: HF names - decoder tied to the word embeddings - loss over the labelled positions",
          "[objectives][mlm]") {
  torch::manual_seed(8);
  auto model = std::make_shared<models::EncoderForMaskedLMImpl>(tiny_options());
  std::set<std::string> names;
  for (const auto& p : model->named_parameters()) names.insert(p.key());
  for (const char* k :
       {"cls.predictions.bias", "cls.predictions.transform.dense.weight", "cls.predictions.transform.dense.bias",
        "cls.predictions.transform.LayerNorm.weight", "cls.predictions.transform.LayerNorm.bias"})
    CHECK(names.count(k) == 1);
  CHECK(names.count("cls.predictions.decoder.weight") == 0);  // tied: the word embedding table itself
  CHECK(names.count("bert.pooler.dense.weight") == 0);
  model->train();
  auto labels = torch::full({2, 6}, -100, torch::kLong);
  labels[0][2] = 7;
  labels[1][1] = 9;
  labels[1][4] = 11;
  auto batch = small_batch(2, 6, labels);
  auto out = model->forward(batch);
  REQUIRE(out.logits.sizes() == torch::IntArrayRef({3, 50}));
  CHECK(out.loss_count == 3);
  // Full logits without labels; the picked rows agree, and so does HF's mean CE over labelled tokens.
  auto unlabelled = batch;
  unlabelled.labels = torch::Tensor();
  auto full = model->forward(unlabelled).logits;  // (2, 6, 50)
  REQUIRE(full.sizes() == torch::IntArrayRef({2, 6, 50}));
  CHECK(torch::allclose(out.logits[1], full[1][1], 1e-5, 1e-6));
  const auto hf_loss = F::cross_entropy(full.reshape({12, 50}), labels.reshape({12}));
  CHECK(out.example_losses.sum().item<double>() / 3.0 == Approx(hf_loss.item<double>()).epsilon(1e-5));
  // Tied: the decoder is the embedding table — a change to the table changes the logits. Not a
  // constant shift: the transform ends in a LayerNorm (weight 1, bias 0 here), whose output sums to
  // zero, so adding 1 to every entry of row 7 would move logit 7 by float noise only (that is what
  // LibTorch 2.11 showed).
  {
    torch::NoGradGuard g;
    auto& w = model->word_embeddings()->weight;
    w[7].add_(torch::randn_like(w[7]));
  }
  CHECK_FALSE(torch::allclose(model->forward(unlabelled).logits.select(2, 7), full.select(2, 7)));
}

TEST_CASE("the trainer's normaliser Z: examples - labelled tokens - sum of the targets' class weights",
          "[objectives]") {
  models::Batch b;
  b.input_ids = torch::zeros({3, 4}, torch::kLong);
  b.labels = torch::tensor({1, 0, 1}, torch::kLong);
  CHECK(framework::loss_normalizer(unif::Task::Classification, b) == 3.0);
  CHECK(framework::loss_normalizer(unif::Task::Classification, b, torch::tensor({0.5f, 2.0f})) == 4.5);
  b.labels = torch::tensor({{-100, 1, 0, -100}, {-100, 1, -100, -100}, {-100, -100, -100, -100}}, torch::kLong);
  CHECK(framework::loss_normalizer(unif::Task::TokenClassification, b) == 3.0);
  CHECK(framework::loss_normalizer(unif::Task::TokenClassification, b, torch::tensor({0.5f, 2.0f})) == 4.5);
  CHECK(framework::loss_normalizer(unif::Task::MaskedLm, b) == 3.0);
}
