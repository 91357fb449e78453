// Parity tests of unif::checkpoint on the HF fixture tests/fixtures/tiny-bert-zh (written by
// transformers 4.28.1 / PyTorch 1.13): model.safetensors and pytorch_model.bin hold the same 41
// parameters + the position_ids buffer bit for bit; re-writing reproduces the safetensors file and
// config.json byte for byte; config.json maps onto the documented values.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <torch/types.h>

#include "framework/checkpoint/hf_config.h"
#include "framework/checkpoint/safetensors.h"
#include "framework/checkpoint/state_dict.h"
#include "framework/checkpoint/torch_bin.h"
#include "support/temp_dir.h"
#include "support/files.h"

namespace fs = std::filesystem;
using namespace unif::framework;

using unif::test::TempDir;

using unif::test::slurp;

namespace {

const fs::path kFixture = fs::path(UNIF_TEST_FIXTURES) / "tiny-bert-zh";

bool same_bytes(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes()) return false;
  auto ca = a.contiguous(), cb = b.contiguous();
  return ca.nbytes() == cb.nbytes() && std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) == 0;
}

}  // namespace

TEST_CASE("fixture model.safetensors: 41 parameters + position_ids, 696482 weights", "[parity][checkpoint]") {
  auto st = read_safetensors(kFixture / "model.safetensors");
  CHECK(st.metadata == std::map<std::string, std::string>{{"format", "pt"}});
  REQUIRE(st.tensors.size() == 42);
  int64_t params = 0;
  for (const auto& [name, t] : st.tensors) {
    INFO(name);
    if (name == "bert.embeddings.position_ids") continue;
    CHECK(t.scalar_type() == torch::kFloat32);
    params += t.numel();
  }
  CHECK(params == 696482);
  const auto& ids = st.tensors.at("bert.embeddings.position_ids");
  CHECK(ids.scalar_type() == torch::kInt64);
  CHECK(torch::equal(ids, torch::arange(64).unsqueeze(0)));
  CHECK(st.tensors.at("bert.embeddings.word_embeddings.weight").sizes() == torch::IntArrayRef({21128, 32}));
  CHECK(st.tensors.at("bert.encoder.layer.1.intermediate.dense.weight").sizes() == torch::IntArrayRef({64, 32}));
  CHECK(st.tensors.at("classifier.weight").sizes() == torch::IntArrayRef({2, 32}));
  CHECK(st.tensors.count("bert.pooler.dense.bias") == 1);
}

TEST_CASE("fixture pytorch_model.bin equals model.safetensors bit for bit", "[parity][checkpoint]") {
  auto st = read_safetensors(kFixture / "model.safetensors").tensors;
  auto bin = read_torch_bin(kFixture / "pytorch_model.bin");
  REQUIRE(bin.size() == st.size());
  for (const auto& [name, t] : st) {
    INFO(name);
    REQUIRE(bin.count(name) == 1);
    CHECK(same_bytes(bin.at(name), t));
  }
  // read_weights prefers model.safetensors.
  auto w = read_weights(kFixture);
  REQUIRE(w.size() == st.size());
  CHECK(same_bytes(w.at("classifier.weight"), st.at("classifier.weight")));
}

TEST_CASE("re-writing the fixture safetensors reproduces its bytes", "[parity][checkpoint]") {
  TempDir dir;
  auto st = read_safetensors(kFixture / "model.safetensors");
  write_safetensors(dir / "model.safetensors", st.tensors, st.metadata);
  CHECK(slurp(dir / "model.safetensors") == slurp(kFixture / "model.safetensors"));
  auto back = read_safetensors(dir / "model.safetensors");
  CHECK(back.metadata == st.metadata);
  REQUIRE(back.tensors.size() == st.tensors.size());
  for (const auto& [name, t] : st.tensors) {
    INFO(name);
    CHECK(same_bytes(back.tensors.at(name), t));
  }
  // The .bin's tensors written as safetensors give the same file too.
  write_safetensors(dir / "from_bin.safetensors", read_torch_bin(kFixture / "pytorch_model.bin"));
  CHECK(slurp(dir / "from_bin.safetensors") == slurp(kFixture / "model.safetensors"));
}

TEST_CASE("fixture config.json: values, and write -> read round trip", "[parity][checkpoint]") {
  auto c = read_hf_config(kFixture / "config.json");
  CHECK(c.bert.vocab_size() == 21128);
  CHECK(c.bert.hidden_size() == 32);
  CHECK(c.bert.num_hidden_layers() == 2);
  CHECK(c.bert.num_attention_heads() == 4);
  CHECK(c.bert.intermediate_size() == 64);
  CHECK(c.bert.hidden_act() == "gelu");
  CHECK(c.bert.hidden_dropout_prob() == 0.1);
  CHECK(c.bert.attention_probs_dropout_prob() == 0.1);
  CHECK(c.bert.max_position_embeddings() == 64);
  CHECK(c.bert.type_vocab_size() == 2);
  CHECK(c.bert.initializer_range() == 0.02);
  CHECK(c.bert.layer_norm_eps() == 1e-12);
  CHECK(c.bert.pad_token_id() == 0);
  CHECK(c.bert.classifier_dropout() < 0);  // null
  CHECK(c.architectures == std::vector<std::string>{"BertForSequenceClassification"});
  CHECK(c.id2label == std::vector<std::string>{"neg", "pos"});
  CHECK(c.num_labels == 2);
  CHECK(c.problem_type.empty());
  CHECK(c.raw.at("transformers_version") == "4.28.1");

  TempDir dir;
  write_hf_config(dir / "config.json", c);
  // HF writes json.dumps(indent=2, sort_keys=True) + "\n": so do we, byte for byte.
  CHECK(slurp(dir / "config.json") == slurp(kFixture / "config.json"));
  auto d = read_hf_config(dir / "config.json");
  CHECK(d.raw == c.raw);
  CHECK(d.id2label == c.id2label);
  CHECK(d.architectures == c.architectures);
  CHECK(d.bert.hidden_size() == 32);
  CHECK(d.bert.layer_norm_eps() == 1e-12);
}
