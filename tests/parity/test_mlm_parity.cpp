// task masked_lm against HF BertForMaskedLM (transformers 4.30.2, dropout 0): one step on the
// tiny-bert-zh checkpoint with the same masks (tests/fixtures/tiny-bert-zh/reference/mlm, made by
// its make_mlm_reference.py) gives HF's loss and gradients, the tied word-embedding table's dense
// gradient included, with sparse and with dense lookups; a saved model directory reads back as
// BertForMaskedLM with the same loss.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "framework/checkpoint/pretrained.h"
#include "framework/checkpoint/safetensors.h"
#include "framework/checkpoint/state_dict.h"
#include "models/heads/masked_lm.h"
#include "support/temp_dir.h"

namespace fs = std::filesystem;
using namespace unif;

namespace {

const fs::path kFixture = fs::path(UNIF_TEST_FIXTURES) / "tiny-bert-zh";
const fs::path kRef = kFixture / "reference" / "mlm";
const std::string kWords = "bert.embeddings.word_embeddings.weight";

double worst_excess(const torch::Tensor& a, const torch::Tensor& b, double atol = 1e-6, double rtol = 1e-5) {
  REQUIRE(a.sizes() == b.sizes());
  auto ad = a.to(torch::kDouble), bd = b.to(torch::kDouble);
  return ((ad - bd).abs() - (atol + rtol * bd.abs())).max().item<double>();
}

torch::Tensor tensor_2d(const nlohmann::json& rows) {
  std::vector<int64_t> flat;
  for (const auto& row : rows)
    for (const auto& v : row) flat.push_back(v.get<int64_t>());
  return torch::tensor(flat, torch::kLong).view({static_cast<int64_t>(rows.size()), -1});
}

nlohmann::json manifest() {
  std::ifstream in(kRef / "manifest.json");
  return nlohmann::json::parse(in);
}

models::Batch reference_batch(const nlohmann::json& m) {
  models::Batch b;
  b.input_ids = tensor_2d(m.at("input_ids"));
  b.attention_mask = tensor_2d(m.at("attention_mask"));
  b.token_type_ids = tensor_2d(m.at("token_type_ids"));
  b.labels = tensor_2d(m.at("labels"));
  return b;
}

std::shared_ptr<models::EncoderTaskModel> reference_model(bool sparse) {
  auto config = framework::read_hf_config(kFixture / "config.json");
  config.bert.hidden_dropout_prob(0.0).attention_probs_dropout_prob(0.0);
  framework::PretrainedOptions o;
  o.task = unif::Task::MaskedLm;
  o.sparse_embeddings = sparse;
  auto loaded = framework::load_pretrained(kFixture, config, o);
  // The checkpoint has no cls.* (reported missing, fresh): HF's seeded head goes in.
  for (const char* k : {"cls.predictions.bias", "cls.predictions.transform.dense.weight"})
    CHECK(std::find(loaded.report.missing.begin(), loaded.report.missing.end(), k) != loaded.report.missing.end());
  const auto head = framework::read_safetensors(kRef / "head.safetensors").tensors;
  const auto report = framework::load_state_dict(*loaded.model, head);
  CHECK(report.unexpected.empty());
  loaded.model->train();
  return loaded.model;
}

}  // namespace

TEST_CASE("masked_lm: one step equals HF BertForMaskedLM with the same masks (loss and every gradient)",
          "[parity][mlm]") {
  const auto m = manifest();
  const auto ref = framework::read_safetensors(kRef / "grads.safetensors").tensors;
  for (bool sparse : {true, false}) {
    INFO((sparse ? "sparse" : "dense") << " lookups");
    auto model = reference_model(sparse);
    const auto batch = reference_batch(m);
    auto out = model->forward(batch);
    const double z = m.at("Z").get<double>();
    CHECK(out.loss_count == static_cast<int64_t>(z));
    const auto loss = out.example_losses.sum() / z;
    CHECK(loss.item<double>() == Approx(m.at("loss").get<double>()).epsilon(1e-5));
    loss.backward();
    size_t checked = 0;
    for (const auto& p : model->named_parameters()) {
      INFO(p.key());
      auto g = p.value().grad();
      REQUIRE(g.defined());
      if (p.key() == kWords) {
        CHECK_FALSE(g.is_sparse());  // the tied decoder's dense gradient, lookup rows added in
        CHECK(worst_excess(g.index_select(0, ref.at(kWords + ".rows")), ref.at(kWords + ".values")) <= 0);
        CHECK(g.to(torch::kDouble).norm().item<double>() ==
              Approx(ref.at(kWords + ".norm").item<double>()).epsilon(1e-5));
      } else if (ref.count(p.key())) {
        CHECK(worst_excess(g, ref.at(p.key())) <= 0);
      } else {
        FAIL("no reference gradient for " << p.key());
      }
      ++checked;
    }
    CHECK(checked == ref.size() - 2);  // words: rows + values + norm stand for one parameter
  }
}

TEST_CASE("masked_lm: the saved directory is BertForMaskedLM and loads back with the same loss", "[parity][mlm]") {
  const auto m = manifest();
  auto model = reference_model(true);
  model->eval();
  const auto batch = reference_batch(m);
  const double before = model->forward(batch).example_losses.sum().item<double>();
  test::TempDir tmp;
  framework::save_pretrained(tmp.path, *model, framework::read_hf_config(kFixture / "config.json"));
  const auto config = framework::read_hf_config(tmp.path / "config.json");
  REQUIRE(config.architectures == std::vector<std::string>{"BertForMaskedLM"});
  const auto saved = framework::read_safetensors(tmp.path / "model.safetensors").tensors;
  CHECK(saved.count("cls.predictions.transform.LayerNorm.weight") == 1);
  CHECK(saved.count("bert.pooler.dense.weight") == 0);
  auto loaded = framework::load_pretrained(tmp.path);
  CHECK(loaded.task == unif::Task::MaskedLm);
  CHECK(loaded.report.missing.empty());
  CHECK(loaded.report.unexpected.empty());
  loaded.model->eval();
  CHECK(loaded.model->forward(batch).example_losses.sum().item<double>() == Approx(before).epsilon(1e-6));
}
