// Every example in configs/ loads with load_config, is valid for training, and matches what its
// comments promise (task, dataset folder); the demo config is the one SPEC §1 describes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "framework/config/run_config.h"

using namespace unif::framework;
using unif::Task;
namespace fs = std::filesystem;

TEST_CASE("every example config loads and is valid for training", "[unit][config]") {
  const fs::path dir = fs::path(UNIF_SOURCE_DIR) / "configs";
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir))  // configs/minilm/ too
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 6);
  // The configs are run from the repository root (relative paths resolve against the current
  // directory): there load_config also finds every file they name, except the pretrained models
  // named $UNIF_HOME/models/..., fetched on demand (scripts/fetch-model.sh), and a model.pretrained
  // under runs/ that an earlier command of the file's comment trains.
  struct Cwd {
    fs::path old = fs::current_path();
    ~Cwd() { fs::current_path(old); }
  } restore;
  fs::current_path(UNIF_SOURCE_DIR);
  for (const auto& file : files) {
    INFO(file.string());
    RunConfig c;
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    const bool fetched_model = text.str().find("$UNIF_HOME/models/") != std::string::npos ||
                               text.str().find("\n  pretrained: runs/") != std::string::npos;
    try {
      if (fetched_model) {
        c = parse_config(text.str(), file.string(), {}, Purpose::Train);
        c.source = file;
      } else {
        c = load_config(file, {}, Purpose::Train);
        CHECK_FALSE(c.model.vocab.empty());  // filled from model.pretrained when not given
      }
    } catch (const ConfigError& e) { FAIL(e.what()); }
    CHECK(c.source == file);
    CHECK_FALSE(c.data.dev.empty());
    const RunConfig again = parse_config(to_yaml(c), "again.yaml");  // read -> write -> read
    CHECK(again == c);
    CHECK(to_yaml(again) == to_yaml(c));
  }
}

TEST_CASE("each task has its example on its dataset", "[unit][config]") {
  const fs::path dir = fs::path(UNIF_SOURCE_DIR) / "configs";
  const struct {
    const char* file;
    Task task;
    const char* data;
  } examples[] = {
      {"classification.yaml", Task::Classification, "data/sib200_zh/"},
      {"multilabel.yaml", Task::Multilabel, "data/nlupp_en/"},
      {"regression.yaml", Task::Regression, "data/stsb_en/"},
      {"token_classification.yaml", Task::TokenClassification, "data/weibo_ner_zh/"},
      {"span_extraction.yaml", Task::SpanExtraction, "data/cmrc2018_zh/"},
      {"demo.yaml", Task::Classification, "data/sib200_zh/"},
      {"minilm/classification.yaml", Task::Classification, "data/banking77_en/"},
      {"minilm/pair_classification.yaml", Task::Classification, "data/snli_en/"},
      {"minilm/regression.yaml", Task::Regression, "data/stsb_en/"},
      {"minilm/token_classification.yaml", Task::TokenClassification, "data/wnut17_en/"},
      {"minilm/span_extraction.yaml", Task::SpanExtraction, "data/xquad_en/"},
  };
  for (const auto& ex : examples) {
    INFO(ex.file);
    const RunConfig c = load_config(dir / ex.file);
    CHECK(c.task == ex.task);
    CHECK(c.data.train == std::string(ex.data) + "train.jsonl");
    CHECK(c.data.dev == std::string(ex.data) + "dev.jsonl");
  }
  const RunConfig reg = load_config(dir / "regression.yaml");
  CHECK(reg.data.text_fields == std::vector<std::string>{"text_a", "text_b"});
  const RunConfig tok = load_config(dir / "token_classification.yaml");
  CHECK(tok.data.text_fields == std::vector<std::string>{"tokens"});
  CHECK(tok.data.label_field == "tags");

  const RunConfig demo = load_config(dir / "demo.yaml");
  CHECK(demo.model.pretrained == "tests/fixtures/tiny-bert-zh");
  CHECK(demo.model.max_seq_length == 64);
  CHECK(demo.training.batch_size == 16);
  CHECK(demo.output_dir == "runs/demo");
  CHECK(demo.parallel.devices == std::vector<std::string>{"auto"});
  // The classification example documents every key with its default value, except the ones that
  // make it runnable here and make the tiny model learn.
  RunConfig defaults_plus;
  const RunConfig full = load_config(dir / "classification.yaml");
  defaults_plus.output_dir = full.output_dir;
  defaults_plus.model.pretrained = full.model.pretrained;
  defaults_plus.model.max_seq_length = full.model.max_seq_length;
  defaults_plus.data.train = full.data.train;
  defaults_plus.data.dev = full.data.dev;
  defaults_plus.model.vocab = full.model.vocab;  // <pretrained>/vocab.txt when run from the repository root
  // What makes the tiny random-weight model learn (without it, it ends at the majority baseline).
  defaults_plus.model.bert.hidden_dropout_prob = 0.0;
  defaults_plus.model.bert.attention_probs_dropout_prob = 0.0;
  defaults_plus.training.batch_size = 16;
  defaults_plus.training.epochs = 8;
  defaults_plus.training.optimizer.lr = 5e-3;
  CHECK(full == defaults_plus);
}
