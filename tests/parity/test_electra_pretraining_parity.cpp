// task replaced_token_detection against HF (transformers 5.25): an ElectraForMaskedLM generator and an
// ElectraForPreTraining discriminator sharing their embeddings, one step on a fixed batch with the
// reference's masks and samples (tests/fixtures/electra_rtd, made by its make_reference.py): the
// two losses, the total MLM + 50·RTD and every parameter's gradient, with sparse and dense lookups.
// Also: the inverse-CDF samples follow the generator's distribution at the batch's uniforms and do
// not depend on how the batch is split; the generator saved alone holds the shared embeddings.
#include <catch2/catch.hpp>

#include <fstream>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "framework/checkpoint/pretrained.h"
#include "framework/checkpoint/safetensors.h"
#include "framework/checkpoint/state_dict.h"
#include "models/electra/pretraining.h"
#include "models/heads/factory.h"

namespace fs = std::filesystem;

namespace {

const fs::path kRtd = fs::path(UNIF_TEST_FIXTURES) / "electra_rtd";

double rtd_excess(const torch::Tensor& a, const torch::Tensor& b, double atol = 1e-6, double rtol = 1e-4) {
  REQUIRE(a.sizes() == b.sizes());
  auto ad = a.to(torch::kDouble), bd = b.to(torch::kDouble);
  return ((ad - bd).abs() - (atol + rtol * bd.abs())).max().item<double>();
}

nlohmann::json rtd_manifest() {
  std::ifstream in(kRtd / "reference.json");
  return nlohmann::json::parse(in);
}

std::shared_ptr<unif::models::ElectraPretrainingModel> rtd_pair(bool sparse) {
  using namespace unif;
  framework::PretrainedOptions d;
  d.task = Task::ReplacedTokenDetection;
  d.sparse_embeddings = sparse;
  auto disc = framework::load_pretrained(kRtd / "discriminator", d);
  CHECK(disc.report.missing.empty());
  framework::PretrainedOptions g = d;
  g.task = Task::MaskedLm;
  auto gen = framework::load_pretrained(kRtd / "generator", g);
  CHECK(gen.report.missing.empty());
  auto pair = std::make_shared<models::ElectraPretrainingModel>(
      std::dynamic_pointer_cast<models::ElectraForPreTrainingImpl>(disc.model),
      std::dynamic_pointer_cast<models::EncoderForMaskedLMImpl>(gen.model), 50.0);
  pair->eval();  // the reference ran without dropout
  return pair;
}

using Tensors = std::map<std::string, torch::Tensor>;

Tensors rtd_reference() {
  Tensors out;
  for (const auto& [name, t] : unif::framework::read_safetensors(kRtd / "reference.safetensors").tensors) out[name] = t;
  return out;
}

unif::models::Batch rtd_batch(const Tensors& ref) {
  unif::models::Batch b;
  b.input_ids = ref.at("input_ids");
  b.token_type_ids = ref.at("token_type_ids");
  b.attention_mask = ref.at("attention_mask");
  b.labels = ref.at("labels");
  return b;
}

torch::Tensor dense_grad(const torch::Tensor& p) {
  REQUIRE(p.grad().defined());
  return p.grad().is_sparse() ? p.grad().to_dense() : p.grad();
}

}  // namespace

TEST_CASE("replaced_token_detection: one step equals HF's generator + discriminator (losses, every gradient)",
          "[parity][electra]") {
  using namespace unif;
  const auto m = rtd_manifest();
  const auto ref = rtd_reference();
  const auto batch = rtd_batch(ref);
  const double masked = m.at("masked_count").get<double>(), tokens = m.at("real_tokens").get<double>();
  for (bool sparse : {true, false}) {
    INFO((sparse ? "sparse" : "dense") << " lookups");
    auto pair = rtd_pair(sparse);
    const auto out = pair->forward_with_samples(batch, ref.at("samples"));
    REQUIRE(out.loss_count == static_cast<int64_t>(masked));
    const auto loss = out.example_losses.sum() / masked;  // Z = M; the discriminator's share scaled by M / T
    CHECK(loss.item<double>() == Approx(m.at("total_loss").get<double>()).epsilon(1e-6));
    using P = models::ElectraPretrainingModel;
    const auto stats = out.logits.sum(0).to(torch::kDouble);
    CHECK(stats[P::kStatMlmLoss].item<double>() / masked == Approx(m.at("mlm_loss").get<double>()).epsilon(1e-6));
    CHECK(stats[P::kStatRtdLoss].item<double>() / tokens == Approx(m.at("rtd_loss").get<double>()).epsilon(1e-6));
    CHECK(stats[P::kStatMasked].item<double>() == masked);
    CHECK(stats[P::kStatTokens].item<double>() == tokens);
    CHECK(stats[P::kStatReplaced].item<double>() == ref.at("disc_labels").sum().item<double>());
    {  // each model's logits on its input: the generator's at the selected positions, the discriminator's
      torch::NoGradGuard no_grad;
      CHECK(rtd_excess(pair->generator()->forward(batch).logits, ref.at("gen_logits")) <= 0);
      models::Batch detect = batch;
      detect.input_ids = ref.at("disc_ids");
      const auto real = batch.attention_mask.to(torch::kBool);  // padding: each side's own values
      CHECK(rtd_excess(pair->discriminator()->detect(detect).masked_select(real),
                       ref.at("disc_logits").masked_select(real)) <= 0);
    }
    loss.backward();
    // The discriminator's parameters, the shared embeddings' gradient summing both models' share.
    size_t checked = 0;
    for (const auto& p : pair->discriminator()->named_parameters()) {
      INFO(p.key());
      CHECK(rtd_excess(dense_grad(p.value()), ref.at("grad.discriminator." + p.key())) <= 0);
      ++checked;
    }
    for (const auto& p : pair->generator()->named_parameters()) {
      INFO("generator " << p.key());
      CHECK(rtd_excess(dense_grad(p.value()), ref.at("grad.generator." + p.key())) <= 0);
      ++checked;
    }
    CHECK(checked == m.at("discriminator_parameters").size() + m.at("generator_parameters").size());
    CHECK(pair->named_parameters().size() == checked);  // the shared embeddings listed once
  }
}

TEST_CASE("replaced_token_detection: samples are the generator's inverse CDF at each uniform, whatever the split",
          "[parity][electra]") {
  using namespace unif;
  const auto ref = rtd_reference();
  auto batch = rtd_batch(ref);
  torch::manual_seed(3);
  batch.uniforms = torch::rand(batch.labels.sizes(), torch::kFloat64);
  const auto logits = ref.at("gen_logits");  // (M, V) at the selected positions, row-major
  const auto samples = models::ElectraPretrainingModel::sample(batch, logits);
  const auto picked = batch.labels.reshape({-1}).ne(-100).nonzero().flatten();
  CHECK((samples.reshape({-1}).ne(-100).nonzero().flatten() == picked).all().item<bool>());
  const auto cdf = logits.to(torch::kFloat64).softmax(-1).cumsum(-1);
  const auto u = batch.uniforms.reshape({-1}).index_select(0, picked);
  const auto ids = samples.reshape({-1}).index_select(0, picked);
  for (int64_t i = 0; i < picked.size(0); ++i) {
    const int64_t id = ids[i].item<int64_t>();
    INFO("selected position " << i << ", sample " << id);
    CHECK(cdf[i][id].item<double>() >= u[i].item<double>());
    if (id > 0) CHECK(cdf[i][id - 1].item<double>() < u[i].item<double>());
  }
  // Example by example (a replica's shard): the same samples.
  int64_t row = 0;
  for (int64_t b = 0; b < batch.size(); ++b) {
    models::Batch one;
    one.input_ids = batch.input_ids.narrow(0, b, 1);
    one.labels = batch.labels.narrow(0, b, 1);
    one.uniforms = batch.uniforms.narrow(0, b, 1);
    const int64_t n = one.labels.ne(-100).sum().item<int64_t>();
    CHECK((models::ElectraPretrainingModel::sample(one, logits.narrow(0, row, n)) == samples.narrow(0, b, 1))
              .all()
              .item<bool>());
    row += n;
  }
  batch.uniforms = torch::Tensor();
  CHECK_THROWS_WITH(models::ElectraPretrainingModel::sample(batch, logits), Catch::Contains("no uniforms"));
}

TEST_CASE("replaced_token_detection: the generator saved alone holds the shared embeddings; reloading it shares again",
          "[parity][electra]") {
  using namespace unif;
  auto pair = rtd_pair(true);
  const auto stored = framework::read_safetensors(kRtd / "generator" / "model.safetensors").tensors;
  const auto alone = pair->standalone_generator();
  const auto state = framework::state_dict(*alone);
  for (const auto& [name, t] : stored) {
    INFO(name);
    REQUIRE(state.count(name));
    CHECK(torch::equal(state.at(name), t));
  }
  // The pair's generator reads the discriminator's embeddings module, not a copy.
  CHECK(pair->generator()->word_embeddings()->weight.data_ptr() == pair->word_embeddings()->weight.data_ptr());
  // set_generator: a changed standalone copy's own weights come in; the shared ones stay the discriminator's.
  {
    torch::NoGradGuard no_grad;
    for (auto& p : alone->parameters()) p.add_(1.0);
  }
  const auto words = pair->word_embeddings()->weight.clone();
  pair->set_generator(*alone);
  CHECK(torch::equal(pair->word_embeddings()->weight, words));
  CHECK(torch::equal(pair->generator()->named_parameters()["generator_lm_head.bias"],
                     alone->named_parameters()["generator_lm_head.bias"]));
  // A clone (a replica) shares within itself and holds equal values.
  auto copy = std::dynamic_pointer_cast<models::ElectraPretrainingModel>(pair->clone_model());
  REQUIRE(copy);
  CHECK(copy->generator()->word_embeddings()->weight.data_ptr() == copy->word_embeddings()->weight.data_ptr());
  CHECK(copy->word_embeddings()->weight.data_ptr() != pair->word_embeddings()->weight.data_ptr());
  const auto a = pair->named_parameters(), b = copy->named_parameters();
  REQUIRE(a.size() == b.size());
  for (const auto& p : a) CHECK(torch::equal(p.value(), b[p.key()]));
}

TEST_CASE("replaced_token_detection: models that cannot pair are refused", "[parity][electra]") {
  using namespace unif;
  auto pair = rtd_pair(false);
  // A generator whose embeddings are wider than the discriminator's cannot share them.
  auto o = pair->generator()->options();
  o.embedding_size(o.embedding_width() * 2);
  auto wide = std::make_shared<models::EncoderForMaskedLMImpl>(o);
  auto disc = std::dynamic_pointer_cast<models::ElectraForPreTrainingImpl>(pair->discriminator()->clone_model());
  CHECK_THROWS_WITH(models::ElectraPretrainingModel(disc, wide, 50.0), Catch::Contains("embedding_size"));
  // A BERT generator is no ELECTRA.
  auto bert = models::EncoderConfig()
                  .vocab_size(4000)
                  .hidden_size(8)
                  .num_attention_heads(1)
                  .intermediate_size(9)
                  .num_hidden_layers(1)
                  .max_position_embeddings(64);
  CHECK_THROWS_WITH(models::ElectraPretrainingModel(disc, std::make_shared<models::EncoderForMaskedLMImpl>(bert), 50.0),
                    Catch::Contains("ELECTRA"));
  CHECK_THROWS_WITH(models::make_encoder_task_model(Task::ReplacedTokenDetection, bert, 2),
                    Catch::Contains("ELECTRA models only"));
  // The generator's defaults: a quarter of the width, heads of the discriminator's head width.
  const auto g = models::default_generator_options(pair->discriminator()->options());
  CHECK(g.hidden_size() == 8);
  CHECK(g.num_attention_heads() == 1);
  CHECK(g.intermediate_size() == 9);
  CHECK(g.embedding_width() == 16);
  CHECK(g.num_hidden_layers() == 2);
}
