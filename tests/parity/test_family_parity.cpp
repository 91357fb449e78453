// Parity of every encoder family (RoBERTa, XLM-RoBERTa, DistilBERT, ELECTRA, ALBERT, DeBERTa-v2, ModernBERT) with HF
// transformers 5 on the tiny checkpoints of tests/fixtures/families (see its README.md): for each task
// head, the head's parameter names and values, the logits, the loss and the gradient of every
// parameter after one backward pass (eval mode), against what HF computed on the same batch.
#include <catch2/catch.hpp>

#include <filesystem>
#include <set>
#include <string>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "framework/checkpoint/hf_config.h"
#include "framework/checkpoint/pretrained.h"
#include "framework/checkpoint/safetensors.h"
#include "models/architectures.h"

namespace fs = std::filesystem;
using namespace unif;
using framework::TensorMap;

namespace {

const fs::path kFamilies = fs::path(UNIF_TEST_FIXTURES) / "families";

// max over elements of |a-b| - (atol + rtol*|b|); <= 0 means close.
double worst_excess(const torch::Tensor& a, const torch::Tensor& b, double atol, double rtol) {
  REQUIRE(a.sizes() == b.sizes());
  auto excess = (a.to(torch::kDouble) - b.to(torch::kDouble)).abs() - (atol + rtol * b.to(torch::kDouble).abs());
  return excess.max().item<double>();
}

struct Head {
  const char* name;
  Task task;
  int64_t num_labels;
};

const Head kHeads[] = {
    {"sequence_classification", Task::Classification, 3},
    {"multilabel", Task::Multilabel, 3},
    {"regression", Task::Regression, 1},
    {"token_classification", Task::TokenClassification, 5},
    {"question_answering", Task::SpanExtraction, 2},
    {"masked_lm", Task::MaskedLm, 0},
};

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

// `overrides`: config.json fields set before the model is built (model.config), e.g. another pooling.
// unpadded: the encoder's dense layers on the real tokens only (model.unpadded); padded positions'
// outputs are then not HF's, so token classification's logits are compared where the mask is 1.
void check_family_head(const std::string& family, const Head& head, const nlohmann::json& overrides = {},
                       bool unpadded = true) {
  const fs::path dir = kFamilies / family;
  const TensorMap ref = framework::read_safetensors(dir / "reference.safetensors").tensors;
  const std::string h = head.name;
  INFO(family << " " << h << (unpadded ? " unpadded" : " padded"));

  framework::PretrainedOptions po;
  po.task = head.task;
  po.num_labels = head.num_labels;
  po.fresh_mismatched_head = true;
  po.unpad_inputs = unpadded;
  auto loaded = overrides.empty()
                    ? framework::load_pretrained(dir, po)
                    : framework::load_pretrained(dir, framework::read_hf_config(dir / "config.json", overrides), po);
  auto& model = *loaded.model;
  REQUIRE(model.architecture().model_type == family);
  const std::string prefix = model.architecture().checkpoint_prefix();

  // The head's parameters: the same names as HF's (every one of ours has a reference value).
  {
    torch::NoGradGuard no_grad;
    for (auto& item : model.named_parameters()) {
      if (starts_with(item.key(), prefix)) continue;
      const auto it = ref.find(h + ".param." + item.key());
      INFO("head parameter " << item.key());
      REQUIRE(it != ref.end());
      REQUIRE(item.value().sizes() == it->second.sizes());
      item.value().copy_(it->second);
    }
  }
  model.eval();

  models::Batch batch;
  batch.input_ids = ref.at("inputs.input_ids");
  batch.attention_mask = ref.at("inputs.attention_mask");
  if (ref.count("inputs.token_type_ids")) batch.token_type_ids = ref.at("inputs.token_type_ids");
  if (head.task == Task::SpanExtraction)
    batch.labels = torch::stack({ref.at(h + ".start_positions"), ref.at(h + ".end_positions")}, 1);
  else
    batch.labels = ref.at(h + ".labels");
  // Unpadded: more padding columns at the end (a quarter of the length and one), so that the batch
  // takes the unpadded path (EncoderConfig::kUnpadMinPadding) whatever its own padding; the real tokens'
  // positions and outputs stay HF's. Not for span extraction, whose loss reads every position.
  const int64_t length = batch.input_ids.size(1);
  if (unpadded && head.task != Task::SpanExtraction) {
    const int64_t extra = length / 4 + 1, rows = batch.input_ids.size(0);
    auto widen = [&](const torch::Tensor& t, int64_t fill) {
      return torch::cat({t, torch::full({rows, extra}, fill, t.options())}, 1);
    };
    batch.input_ids = widen(batch.input_ids, loaded.config.bert.pad_token_id());
    batch.attention_mask = widen(batch.attention_mask, 0);
    if (batch.token_type_ids.defined()) batch.token_type_ids = widen(batch.token_type_ids, 0);
    if (head.task == Task::TokenClassification || head.task == Task::MaskedLm) batch.labels = widen(batch.labels, -100);
  }

  models::ModelOutput out = model.forward(batch);
  // Logits.
  switch (head.task) {
    case Task::SpanExtraction:
      CHECK(worst_excess(out.logits.select(2, 0), ref.at(h + ".start_logits"), 1e-5, 1e-5) <= 0);
      CHECK(worst_excess(out.logits.select(2, 1), ref.at(h + ".end_logits"), 1e-5, 1e-5) <= 0);
      break;
    case Task::MaskedLm: {
      // Ours: the labelled positions only, row-major, as HF's label_positions.
      const auto positions = batch.labels.ne(-100).nonzero();  // the extra columns have none
      REQUIRE(torch::equal(positions, ref.at(h + ".label_positions")));
      CHECK(worst_excess(out.logits, ref.at(h + ".logits_at_labels"), 1e-5, 1e-5) <= 0);
      break;
    }
    case Task::TokenClassification: {
      const torch::Tensor logits = out.logits.narrow(1, 0, length);
      const torch::Tensor real =
          batch.attention_mask.narrow(1, 0, length).to(torch::kBool).unsqueeze(-1).expand_as(logits);
      CHECK(worst_excess(logits.masked_select(real), ref.at(h + ".logits").masked_select(real), 1e-5, 1e-5) <= 0);
      if (!unpadded) CHECK(worst_excess(out.logits, ref.at(h + ".logits"), 1e-5, 1e-5) <= 0);
      break;
    }
    default:
      CHECK(worst_excess(out.logits.reshape(ref.at(h + ".logits").sizes()), ref.at(h + ".logits"), 1e-5, 1e-5) <= 0);
  }
  // The loss: Σ_b l_b / Z is HF's mean loss.
  const torch::Tensor loss = out.example_losses.sum() / static_cast<double>(out.loss_count);
  CHECK(std::abs(loss.item<double>() - ref.at(h + ".loss").item<double>()) < 1e-5);

  // Every gradient (HF's names; an untied word-embedding table as its batch rows, the rest zero).
  loss.backward();
  std::set<std::string> seen;
  for (const auto& item : model.named_parameters()) {
    const std::string& name = item.key();
    INFO("gradient of " << name);
    const torch::Tensor g = item.value().grad();
    REQUIRE(g.defined());
    if (ref.count(h + ".grad." + name)) {
      CHECK(worst_excess(g, ref.at(h + ".grad." + name), 1e-5, 1e-4) <= 0);
    } else {
      REQUIRE(ref.count(h + ".grad_rows." + name));
      const torch::Tensor ids = ref.at(h + ".grad_row_ids." + name);
      CHECK(worst_excess(g.index_select(0, ids), ref.at(h + ".grad_rows." + name), 1e-5, 1e-4) <= 0);
      torch::Tensor others = g.clone();
      others.index_fill_(0, ids, 0.0);
      CHECK(others.abs().max().item<double>() == 0.0);
    }
    seen.insert(name);
  }
  // And no HF parameter that we lack.
  for (const auto& [key, value] : ref) {
    for (const std::string kind : {".grad.", ".grad_rows."})
      if (starts_with(key, h + kind)) {
        INFO("HF parameter " << key);
        CHECK(seen.count(key.substr(h.size() + kind.size())) == 1);
      }
  }
}

}  // namespace

TEST_CASE("every family's task heads equal HF's: names, logits, loss and one-step gradients", "[parity][families]") {
  const std::string family =
      GENERATE("roberta", "xlm-roberta", "distilbert", "electra", "albert", "deberta-v2", "modernbert");
  const bool unpadded = GENERATE(true, false);
  for (const Head& head : kHeads) check_family_head(family, head, {}, unpadded);
}

TEST_CASE("ModernBERT's sequence head pooling the first position (classifier_pooling cls) equals HF's",
          "[parity][families]") {
  // The fixture pools the mean over the mask; its "sequence_classification_cls" reference is HF's
  // model loaded with classifier_pooling "cls".
  check_family_head("modernbert", {"sequence_classification_cls", Task::Classification, 3},
                    {{"classifier_pooling", "cls"}});
}
