// Regression tier on the real all-MiniLM-L6-v2 (label `pretrained_regression`): one short
// fine-tuning run per task with the configs/minilm/*.yaml a user runs, on the bundled English data
// (a fixed dev subset, max_steps instead of epochs). Each must clear a bar set from measured runs
// with a margin for seed and thread-count noise, and a negative control must stay below the same
// bar: the same set-up with a learning rate of 1e-9 (one step: the weights do not move, so this is
// what any trainer that does not fine-tune reaches: the pretrained encoder with its freshly
// initialized head). The bars sit far above the task baselines (majority class, Pearson 0, all-"O"
// entity F1 0, the first sentence of the context). The ctest fixture `pretrained_model`
// (scripts/fetch-model.sh) fetches the model first; when it cannot, these tests are reported as
// failed ("Not Run"), never as passed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/config/run_config.h"
#include "framework/data/records.h"
#include "framework/data/span_decoding.h"
#include "framework/metrics/span.h"
#include "framework/train/trainer.h"
#include "support/span_baseline.h"
#include "support/pretrained_model.h"

using namespace unif::framework;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = UNIF_SOURCE_DIR;

struct RunResult {
  std::map<std::string, double> last;  // the final dev event's metrics
  double seconds = 0.0;
};

// The first `n` lines of a bundled data file, in a temporary file (a fixed dev subset).
fs::path head_lines(const std::string& rel, size_t n) {
  const auto out =
      fs::temp_directory_path() / ("unif_pretrained_regression_" + fs::path(rel).parent_path().filename().string() +
                                   "_" + std::to_string(n) + ".jsonl");
  std::ifstream in(kSource / rel);
  REQUIRE(in.good());
  std::ofstream o(out);
  std::string line;
  for (size_t i = 0; i < n && std::getline(in, line); ++i) o << line << '\n';
  return out;
}

// Trains configs/minilm/CONFIG with the overrides and returns the last dev event.
RunResult run(const std::string& config, const std::string& tag, std::vector<std::string> overrides) {
  REQUIRE(fs::is_regular_file(unif::test::pretrained_model_dir() / "model.safetensors"));
  const auto out = fs::temp_directory_path() / ("unif_pretrained_regression_" + tag);
  fs::remove_all(out);
  overrides.push_back("output_dir=" + out.string());
  overrides.push_back("training.resume=never");
  overrides.push_back("training.save_every=1000000");  // no intermediate checkpoints
  const auto cwd = fs::current_path();
  fs::current_path(kSource);  // the configs name data/ relative to the repository
  const auto t0 = std::chrono::steady_clock::now();
  try {
    auto cfg = load_config(kSource / "configs" / "minilm" / config, overrides, Purpose::Train);
    Trainer trainer(cfg);
    REQUIRE(trainer.fit() == 0);
  } catch (...) {
    fs::current_path(cwd);
    throw;
  }
  fs::current_path(cwd);
  RunResult r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::ifstream f(out / "metrics.jsonl");
  std::string line;
  while (std::getline(f, line)) {
    auto j = nlohmann::json::parse(line);
    if (j["split"] != "dev") continue;
    r.last.clear();
    for (const auto& [key, value] : j.items())
      if (value.is_number()) r.last[key] = value.get<double>();
  }
  fs::remove_all(out);
  REQUIRE(!r.last.empty());
  return r;
}

// The positive run and its negative control (lr 1e-9, one step), both on the same dev subset.
struct Pair {
  RunResult trained, control;
};

Pair run_pair(const std::string& config, const std::string& tag, const std::vector<std::string>& common,
              const std::vector<std::string>& positive) {
  auto pos = common;
  pos.insert(pos.end(), positive.begin(), positive.end());
  auto neg = common;
  neg.push_back("training.optimizer.lr=1e-9");
  neg.push_back("training.max_steps=1");
  return {run(config, tag, pos), run(config, tag + "_control", neg)};
}

double majority_fraction(const fs::path& file, const std::string& field) {
  std::ifstream in(file);
  std::map<std::string, int> counts;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++counts[nlohmann::json::parse(line)[field].dump()];
    ++n;
  }
  int top = 0;
  for (const auto& [label, c] : counts) top = std::max(top, c);
  return n ? static_cast<double>(top) / n : 0.0;
}

}  // namespace

// Bars and measured figures (seed 42) next to each case. Times were measured on the 2-core machine
// while five other jobs shared it (load 13-18): wall times there are upper bounds; the CPU time
// (user) of each case was under a minute.

// banking77_en: 77 intents; majority class of the 100-question dev subset 0.04 (of the full dev 0.02).
// Measured: 0.24 after 30 steps of 16 at lr 6e-4 (150 s wall under load, 38 s user); control 0.03.
TEST_CASE("minilm fine-tunes banking77_en classification", "[pretrained_regression][classification]") {
  const auto dev = head_lines("data/banking77_en/dev.jsonl", 100);
  const double majority = majority_fraction(dev, "label");
  auto r =
      run_pair("classification.yaml", "banking77",
               {"data.dev=" + dev.string(), "training.batch_size=16", "training.log_every=10", "training.eval_every=0"},
               {"training.max_steps=30", "training.optimizer.lr=6e-4"});
  WARN("banking77_en dev accuracy " << r.trained.last["accuracy"] << " (" << r.trained.seconds << " s); control "
                                    << r.control.last["accuracy"] << " (" << r.control.seconds << " s); majority "
                                    << majority);
  const double bar = 0.15;
  CHECK(bar > majority + 0.1);
  CHECK(r.trained.last["accuracy"] >= bar);
  CHECK(r.control.last["accuracy"] < bar);
}

// snli_en: entailment / neutral / contradiction; majority class of the 100-pair dev subset 0.34
// (of the full dev 0.358). Only lr 1e-4 (the config's) learned: 30 steps of 16 at lr 2e-4 scored 0.34
// (= majority), 40 steps of 32 at lr 3e-4 0.32. Measured at lr 1e-4, batch 32 (2026-12-03, with
// other jobs on the machine): a 40-step schedule 0.36 / 0.42 after 20 / 40 steps; a 60-step schedule
// 0.34 / 0.57 / 0.52 after 20 / 40 / 60 steps (train loss 1.10 -> 1.03; 130 s wall at 15 samples/s);
// control 0.34. Bar: majority + 0.10.
TEST_CASE("minilm fine-tunes snli_en pair classification", "[pretrained_regression][pair]") {
  const auto dev = head_lines("data/snli_en/dev.jsonl", 100);
  const double majority = majority_fraction(dev, "label");
  auto r =
      run_pair("pair_classification.yaml", "snli",
               {"data.dev=" + dev.string(), "training.batch_size=32", "training.log_every=10", "training.eval_every=0"},
               {"training.max_steps=60"});
  WARN("snli_en dev accuracy " << r.trained.last["accuracy"] << " (" << r.trained.seconds << " s); control "
                               << r.control.last["accuracy"] << " (" << r.control.seconds << " s); majority "
                               << majority);
  const double bar = majority + 0.10;
  CHECK(r.trained.last["accuracy"] >= bar);
  CHECK(r.control.last["accuracy"] < bar);
}

// stsb_en: similarity 0-5; a predictor without signal (the mean) has Pearson 0. The head starts by
// learning the mean score, so short runs need a high rate. Measured: Pearson 0.015 after 30 steps of
// 16 at lr 2e-4; 0.268 / 0.273 after 20 / 40 steps of 32 at lr 6e-4 (432 s wall under load, 88 s
// user); control -0.32. With dropout 0.1 these 40 steps are a coin toss of the dropout masks: seeds
// 42 / 1 / 2 scored 0.34 / 0.06 / 0.16 padded and -0.09 / 0.04 / 0.17 unpadded (model.unpadded draws
// other masks: the same distribution over other tensor shapes). Without dropout both paths train the
// same to 4 digits of the loss and score 0.679 (2026-12-06), so the test runs without it.
TEST_CASE("minilm fine-tunes stsb_en regression", "[pretrained_regression][regression_task]") {
  const auto dev = head_lines("data/stsb_en/dev.jsonl", 100);
  auto r =
      run_pair("regression.yaml", "stsb",
               {"data.dev=" + dev.string(), "training.batch_size=32", "training.log_every=10", "training.eval_every=0"},
               {"training.max_steps=40", "training.optimizer.lr=6e-4",
                "model.bert={hidden_dropout_prob: 0.0, attention_probs_dropout_prob: 0.0}"});
  WARN("stsb_en dev Pearson " << r.trained.last["pearson"] << " (" << r.trained.seconds << " s); control "
                              << r.control.last["pearson"] << " (" << r.control.seconds << " s)");
  const double bar = 0.15;
  CHECK(r.trained.last["pearson"] >= bar);
  CHECK(r.control.last["pearson"] < bar);
}

// wnut17_en: BIO entity tags in tweets; all-"O" scores entity F1 0. 30 steps of 16 at lr 3e-4
// still scored entity F1 0 (the head first learns "O"). Measured, 40 steps of 32 at lr 3e-4 (session
// 6, other jobs on the machine): F1 0 after 20 steps, 0.14 after 40 (precision 0.41, recall 0.08;
// 55 s wall); control 0.012. Bar: half the measured F1.
TEST_CASE("minilm fine-tunes wnut17_en token classification", "[pretrained_regression][token]") {
  const auto dev = head_lines("data/wnut17_en/dev.jsonl", 100);
  auto r =
      run_pair("token_classification.yaml", "wnut17",
               {"data.dev=" + dev.string(), "training.batch_size=32", "training.log_every=10", "training.eval_every=0"},
               {"training.max_steps=40", "training.optimizer.lr=3e-4"});
  WARN("wnut17_en dev entity F1 " << r.trained.last["f1"] << " (" << r.trained.seconds << " s); control "
                                  << r.control.last["f1"] << " (" << r.control.seconds << " s)");
  const double bar = 0.07;
  CHECK(r.trained.last["f1"] >= bar);
  CHECK(r.control.last["f1"] < bar);
}

// xquad_en: SQuAD-style questions; the baseline answers with the first sentence of the context.

// The CI case: a short run on windows of 128 pieces (the config ships 256: a window costs about
// 2.2x less), a 60-question dev subset. 30 steps are too few for the answers to improve (the
// full runs' F1 sits at the control's level for 2 epochs before it climbs, see the hidden case),
// so the bar is on the dev loss (the mean of the start and end cross-entropies over the windows):
// it falls well below the control's, the pretrained encoder with a fresh qa_outputs head; beating
// the first-sentence baseline takes the config's full schedule (the hidden case below).
// Measured (2026-12-03, idle machine): dev loss 3.06 after 30 steps of 16 at lr 3e-4 (84 s wall;
// F1 0.051, EM 0.033: no better than the control yet), control 4.80 (F1 0.081, 14 s).
TEST_CASE("minilm fine-tunes xquad_en span extraction", "[pretrained_regression][span]") {
  const auto dev = head_lines("data/xquad_en/dev.jsonl", 60);
  auto r = run_pair("span_extraction.yaml", "xquad",
                    {"data.dev=" + dev.string(), "training.batch_size=16", "training.log_every=10",
                     "training.eval_every=0", "model.max_seq_length=128", "span.doc_stride=64"},
                    {"training.max_steps=30", "training.optimizer.lr=3e-4"});
  WARN("xquad_en dev loss " << r.trained.last["loss"] << " F1 " << r.trained.last["f1"] << " EM "
                            << r.trained.last["exact_match"] << " (" << r.trained.seconds << " s); control loss "
                            << r.control.last["loss"] << " F1 " << r.control.last["f1"] << " (" << r.control.seconds
                            << " s)");
  const double bar = 3.9;
  CHECK(r.trained.last["loss"] <= bar);
  CHECK(r.control.last["loss"] > bar);
}

// Hidden (`[.]`: about 21 minutes on 2 idle cores, too long for CI): the config as shipped (4
// epochs of 54 steps of 16 windows of 256 pieces, lr 3e-4) on the whole dev set against the
// first-sentence baseline. Measured (2026-12-03, idle machine, 20 min 36 s): dev F1 0.084 / 0.097 /
// 0.220 / 0.310 (EM 0.020 / 0.059 / 0.158 / 0.227) after epochs 1-4; the first-sentence baseline
// F1 0.0926 (EM 0). (lr 1e-4 for 3 epochs reached F1 0.139.) Run it by hand:
// bin/pretrained_regression "[span_full]".
TEST_CASE("minilm fine-tunes xquad_en span extraction beyond the first-sentence baseline",
          "[.][pretrained_regression][span_full]") {
  const auto base = unif::test::first_sentence_baseline(kSource / "data/xquad_en/dev.jsonl", squad_metrics);
  const auto r = run("span_extraction.yaml", "xquad_full", {"training.eval_every=0"});
  WARN("xquad_en dev F1 " << r.last.at("f1") << " EM " << r.last.at("exact_match") << " (" << r.seconds
                          << " s); first sentence F1 " << base.at("f1") << " EM " << base.at("exact_match"));
  CHECK(r.last.at("f1") >= base.at("f1") + 0.1);
}
