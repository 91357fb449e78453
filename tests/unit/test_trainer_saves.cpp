// The trainer checks what a custom save_model left: a save that leaves no complete
// directory (no COMPLETE marker), or a checkpoint without the trainer's state, is an error, not
// "saved checkpoint ..."; an API run writes config.yaml like `unif train`.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "framework/common/error.h"
#include "framework/config/run_config.h"
#include "framework/train/build.h"
#include "framework/train/trainer.h"
#include "support/temp_dir.h"

using namespace unif::framework;
namespace fs = std::filesystem;
using unif::test::TempDir;

namespace {

RunConfig tiny_run(const fs::path& out) {
  const std::string src = UNIF_SOURCE_DIR;
  const std::string yaml = "task: classification\noutput_dir: " + out.string() + "\nmodel: {pretrained: " + src +
                           "/tests/fixtures/tiny-bert-zh, max_seq_length: 32}\n" + "data: {train: " + src +
                           "/data/sib200_zh/dev.jsonl}\n" +
                           "training: {batch_size: 16, max_steps: 2, save_every: 1, log_every: 1}\n";
  return parse_config(yaml, "tiny.yaml", {}, Purpose::Train);
}

std::string fit_error(const RunConfig& cfg, TrainerParts parts) {
  try {
    Trainer(cfg, std::move(parts)).fit();
  } catch (const unif::UserError& e) { return e.what(); }
  return "";
}

}  // namespace

TEST_CASE("a save_model that writes nothing is an error naming the directory", "[unit][train]") {
  TempDir tmp;
  const auto cfg = tiny_run(tmp.path / "run");
  auto parts = build_trainer_parts(cfg);
  parts.save_model = [](const fs::path&, const std::function<void(const fs::path&)>&) {};  // the doc's old placeholder
  const auto error = fit_error(cfg, std::move(parts));
  CHECK(error.find((tmp.path / "run" / "checkpoints" / "step-1").string()) != std::string::npos);
  CHECK(error.find("no complete directory (no COMPLETE marker)") != std::string::npos);
}

TEST_CASE("a checkpoint save that skips extra is an error", "[unit][train]") {
  TempDir tmp;
  const auto cfg = tiny_run(tmp.path / "run");
  auto parts = build_trainer_parts(cfg);
  parts.save_model = [](const fs::path& dir, const std::function<void(const fs::path&)>&) {
    fs::create_directories(dir);
    std::ofstream(dir / "COMPLETE") << "ok\n";
  };
  const auto error = fit_error(cfg, std::move(parts));
  CHECK(error.find("has no trainer_state.json: save_model must call extra(tmp)") != std::string::npos);
}

TEST_CASE("an API run with a real save writes config.yaml and complete directories", "[unit][train]") {
  TempDir tmp;
  const auto cfg = tiny_run(tmp.path / "run");
  CHECK(fit_error(cfg, build_trainer_parts(cfg)).empty());
  CHECK(fs::exists(tmp.path / "run" / "final" / "COMPLETE"));
  REQUIRE(fs::exists(tmp.path / "run" / "config.yaml"));
  CHECK(load_config(tmp.path / "run" / "config.yaml") == cfg);
}
