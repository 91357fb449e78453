// Adversarial regression: a short real-data run per method (configs/demo.yaml: the tiny BERT on
// SIB-200 Chinese, 7 topics) through framework::Trainer must learn: the best dev accuracy clears
// the majority baseline 0.2525 by a recorded margin (docs/adversarial.md lists the measured
// accuracies and time per step), and the training loss falls.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "framework/config/run_config.h"
#include "framework/train/trainer.h"
#include "support/temp_dir.h"

namespace fs = std::filesystem;
using namespace unif;

using unif::test::TempDir;

namespace {

constexpr double kMajorityBaseline = 0.2525;  // 25 / 99 dev examples are the most frequent topic
constexpr int kEpochs = 4;
constexpr double kMargin = 0.05;

struct RunSummary {
  double best_accuracy = 0.0;
  double seconds_per_step = 0.0;
  double first_loss = -1.0, last_loss = -1.0;
};

RunSummary train(const std::vector<std::string>& overrides) {
  TempDir out;
  std::vector<std::string> all = overrides;
  all.push_back("output_dir=" + (out.path / "run").string());
  fs::current_path(UNIF_SOURCE_DIR);  // the config's relative paths (data/, tests/fixtures/)
  auto cfg = framework::load_config("configs/demo.yaml", all, framework::Purpose::Train);
  framework::Trainer trainer(cfg);
  const auto t0 = std::chrono::steady_clock::now();
  REQUIRE(trainer.fit() == 0);
  RunSummary s;
  int64_t steps = 0;
  std::ifstream in(out.path / "run" / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.at("split") == "dev" && j.contains("accuracy"))
      s.best_accuracy = std::max(s.best_accuracy, j.at("accuracy").get<double>());
    if (j.at("split") == "train" && j.contains("loss")) {
      steps = j.at("step").get<int64_t>();
      if (s.first_loss < 0) s.first_loss = j.at("loss").get<double>();
      s.last_loss = j.at("loss").get<double>();
    }
  }
  // Wall time includes the evaluations; it is reported, not asserted.
  s.seconds_per_step = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
                       static_cast<double>(std::max<int64_t>(1, steps));
  return s;
}

void check_method(const std::string& method, double margin, const std::vector<std::string>& extra = {}) {
  INFO(method);
  std::vector<std::string> o = {"adversarial.method=" + method, "training.epochs=" + std::to_string(kEpochs),
                                "training.log_every=11"};
  o.insert(o.end(), extra.begin(), extra.end());
  const auto s = train(o);
  std::printf("[adversarial regression] %-7s best dev accuracy %.4f, loss %.3f -> %.3f, %.3f s/step\n", method.c_str(),
              s.best_accuracy, s.first_loss, s.last_loss, s.seconds_per_step);
  CHECK(s.last_loss < s.first_loss);
  CHECK(s.best_accuracy >= kMajorityBaseline + margin);
}

}  // namespace

// Margins: about half of what each method measured (docs/adversarial.md), so that a method that
// stops learning fails while a different BLAS or thread count does not.
TEST_CASE("adversarial methods learn on sib200_zh: none", "[regression][adversarial]") {
  check_method("none", kMargin);
}
// ε is scaled to the tiny model's embeddings (rows of norm ~0.1): with the default 0.3 fgm, pgd
// and freelb swamp the input and the model falls back to the class prior (accuracy 0.2525).
TEST_CASE("adversarial methods learn on sib200_zh: fgm", "[regression][adversarial]") {
  check_method("fgm", kMargin, {"adversarial.epsilon=0.01"});
}
TEST_CASE("adversarial methods learn on sib200_zh: pgd", "[regression][adversarial]") {
  check_method("pgd", kMargin, {"adversarial.epsilon=0.01", "adversarial.alpha=0.005"});
}
TEST_CASE("adversarial methods learn on sib200_zh: freelb", "[regression][adversarial]") {
  check_method("freelb", kMargin, {"adversarial.epsilon=0.01", "adversarial.alpha=0.005", "adversarial.init_mag=0.01"});
}
// FreeAT steps the optimizer on each of its K replays, so K times as many updates per batch: at the
// config's lr 5e-3 seed 1 fell back to the class prior (0.2525) and a CI machine's kernels did the
// same on seed 42; at lr 2e-3 (about lr / K) six seeds measured 0.333-0.404.
TEST_CASE("adversarial methods learn on sib200_zh: freeat", "[regression][adversarial]") {
  check_method("freeat", kMargin, {"adversarial.epsilon=0.002", "training.optimizer.lr=2e-3"});
}
TEST_CASE("adversarial methods learn on sib200_zh: smart", "[regression][adversarial]") {
  check_method("smart", kMargin);
}
