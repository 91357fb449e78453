// model.config: HF config fields of any family, by that family's names, set over the pretrained
// config.json before the family reads it. Per family: the override reaches the model's options and
// the config.json unif writes; a field the family does not read, a value of the wrong type, the
// task's own keys and a family change are errors naming model.config; without a pretrained model,
// model_type picks a WordPiece family to train from scratch.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <set>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "framework/checkpoint/hf_config.h"
#include "framework/checkpoint/pretrained.h"
#include "framework/common/error.h"
#include "framework/config/run_config.h"
#include "framework/train/build.h"
#include "models/architectures.h"
#include "models/deberta_v2/config.h"
#include "models/heads/factory.h"
#include "models/hf_json.h"
#include "support/temp_dir.h"
#include "support/user_error.h"
#include "support/fixture_config.h"

using namespace unif::framework;
namespace fs = std::filesystem;
using nlohmann::json;
using unif::test::TempDir;
using unif::test::user_error_of;

using unif::test::kFamilies;

namespace {}  // namespace

TEST_CASE("model.config sets a field of every family by the family's own name", "[unit][config][families]") {
  struct Case {
    const char* family;
    const char* field;  // the family's config.json name of a dropout
    double (*read)(const unif::models::EncoderConfig&);
  };
  auto hidden = [](const unif::models::EncoderConfig& o) { return o.hidden_dropout_prob(); };
  auto classifier = [](const unif::models::EncoderConfig& o) { return o.classifier_dropout(); };
  auto pooler = [](const unif::models::EncoderConfig& o) {
    return o.family<unif::models::DebertaV2Config>().pooler_dropout();
  };
  const Case cases[] = {{"roberta", "hidden_dropout_prob", hidden},
                        {"xlm-roberta", "hidden_dropout_prob", hidden},
                        {"distilbert", "dropout", hidden},
                        {"electra", "hidden_dropout_prob", hidden},
                        {"albert", "classifier_dropout_prob", classifier},
                        {"deberta-v2", "pooler_dropout", pooler},
                        {"mpnet", "hidden_dropout_prob", hidden}};
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

namespace {

// The model directory of `family`'s fixture (BERT: the tiny Chinese BERT).
fs::path fixture_dir(const std::string& family) {
  return family == "bert" ? fs::path(UNIF_SOURCE_DIR) / "tests/fixtures/tiny-bert-zh" : kFamilies / family;
}

json fixture_config(const std::string& family) {
  std::ifstream in(fixture_dir(family) / "config.json");
  return json::parse(in);
}

// A copy of the fixture's model directory under `dir` whose config.json has `changes` set over it.
fs::path crafted_model(const std::string& family, const json& changes, const fs::path& dir) {
  static int count = 0;
  const fs::path out = dir / (family + "-" + std::to_string(count++));
  fs::create_directories(out);
  for (const auto& entry : fs::directory_iterator(fixture_dir(family)))
    if (entry.is_regular_file() && entry.path().filename() != "config.json")
      fs::copy_file(entry.path(), out / entry.path().filename());
  json config = fixture_config(family);
  config.merge_patch(changes);
  for (const auto& [key, value] : changes.items())
    if (value.is_null()) config[key] = nullptr;  // merge_patch deletes a key set to null
  std::ofstream(out / "config.json") << config.dump(2);
  return out;
}

// Every family's names of each kind of field.
struct FamilyKeys {
  const char* family;
  const char* hidden;  // hidden size
  const char* layers;
  const char* heads;
  const char* eps;  // nullptr: the family has none
  std::vector<const char*> dropouts;
  std::vector<const char*> nullable_dropouts;  // null = use another dropout, as HF
};

const std::vector<FamilyKeys>& family_keys() {
  static const std::vector<FamilyKeys> keys{
      {"bert",
       "hidden_size",
       "num_hidden_layers",
       "num_attention_heads",
       "layer_norm_eps",
       {"hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout"},
       {"classifier_dropout"}},
      {"roberta",
       "hidden_size",
       "num_hidden_layers",
       "num_attention_heads",
       "layer_norm_eps",
       {"hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout"},
       {"classifier_dropout"}},
      {"xlm-roberta",
       "hidden_size",
       "num_hidden_layers",
       "num_attention_heads",
       "layer_norm_eps",
       {"hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout"},
       {"classifier_dropout"}},
      {"distilbert",
       "dim",
       "n_layers",
       "n_heads",
       nullptr,
       {"dropout", "attention_dropout", "qa_dropout", "seq_classif_dropout"},
       {}},
      {"electra",
       "hidden_size",
       "num_hidden_layers",
       "num_attention_heads",
       "layer_norm_eps",
       {"hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout"},
       {"classifier_dropout"}},
      {"albert",
       "hidden_size",
       "num_hidden_layers",
       "num_attention_heads",
       "layer_norm_eps",
       {"hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout_prob"},
       {"classifier_dropout_prob"}},
      {"deberta-v2",
       "hidden_size",
       "num_hidden_layers",
       "num_attention_heads",
       "layer_norm_eps",
       {"hidden_dropout_prob", "attention_probs_dropout_prob", "pooler_dropout", "cls_dropout"},
       {"cls_dropout"}},
      {"modernbert",
       "hidden_size",
       "num_hidden_layers",
       "num_attention_heads",
       "norm_eps",
       {"attention_dropout", "embedding_dropout", "mlp_dropout", "classifier_dropout"},
       {}},
      {"mpnet",
       "hidden_size",
       "num_hidden_layers",
       "num_attention_heads",
       "layer_norm_eps",
       {"hidden_dropout_prob", "attention_probs_dropout_prob"},
       {}},
  };
  return keys;
}

}  // namespace

TEST_CASE("crafted config values are user errors naming the file, the key, the value and the range",
          "[unit][model_config]") {
  TempDir tmp;
  for (const auto& f : family_keys()) {
    INFO(f.family);
    const json base = fixture_config(f.family);
    const int64_t vocab = base.at("vocab_size").get<int64_t>();
    const std::string vocab_range = "[0, vocab_size " + std::to_string(vocab) + ")";
    struct Bad {
      std::string key;
      json value;
      std::string says;  // the range and the value
    };
    std::vector<Bad> bad{
        {"vocab_size", 0, "must be an integer in [1, 2147483647], got 0"},
        {"vocab_size", int64_t{1} << 40, "must be an integer in [1, 2147483647], got 1099511627776"},
        {"max_position_embeddings", -3, "must be an integer in [1, 2147483647], got -3"},
        {f.hidden, 0, "must be an integer in [1, 2147483647], got 0"},
        {f.layers, 0, "must be an integer in [1, 2147483647], got 0"},
        {f.heads, 5, std::string(f.hidden) + " (32) must be a multiple of " + f.heads + " (5)"},
        {"pad_token_id", vocab, "must be in " + vocab_range + ", got " + std::to_string(vocab)},
        {"pad_token_id", -1, "must be in " + vocab_range + ", got -1"},
        {"initializer_range", -1, "must be a finite number >= 0, got -1"},
    };
    if (f.eps != nullptr) {
      bad.push_back({f.eps, 0.0, "must be a finite number > 0, got 0.0"});
      bad.push_back({f.eps, -1e-5, "must be a finite number > 0, got -1e-05"});
    }
    for (const char* key : f.dropouts) {
      const bool nullable = std::find(f.nullable_dropouts.begin(), f.nullable_dropouts.end(), std::string(key)) !=
                            f.nullable_dropouts.end();
      const std::string range = std::string("must be a probability in [0, 1)") + (nullable ? " or null" : "");
      bad.push_back({key, 1.0, range + ", got 1.0"});
      bad.push_back({key, 1.5, range + ", got 1.5"});
      bad.push_back({key, -0.25, range + ", got -0.25"});
    }
    for (const auto& b : bad) {
      INFO(b.key << " = " << b.value.dump());
      // In config.json: the file is named.
      const fs::path dir = crafted_model(f.family, json{{b.key, b.value}}, tmp.path);
      CHECK_THAT(user_error_of([&] { read_hf_config(dir / "config.json"); }),
                 Catch::StartsWith((dir / "config.json").string() + ": key '" + b.key + "': " + b.says));
      // Through model.config: named as model.config (alone, or with the file it is set over).
      CHECK_THAT(user_error_of([&] {
                   read_hf_config(fixture_dir(f.family) / "config.json", json{{b.key, b.value}});
                 }),
                 Catch::Contains("model.config") && Catch::Contains("key '" + b.key + "': " + b.says));
    }
    // The edges of the ranges, and null where HF allows it, are read as given.
    // RoBERTa's positions start after pad_token_id: room for them.
    json edges{{"initializer_range", 0.0}, {"pad_token_id", vocab - 1}, {"max_position_embeddings", vocab + 1}};
    for (const char* key : f.dropouts) edges[key] = 0.0;
    const HfConfig at_edges = read_hf_config(crafted_model(f.family, edges, tmp.path) / "config.json");
    CHECK(at_edges.bert.initializer_range() == 0.0);
    CHECK(at_edges.bert.pad_token_id() == vocab - 1);
    CHECK(at_edges.bert.hidden_dropout_prob() == 0.0);
    for (const char* key : f.nullable_dropouts) {
      const HfConfig null = read_hf_config(crafted_model(f.family, json{{key, nullptr}}, tmp.path) / "config.json");
      CHECK(null.bert.classifier_dropout() < 0);  // null: hidden_dropout_prob
    }
  }
}

TEST_CASE("family-specific crafted config values are user errors", "[unit][model_config]") {
  TempDir tmp;
  struct Bad {
    const char* family;
    json changes;
    std::string says;
  };
  const std::vector<Bad> bad{
      {"bert", {{"type_vocab_size", 0}}, "key 'type_vocab_size': must be an integer >= 1"},
      {"bert", {{"intermediate_size", 0}}, "key 'intermediate_size': must be an integer in [1, 2147483647], got 0"},
      {"roberta", {{"max_position_embeddings", 2}}, "key 'max_position_embeddings': must be > pad_token_id + 1 (2"},
      {"xlm-roberta", {{"type_vocab_size", -1}}, "key 'type_vocab_size': must be an integer in [0, 2147483647]"},
      {"distilbert", {{"hidden_dim", 0}}, "key 'hidden_dim': must be an integer in [1, 2147483647], got 0"},
      {"distilbert", {{"activation", "swish"}}, "key 'activation': must be gelu, gelu_new or relu, got \"swish\""},
      {"electra", {{"embedding_size", 0}}, "key 'embedding_size': must be an integer in [1, 2147483647], got 0"},
      {"albert", {{"num_hidden_groups", 0}}, "key 'num_hidden_groups': must be an integer in [1, 2147483647]"},
      {"albert", {{"inner_group_num", -2}}, "key 'inner_group_num': must be an integer in [1, 2147483647]"},
      {"albert", {{"num_hidden_groups", 4}}, "key 'num_hidden_groups': must be at most num_hidden_layers (3), got 4"},
      {"deberta-v2", {{"position_buckets", int64_t{1} << 40}}, "key 'position_buckets': must be an integer <= "},
      {"deberta-v2", {{"embedding_size", -4}}, "key 'embedding_size': must be an integer in [1, 2147483647]"},
      {"modernbert",
       {{"initializer_cutoff_factor", -2}},
       "key 'initializer_cutoff_factor': must be a finite number >= 0"},
      {"modernbert", {{"global_rope_theta", 0}}, "key 'global_rope_theta': must be a finite number > 0, got 0"},
      {"modernbert", json::parse(R"({"rope_parameters": {"full_attention": {"rope_theta": -1}}})"),
       "key 'rope_parameters': full_attention.rope_theta: must be a finite number > 0, got -1"},
      {"modernbert", {{"num_attention_heads", 32}}, "key 'num_attention_heads': hidden_size / num_attention_heads (1)"},
      {"modernbert", {{"num_hidden_layers", 3}}, "key 'layer_types': has 4 entries, expected num_hidden_layers (3)"},
      {"modernbert",
       {{"classifier_activation", "tanh"}},
       "key 'classifier_activation': must be gelu, gelu_new or relu"},
      {"mpnet", {{"max_position_embeddings", 2}}, "key 'max_position_embeddings': must be > padding_idx + 1 (2"},
      {"mpnet",
       {{"relative_attention_num_buckets", 16}},
       "key 'relative_attention_num_buckets': must be at least 32 (HF's MPNet looks up 32 relative-position "
       "buckets whatever the table holds), got 16"},
      {"mpnet",
       {{"relative_attention_num_buckets", 0}},
       "key 'relative_attention_num_buckets': must be an integer in [1, 2147483647], got 0"},
  };
  for (const auto& b : bad) {
    INFO(b.family << " " << b.changes.dump());
    const fs::path dir = crafted_model(b.family, b.changes, tmp.path);
    CHECK_THAT(user_error_of([&] { read_hf_config(dir / "config.json"); }),
               Catch::StartsWith((dir / "config.json").string() + ": " + b.says));
  }
}

TEST_CASE("a config whose sizes are not the checkpoint's is refused before the model is built",
          "[unit][model_config]") {
  TempDir tmp;
  const int64_t huge = 2147483647;  // the largest size a config may give: 256 GiB of float32 word embeddings
  struct Case {
    const char* family;
    const char* weights;  // the tensor named in the message
    const char* dims;
  };
  const Case cases[] = {
      {"bert", "bert.embeddings.word_embeddings.weight", "vocab_size, hidden_size"},
      {"roberta", "roberta.embeddings.word_embeddings.weight", "vocab_size, hidden_size"},
      {"xlm-roberta", "roberta.embeddings.word_embeddings.weight", "vocab_size, hidden_size"},
      {"distilbert", "distilbert.embeddings.word_embeddings.weight", "vocab_size, dim"},
      {"electra", "electra.embeddings.word_embeddings.weight", "vocab_size, embedding_size"},
      {"albert", "albert.embeddings.word_embeddings.weight", "vocab_size, embedding_size"},
      {"deberta-v2", "deberta.embeddings.word_embeddings.weight", "vocab_size, hidden_size"},
      {"modernbert", "model.embeddings.tok_embeddings.weight", "vocab_size, hidden_size"},
      {"mpnet", "mpnet.embeddings.word_embeddings.weight", "vocab_size, hidden_size"},
  };
  for (const auto& c : cases) {
    INFO(c.family);
    const json base = fixture_config(c.family);
    const int64_t vocab = base.at("vocab_size").get<int64_t>();
    const std::string width = std::to_string(c.family == std::string("electra") || c.family == std::string("albert")
                                                 ? base.at("embedding_size").get<int64_t>()
                                                 : 32);
    for (const int64_t size : {vocab + 1, huge}) {
      const fs::path dir = crafted_model(c.family, json{{"vocab_size", size}}, tmp.path);
      CHECK_THAT(user_error_of([&] { unif::framework::load_pretrained(dir); }),
                 Catch::StartsWith((dir / "config.json").string() + ": its " + c.dims + " make " + c.weights + " [" +
                                   std::to_string(size) + ", " + width + "], but " +
                                   (dir / "model.safetensors").string() + " holds it as [" + std::to_string(vocab) +
                                   ", " + width + "]: the config does not describe this checkpoint"));
    }
  }
  // Positions, layer matrices; the same through model.config.
  const fs::path bert = crafted_model("bert", json{{"max_position_embeddings", huge}}, tmp.path);
  CHECK_THAT(user_error_of([&] { unif::framework::load_pretrained(bert); }),
             Catch::Contains("max_position_embeddings, hidden_size make bert.embeddings.position_embeddings.weight "
                             "[2147483647, 32]") &&
                 Catch::Contains("holds it as [64, 32]"));
  // MPNet's relative-position table: its rows are relative_attention_num_buckets.
  const fs::path buckets = crafted_model("mpnet", json{{"relative_attention_num_buckets", 64}}, tmp.path);
  CHECK_THAT(user_error_of([&] { unif::framework::load_pretrained(buckets); }),
             Catch::Contains("relative_attention_num_buckets, num_attention_heads make "
                             "mpnet.encoder.relative_attention_bias.weight [64, 4]") &&
                 Catch::Contains("holds it as [32, 4]"));
  const fs::path wide = crafted_model("distilbert", json{{"hidden_dim", 1 << 30}}, tmp.path);
  CHECK_THAT(user_error_of([&] { unif::framework::load_pretrained(wide); }),
             Catch::Contains("hidden_dim, dim make distilbert.transformer.layer.0.ffn.lin1.weight [1073741824, 32]"));
  const fs::path roberta = kFamilies / "roberta";
  CHECK_THAT(
      user_error_of([&] {
        unif::framework::load_pretrained(roberta, read_hf_config(roberta / "config.json", json{{"vocab_size", huge}}),
                                         {});
      }),
      Catch::Contains("vocab_size, hidden_size make roberta.embeddings.word_embeddings.weight [2147483647, 32]"));
  // A torch.save checkpoint's shapes, from its pickle: no storage is read.
  const fs::path bin = crafted_model("bert", json{{"vocab_size", huge}}, tmp.path);
  fs::remove(bin / "model.safetensors");
  CHECK_THAT(user_error_of([&] { unif::framework::load_pretrained(bin); }),
             Catch::Contains("make bert.embeddings.word_embeddings.weight [2147483647, 32], but " +
                             (bin / "pytorch_model.bin").string() + " holds it as [21128, 32]"));
}

TEST_CASE("from scratch, a model that would not fit in memory is refused before it is allocated",
          "[unit][model_config]") {
  TempDir tmp;
  const std::string src = UNIF_SOURCE_DIR;
  const std::string yaml = "task: classification\noutput_dir: " + (tmp.path / "run").string() +
                           "\nmodel: {vocab: " + src +
                           "/tests/fixtures/tiny-bert-zh/vocab.txt, max_seq_length: 16, config: {vocab_size: "
                           "2147483647, hidden_size: 4096, num_hidden_layers: 1, num_attention_heads: 4, "
                           "intermediate_size: 64}}\ndata: {train: " +
                           src + "/data/sib200_zh/dev.jsonl}\n";
  const RunConfig cfg = parse_config(yaml, "scratch.yaml", {}, Purpose::Train);
  CHECK_THAT(user_error_of([&] { build_trainer_parts(cfg); }),
             Catch::StartsWith("model.config: its sizes make a model of about 8.8e+12 parameters; 8.8e+12 of them in "
                               "embeddings.word_embeddings.weight [2147483647, 4096] (vocab_size, hidden_size)") &&
                 Catch::Contains("4 float32 copies: weights, gradients, optimizer state") &&
                 Catch::Contains("of memory"));
}

TEST_CASE("a family's field list names every key its reader looks up", "[unit][config][families]") {
  // model.config's overrides are checked against the keys a read asks for; the list says the same.
  for (const auto& a : unif::models::architectures()) {
    INFO(a.model_type);
    std::set<std::string> asked;
    unif::models::EncoderConfig scratch;
    a.read_config(unif::models::HfJson(json::object(), &asked), scratch);
    CHECK(asked == a.config_keys());
  }
}
