// The real all-MiniLM-L6-v2 (scripts/fetch-model.sh) against HF transformers 4.30.2: the tokenizer's
// ids (lower-casing from tokenizer_config.json, accents stripped) and the encoder's
// last_hidden_state and pooler_output on three texts, one of them a pair
// (tests/fixtures/all-minilm-l6-v2/reference.safetensors, made by make_reference.py beside it).
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include <torch/torch.h>

#include "framework/checkpoint/pretrained.h"
#include "framework/checkpoint/safetensors.h"
#include "framework/common/hf_dir.h"
#include "framework/text/bert_tokenizer.h"
#include "framework/text/encoding.h"
#include "support/pretrained_model.h"

namespace fs = std::filesystem;
using namespace unif;

namespace {

const fs::path kReference = fs::path(UNIF_TEST_FIXTURES) / "all-minilm-l6-v2" / "reference.safetensors";

// Must match make_reference.py's TEXTS.
const std::vector<std::pair<std::string, std::string>> kTexts{
    {"I still have not received my new card, when will it arrive?", ""},
    {"A man is playing a guitar.", "Someone plays music on stage."},
    {"Caf\u00e9 \u00c9COLE na\u00efve Stra\u00dfe don't HELLO", "r\u00e9sum\u00e9"},
};

// max |a - b| over the positions where mask (B, L) is 1.
double max_diff(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& mask) {
  auto d = (a - b).abs();
  if (d.dim() == 3) d = d.masked_fill(mask.unsqueeze(-1).logical_not(), 0.0);
  return d.max().item<double>();
}

}  // namespace

TEST_CASE("all-MiniLM-L6-v2: tokenizer ids and encoder outputs match HF", "[pretrained][parity]") {
  const fs::path dir = test::pretrained_model_dir();
  INFO("model directory " << dir << " (scripts/fetch-model.sh)");
  REQUIRE(fs::is_regular_file(dir / "model.safetensors"));
  const auto ref = framework::read_safetensors(kReference).tensors;

  const auto lower = read_do_lower_case(dir);
  REQUIRE(lower == std::optional<bool>(true));
  auto vocab = std::make_shared<const framework::Vocab>(framework::Vocab::load((dir / "vocab.txt").string()));
  framework::BertTokenizer tokenizer(vocab, *lower);
  const int64_t length = ref.at("input_ids").size(1);
  for (size_t i = 0; i < kTexts.size(); ++i) {
    const auto& [a, b] = kTexts[i];
    auto enc = framework::encode(tokenizer, a, b.empty() ? std::nullopt : std::optional<std::string_view>(b),
                                 static_cast<int>(length), framework::TruncateMethod::LongestFirst, true);
    INFO("text " << i);
    CHECK(torch::equal(torch::tensor(enc.input_ids), ref.at("input_ids")[static_cast<int64_t>(i)]));
    CHECK(torch::equal(torch::tensor(enc.token_type_ids), ref.at("token_type_ids")[static_cast<int64_t>(i)]));
  }

  auto loaded = framework::load_pretrained(dir);
  CHECK(loaded.report.unexpected.empty());
  CHECK(loaded.model->options().num_hidden_layers() == 6);
  CHECK(loaded.model->options().hidden_size() == 384);
  int64_t encoder_params = 0;
  for (const auto& p : loaded.model->encoder().parameters()) encoder_params += p.numel();
  CHECK(encoder_params == 22713216);  // all-MiniLM-L6-v2's 22.7M (BertModel with pooler)
  loaded.model->eval();
  torch::NoGradGuard no_grad;
  const auto& mask = ref.at("attention_mask");
  auto out = loaded.model->encoder().encode(ref.at("input_ids"), ref.at("token_type_ids"), mask, {}, false);
  // float32 through 6 layers, another BLAS than the reference's: 2e-5 on unit-size activations.
  CHECK(max_diff(out.last_hidden_state, ref.at("last_hidden_state"), mask) < 2e-5);
  CHECK(max_diff(out.pooler_output, ref.at("pooler_output"), mask) < 2e-5);
}
