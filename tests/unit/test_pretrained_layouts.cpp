// The layouts a pretrained BERT comes in (what scripts/fetch-model.sh unpacks, or a directory given
// straight to model.pretrained): a sentence-transformers save (modules.json, the BERT in its
// Transformer module's folder, 1_Pooling/ beside it) holding plain BertModel keys without `bert.`
// (pytorch_model.bin goes through the same key handling: parity_bert). Built in temp dirs from the
// tiny fixture; every task head loads on it, the new head is initialised as HF does and named in
// the log as HF names it, and tokenizer_config.json's do_lower_case is honoured.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "framework/checkpoint/pretrained.h"
#include "framework/checkpoint/safetensors.h"
#include "framework/common/error.h"
#include "framework/common/hf_dir.h"
#include "framework/config/run_config.h"
#include "framework/model/model_dir.h"
#include "framework/train/build.h"
#include "models/architectures.h"
#include "models//heads/factory.h"
#include "models/heads/embedding_model.h"
#include "support/temp_dir.h"
#include "support/user_error.h"
#include "support/files.h"

namespace fs = std::filesystem;
using namespace unif;
using framework::TensorMap;
using unif::test::TempDir;
using unif::test::user_error_of;

using unif::test::write_text;

namespace {

const fs::path kFixture = fs::path(UNIF_TEST_FIXTURES) / "tiny-bert-zh";

// The fixture's encoder as a BertModel save (keys without `bert.`, no classifier).
TensorMap plain_bert_weights() {
  TensorMap plain;
  for (const auto& [name, t] : framework::read_safetensors(kFixture / "model.safetensors").tensors)
    if (name.rfind("bert.", 0) == 0) plain[name.substr(5)] = t;
  return plain;
}

// A sentence-transformers save in `root`: modules.json naming `module_path` as the Transformer's
// folder, 1_Pooling/config.json, and in that folder a BertModel config.json, vocab.txt,
// tokenizer_config.json (do_lower_case `lower`) and model.safetensors with plain keys.
fs::path write_sentence_transformers(const fs::path& root, const std::string& module_path, bool lower) {
  const fs::path hf = module_path.empty() ? root : root / module_path;
  fs::create_directories(hf);
  fs::create_directories(root / "1_Pooling");
  write_text(root / "modules.json", R"([{"idx": 0, "name": "0", "path": ")" + module_path +
                                        R"(", "type": "sentence_transformers.models.Transformer"},
                 {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
                 {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}])");
  write_text(root / "1_Pooling" / "config.json",
             R"({"word_embedding_dimension": 32, "pooling_mode_mean_tokens": true})");
  write_text(hf / "config.json",
             R"({"architectures": ["BertModel"], "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
                 "intermediate_size": 64, "max_position_embeddings": 64, "vocab_size": 21128, "model_type": "bert",
                 "initializer_range": 0.02})");
  fs::copy_file(kFixture / "vocab.txt", hf / "vocab.txt");
  write_text(hf / "tokenizer_config.json", std::string(R"({"do_lower_case": )") + (lower ? "true" : "false") +
                                               R"(, "tokenizer_class": "BertTokenizer"})");
  framework::write_safetensors(hf / "model.safetensors", plain_bert_weights());
  return hf;
}

}  // namespace

TEST_CASE("resolve_hf_dir follows modules.json to the Transformer module", "[unit][pretrained]") {
  TempDir tmp;
  SECTION("a plain HF directory is itself") { CHECK(resolve_hf_dir(kFixture) == kFixture); }
  SECTION("0_Transformer/") {
    CHECK(resolve_hf_dir(tmp.path) == tmp.path);  // no modules.json yet
    write_sentence_transformers(tmp.path, "0_Transformer", true);
    CHECK(resolve_hf_dir(tmp.path) == tmp.path / "0_Transformer");
  }
  SECTION("the root itself (path \"\", as all-MiniLM-L6-v2)") {
    write_sentence_transformers(tmp.path, "", true);
    CHECK(resolve_hf_dir(tmp.path) == tmp.path);
  }
  SECTION("bad modules.json") {
    write_text(tmp.path / "modules.json", "[{");
    CHECK_THAT(user_error_of([&] { resolve_hf_dir(tmp.path); }), Catch::Contains("modules.json: invalid JSON"));
    write_text(tmp.path / "modules.json", R"([{"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])");
    CHECK_THAT(user_error_of([&] { resolve_hf_dir(tmp.path); }),
               Catch::Contains("modules.json: no sentence_transformers.models.Transformer module"));
    write_text(tmp.path / "modules.json", R"([{"path": "../x", "type": "sentence_transformers.models.Transformer"}])");
    CHECK_THAT(user_error_of([&] { resolve_hf_dir(tmp.path); }), Catch::Contains("leaves the model directory"));
    write_text(tmp.path / "modules.json", R"([{"path": "0_T", "type": "sentence_transformers.models.Transformer"}])");
    CHECK_THAT(user_error_of([&] { resolve_hf_dir(tmp.path); }), Catch::Contains("does not exist"));
  }
}

TEST_CASE("read_do_lower_case reads tokenizer_config.json", "[unit][pretrained]") {
  TempDir tmp;
  CHECK_FALSE(read_do_lower_case(tmp.path).has_value());
  write_text(tmp.path / "tokenizer_config.json", R"({"do_lower_case": false})");
  CHECK(read_do_lower_case(tmp.path) == std::optional<bool>(false));
  write_text(tmp.path / "tokenizer_config.json", R"({"model_max_length": 512})");
  CHECK_FALSE(read_do_lower_case(tmp.path).has_value());
  write_text(tmp.path / "tokenizer_config.json", R"({"do_lower_case": "yes"})");
  CHECK_THAT(user_error_of([&] { read_do_lower_case(tmp.path); }),
             Catch::Contains("tokenizer_config.json: do_lower_case: expected true or false"));
}

TEST_CASE("a sentence-transformers BertModel save loads into every task head", "[unit][pretrained]") {
  TempDir tmp;
  write_sentence_transformers(tmp.path, "0_Transformer", true);
  const TensorMap plain = plain_bert_weights();
  const Task task = GENERATE(Task::Classification, Task::Multilabel, Task::Regression, Task::TokenClassification,
                             Task::SpanExtraction);
  INFO("task " << models::hf_class_name(models::architecture("bert"), task));
  const int64_t labels = task == Task::Regression ? 1 : task == Task::SpanExtraction ? 2 : 40;
  torch::manual_seed(7);
  auto loaded = framework::load_pretrained(tmp.path, task, labels);  // the root, not 0_Transformer/
  CHECK(loaded.task == task);
  CHECK(loaded.config.architectures ==
        std::vector<std::string>{models::hf_class_name(models::architecture("bert"), task)});

  const std::string head = task == Task::SpanExtraction ? "qa_outputs" : "classifier";
  CHECK(loaded.report.missing == std::vector<std::string>{head + ".bias", head + ".weight"});
  const bool pooled = task != Task::TokenClassification && task != Task::SpanExtraction;
  if (pooled)
    CHECK(loaded.report.unexpected.empty());
  else
    CHECK(loaded.report.unexpected == std::vector<std::string>{"bert.pooler.dense.bias", "bert.pooler.dense.weight"});

  // Encoder weights from the file, bit for bit.
  auto params = loaded.model->named_parameters();
  for (const auto& [name, t] : plain) {
    if (name == "embeddings.position_ids" || (!pooled && name.rfind("pooler.", 0) == 0)) continue;
    INFO(name);
    REQUIRE(params.find("bert." + name) != nullptr);
    CHECK(torch::equal(params["bert." + name], t));
  }
  // The new head as HF's _init_weights: weight ~ normal(0, initializer_range), bias zero.
  const auto w = params[head + ".weight"], b = params[head + ".bias"];
  CHECK(torch::equal(b, torch::zeros_like(b)));
  if (w.numel() >= 64) {  // 32 x labels; the std of 64+ draws is within 30% of 0.02
    CHECK(std::abs(w.mean().item<double>()) < 0.01);
    CHECK(w.std().item<double>() == Approx(0.02).epsilon(0.3));
  }
}

TEST_CASE("training from a sentence-transformers root: HF's log lines, its tokenizer casing", "[unit][pretrained]") {
  TempDir tmp;
  const fs::path root = tmp.path / "st";
  write_sentence_transformers(root, "0_Transformer", /*lower=*/false);
  write_text(tmp.path / "train.jsonl",
             "{\"text\": \"Hello World\", \"label\": \"a\"}\n{\"text\": \"b c\", \"label\": \"b\"}\n");
  const std::string yaml = "task: classification\noutput_dir: " + (tmp.path / "out").string() +
                           "\nmodel: {pretrained: " + root.string() +
                           ", max_seq_length: 16}\ndata: {train: " + (tmp.path / "train.jsonl").string() + "}\n";

  auto cfg = framework::parse_config(yaml, "cfg.yaml", {}, framework::Purpose::Train);
  CHECK_FALSE(cfg.model.do_lower_case);  // from 0_Transformer/tokenizer_config.json
  CHECK(framework::parse_config(yaml, "cfg.yaml", {"model.do_lower_case=true"}, framework::Purpose::Train)
            .model.do_lower_case);  // the config's own value wins

  auto parts = framework::build_trainer_parts(cfg);
  const std::string at = (root / "0_Transformer").string();
  CHECK(parts.notes == std::vector<std::string>{
                           "2 labels, with their counts in " + (tmp.path / "train.jsonl").string() + ": a (1), b (1)",
                           "Some weights of BertForSequenceClassification were not initialized from the model "
                           "checkpoint at " +
                               at + " and are newly initialized: [classifier.bias, classifier.weight]"});
  // Cased: "Hello" is [UNK] in this vocabulary, "hello" (lower-cased) is a token.
  CHECK(parts.train.encoded.front().input_ids !=
        framework::build_trainer_parts(
            framework::parse_config(yaml, "cfg.yaml", {"model.do_lower_case=true"}, framework::Purpose::Train))
            .train.encoded.front()
            .input_ids);

  cfg.task = unif::Task::TokenClassification;
  write_text(tmp.path / "tok.jsonl", "{\"tokens\": [\"a\", \"b\"], \"tags\": [\"O\", \"B-X\"]}\n");
  cfg.data.train = (tmp.path / "tok.jsonl").string();
  cfg.data.text_fields = {"tokens"};
  cfg.data.label_field = "tags";
  CHECK(framework::build_trainer_parts(cfg).notes ==
        std::vector<std::string>{
            "2 labels, with their counts in " + (tmp.path / "tok.jsonl").string() + ": B-X (1), O (1)",
            "Some weights of the model checkpoint at " + at +
                " were not used when initializing BertForTokenClassification: [bert.pooler.dense.bias, "
                "bert.pooler.dense.weight]",
            "Some weights of BertForTokenClassification were not initialized from the model checkpoint at " + at +
                " and are newly initialized: [classifier.bias, classifier.weight]"});
}

TEST_CASE("model.pretrained: a leading $UNIF_HOME or ~/ names the fetch-model.sh cache", "[unit][pretrained]") {
  const char* old = std::getenv("UNIF_HOME");
  const std::string saved = old ? old : "";
  ::setenv("UNIF_HOME", "/opt/unif-cache", 1);
  CHECK(expand_model_path("$UNIF_HOME/models/m") == "/opt/unif-cache/models/m");
  CHECK(expand_model_path("${UNIF_HOME}/models/m") == "/opt/unif-cache/models/m");
  CHECK(expand_model_path("$UNIF_HOMEX/m") == "$UNIF_HOMEX/m");
  CHECK(expand_model_path("runs/x/$UNIF_HOME") == "runs/x/$UNIF_HOME");
  CHECK(framework::parse_config("model: {pretrained: $UNIF_HOME/models/m}\n", "c.yaml").model.pretrained ==
        "/opt/unif-cache/models/m");
  ::unsetenv("UNIF_HOME");
  CHECK(unif_home() == fs::path(std::getenv("HOME")) / ".cache" / "unif");
  CHECK(expand_model_path("~/m") == std::string(std::getenv("HOME")) + "/m");
  if (old) ::setenv("UNIF_HOME", saved.c_str(), 1);
}

TEST_CASE("--model: a sentence-transformers save is an embedding model whatever its architectures say",
          "[unit][pretrained]") {
  // sentence-transformers/all-mpnet-base-v2's layout: config.json names MPNetForMaskedLM, the weights
  // are a plain MPNetModel's (pooler included), modules.json pools by the mean and normalizes.
  const fs::path fixture = fs::path(UNIF_TEST_FIXTURES) / "families" / "mpnet";
  TempDir tmp;
  for (const char* name : {"vocab.txt", "tokenizer.json", "tokenizer_config.json"})
    fs::copy_file(fixture / name, tmp.path / name);
  std::ifstream in(fixture / "config.json");
  nlohmann::json config = nlohmann::json::parse(in);
  config["architectures"] = {"MPNetForMaskedLM"};
  config.erase("id2label");
  config.erase("label2id");
  write_text(tmp.path / "config.json", config.dump(2));
  TensorMap plain;
  for (const auto& [name, t] : framework::read_safetensors(fixture / "model.safetensors").tensors)
    if (name.rfind("mpnet.", 0) == 0) plain.emplace(name.substr(6), t);
  plain.emplace("pooler.dense.weight", torch::zeros({32, 32}));
  plain.emplace("pooler.dense.bias", torch::zeros({32}));
  framework::write_safetensors(tmp.path / "model.safetensors", plain);
  // Without modules.json it is the masked LM config.json names, whose head the file lacks.
  CHECK_THAT(user_error_of([&] { framework::load_model_dir(tmp.path); }),
             Catch::Contains("the checkpoint does not fit the model") && Catch::Contains("lm_head.dense.weight"));
  fs::create_directories(tmp.path / "1_Pooling");
  write_text(tmp.path / "modules.json",
             R"([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
      {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
      {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}])");
  write_text(tmp.path / "1_Pooling" / "config.json",
             R"({"word_embedding_dimension": 32, "pooling_mode_mean_tokens": true})");
  write_text(tmp.path / "sentence_bert_config.json", R"({"max_seq_length": 40, "do_lower_case": false})");
  const auto lm = framework::load_model_dir(tmp.path);
  CHECK(lm.meta.task == Task::Embedding);
  CHECK(lm.meta.max_seq_length == 40);
  const auto* embedder = dynamic_cast<const models::EncoderForEmbeddingImpl*>(lm.model.get());
  REQUIRE(embedder != nullptr);
  CHECK(embedder->embedding_options().pooling == Pooling::Mean);
  CHECK(embedder->embedding_options().normalize);
  CHECK(lm.tokenizer->specials().cls == "<s>");
}
