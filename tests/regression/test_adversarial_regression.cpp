// Adversarial regression: a short real-data run per method (configs/demo.yaml: the tiny BERT on
// SIB-200 Chinese, 7 topics) through framework::Trainer must learn: the best dev accuracy clears
// the majority baseline 0.2525 by a recorded margin (docs/adversarial.md lists the measured
// accuracies and time per step), and the training loss falls.
#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "framework/config/run_config.h"
#include "framework/train/trainer.h"

namespace fs = std::filesystem;
using namespace unif;

namespace {

constexpr double kMajorityBaseline = 0.2525;  // 25 / 99 dev examples are the most frequent topic

struct TempDir {
  fs::path path;
  TempDir() {
    static std::atomic<int> counter{0};
    path = fs::temp_directory_path() / ("unif-adv-regression-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(path);
  }
  ~TempDir() { std::error_code ec; fs::remove_all(path, ec); }
};

struct RunSummary {
  double best_accuracy = 0.0;
  double first_loss = -1.0, last_loss = -1.0;
};

RunSummary train(const std::vector<std::string>& overrides) {
  TempDir out;
  std::vector<std::string> all = overrides;
  all.push_back("output_dir=" + out.path.string());
  fs::current_path(UNIF_SOURCE_DIR);  // the config's relative paths (data/, tests/fixtures/)
  auto cfg = framework::load_config("configs/demo.yaml", all, framework::Purpose::Train);
  framework::Trainer trainer(cfg);
  REQUIRE(trainer.fit() == 0);
  RunSummary s;
  std::ifstream in(out.path / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.at("split") == "dev" && j.contains("accuracy")) s.best_accuracy = std::max(s.best_accuracy, j.at("accuracy").get<double>());
    if (j.at("split") == "train" && j.contains("loss")) {
      if (s.first_loss < 0) s.first_loss = j.at("loss").get<double>();
      s.last_loss = j.at("loss").get<double>();
    }
  }
  return s;
}

void check_method(const std::string& method, double margin, const std::vector<std::string>& extra = {}) {
  INFO(method);
  std::vector<std::string> o = {"adversarial.method=" + method, "training.epochs=2", "training.log_every=20",
                                "training.save_every=1000000", "model.max_seq_length=48"};
  o.insert(o.end(), extra.begin(), extra.end());
  const auto s = train(o);
  CHECK(s.last_loss < s.first_loss);
  CHECK(s.best_accuracy >= kMajorityBaseline + margin);
}

}  // namespace
