// End to end: framework::Trainer on the fixture's one-step SGD run (reference/train/cls_pair/none/
// unif_sgd.yaml, lr 1, dropout 0, sparse word-embedding gradients) with parallel.devices [cpu] and
// [cpu, cpu, cpu] (shards 3, 3, 2): both final models equal each other and the HF reference
// params - g within |a-b| <= 1e-6 + 1e-5|b|.
#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include <torch/types.h>

#include "framework/checkpoint/safetensors.h"
#include "framework/config/run_config.h"
#include "framework/train/trainer.h"
#include "support/temp_dir.h"
#include "support/fixture_config.h"

namespace fs = std::filesystem;
using namespace unif;

using unif::test::TempDir;

namespace {

const fs::path kFixture = unif::test::kTinyBertZh;
const fs::path kCase = unif::test::fixture_case("cls_pair");
const std::string kWords = "bert.embeddings.word_embeddings.weight";

double worst_excess(const torch::Tensor& a, const torch::Tensor& b) {
  REQUIRE(a.sizes() == b.sizes());
  auto ad = a.to(torch::kDouble), bd = b.to(torch::kDouble);
  return ((ad - bd).abs() - (1e-6 + 1e-5 * bd.abs())).max().item<double>();
}

// Trains the fixture config with `devices` and returns final/model.safetensors.
framework::TensorMap train(const std::string& devices, const fs::path& out) {
  const std::string yaml = unif::test::fixture_config("cls_pair", "none", "unif_sgd.yaml", out);
  auto cfg = framework::parse_config(yaml, "unif_sgd.yaml", {"parallel.devices=" + devices}, framework::Purpose::Train);
  framework::Trainer trainer(cfg);
  REQUIRE(trainer.fit() == 0);
  REQUIRE(fs::exists(out / "final" / "COMPLETE"));
  return framework::read_safetensors(out / "final" / "model.safetensors").tensors;
}

}  // namespace

TEST_CASE("unif train: 3 CPU replicas give the one-device model and HF's params - g", "[parallel][trainer]") {
  TempDir tmp;
  const auto one = train("[cpu]", tmp.path / "one");
  const auto three = train("[cpu,cpu,cpu]", tmp.path / "three");
  const auto start = framework::read_safetensors(kFixture / "model.safetensors").tensors;
  const auto g = framework::read_safetensors(kCase / "none" / "grads.safetensors").tensors;
  REQUIRE(one.size() == three.size());
  size_t compared = 0;
  for (const auto& [name, value] : one) {
    INFO(name);
    REQUIRE(three.count(name) == 1);
    CHECK(worst_excess(three.at(name), value) <= 0);
    torch::Tensor grad;
    if (name == kWords)
      grad = torch::zeros_like(value).index_put_({g.at(kWords + ".rows")}, g.at(kWords + ".values"));
    else if (g.count(name))
      grad = g.at(name);
    if (!grad.defined() || !start.count(name)) continue;
    const auto expected = start.at(name) - grad;  // one SGD step, lr 1
    CHECK(worst_excess(three.at(name), expected) <= 0);
    CHECK(worst_excess(value, expected) <= 0);
    ++compared;
  }
  CHECK(compared == g.size() - 1);  // rows + values stand for one parameter
}
