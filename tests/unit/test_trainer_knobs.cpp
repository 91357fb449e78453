// The training knobs HF Trainer users reach for, through the Trainer on the tiny Chinese BERT:
// training.freeze (frozen tensors keep their values on 2 replicas, the rest trains), training.best_metric
// (best/ by any dev metric in its direction), training.report_to: [tensorboard] (the metrics records as
// event-file scalars) and training.eval_batch_size (dev metrics equal to the training batch's).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "framework/common/error.h"
#include "framework/config/run_config.h"
#include "framework/metrics/metrics.h"
#include "framework/train/build.h"
#include "framework/train/optimizer.h"
#include "framework/train/trainer.h"
#include "support/temp_dir.h"
#include "framework/train/freeze.h"
#include "models/architectures.h"
#include "support/user_error.h"

using namespace unif::framework;
namespace fs = std::filesystem;
using unif::test::TempDir;

namespace {

// A short run of the tiny model on SIB-200 (dev = train's first file: small and labelled), `extra`
// appended to the `training` mapping.
RunConfig tiny_run(const fs::path& out, const std::string& extra, const std::string& devices = "[cpu, cpu]") {
  const std::string src = UNIF_SOURCE_DIR;
  const std::string yaml = "task: classification\noutput_dir: " + out.string() + "\nmodel: {pretrained: " + src +
                           "/tests/fixtures/tiny-bert-zh, max_seq_length: 32}\n" + "data: {train: " + src +
                           "/data/sib200_zh/dev.jsonl, dev: " + src + "/data/sib200_zh/dev.jsonl}\n" +
                           "training: {batch_size: 16, max_steps: 4, eval_every: 1, log_every: 1, optimizer: {lr: "
                           "1.0e-2}" +
                           extra + "}\nparallel: {devices: " + devices + "}\n";
  return parse_config(yaml, "tiny.yaml", {}, Purpose::Train);
}

std::vector<nlohmann::json> metrics_lines(const fs::path& file, const std::string& split) {
  std::vector<nlohmann::json> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    if (j.at("split") == split) out.push_back(j);
  }
  return out;
}

std::string read_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("training.freeze: embeddings and the first layers keep their values, the rest trains (2 replicas)",
          "[unit][train][freeze]") {
  TempDir tmp;
  const auto cfg = tiny_run(tmp.path / "run", ", freeze: {embeddings: true, layers: 1}");
  auto parts = build_trainer_parts(cfg);
  auto model = parts.model;
  std::map<std::string, torch::Tensor> before;
  for (const auto& p : model->named_parameters()) before[p.key()] = p.value().detach().clone();
  Trainer(cfg, std::move(parts)).fit();
  int64_t frozen = 0, trained = 0;
  for (const auto& p : model->named_parameters()) {
    const auto depth = unif::models::encoder_depth(unif::models::architecture("bert"), p.key());
    const bool should_freeze = depth && *depth <= 1;
    const bool same = torch::equal(p.value(), before.at(p.key()));
    INFO(p.key());
    if (should_freeze) {
      CHECK(same);
      CHECK_FALSE(p.value().requires_grad());
      ++frozen;
    } else if (p.key().find("encoder.layer.1.") != std::string::npos || p.key().find("classifier.") == 0) {
      CHECK_FALSE(same);  // layer 1 and the head train
      ++trained;
    }
  }
  CHECK(frozen > 10);
  CHECK(trained > 10);
  const std::string log = read_file(tmp.path / "run" / "train.log");
  CHECK(log.find("training.freeze: embeddings and layer 0: ") != std::string::npos);
}

TEST_CASE("training.freeze.layers beyond the model's layers is an error naming both", "[unit][train][freeze]") {
  TempDir tmp;
  const auto cfg = tiny_run(tmp.path / "run", ", freeze: {layers: 3}");
  try {
    Trainer(cfg, build_trainer_parts(cfg)).fit();
    FAIL("no error");
  } catch (const unif::UserError& e) {
    CHECK(std::string(e.what()) == "training.freeze.layers: expected at most the model's 2 encoder layers, got 3");
  }
  CHECK_FALSE(fs::exists(tmp.path / "run" / "train.log"));  // refused before output_dir is touched
}

TEST_CASE("training.freeze.layers counts ALBERT's layer groups, whose layers share their weights",
          "[unit][train][freeze]") {
  // ALBERT with 12 layers in one group has one set of layer weights: freezing "the first 6 layers"
  // cannot be done, so the unit is the group (num_hidden_groups), and the error says so.
  const auto t = [] { return torch::zeros({2}, torch::requires_grad()); };
  const std::vector<std::pair<std::string, torch::Tensor>> named{
      {"albert.embeddings.word_embeddings.weight", t()},
      {"albert.encoder.embedding_hidden_mapping_in.weight", t()},
      {"albert.encoder.albert_layer_groups.0.albert_layers.0.ffn.weight", t()},
      {"classifier.weight", t()}};
  FreezeConfig freeze;
  freeze.layers = 2;
  const auto* albert = &unif::models::architecture("albert");
  CHECK_THAT(unif::test::user_error_of([&] { freeze_parameters(named, freeze, albert); }),
             Catch::Equals("training.freeze.layers: expected at most the model's 1 layer groups (ALBERT's layers share "
                           "the weights of their group, so freezing counts groups: num_hidden_groups), got 2"));
  freeze.layers = 1;
  const auto frozen = freeze_parameters(named, freeze, albert);
  CHECK(frozen.tensors == 1);
  CHECK_FALSE(named[2].second.requires_grad());
  CHECK(named[1].second.requires_grad());  // the embeddings' projection: freeze.embeddings's
}

TEST_CASE("training.best_metric: best/ by the lowest dev loss; the last line restates it", "[unit][train]") {
  TempDir tmp;
  const auto cfg = tiny_run(tmp.path / "run", ", best_metric: loss", "[cpu]");
  Trainer(cfg, build_trainer_parts(cfg)).fit();
  const auto dev = metrics_lines(tmp.path / "run" / "metrics.jsonl", "dev");
  REQUIRE(dev.size() == 4);
  double best = INFINITY;
  int64_t best_step = -1;
  for (const auto& d : dev)
    if (d.at("loss").get<double>() < best) best = d.at("loss").get<double>(), best_step = d.at("step").get<int64_t>();
  const std::string log = read_file(tmp.path / "run" / "train.log");
  CHECK(log.find("best dev loss=") != std::string::npos);
  CHECK(log.find("at step " + std::to_string(best_step) + ":") != std::string::npos);
  CHECK(log.find("new best accuracy=") == std::string::npos);
  CHECK(fs::exists(tmp.path / "run" / "best" / "COMPLETE"));
}

TEST_CASE("training.precision auto: measured at start-up, one precision chosen and said in train.log",
          "[unit][train][precision]") {
  TempDir tmp;
  const auto cfg = tiny_run(tmp.path / "run", ", precision: auto", "[cpu, cpu]");
  CHECK(cfg.training.precision == unif::Precision::Auto);
  Trainer(cfg, build_trainer_parts(cfg)).fit();
  const std::string log = read_file(tmp.path / "run" / "train.log");
  INFO(log);
  const auto at = log.find("training.precision auto -> ");
  REQUIRE(at != std::string::npos);
  const std::string chosen = log.substr(at + 27, 4);
  CHECK((chosen == "fp32" || chosen == "bf16"));
  // The tiny model's own product: 8 texts a replica x 32 pieces, hidden 32 by intermediate 64.
  CHECK(log.find("(256 x 32 by 32 x 64) on cpu") != std::string::npos);
  CHECK(log.find("; precision " + chosen) != std::string::npos);  // the run trains in what was chosen
  CHECK(read_file(tmp.path / "run" / "config.yaml").find("precision: auto") != std::string::npos);
}

TEST_CASE("training.best_metric and early_stopping.metric must be dev metrics of the task", "[unit][config]") {
  auto error = [](const std::string& yaml) {
    try {
      parse_config(yaml, "c.yaml");
    } catch (const unif::UserError& e) { return std::string(e.what()); }
    return std::string();
  };
  CHECK_THAT(error("training: {best_metric: accurcy}"),
             Catch::Contains("training.best_metric: expected a dev metric of task classification (accuracy, f1, "
                             "loss), got 'accurcy' (did you mean 'accuracy'?)"));
  CHECK_THAT(error("task: regression\ntraining: {early_stopping: {metric: accuracy}}"),
             Catch::Contains("training.early_stopping.metric: expected a dev metric of task regression (pearson, "
                             "spearman, mse, loss), got 'accuracy'"));
  CHECK(error("task: token_classification\ntraining: {best_metric: recall}").empty());
  CHECK(parse_config("training: {best_metric: null}", "c.yaml").training.best_metric.empty());
}

TEST_CASE("metric_names lists what each metric family reports", "[unit][metrics]") {
  auto keys = [](const MetricSet& m) {
    std::vector<std::string> k;
    for (const auto& [name, v] : m) k.push_back(name);
    k.push_back("loss");
    std::sort(k.begin(), k.end());
    return k;
  };
  auto sorted = [](std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  CHECK(keys(classification_metrics({0, 1}, {0, 0}, 2)) == sorted(metric_names(MetricKind::classification)));
  CHECK(keys(multilabel_metrics_from_sets({{0}, {1}}, {{0}, {}}, 2)) == sorted(metric_names(MetricKind::multilabel)));
  CHECK(keys(regression_metrics({0.0, 1.0, 2.0}, {0.5, 1.0, 1.5})) == sorted(metric_names(MetricKind::regression)));
  CHECK(keys(token_metrics({{"B-X", "O"}}, {{"B-X", "O"}})) == sorted(metric_names(MetricKind::token)));
}

TEST_CASE("training.report_to: tensorboard writes every metrics record as scalars", "[unit][train]") {
  TempDir tmp;
  const auto cfg = tiny_run(tmp.path / "run", ", report_to: [tensorboard], eval_batch_size: 5", "[cpu]");
  Trainer(cfg, build_trainer_parts(cfg)).fit();
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(tmp.path / "run" / "tensorboard")) files.push_back(e.path());
  REQUIRE(files.size() == 1);
  CHECK(files[0].filename().string().rfind("events.out.tfevents.", 0) == 0);
  // TFRecords: uint64 length, uint32 crc, data, uint32 crc. One file_version event, then a scalar per
  // number of each metrics.jsonl record (step excluded).
  const std::string bytes = read_file(files[0]);
  size_t records = 0;
  for (size_t at = 0; at + 12 <= bytes.size(); ++records) {
    uint64_t len = 0;
    std::memcpy(&len, bytes.data() + at, 8);
    at += 12 + len + 4;
    REQUIRE(at <= bytes.size());
  }
  size_t scalars = 0;
  std::ifstream in(tmp.path / "run" / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    const auto record = nlohmann::json::parse(line);
    for (const auto& [k, v] : record.items()) scalars += v.is_number() && k != "step";
  }
  CHECK(records == 1 + scalars);
  for (const char* tag : {"train/loss", "train/lr", "dev/accuracy", "dev/f1", "dev/loss"})
    CHECK(bytes.find(tag) != std::string::npos);
  // The evaluation batch size changes the batches, not the metrics (to float rounding).
  const auto dev5 = metrics_lines(tmp.path / "run" / "metrics.jsonl", "dev");
  TempDir other;
  const auto cfg16 = tiny_run(other.path / "run16", "", "[cpu]");
  Trainer(cfg16, build_trainer_parts(cfg16)).fit();
  const auto dev16 = metrics_lines(other.path / "run16" / "metrics.jsonl", "dev");
  REQUIRE(dev5.size() == dev16.size());
  for (size_t i = 0; i < dev5.size(); ++i) {
    CHECK(dev5[i].at("accuracy") == dev16[i].at("accuracy"));
    CHECK(dev5[i].at("loss").get<double>() == Approx(dev16[i].at("loss").get<double>()).epsilon(1e-5));
  }
}

TEST_CASE("training.report_to takes tensorboard or none", "[unit][config]") {
  CHECK(parse_config("training: {report_to: tensorboard}", "c.yaml").training.report_to ==
        std::vector<std::string>{"tensorboard"});
  CHECK(parse_config("training: {report_to: [none]}", "c.yaml").training.report_to.empty());
  try {
    parse_config("training: {report_to: [tensorboard, wandb]}", "c.yaml");
    FAIL("no error");
  } catch (const unif::UserError& e) {
    CHECK_THAT(e.what(), Catch::Contains("training.report_to[1]: expected tensorboard (or none alone), got 'wandb'"));
  }
  CHECK(parse_config("training: {eval_batch_size: 64}", "c.yaml").training.evaluation_batch_size() == 64);
  CHECK(parse_config("training: {batch_size: 8}", "c.yaml").training.evaluation_batch_size() == 8);
}
