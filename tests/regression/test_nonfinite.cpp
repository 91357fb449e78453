// training.nonfinite (SPEC §7), by injection through `unif train` on the tiny
// fixture model: a learning rate of 1e30 (the parameters blow up, the loss turns NaN a step later)
// and a planted overflow in one batch (a regression target of 3e38: float32 holds it, its squared
// error does not). `error` (the default) stops with exit 3 and `error: ... step N ...`, keeping the
// checkpoints before N and writing no final/; `skip` leaves parameters and optimizer state exactly
// as if the batch had not been there, counts the skip in metrics.jsonl and in the run's last line,
// and decides alike with replicas. The 2-process case is in tests/parallel/test_distributed.cpp.
#include <sys/wait.h>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "framework/checkpoint/safetensors.h"
#include "support/temp_dir.h"
#include "support/files.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using nlohmann::json;

using unif::test::slurp;

namespace {

const fs::path kUnif = fs::path(UNIF_BINARY_DIR) / "bin" / "unif";
const fs::path kSource = UNIF_SOURCE_DIR;

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

// `unif train` from the source directory with `args`; stdout + stderr into `log`; the exit status.
int train(const std::string& args, const fs::path& log) {
  const std::string cmd = "cd " + q(kSource) + " && " + kUnif.string() + " train " + args + " > " + q(log) + " 2>&1";
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::vector<std::string> lines_of(const fs::path& p, size_t first = 1, size_t count = 1000000) {
  std::vector<std::string> out;
  std::ifstream in(p, std::ios::binary);
  size_t n = 0;
  for (std::string l; std::getline(in, l);)
    if (++n >= first && out.size() < count) out.push_back(l);
  return out;
}

void write_lines(const fs::path& p, const std::vector<std::string>& lines) {
  std::ofstream out(p, std::ios::binary);
  for (const auto& l : lines) out << l << "\n";
}

bool all_finite(const fs::path& model) {
  for (const auto& [name, t] : unif::framework::read_safetensors(model).tensors)
    if (t.is_floating_point() && !torch::isfinite(t).all().item<bool>()) return false;
  return true;
}

// Regression on 8 + 4 lines of stsb_en: batches of 4 in file order, constant lr, no dropout.
const std::string kRegression =
    "configs/regression.yaml --set training.batch_size=4 --set training.shuffle=false "
    "--set training.schedule.name=constant --set training.schedule.warmup_ratio=0 --set "
    "training.schedule.warmup_steps=0 "
    "--set training.log_every=10 --set model.bert.hidden_dropout_prob=0 "
    "--set model.bert.attention_probs_dropout_prob=0 --set data.dev=null ";

// data/stsb_en/train.jsonl lines [first, first + count), the first one's label replaced by `label`.
std::vector<std::string> stsb(size_t first, size_t count, const std::string& label = "") {
  auto lines = lines_of(kSource / "data" / "stsb_en" / "train.jsonl", first, count);
  if (!label.empty()) {
    auto j = json::parse(lines.front());
    j["label"] = json::parse(label);
    lines.front() = j.dump();
  }
  return lines;
}

}  // namespace

TEST_CASE("nonfinite error: a learning rate of 1e30 stops with exit 3 at the step that overflowed", "[nonfinite]") {
  // Before: exit 0 and a final/ full of NaNs.
  unif::test::TempDir tmp;
  const auto out = tmp / "run";
  write_lines(tmp / "dev.jsonl", lines_of(kSource / "data" / "sib200_zh" / "dev.jsonl", 1, 16));
  const int rc = train(
      "configs/demo.yaml --set training.optimizer.lr=1e30 --set training.max_steps=8 "
      "--set training.save_every=1 --set training.keep_checkpoints=20 --set training.log_every=1 "
      "--set data.dev=" +
          q(tmp / "dev.jsonl") + " --set output_dir=" + q(out),
      tmp / "log");
  const auto log = slurp(tmp / "log");
  INFO(log);
  REQUIRE(rc == 3);
  std::smatch m;
  REQUIRE(std::regex_search(log, m, std::regex("(^|\n)error: training\\.nonfinite: step ([0-9]+): ([^\n]*)")));
  const int n = std::stoi(m[2]);
  CHECK_THAT(m[3].str(), Contains("not taken") && Contains("no final/"));
  CHECK(n > 1);
  CHECK(n <= 8);
  CHECK_FALSE(fs::exists(out / "final"));
  // Every checkpoint before step n is there, complete and loadable; none of step n or later.
  for (int k = 1; k < n; ++k) {
    const auto dir = out / "checkpoints" / ("step-" + std::to_string(k));
    INFO(dir);
    CHECK(fs::exists(dir / "COMPLETE"));
    CHECK(all_finite(dir / "model.safetensors"));
  }
  CHECK_FALSE(fs::exists(out / "checkpoints" / ("step-" + std::to_string(n))));
  CHECK_THAT(slurp(out / "train.log"), Contains("error: training.nonfinite: step " + std::to_string(n)));
}

TEST_CASE("nonfinite skip: a batch that overflows is skipped as if it were not there", "[nonfinite]") {
  unif::test::TempDir tmp;
  // A: batch 1 holds the planted 3e38 target, batch 2 is normal; 2 steps. B: batch 2 alone, 1 step.
  auto planted = stsb(1, 4, "3e38");
  for (const auto& l : stsb(5, 4)) planted.push_back(l);
  write_lines(tmp / "planted.jsonl", planted);
  write_lines(tmp / "rest.jsonl", stsb(5, 4));
  const std::string skip = kRegression + "--set training.nonfinite=skip --set parallel.devices=[cpu] ";

  REQUIRE(train(skip + "--set training.max_steps=2 --set data.train=" + q(tmp / "planted.jsonl") +
                    " --set output_dir=" + q(tmp / "a"),
                tmp / "a.log") == 0);
  REQUIRE(train(skip + "--set training.max_steps=1 --set data.train=" + q(tmp / "rest.jsonl") +
                    " --set output_dir=" + q(tmp / "b"),
                tmp / "b.log") == 0);
  INFO(slurp(tmp / "a.log"));
  // Parameters and optimizer state (AdamW's step count and moments) untouched by the skipped step:
  // A's final model is B's, bit for bit.
  CHECK(slurp(tmp / "a" / "final" / "model.safetensors") == slurp(tmp / "b" / "final" / "model.safetensors"));
  const auto a_ckpt = tmp / "a" / "checkpoints" / "step-2" / "optimizer.safetensors";
  const auto b_ckpt = tmp / "b" / "checkpoints" / "step-1" / "optimizer.safetensors";
  CHECK(slurp(a_ckpt) == slurp(b_ckpt));
  // Counted: the skipped step has its metrics line, and the run's last line says how many.
  const auto metrics = lines_of(tmp / "a" / "metrics.jsonl");
  REQUIRE(!metrics.empty());
  const auto first = json::parse(metrics.front());
  CHECK(first.at("step") == 1);
  CHECK(first.at("skipped_steps") == 1);
  CHECK_THAT(slurp(tmp / "a" / "train.log"), Contains("step 1: the loss is") && Contains("1 skipped (non-finite)"));
  CHECK(all_finite(tmp / "a" / "final" / "model.safetensors"));

  // Two replicas decide alike: the same skip, the same model (float summation aside).
  REQUIRE(train(kRegression +
                    "--set training.nonfinite=skip --set parallel.devices=[cpu,cpu] --set training.max_steps=2 "
                    "--set data.train=" +
                    q(tmp / "planted.jsonl") + " --set output_dir=" + q(tmp / "c"),
                tmp / "c.log") == 0);
  const auto a = unif::framework::read_safetensors(tmp / "a" / "final" / "model.safetensors").tensors;
  const auto c = unif::framework::read_safetensors(tmp / "c" / "final" / "model.safetensors").tensors;
  REQUIRE(a.size() == c.size());
  for (const auto& [name, value] : a) {
    INFO(name);
    const auto ad = value.to(torch::kDouble), cd = c.at(name).to(torch::kDouble);
    CHECK(((ad - cd).abs() - (1e-6 + 1e-5 * ad.abs())).max().item<double>() <= 0);
  }
  CHECK(json::parse(lines_of(tmp / "c" / "metrics.jsonl").front()).at("skipped_steps") == 1);

  // The default, error: the same data stops at step 1 before any checkpoint.
  CHECK(train(kRegression + "--set training.max_steps=2 --set data.train=" + q(tmp / "planted.jsonl") +
                  " --set output_dir=" + q(tmp / "d"),
              tmp / "d.log") == 3);
  CHECK_THAT(slurp(tmp / "d.log"),
             Contains("error: training.nonfinite: step 1: the loss is") && Contains("no checkpoint was saved"));
  CHECK_FALSE(fs::exists(tmp / "d" / "final"));
}

TEST_CASE("a regression target or weight beyond float32 is an error naming the line", "[nonfinite]") {
  // Before: "error: internal: value cannot be converted to type float without overflow", exit 1.
  unif::test::TempDir tmp;
  write_lines(tmp / "big.jsonl", stsb(1, 4, "1e39"));
  CHECK(train(kRegression + "--set training.max_steps=1 --set data.train=" + q(tmp / "big.jsonl") +
                  " --set output_dir=" + q(tmp / "e"),
              tmp / "e.log") == 2);
  CHECK_THAT(slurp(tmp / "e.log"), Contains("big.jsonl:1: ") && Contains("float32"));
  auto lines = stsb(1, 4);
  auto j = json::parse(lines[1]);
  j["weight"] = 1e39;
  lines[1] = j.dump();
  write_lines(tmp / "heavy.jsonl", lines);
  CHECK(train(kRegression + "--set training.max_steps=1 --set data.train=" + q(tmp / "heavy.jsonl") +
                  " --set output_dir=" + q(tmp / "f"),
              tmp / "f.log") == 2);
  CHECK_THAT(slurp(tmp / "f.log"), Contains("heavy.jsonl:2: field 'weight'"));
}
