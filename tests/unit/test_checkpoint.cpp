// Unit tests of unif::checkpoint without fixture files: safetensors round trips and one test per
// class of corrupt file (built in a temporary directory), state_dict / load_state_dict on a tiny
// module, HF config.json reading (typed errors) and writing.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/types.h>

#include "framework/checkpoint/hf_config.h"
#include "framework/checkpoint/safetensors.h"
#include "framework/checkpoint/state_dict.h"
#include "framework/common/error.h"
#include "support/temp_dir.h"
#include "support/files.h"

namespace fs = std::filesystem;
using namespace unif::framework;
using Catch::Matchers::Contains;

using unif::test::TempDir;

using unif::test::slurp;
using unif::test::spit;

namespace {

std::string le64(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>(n >> (8 * i));
  return s;
}

// A safetensors file with the given header text and `data_bytes` zero bytes of data.
fs::path safetensors_with(const TempDir& dir, const std::string& header, size_t data_bytes) {
  const auto file = dir / "bad.safetensors";
  spit(file, le64(header.size()) + header + std::string(data_bytes, '\0'));
  return file;
}

// The UserError message of read_safetensors(file); fails the test if it does not throw one.
std::string read_error(const fs::path& file) {
  try {
    read_safetensors(file);
  } catch (const unif::UserError& e) { return e.what(); }
  FAIL("read_safetensors did not throw UserError for " << file);
  return {};
}

bool same_bytes(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes()) return false;
  auto ca = a.contiguous(), cb = b.contiguous();
  if (ca.nbytes() != cb.nbytes()) return false;
  // An empty tensor's data pointer may be null, and memcmp(nullptr, ..., 0) is undefined (UBSan).
  return ca.nbytes() == 0 || std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) == 0;
}

}  // namespace

TEST_CASE("safetensors write -> read is bit-identical for every dtype", "[unit][checkpoint]") {
  TempDir dir;
  torch::manual_seed(3);
  TensorMap t;
  t["f32"] = torch::randn({3, 4});
  t["f64"] = torch::randn({2}, torch::kFloat64);
  t["f16"] = torch::randn({5}).to(torch::kFloat16);
  t["bf16"] = torch::randn({2, 2}).to(torch::kBFloat16);
  t["i64"] = torch::arange(-3, 4, torch::kInt64);
  t["i32"] = torch::tensor({-2147483647 - 1, 7}, torch::kInt32);
  t["i16"] = torch::tensor({-7, 300}, torch::kInt16);
  t["i8"] = torch::tensor({-128, 127}, torch::kInt8);
  t["u8"] = torch::tensor({0, 255}, torch::kUInt8);
  t["bool"] = torch::tensor({true, false, true});
  t["scalar"] = torch::tensor(2.5);
  t["empty"] = torch::zeros({0, 3});
  t["transposed"] = torch::randn({3, 2}).t();  // non-contiguous input
  t["nan"] = torch::tensor({NAN, -0.0f, INFINITY});
  const std::map<std::string, std::string> meta{{"format", "pt"}, {"note", "héllo \"quoted\""}};
  write_safetensors(dir / "a.safetensors", t, meta);
  auto back = read_safetensors(dir / "a.safetensors");
  CHECK(back.metadata == meta);
  REQUIRE(back.tensors.size() == t.size());
  for (const auto& [name, tensor] : t) {
    INFO(name);
    REQUIRE(back.tensors.count(name) == 1);
    CHECK(same_bytes(back.tensors.at(name), tensor));
  }
  // Re-writing what was read reproduces the file byte for byte.
  write_safetensors(dir / "b.safetensors", back.tensors, back.metadata);
  CHECK(slurp(dir / "a.safetensors") == slurp(dir / "b.safetensors"));
  // No temporary file is left behind.
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 2);
}

TEST_CASE("safetensors writer follows the reference layout", "[unit][checkpoint]") {
  TempDir dir;
  TensorMap t{{"b", torch::ones({3})}, {"a", torch::ones({1}, torch::kInt8)}, {"c", torch::arange(2)}};
  write_safetensors(dir / "x.safetensors", t);
  const std::string bytes = slurp(dir / "x.safetensors");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  CHECK(n % 8 == 0);
  const std::string header = bytes.substr(8, n);
  // Widest dtype first (I64, F32, I8), default metadata first, padded with spaces.
  const std::string expected =
      R"({"__metadata__":{"format":"pt"},"c":{"dtype":"I64","shape":[2],"data_offsets":[0,16]},)"
      R"("b":{"dtype":"F32","shape":[3],"data_offsets":[16,28]},"a":{"dtype":"I8","shape":[1],"data_offsets":[28,29]}})";
  CHECK(header.substr(0, expected.size()) == expected);
  CHECK(header.find_first_not_of(' ', expected.size()) == std::string::npos);
  CHECK(bytes.size() == 8 + n + 29);
}

TEST_CASE("safetensors: corrupt files are UserErrors naming file and tensor", "[unit][checkpoint]") {
  TempDir dir;
  const std::string good_entry = R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";

  SECTION("missing file") {
    const auto msg = read_error(dir / "nope.safetensors");
    CHECK_THAT(msg, Contains("nope.safetensors") && Contains("no such file"));
  }
  SECTION("shorter than 8 bytes") {
    spit(dir / "t.safetensors", "abc");
    CHECK_THAT(read_error(dir / "t.safetensors"), Contains("t.safetensors") && Contains("shorter than the 8-byte"));
  }
  SECTION("header length beyond the file") {
    spit(dir / "t.safetensors", le64(100) + "{}");
    CHECK_THAT(read_error(dir / "t.safetensors"), Contains("header length 100 exceeds"));
  }
  SECTION("absurd header length") {
    spit(dir / "t.safetensors", le64(uint64_t{1} << 62) + "{}");
    CHECK_THAT(read_error(dir / "t.safetensors"), Contains("absurd"));
  }
  SECTION("header not JSON") {
    CHECK_THAT(read_error(safetensors_with(dir, "{\"w\": nope}", 0)),
               Contains("bad.safetensors") && Contains("not valid JSON"));
  }
  SECTION("header not an object") {
    CHECK_THAT(read_error(safetensors_with(dir, "[1, 2]", 0)), Contains("not a JSON object"));
  }
  SECTION("entry missing a field") {
    CHECK_THAT(read_error(safetensors_with(dir, R"({"w":{"dtype":"F32","shape":[2]}})", 8)),
               Contains("tensor 'w'") && Contains("missing field 'data_offsets'"));
  }
  SECTION("unknown dtype") {
    CHECK_THAT(read_error(safetensors_with(dir, R"({"w":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", 2)),
               Contains("tensor 'w'") && Contains("unsupported dtype 'F8_E4M3'"));
  }
  SECTION("dtype of the wrong type") {
    CHECK_THAT(read_error(safetensors_with(dir, R"({"w":{"dtype":4,"shape":[2],"data_offsets":[0,8]}})", 8)),
               Contains("tensor 'w'") && Contains("'dtype' must be a string"));
  }
  SECTION("negative shape") {
    CHECK_THAT(read_error(safetensors_with(dir, R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8)),
               Contains("tensor 'w'") && Contains("negative dimension"));
  }
  SECTION("offsets beyond the buffer (truncated data)") {
    CHECK_THAT(read_error(safetensors_with(dir, "{" + good_entry + "}", 4)),
               Contains("tensor 'w'") && Contains("beyond the data buffer of 4 bytes"));
  }
  SECTION("offsets begin > end") {
    CHECK_THAT(read_error(safetensors_with(dir, R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8)),
               Contains("tensor 'w'") && Contains("begin > end"));
  }
  SECTION("byte size does not match shape x dtype") {
    CHECK_THAT(read_error(safetensors_with(dir, R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8)),
               Contains("tensor 'w'") && Contains("does not match shape [3] of F32 (12 bytes)"));
  }
  SECTION("huge shape does not overflow") {
    CHECK_THAT(read_error(safetensors_with(
                   dir, R"({"w":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,0]}})", 0)),
               Contains("tensor 'w'") && Contains("overflow"));
  }
  SECTION("overlapping tensors") {
    const std::string h = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                          R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
    CHECK_THAT(read_error(safetensors_with(dir, h, 12)), Contains("tensor 'b'") && Contains("overlaps tensor 'a'"));
  }
  SECTION("unused bytes between or after tensors") {
    const std::string gap = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
    CHECK_THAT(read_error(safetensors_with(dir, gap, 8)), Contains("tensor 'a'") && Contains("gap of 4 unused bytes"));
    CHECK_THAT(read_error(safetensors_with(dir, "{" + good_entry + "}", 12)), Contains("4 bytes at the end"));
  }
  SECTION("metadata values must be strings") {
    CHECK_THAT(read_error(safetensors_with(dir, R"({"__metadata__":{"format":1}})", 0)),
               Contains("\"__metadata__\" value of 'format' must be a string"));
  }
  SECTION("a valid file cut short") {
    write_safetensors(dir / "ok.safetensors", {{"w", torch::ones({4, 4})}});
    auto bytes = slurp(dir / "ok.safetensors");
    spit(dir / "ok.safetensors", bytes.substr(0, bytes.size() - 10));
    CHECK_THAT(read_error(dir / "ok.safetensors"), Contains("tensor 'w'") && Contains("beyond the data buffer"));
  }
}

TEST_CASE("safetensors writer refuses what it cannot store", "[unit][checkpoint]") {
  TempDir dir;
  CHECK_THROWS_WITH(write_safetensors(dir / "c.safetensors", {{"z", torch::zeros({2}, torch::kComplexFloat)}}),
                    Contains("tensor 'z'") && Contains("not supported"));
  CHECK_THROWS_WITH(write_safetensors(dir / "s.safetensors", {{"s", torch::eye(3).to_sparse()}}),
                    Contains("tensor 's' is not dense"));
  CHECK_THROWS_WITH(write_safetensors(dir / "no" / "dir" / "x.safetensors", {{"w", torch::ones({1})}}),
                    Contains("cannot write") && Contains("x.safetensors"));
  CHECK(fs::is_empty(dir.path));
}

namespace {

// A Linear, a registered buffer and a nested child: what a state dict must walk.
struct TinyImpl : torch::nn::Module {
  torch::nn::Linear fc{nullptr};
  std::shared_ptr<torch::nn::Module> inner;
  torch::Tensor running;
  TinyImpl() {
    fc = register_module("fc", torch::nn::Linear(3, 2));
    inner = register_module("inner", std::make_shared<torch::nn::Module>());
    inner->register_parameter("scale", torch::ones({4}));
    running = register_buffer("running", torch::zeros({2}));
  }
};

}  // namespace

TEST_CASE("state_dict lists parameters and buffers recursively, detached", "[unit][checkpoint]") {
  TinyImpl m;
  auto sd = state_dict(m);
  std::vector<std::string> names;
  for (const auto& [k, v] : sd) names.push_back(k);
  CHECK(names == std::vector<std::string>{"fc.bias", "fc.weight", "inner.scale", "running"});
  CHECK_FALSE(sd.at("fc.weight").requires_grad());
  CHECK(sd.at("fc.weight").data_ptr() == m.fc->weight.data_ptr());  // shares storage
}

TEST_CASE("load_state_dict copies in place and reports missing / unexpected", "[unit][checkpoint]") {
  TinyImpl m;
  auto* weight_storage = m.fc->weight.data_ptr();
  TensorMap w{{"fc.weight", torch::arange(6, torch::kFloat64).reshape({2, 3})},  // converted to float
              {"running", torch::tensor({5.0f, 6.0f})},
              {"zz.extra", torch::ones({1})},
              {"bert.embeddings.position_ids", torch::arange(4).unsqueeze(0)}};
  auto report = load_state_dict(m, w);
  CHECK(report.missing == std::vector<std::string>{"fc.bias", "inner.scale"});
  CHECK(report.unexpected == std::vector<std::string>{"bert.embeddings.position_ids", "zz.extra"});
  CHECK(m.fc->weight.data_ptr() == weight_storage);
  CHECK(m.fc->weight.scalar_type() == torch::kFloat32);
  CHECK(torch::equal(m.fc->weight, torch::arange(6, torch::kFloat32).reshape({2, 3})));
  CHECK(torch::equal(m.running, torch::tensor({5.0f, 6.0f})));
  CHECK(m.fc->weight.requires_grad());
  CHECK(m.fc->weight.is_leaf());
  CHECK(describe(report) ==
        "2 model weights not in the checkpoint (newly initialized): [fc.bias, inner.scale]; "
        "2 checkpoint weights not used by the model: [bert.embeddings.position_ids, zz.extra]");
  CHECK(describe(LoadReport{}) == "all checkpoint weights matched the model");
}

TEST_CASE("load_state_dict: shape or dtype mismatch is a UserError naming the key", "[unit][checkpoint]") {
  TinyImpl m;
  const auto before = m.fc->bias.clone();
  CHECK_THROWS_AS(load_state_dict(m, {{"fc.weight", torch::zeros({3, 2})}}), unif::UserError);
  CHECK_THROWS_WITH(load_state_dict(m, {{"fc.weight", torch::zeros({3, 2})}}),
                    "checkpoint tensor 'fc.weight' has shape [3, 2] but the model expects [2, 3]");
  CHECK_THROWS_WITH(load_state_dict(m, {{"fc.bias", torch::zeros({2}, torch::kInt64)}}),
                    Contains("'fc.bias'") && Contains("dtype Long") && Contains("Float"));
  CHECK(torch::equal(m.fc->bias, before));
}

TEST_CASE("read_weights picks model.safetensors, else pytorch_model.bin, else fails", "[unit][checkpoint]") {
  TempDir dir;
  CHECK_THROWS_WITH(read_weights(dir / "missing"), Contains("missing") && Contains("does not exist"));
  CHECK_THROWS_WITH(read_weights(dir.path), Contains("no weights found") && Contains("model.safetensors"));
  write_safetensors(dir / "model.safetensors", {{"w", torch::ones({2})}});
  spit(dir / "pytorch_model.bin", "not even a zip");  // never opened: safetensors wins
  auto w = read_weights(dir.path);
  REQUIRE(w.size() == 1);
  CHECK(torch::equal(w.at("w"), torch::ones({2})));
  fs::remove(dir / "model.safetensors");
  CHECK_THROWS_WITH(read_weights(dir.path), Contains("pytorch_model.bin"));
}

namespace {

const char* kConfig = R"({
  "architectures": ["BertForTokenClassification"],
  "hidden_size": 48, "num_attention_heads": 6, "num_hidden_layers": 3, "intermediate_size": 96,
  "vocab_size": 100, "max_position_embeddings": 40, "type_vocab_size": 1, "hidden_act": "relu",
  "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.25, "layer_norm_eps": 1e-7,
  "initializer_range": 0.5, "pad_token_id": 3, "classifier_dropout": 0.2,
  "id2label": {"2": "I-LOC", "0": "O", "1": "B-LOC"},
  "problem_type": null, "custom_key": {"nested": [1, 2]}
})";

std::string config_error(const TempDir& dir, const std::string& text) {
  spit(dir / "config.json", text);
  try {
    read_hf_config(dir / "config.json");
  } catch (const unif::UserError& e) { return e.what(); }
  FAIL("read_hf_config did not throw for " << text);
  return {};
}

}  // namespace

TEST_CASE("read_hf_config maps BertConfig keys, and write -> read round trip", "[unit][checkpoint]") {
  TempDir dir;
  spit(dir / "config.json", kConfig);
  auto c = read_hf_config(dir / "config.json");
  CHECK(c.bert.hidden_size() == 48);
  CHECK(c.bert.num_attention_heads() == 6);
  CHECK(c.bert.num_hidden_layers() == 3);
  CHECK(c.bert.intermediate_size() == 96);
  CHECK(c.bert.vocab_size() == 100);
  CHECK(c.bert.max_position_embeddings() == 40);
  CHECK(c.bert.type_vocab_size() == 1);
  CHECK(c.bert.hidden_act() == "relu");
  CHECK(c.bert.hidden_dropout_prob() == 0.0);
  CHECK(c.bert.attention_probs_dropout_prob() == 0.25);
  CHECK(c.bert.layer_norm_eps() == 1e-7);
  CHECK(c.bert.initializer_range() == 0.5);
  CHECK(c.bert.pad_token_id() == 3);
  CHECK(c.bert.classifier_dropout() == 0.2);
  CHECK(c.architectures == std::vector<std::string>{"BertForTokenClassification"});
  CHECK(c.id2label == std::vector<std::string>{"O", "B-LOC", "I-LOC"});
  CHECK(c.num_labels == 3);
  CHECK(c.problem_type.empty());

  c.bert.hidden_dropout_prob(0.1);
  c.problem_type = "regression";
  write_hf_config(dir / "out.json", c);
  auto d = read_hf_config(dir / "out.json");
  CHECK(d.bert.hidden_dropout_prob() == 0.1);
  CHECK(d.bert.hidden_size() == 48);
  CHECK(d.bert.layer_norm_eps() == 1e-7);
  CHECK(d.problem_type == "regression");
  CHECK(d.id2label == c.id2label);
  CHECK(d.raw.at("custom_key") == c.raw.at("custom_key"));
  CHECK(d.raw.at("label2id") == nlohmann::json{{"O", 0}, {"B-LOC", 1}, {"I-LOC", 2}});
  CHECK(d.raw.at("model_type") == "bert");
  CHECK(d.raw.at("num_labels") == 3);

  // Without labels: num_labels is written, classifier_dropout -1 becomes null.
  HfConfig plain;
  plain.num_labels = 5;
  write_hf_config(dir / "plain.json", plain);
  auto p = read_hf_config(dir / "plain.json");
  CHECK(p.num_labels == 5);
  CHECK(p.id2label.empty());
  CHECK(p.raw.at("classifier_dropout").is_null());
  CHECK(p.bert.classifier_dropout() < 0);
}

TEST_CASE("read_hf_config: bad files are UserErrors naming file and key", "[unit][checkpoint]") {
  TempDir dir;
  CHECK_THROWS_WITH(read_hf_config(dir / "absent.json"), Contains("absent.json") && Contains("cannot read"));
  CHECK_THAT(config_error(dir, "{\"hidden_size\": 32,"), Contains("config.json") && Contains("invalid JSON"));
  CHECK_THAT(config_error(dir, "[1]"), Contains("JSON object"));
  CHECK_THAT(config_error(dir, R"({"hidden_size": "32"})"),
             Contains("config.json") && Contains("key 'hidden_size'") && Contains("expected an integer"));
  CHECK_THAT(config_error(dir, R"({"layer_norm_eps": "tiny"})"),
             Contains("key 'layer_norm_eps'") && Contains("number"));
  CHECK_THAT(config_error(dir, R"({"hidden_act": 3})"), Contains("key 'hidden_act'") && Contains("string"));
  CHECK_THAT(config_error(dir, R"({"architectures": "BertModel"})"), Contains("key 'architectures'"));
  CHECK_THAT(config_error(dir, R"({"id2label": {"0": "a", "2": "b"}})"),
             Contains("key 'id2label'") && Contains("\"2\""));
  CHECK_THAT(config_error(dir, R"({"id2label": {"0": 1}})"),
             Contains("key 'id2label'") && Contains("must be a string"));
  CHECK_THAT(config_error(dir, R"({"id2label": {"0": "a"}, "num_labels": 2})"),
             Contains("key 'num_labels'") && Contains("disagrees"));
  CHECK_THAT(config_error(dir, R"({"problem_type": "ranking"})"), Contains("key 'problem_type'"));
  CHECK_THAT(config_error(dir, R"({"position_embedding_type": "relative_key"})"),
             Contains("key 'position_embedding_type'"));
  CHECK_THAT(config_error(dir, R"({"hidden_size": 30, "num_attention_heads": 4})"),
             Contains("config.json") && Contains("hidden_size (30) must be a multiple of num_attention_heads (4)"));
}
