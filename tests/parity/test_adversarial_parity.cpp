// Adversarial parity: one step of none / fgm / pgd / freelb on the tiny-bert-zh fixture (dropout 0)
// through the real strategies and LocalEngine gives the total gradient g of SPEC §5 that the HF
// reference generator wrote (reference/train/<case>/<method>/grads.safetensors), for dense and
// sparse word-embedding gradients; the losses of every pass and the projected-example counts match
// the manifest. Hyper-parameters and Z come from manifest.json.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "framework/checkpoint/pretrained.h"
#include "framework/checkpoint/safetensors.h"
#include "framework/config/run_config.h"
#include "framework/train/build.h"
#include "framework/engines/local_engine.h"

namespace fs = std::filesystem;
using namespace unif;

namespace {

const fs::path kFixture = fs::path(UNIF_TEST_FIXTURES) / "tiny-bert-zh";
const std::string kWords = "bert.embeddings.word_embeddings.weight";

// max over elements of |a-b| - (atol + rtol*|b|); <= 0 means close.
double worst_excess(const torch::Tensor& a, const torch::Tensor& b, double atol = 1e-6, double rtol = 1e-5) {
  REQUIRE(a.sizes() == b.sizes());
  const auto bd = b.to(torch::kDouble);
  return ((a.to(torch::kDouble) - bd).abs() - (atol + rtol * bd.abs())).max().item<double>();
}

torch::Tensor tensor_2d(const nlohmann::json& rows) {
  std::vector<int64_t> flat;
  for (const auto& row : rows)
    for (const auto& v : row) flat.push_back(v.get<int64_t>());
  return torch::tensor(flat, torch::kLong).view({static_cast<int64_t>(rows.size()), -1});
}

// The manifest's hyper_parameters as the config section make_strategy reads.
framework::AdversarialConfig adversarial_config(const nlohmann::json& hp) {
  framework::AdversarialConfig cfg;
  cfg.method = parse_enum<framework::AdversarialMethod>(hp.at("method").get<std::string>(), "method");
  if (hp.contains("epsilon")) cfg.epsilon = hp.at("epsilon").get<double>();
  if (hp.contains("alpha")) cfg.alpha = hp.at("alpha").get<double>();
  if (hp.contains("steps")) cfg.steps = hp.at("steps").get<int64_t>();
  if (hp.contains("init_mag")) cfg.init_mag = hp.at("init_mag").get<double>();
  return cfg;
}

void check_method(const std::string& case_name, const std::string& method, bool sparse) {
  INFO(case_name << " " << method << (sparse ? " sparse" : " dense"));
  const fs::path case_dir = kFixture / "reference" / "train" / case_name;
  std::ifstream in(case_dir / "manifest.json");
  const auto manifest = nlohmann::json::parse(in);
  const auto& enc = manifest.at("encoded");
  const auto& spec = manifest.at("methods").at(method);
  models::Batch batch;
  batch.input_ids = tensor_2d(enc.at("input_ids"));
  batch.token_type_ids = tensor_2d(enc.at("token_type_ids"));
  batch.attention_mask = tensor_2d(enc.at("attention_mask"));
  batch.labels = torch::tensor(enc.at("labels").get<std::vector<int64_t>>(), torch::kLong);
  const double z = manifest.at("loss_normaliser_Z").get<double>();

  auto config = framework::read_hf_config(kFixture / "config.json");
  config.bert.hidden_dropout_prob(0.0).attention_probs_dropout_prob(0.0);
  framework::PretrainedOptions options;
  options.sparse_embeddings = sparse;
  auto loaded = framework::load_pretrained(kFixture, config, options);
  loaded.model->train();
  int64_t optimizer_steps = 0;
  framework::LocalEngine engine(loaded.model, [&optimizer_steps] { ++optimizer_steps; });

  auto strategy = framework::make_strategy(adversarial_config(spec.at("hyper_parameters")));
  const auto r = strategy->accumulate(engine, batch, 1.0 / z, 42, 0);
  CHECK(optimizer_steps == 0);
  CHECK_FALSE(r.stepped);
  CHECK(r.passes == spec.at("passes").get<int64_t>());
  CHECK(strategy->passes_per_step() == r.passes);
  CHECK(r.loss_sum / z == Approx(spec.at("loss_clean").get<double>()).epsilon(1e-5));
  const auto losses = spec.at("losses_per_pass").get<std::vector<double>>();
  REQUIRE(r.pass_losses.size() == losses.size());
  for (size_t i = 0; i < losses.size(); ++i) {
    INFO("pass " << i);
    CHECK(r.pass_losses[i] / z == Approx(losses[i]).epsilon(1e-5));
  }
  CHECK(r.projected_examples == spec.at("projected_examples_per_step").get<std::vector<int64_t>>());

  const auto ref = framework::read_safetensors(case_dir / spec.at("files").at("grads").get<std::string>()).tensors;
  const auto& noise_only = spec.at("grad_stats").at("noise_only_tensors");
  size_t compared = 0;
  for (const auto& p : loaded.model->named_parameters()) {
    INFO(p.key());
    const torch::Tensor grad = p.value().grad();
    REQUIRE(grad.defined());
    ++compared;
    if (p.key() == kWords) {
      const auto& rows = ref.at(kWords + ".rows");
      const auto& values = ref.at(kWords + ".values");
      REQUIRE(grad.is_sparse() == sparse);
      const auto dense_ref = torch::zeros({grad.size(0), grad.size(1)}).index_put_({rows}, values);
      if (sparse) {
        // Several passes each add a sparse gradient: coalesce (duplicate rows summed) first.
        const auto g = grad.coalesce();
        CHECK(torch::equal(g.indices().view({-1}), rows));
        CHECK(worst_excess(g.values(), values) <= 0);
        CHECK(worst_excess(g.to_dense(), dense_ref) <= 0);
      } else {
        CHECK(worst_excess(grad, dense_ref) <= 0);
      }
      continue;
    }
    bool noise = false;
    for (const auto& n : noise_only) noise = noise || n.get<std::string>() == p.key();
    if (noise) {  // exact gradient 0 (softmax shift invariance); both sides are float32 noise
      CHECK(grad.abs().max().item<double>() < 1e-9);
      continue;
    }
    CHECK(worst_excess(grad, ref.at(p.key())) <= 0);
  }
  CHECK(compared == ref.size() - 1);  // rows + values stand for one parameter
}

}  // namespace

TEST_CASE("one-step gradients of none, fgm, pgd, freelb match the HF reference", "[parity][adversarial]") {
  for (const std::string c : {"cls_single", "cls_pair"})
    for (const std::string m : {"none", "fgm", "pgd", "freelb"}) {
      check_method(c, m, /*sparse=*/false);
      check_method(c, m, /*sparse=*/true);
    }
}

TEST_CASE("the reference's unif_sgd.yaml files parse to the manifest's hyper-parameters", "[parity][adversarial]") {
  for (const std::string c : {"cls_single", "cls_pair"}) {
    const fs::path case_dir = kFixture / "reference" / "train" / c;
    std::ifstream in(case_dir / "manifest.json");
    const auto manifest = nlohmann::json::parse(in);
    for (const std::string m : {"none", "fgm", "pgd", "freelb"}) {
      INFO(c << " " << m);
      std::ifstream yin(case_dir / m / "unif_sgd.yaml");
      const std::string text((std::istreambuf_iterator<char>(yin)), std::istreambuf_iterator<char>());
      const auto cfg = framework::parse_config(text, m + "/unif_sgd.yaml");
      const auto want = adversarial_config(manifest.at("methods").at(m).at("hyper_parameters"));
      CHECK(cfg.adversarial == want);
      CHECK(framework::make_strategy(cfg.adversarial)->passes_per_step() ==
            manifest.at("methods").at(m).at("passes").get<int64_t>());
    }
  }
}
