// model.config: HF config fields of any family, by that family's names, set over the pretrained
// config.json before the family reads it. Per family: the override reaches the model's options and
// the config.json unif writes; a field the family does not read, a value of the wrong type, the
// task's own keys and a family change are errors naming model.config; without a pretrained model,
// model_type picks a WordPiece family to train from scratch.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "framework/checkpoint/hf_config.h"
#include "framework/common/error.h"
#include "framework/config/run_config.h"
#include "framework/train/build.h"
#include "models/architectures.h"
#include "models/heads/factory.h"
#include "support/temp_dir.h"
#include "support/user_error.h"

using namespace unif::framework;
namespace fs = std::filesystem;
using nlohmann::json;
using unif::test::TempDir;
using unif::test::user_error_of;

namespace {

const fs::path kFamilies = fs::path(UNIF_SOURCE_DIR) / "tests/fixtures/families";

}  // namespace

TEST_CASE("model.config sets a field of every family by the family's own name", "[unit][config][families]") {
  struct Case {
    const char* family;
    const char* field;  // the family's config.json name of a dropout
    double (*read)(const unif::models::BertOptions&);
  };
  auto hidden = [](const unif::models::BertOptions& o) { return o.hidden_dropout_prob(); };
  auto classifier = [](const unif::models::BertOptions& o) { return o.classifier_dropout(); };
  auto pooler = [](const unif::models::BertOptions& o) { return o.pooler_dropout(); };
  const Case cases[] = {{"roberta", "hidden_dropout_prob", hidden},
                        {"xlm-roberta", "hidden_dropout_prob", hidden},
                        {"distilbert", "dropout", hidden},
                        {"electra", "hidden_dropout_prob", hidden},
                        {"albert", "classifier_dropout_prob", classifier},
                        {"deberta-v2", "pooler_dropout", pooler}};
  TempDir tmp;
  for (const auto& c : cases) {
    INFO(c.family);
    const fs::path file = kFamilies / c.family / "config.json";
    const HfConfig plain = read_hf_config(file);
    const HfConfig over = read_hf_config(file, json{{c.field, 0.375}});
    CHECK(over.bert.model_type() == plain.bert.model_type());
    CHECK(c.read(over.bert) == 0.375);
    CHECK(c.read(plain.bert) != 0.375);
    // Everything else is the pretrained config's.
    CHECK(over.bert.hidden_size() == plain.bert.hidden_size());
    CHECK(over.bert.num_hidden_layers() == plain.bert.num_hidden_layers());
    CHECK(over.architectures == plain.architectures);
    CHECK(over.id2label == plain.id2label);
    // The config.json unif writes carries it under the family's name, and reads back the same.
    const fs::path out = tmp.path / (std::string(c.family) + ".json");
    write_hf_config(out, over);
    const HfConfig back = read_hf_config(out);
    CHECK(c.read(back.bert) == 0.375);
    CHECK(back.raw.at(c.field).get<double>() == 0.375);
    // The model built from it has the family's classes.
    auto model = unif::models::make_encoder_task_model(unif::Task::Classification, over.bert, 3);
    CHECK(unif::models::hf_architecture(*model).rfind(unif::models::architecture(c.family).class_prefix, 0) == 0);
  }
}

TEST_CASE("model.config: errors name the key, the family's fields and what to do", "[unit][config][families]") {
  const fs::path roberta = kFamilies / "roberta" / "config.json";
  const fs::path distil = kFamilies / "distilbert" / "config.json";
  // A BERT name the family spells otherwise: did-you-mean among the family's own fields.
  CHECK_THAT(user_error_of([&] {
               read_hf_config(distil, json{{"droput", 0.2}});
             }),
             Catch::StartsWith("model.config.droput: not a field unif reads from a distilbert config.json (did you "
                               "mean 'dropout'?); its fields: ") &&
                 Catch::Contains("n_layers"));
  CHECK_THAT(user_error_of([&] {
               read_hf_config(roberta, json{{"use_cache", false}});
             }),
             Catch::StartsWith("model.config.use_cache: not a field unif reads from a roberta config.json"));
  CHECK_THAT(user_error_of([&] {
               read_hf_config(roberta, json{{"hidden_size", "big"}});
             }),
             Catch::StartsWith("model.config: key 'hidden_size': expected an integer, got \"big\""));
  for (const char* key : {"num_labels", "id2label", "architectures", "problem_type", "label2id"})
    CHECK_THAT(user_error_of([&] {
                 read_hf_config(roberta, json{{key, 2}});
               }),
               Catch::StartsWith(std::string("model.config.") + key + ": the head and its labels come from `task`"));
  CHECK_THAT(user_error_of([&] {
               read_hf_config(roberta, json{{"model_type", "bert"}});
             }),
             Catch::StartsWith("model.config.model_type: the family is ") && Catch::Contains("roberta/config.json"));
  // Values that pass alone but not together with the pretrained config: the merged file is named.
  CHECK_THAT(user_error_of([&] {
               read_hf_config(roberta, json{{"num_attention_heads", 5}});
             }),
             Catch::Contains("config.json with model.config's fields: ") && Catch::Contains("num_attention_heads"));
  // Without a pretrained model: the defaults of model_type's family, an unknown type named.
  CHECK_THAT(user_error_of([&] {
               read_hf_config(fs::path(), json{{"model_type", "gpt2"}});
             }),
             Catch::StartsWith("model.config: model_type is \"gpt2\", expected ") && Catch::Contains("\"roberta\""));
  const HfConfig electra = read_hf_config(fs::path(), json{{"model_type", "electra"}, {"hidden_size", 64}});
  CHECK(electra.bert.model_type() == "electra");
  CHECK(electra.bert.embedding_width() == 128);  // ElectraConfig's default embedding_size
  CHECK(electra.bert.hidden_size() == 64);
  // Nothing given: the plain file, or BERT's defaults.
  CHECK(read_hf_config(fs::path(), json::object()).bert.model_type() == "bert");
}

TEST_CASE("model.config through unif's config: a from-scratch ELECTRA, a family without vocab.txt refused",
          "[unit][config][families]") {
  TempDir tmp;
  const std::string src = UNIF_SOURCE_DIR;
  auto run = [&](const std::string& model) {
    const std::string yaml = "task: classification\noutput_dir: " + (tmp.path / "run").string() + "\nmodel: " + model +
                             "\ndata: {train: " + src + "/data/sib200_zh/dev.jsonl}\n";
    return parse_config(yaml, "scratch.yaml", {}, Purpose::Train);
  };
  const RunConfig cfg = run("{vocab: " + src +
                            "/tests/fixtures/tiny-bert-zh/vocab.txt, max_seq_length: 16, config: {model_type: electra, "
                            "embedding_size: 8, hidden_size: 16, num_hidden_layers: 1, num_attention_heads: 2, "
                            "intermediate_size: 32, hidden_dropout_prob: 0.25}}");
  CHECK(cfg.model.config.at("embedding_size") == 8);
  // It survives config.yaml: written and read back equal.
  CHECK(parse_config(to_yaml(cfg), "config.yaml", {}, Purpose::Train).model.config == cfg.model.config);
  auto parts = build_trainer_parts(cfg);
  const auto* encoder_model = dynamic_cast<const unif::models::EncoderTaskModel*>(parts.model.get());
  REQUIRE(encoder_model != nullptr);
  CHECK(unif::models::hf_architecture(*encoder_model) == "ElectraForSequenceClassification");
  bool projected = false;
  for (const auto& p : parts.model->named_parameters())
    if (p.key() == "electra.embeddings_project.weight") projected = p.value().sizes() == torch::IntArrayRef({16, 8});
  CHECK(projected);
  CHECK_THAT(
      user_error_of([&] {
        build_trainer_parts(run("{vocab: " + src +
                                "/tests/fixtures/tiny-bert-zh/vocab.txt, config: {model_type: "
                                "roberta}}"));
      }),
      Catch::StartsWith("model.config.model_type: a roberta model reads its tokenizer files from its directory"));
}
