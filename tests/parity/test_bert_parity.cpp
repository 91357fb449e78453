// Parity of the BERT model with HF transformers 4.28 on tests/fixtures/tiny-bert-zh: the forward pass
// (from model.safetensors and from pytorch_model.bin) and every gradient of one training step of
// method "none" (dense and sparse word-embedding gradients); plus load_pretrained / save_pretrained
// behaviour on good and bad directories.
#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "framework/checkpoint/pretrained.h"
#include "framework/checkpoint/safetensors.h"
#include "framework/common/error.h"
#include "models/heads/sequence_classification.h"
#include "support/temp_dir.h"
#include "support/files.h"

namespace fs = std::filesystem;
using namespace unif;
using framework::TensorMap;

using unif::test::TempDir;

using unif::test::write_text;

namespace {

const fs::path kFixture = fs::path(UNIF_TEST_FIXTURES) / "tiny-bert-zh";

// A fresh directory under the system temp dir, removed at scope exit.
// max over elements of |a-b| - (atol + rtol*|b|) where mask (broadcastable) is true; <= 0 means close.
double worst_excess(const torch::Tensor& a, const torch::Tensor& b, double atol, double rtol,
                    const torch::Tensor& mask = {}) {
  REQUIRE(a.sizes() == b.sizes());
  auto excess = (a.to(torch::kDouble) - b.to(torch::kDouble)).abs() - (atol + rtol * b.to(torch::kDouble).abs());
  if (mask.defined()) excess = excess.masked_fill(mask.logical_not(), -1.0);
  return excess.max().item<double>();
}

models::Batch batch_from(const TensorMap& t) {
  models::Batch b;
  b.input_ids = t.at("input_ids");
  b.token_type_ids = t.at("token_type_ids");
  b.attention_mask = t.at("attention_mask");
  return b;
}

void check_forward(const fs::path& dir) {
  auto ref = framework::read_safetensors(kFixture / "reference" / "forward.safetensors").tensors;
  auto loaded = framework::load_pretrained(dir);
  REQUIRE(loaded.task == unif::Task::Classification);
  CHECK(loaded.report.missing.empty());
  CHECK(loaded.report.unexpected.empty());  // position_ids dropped silently
  auto& model = *loaded.model;
  model.eval();
  torch::NoGradGuard no_grad;
  models::Batch batch = batch_from(ref);
  auto mask = batch.attention_mask.to(torch::kBool).unsqueeze(-1);  // (B, L, 1)

  auto hidden = model.encoder().encode(batch.input_ids, batch.token_type_ids, batch.attention_mask, {}, false);
  CHECK(worst_excess(hidden.embedding_output, ref.at("embedding_output"), 1e-5, 0.0, mask) <= 0);
  CHECK(worst_excess(hidden.last_hidden_state, ref.at("last_hidden_state"), 1e-5, 0.0, mask) <= 0);
  CHECK(worst_excess(hidden.pooler_output, ref.at("pooler_output"), 1e-5, 0.0) <= 0);
  CHECK(worst_excess(model.forward(batch).logits, ref.at("logits"), 1e-5, 0.0) <= 0);
}

torch::Tensor tensor_2d(const nlohmann::json& rows) {
  std::vector<int64_t> flat;
  for (const auto& row : rows)
    for (const auto& v : row) flat.push_back(v.get<int64_t>());
  return torch::tensor(flat, torch::kLong).view({static_cast<int64_t>(rows.size()), -1});
}

// One step of method "none" with dropout 0: g = grad of sum_b l_b / Z vs none/grads.safetensors.
void check_gradients(const std::string& case_name, bool sparse) {
  const fs::path case_dir = kFixture / "reference" / "train" / case_name;
  std::ifstream in(case_dir / "manifest.json");
  const auto manifest = nlohmann::json::parse(in);
  const auto& enc = manifest.at("encoded");
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
  auto& model = *loaded.model;
  model.train();
  auto out = model.forward(batch);
  REQUIRE(out.loss_count == static_cast<int64_t>(z));
  auto loss = out.example_losses.sum() / z;
  CHECK(loss.item<double>() == Approx(manifest["methods"]["none"]["loss_clean"].get<double>()).epsilon(1e-6));
  loss.backward();

  const auto ref = framework::read_safetensors(case_dir / "none" / "grads.safetensors").tensors;
  const std::string words = "bert.embeddings.word_embeddings.weight";
  size_t compared = 0;
  for (const auto& p : model.named_parameters()) {
    INFO(case_name << (sparse ? " sparse " : " dense ") << p.key());
    torch::Tensor grad = p.value().grad();
    REQUIRE(grad.defined());
    if (p.key() == words) {
      const auto& rows = ref.at(words + ".rows");
      const auto& values = ref.at(words + ".values");
      if (sparse) {
        REQUIRE(grad.is_sparse());
        auto g = grad.coalesce();
        CHECK(torch::equal(g.indices().view({-1}), rows));
        CHECK(worst_excess(g.values(), values, 1e-6, 1e-5) <= 0);
      } else {
        auto dense_ref = torch::zeros_like(grad).index_put_({rows}, values);
        CHECK(worst_excess(grad, dense_ref, 1e-6, 1e-5) <= 0);
      }
    } else {
      CHECK(worst_excess(grad, ref.at(p.key()), 1e-6, 1e-5) <= 0);
    }
    ++compared;
  }
  CHECK(compared == ref.size() - 1);  // rows + values stand for one parameter
}

}  // namespace

TEST_CASE("forward matches HF from model.safetensors", "[parity][bert]") { check_forward(kFixture); }

TEST_CASE("forward matches HF from pytorch_model.bin", "[parity][bert]") {
  TempDir tmp;
  fs::copy_file(kFixture / "config.json", tmp.path / "config.json");
  fs::copy_file(kFixture / "pytorch_model.bin", tmp.path / "pytorch_model.bin");
  check_forward(tmp.path);
}

TEST_CASE("one-step gradients match HF (method none, dense and sparse embeddings)", "[parity][bert]") {
  for (const std::string c : {"cls_single", "cls_pair"}) {
    check_gradients(c, /*sparse=*/false);
    check_gradients(c, /*sparse=*/true);
  }
}

TEST_CASE("save_pretrained round-trips with HF names and no position_ids", "[parity][bert]") {
  TempDir tmp;
  auto loaded = framework::load_pretrained(kFixture);
  framework::save_pretrained(tmp.path, *loaded.model, loaded.config);
  auto saved = framework::read_safetensors(tmp.path / "model.safetensors");
  auto original = framework::read_safetensors(kFixture / "model.safetensors");
  original.tensors.erase("bert.embeddings.position_ids");
  REQUIRE(saved.tensors.size() == original.tensors.size());
  for (const auto& [name, t] : original.tensors) {
    INFO(name);
    REQUIRE(saved.tensors.count(name) == 1);
    CHECK(torch::equal(saved.tensors.at(name), t));
  }
  auto again = framework::load_pretrained(tmp.path);
  CHECK(again.config.architectures == std::vector<std::string>{"BertForSequenceClassification"});
  CHECK(again.config.id2label == std::vector<std::string>{"neg", "pos"});
  CHECK(again.report.missing.empty());
  CHECK(again.report.unexpected.empty());
}

TEST_CASE("a plain BertModel checkpoint (no bert. prefix, no head) loads with a fresh head", "[parity][bert]") {
  TempDir tmp;
  auto original = framework::read_safetensors(kFixture / "model.safetensors").tensors;
  TensorMap plain;
  for (const auto& [name, t] : original)
    if (name.rfind("bert.", 0) == 0) plain[name.substr(5)] = t;  // keeps embeddings.position_ids (legacy)
  framework::write_safetensors(tmp.path / "model.safetensors", plain);
  write_text(tmp.path / "config.json",
             R"({"architectures": ["BertModel"], "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
                 "intermediate_size": 64, "max_position_embeddings": 64, "vocab_size": 21128, "model_type": "bert"})");
  auto loaded = framework::load_pretrained(tmp.path, unif::Task::TokenClassification, 5);
  CHECK(loaded.task == unif::Task::TokenClassification);
  CHECK(loaded.report.missing == std::vector<std::string>{"classifier.bias", "classifier.weight"});
  CHECK(loaded.report.unexpected == std::vector<std::string>{"bert.pooler.dense.bias", "bert.pooler.dense.weight"});
  CHECK(torch::equal(loaded.model->word_embeddings()->weight, original.at("bert.embeddings.word_embeddings.weight")));
  CHECK(loaded.model->num_labels() == 5);
  CHECK(loaded.config.architectures == std::vector<std::string>{"BertForTokenClassification"});
}

TEST_CASE("load_pretrained rejects bad directories with a clear UserError", "[parity][bert]") {
  SECTION("missing directory") {
    CHECK_THROWS_MATCHES(framework::load_pretrained("/nonexistent/unif-model"), UserError,
                         Catch::Matchers::Message("model directory '/nonexistent/unif-model' does not exist"));
  }
  SECTION("no config.json") {
    TempDir tmp;
    fs::copy_file(kFixture / "model.safetensors", tmp.path / "model.safetensors");
    CHECK_THROWS_WITH(framework::load_pretrained(tmp.path), Catch::Contains("has no config.json"));
  }
  SECTION("encoder weights missing (strict)") {
    TempDir tmp;
    fs::copy_file(kFixture / "config.json", tmp.path / "config.json");
    auto original = framework::read_safetensors(kFixture / "model.safetensors").tensors;
    original.erase("bert.encoder.layer.1.output.dense.weight");
    framework::write_safetensors(tmp.path / "model.safetensors", original);
    CHECK_THROWS_WITH(
        framework::load_pretrained(tmp.path),
        Catch::Contains("lacks 1 encoder weight(s)") && Catch::Contains("bert.encoder.layer.1.output.dense.weight"));
    framework::PretrainedOptions lenient;
    lenient.strict = false;
    auto loaded = framework::load_pretrained(tmp.path, lenient);
    CHECK(loaded.report.missing == std::vector<std::string>{"bert.encoder.layer.1.output.dense.weight"});
  }
  SECTION("shape mismatch") {
    TempDir tmp;
    fs::copy_file(kFixture / "config.json", tmp.path / "config.json");
    fs::copy_file(kFixture / "model.safetensors", tmp.path / "model.safetensors");
    CHECK_THROWS_AS(framework::load_pretrained(tmp.path, unif::Task::Classification, 3), UserError);
  }
  SECTION("inconsistent architecture in config.json") {
    TempDir tmp;
    fs::copy_file(kFixture / "model.safetensors", tmp.path / "model.safetensors");
    write_text(tmp.path / "config.json", R"({"hidden_size": 30, "num_attention_heads": 4, "model_type": "bert"})");
    CHECK_THROWS_WITH(framework::load_pretrained(tmp.path),
                      Catch::Contains("config.json") && Catch::Contains("multiple of num_attention_heads"));
  }
  SECTION("not a BERT model") {
    TempDir tmp;
    write_text(tmp.path / "config.json", R"({"model_type": "gpt2"})");
    CHECK_THROWS_WITH(framework::load_pretrained(tmp.path), Catch::Contains("expected \"bert\""));
  }
}
