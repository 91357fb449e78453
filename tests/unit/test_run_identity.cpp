// Run identity (framework/train/run_identity.h): which setting changes refuse a resume. Paths are
// compared as files, not strings; masked_lm's masking settings are part of the identity.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <torch/nn/modules/linear.h>

#include "framework/train/run_identity.h"

using namespace unif::framework;
using unif::Task;
namespace fs = std::filesystem;

namespace {

nlohmann::json identity_of(const RunConfig& cfg) {
  torch::nn::Linear model(2, 2);
  return run_identity(cfg, LabelSet::from_names({"a", "b"}), *model, 10);
}

}  // namespace

TEST_CASE("run identity: the same file written another way is no change", "[unit][resume]") {
  const auto dir = fs::temp_directory_path() / "unif_unit_identity";
  fs::create_directories(dir / "data");
  std::ofstream(dir / "data" / "train.jsonl") << "{}\n";
  const auto cwd = fs::current_path();
  fs::current_path(dir);
  RunConfig a;
  a.data.train = "data/train.jsonl";
  for (const std::string& other :
       std::vector<std::string>{"./data/train.jsonl", "data//train.jsonl", (dir / "data/train.jsonl").string(),
                                "data/../data/train.jsonl"}) {
    RunConfig b = a;
    b.data.train = other;
    INFO(other);
    CHECK(identity_changes(identity_of(a), identity_of(b)).empty());
  }
  RunConfig c = a;
  c.model.pretrained = "models/x/";  // a directory that does not exist: compared lexically, trailing '/' aside
  RunConfig d = a;
  d.model.pretrained = "./models/x";
  CHECK(identity_changes(identity_of(c), identity_of(d)).empty());
  RunConfig e = a;
  e.data.train = "data/other.jsonl";
  const auto changes = identity_changes(identity_of(a), identity_of(e));
  fs::current_path(cwd);
  REQUIRE(changes.size() == 1);
  CHECK(changes[0] == "data.train: 'data/train.jsonl' -> 'data/other.jsonl'");
}

TEST_CASE("run identity: masked_lm's mlm_probability and whole_word_mask are checked", "[unit][resume]") {
  RunConfig a;
  a.task = Task::MaskedLm;
  RunConfig b = a;
  b.model.mlm_probability = 0.3;
  auto changes = identity_changes(identity_of(a), identity_of(b));
  REQUIRE(changes.size() == 1);
  CHECK(changes[0] == "model.mlm_probability: 0.15 -> 0.3");
  b = a;
  b.model.whole_word_mask = true;
  changes = identity_changes(identity_of(a), identity_of(b));
  REQUIRE(changes.size() == 1);
  CHECK(changes[0] == "model.whole_word_mask: false -> true");
  // A checkpoint written before these keys were part of the identity is not refused for lacking them.
  auto old = identity_of(a);
  old.erase("model.mlm_probability");
  old.erase("model.whole_word_mask");
  CHECK(identity_changes(old, identity_of(a)).empty());
  // Other tasks do not carry them.
  CHECK_FALSE(identity_of(RunConfig{}).contains("model.mlm_probability"));
}
