// Parity of every encoder family (RoBERTa, XLM-RoBERTa, DistilBERT, ELECTRA, ALBERT, DeBERTa-v2, ModernBERT,
// MPNet) with HF transformers 5 on the tiny checkpoints of tests/fixtures/families (see its README.md): for
// each task head, the head's parameter names and values, the logits, the loss and the gradient of every
// parameter after one backward pass (eval mode), against what HF computed on the same batch; and the
// encoder's embeddings output and last hidden state against HF's output_hidden_states.
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
#include "models/heads/distillation.h"
#include "support/temp_dir.h"

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
      GENERATE("roberta", "xlm-roberta", "distilbert", "electra", "albert", "deberta-v2", "modernbert", "mpnet");
  const bool unpadded = GENERATE(true, false);
  for (const Head& head : kHeads) check_family_head(family, head, {}, unpadded);
}

TEST_CASE("every family's encoder gives HF's embeddings output and every layer's hidden state", "[parity][families]") {
  const std::string family =
      GENERATE("roberta", "xlm-roberta", "distilbert", "electra", "albert", "deberta-v2", "modernbert", "mpnet");
  const bool unpadded = GENERATE(true, false);
  INFO(family << (unpadded ? " unpadded" : " padded"));
  const fs::path dir = kFamilies / family;
  const TensorMap ref = framework::read_safetensors(dir / "reference.safetensors").tensors;
  framework::PretrainedOptions po;
  po.task = Task::TokenClassification;  // the encoder without a pooler, every position out
  po.num_labels = 5;
  po.fresh_mismatched_head = true;
  po.unpad_inputs = unpadded;
  auto loaded = framework::load_pretrained(dir, po);
  loaded.model->eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor ids = ref.at("inputs.input_ids"), mask = ref.at("inputs.attention_mask");
  const torch::Tensor types = ref.count("inputs.token_type_ids") ? ref.at("inputs.token_type_ids") : torch::Tensor();
  const models::EncoderOutput out = loaded.model->encoder().encode(ids, types, mask, {}, false);
  // HF's output_hidden_states: [0] the embeddings' output, the last the encoder's output.
  int64_t last = 0;
  while (ref.count("encoder.hidden_states." + std::to_string(last + 1))) ++last;
  REQUIRE(last >= 1);
  // Unpadded, the padded positions are zeros, not HF's: compared where the mask is 1.
  const torch::Tensor real = mask.to(torch::kBool).unsqueeze(-1).expand_as(out.last_hidden_state);
  // ELECTRA's and ALBERT's embeddings output is before the projection to hidden_size, HF's after it.
  if (out.embedding_output.sizes() == ref.at("encoder.hidden_states.0").sizes())
    CHECK(worst_excess(out.embedding_output, ref.at("encoder.hidden_states.0"), 1e-5, 1e-5) <= 0);
  else
    CHECK((family == "electra" || family == "albert"));
  CHECK(worst_excess(out.last_hidden_state.masked_select(real),
                     ref.at("encoder.hidden_states." + std::to_string(last)).masked_select(real), 1e-5, 1e-5) <= 0);
  if (!unpadded)
    CHECK(worst_excess(out.last_hidden_state, ref.at("encoder.hidden_states." + std::to_string(last)), 1e-5, 1e-5) <=
          0);

  // Every layer's output (a LayerTap keeping them) is HF's output_hidden_states, first_token_only
  // notwithstanding.
  models::LayerTap tap;
  tap.keep_hidden_states = true;
  const models::EncoderOutput tapped = loaded.model->encoder().encode(ids, types, mask, {}, true, &tap);
  REQUIRE(static_cast<int64_t>(tap.hidden_states.size()) == last + 1);
  CHECK(tap.layers_run == last);
  for (int64_t i = 0; i <= last; ++i) {
    INFO("hidden state " << i);
    const torch::Tensor want = ref.at("encoder.hidden_states." + std::to_string(i));
    REQUIRE(tap.hidden_states[static_cast<size_t>(i)].sizes() == want.sizes());
    CHECK(worst_excess(tap.hidden_states[static_cast<size_t>(i)].masked_select(real), want.masked_select(real), 1e-5,
                       1e-5) <= 0);
  }
  CHECK(torch::equal(tapped.last_hidden_state, out.last_hidden_state));

  // An exit after layer 1: the stack stops there, its output the last hidden state.
  models::LayerTap stop;
  std::vector<int64_t> asked;
  stop.exit_after = [&](int64_t layer, const torch::Tensor& hidden) {
    asked.push_back(layer);
    CHECK(hidden.sizes() == ref.at("encoder.hidden_states.1").sizes());
    return layer == 1;
  };
  const models::EncoderOutput early = loaded.model->encoder().encode(ids, types, mask, {}, true, &stop);
  CHECK(asked == std::vector<int64_t>{1});
  CHECK(stop.layers_run == 1);
  CHECK(stop.hidden_states.empty());
  if (family != "modernbert")  // ModernBERT's final norm follows the stop
    CHECK(worst_excess(early.last_hidden_state.masked_select(real),
                       ref.at("encoder.hidden_states.1").masked_select(real), 1e-5, 1e-5) <= 0);
  // Asked after every layer but the last when it never stops.
  asked.clear();
  stop.exit_after = [&](int64_t layer, const torch::Tensor&) {
    asked.push_back(layer);
    return false;
  };
  const models::EncoderOutput full = loaded.model->encoder().encode(ids, types, mask, {}, false, &stop);
  CHECK(static_cast<int64_t>(asked.size()) == last - 1);
  CHECK(stop.layers_run == last);
  CHECK(torch::equal(full.last_hidden_state, out.last_hidden_state));
}

TEST_CASE("ModernBERT's sequence head pooling the first position (classifier_pooling cls) equals HF's",
          "[parity][families]") {
  // The fixture pools the mean over the mask; its "sequence_classification_cls" reference is HF's
  // model loaded with classifier_pooling "cls".
  check_family_head("modernbert", {"sequence_classification_cls", Task::Classification, 3},
                    {{"classifier_pooling", "cls"}});
}

TEST_CASE("MPNet: a checkpoint lacking its relative-position bias, or of another shape, is refused; MPNetModel's loads",
          "[parity][families][mpnet]") {
  const fs::path fixture = kFamilies / "mpnet";
  const TensorMap weights = framework::read_safetensors(fixture / "model.safetensors").tensors;
  const std::string bias = "mpnet.encoder.relative_attention_bias.weight";
  REQUIRE(weights.at(bias).sizes() == torch::IntArrayRef({32, 4}));
  unif::test::TempDir tmp;
  // The fixture's directory with other weights.
  auto model_dir = [&](const std::string& name, const TensorMap& tensors) {
    const fs::path dir = tmp.path / name;
    fs::create_directories(dir);
    for (const auto& entry : fs::directory_iterator(fixture))
      if (entry.path().filename() != "model.safetensors") fs::copy_file(entry.path(), dir / entry.path().filename());
    framework::write_safetensors(dir / "model.safetensors", tensors);
    return dir;
  };
  {
    TensorMap w = weights;
    w.erase(bias);
    const fs::path dir = model_dir("missing", w);
    CHECK_THROWS_WITH(framework::load_pretrained(dir),
                      Catch::Contains("lacks 1 encoder weight(s) named by config.json: " + bias) &&
                          Catch::Contains("(expected HF MPNetModel names, each starting with mpnet.)"));
  }
  for (const auto& shape : {std::vector<int64_t>{16, 4}, std::vector<int64_t>{4, 32}}) {
    TensorMap w = weights;
    w[bias] = torch::zeros(shape);
    const fs::path dir = model_dir("shape" + std::to_string(shape[0]), w);
    CHECK_THROWS_WITH(
        framework::load_pretrained(dir),
        Catch::StartsWith((dir / "config.json").string() +
                          ": its relative_attention_num_buckets, num_attention_heads make " + bias + " [32, 4], but " +
                          (dir / "model.safetensors").string() + " holds it as [" + std::to_string(shape[0]) + ", " +
                          std::to_string(shape[1]) + "]: the config does not describe this checkpoint"));
  }
  // A plain MPNetModel save (sentence-transformers/all-mpnet-base-v2's layout): names without "mpnet.",
  // a pooler, no head. It loads as the encoder of the fixture's model, the same hidden states.
  TensorMap bare;
  for (const auto& [name, t] : weights)
    if (name.rfind("mpnet.", 0) == 0) bare.emplace(name.substr(6), t);
  bare.emplace("pooler.dense.weight", torch::randn({32, 32}));
  bare.emplace("pooler.dense.bias", torch::zeros({32}));
  const fs::path plain = model_dir("plain", bare);
  framework::PretrainedOptions po;
  po.task = Task::Embedding;
  po.unpad_inputs = false;  // HF's values at padding too
  auto from_plain = framework::load_pretrained(plain, po).model;
  auto from_fixture = framework::load_pretrained(fixture, po).model;
  from_plain->eval();
  from_fixture->eval();
  const TensorMap ref = framework::read_safetensors(fixture / "reference.safetensors").tensors;
  torch::NoGradGuard no_grad;
  const auto a =
      from_plain->encoder().encode(ref.at("inputs.input_ids"), {}, ref.at("inputs.attention_mask"), {}, false);
  const auto b =
      from_fixture->encoder().encode(ref.at("inputs.input_ids"), {}, ref.at("inputs.attention_mask"), {}, false);
  CHECK(torch::equal(a.last_hidden_state, b.last_hidden_state));
  CHECK(worst_excess(a.last_hidden_state, ref.at("encoder.hidden_states.2"), 1e-5, 1e-5) <= 0);
}

// TinyBERT's layer-wise terms between two families that share a vocabulary (DistilBERT student,
// ELECTRA teacher: the same vocab.txt, so the fixtures' batch is one batch of ids): the hidden-state
// and embedding terms by hand from HF's output_hidden_states of each, the attention term from the
// scores q·kᵀ/√d computed here from each layer's input and its query and key weights.
TEST_CASE("distill.intermediate: TinyBERT's terms by hand from HF's hidden states of two families",
          "[parity][families][distill]") {
  const TensorMap sref = framework::read_safetensors(kFamilies / "distilbert" / "reference.safetensors").tensors;
  const TensorMap tref = framework::read_safetensors(kFamilies / "electra" / "reference.safetensors").tensors;
  REQUIRE(torch::equal(sref.at("inputs.input_ids"), tref.at("inputs.input_ids")));
  framework::PretrainedOptions po;
  po.task = Task::Classification;
  po.num_labels = 3;
  auto student = framework::load_pretrained(kFamilies / "distilbert", po).model;
  auto teacher = framework::load_pretrained(kFamilies / "electra", po).model;
  models::IntermediateDistillation d;
  d.layers = {{1, 1}, {2, 2}};
  d.hidden_weight = 0.5;
  d.attention_weight = 2.0;
  d.embedding_weight = 0.25;
  models::DistillationModel model(student, teacher, 2.0, /*alpha=*/0.0, d);
  CHECK_FALSE(model.has_projection());  // both 32 wide
  model.eval();
  models::Batch batch;
  batch.input_ids = tref.at("inputs.input_ids");
  batch.token_type_ids = tref.at("inputs.token_type_ids");
  batch.attention_mask = tref.at("inputs.attention_mask");
  batch.labels = torch::tensor({0, 1, 2}, torch::kLong);
  torch::NoGradGuard no_grad;
  const torch::Tensor got = model.forward(batch).example_losses - student->forward(batch).example_losses;

  const torch::Tensor mask = batch.attention_mask.to(torch::kDouble), n = mask.sum(1);
  auto hidden = [&](const TensorMap& ref, int64_t i) {
    return ref.at("encoder.hidden_states." + std::to_string(i)).to(torch::kDouble);
  };
  auto hidden_term = [&](int64_t i) {
    return ((hidden(sref, i) - hidden(tref, i)).pow(2).sum(-1) * mask).sum(1) / (n * 32);
  };
  const auto sp = student->named_parameters(), tp = teacher->named_parameters();
  auto scores = [&](const torch::Tensor& x, const torch::Tensor& wq, const torch::Tensor& bq, const torch::Tensor& wk,
                    const torch::Tensor& bk) {  // (B, 4, L, L)
    auto heads = [](const torch::Tensor& y) { return y.view({y.size(0), y.size(1), 4, 8}).permute({0, 2, 1, 3}); };
    const torch::Tensor q = heads(x.matmul(wq.to(torch::kDouble).t()) + bq.to(torch::kDouble));
    const torch::Tensor k = heads(x.matmul(wk.to(torch::kDouble).t()) + bk.to(torch::kDouble));
    return q.matmul(k.transpose(-1, -2)) / std::sqrt(8.0);
  };
  const torch::Tensor pair = (mask.unsqueeze(2) * mask.unsqueeze(1)).unsqueeze(1);
  torch::Tensor want = 0.25 * hidden_term(0);
  for (int64_t l = 1; l <= 2; ++l) {
    const std::string s = "distilbert.transformer.layer." + std::to_string(l - 1) + ".attention.";
    const std::string t = "electra.encoder.layer." + std::to_string(l - 1) + ".attention.self.";
    const torch::Tensor a = scores(hidden(sref, l - 1), sp[s + "q_lin.weight"], sp[s + "q_lin.bias"],
                                   sp[s + "k_lin.weight"], sp[s + "k_lin.bias"]);
    const torch::Tensor b = scores(hidden(tref, l - 1), tp[t + "query.weight"], tp[t + "query.bias"],
                                   tp[t + "key.weight"], tp[t + "key.bias"]);
    const torch::Tensor att = ((a - b).pow(2) * pair).sum({1, 2, 3}) / (4 * n * n);
    want = want + 0.5 * hidden_term(l) + 2.0 * att;
  }
  INFO("got " << got << " want " << want);
  CHECK(want.min().item<double>() > 0);
  CHECK(torch::allclose(got.to(torch::kDouble), want, 1e-4, 1e-6));

  // The uniform map, and the bad maps.
  using Map = std::vector<std::pair<int64_t, int64_t>>;
  CHECK(models::uniform_layer_map(2, 4) == Map{{1, 2}, {2, 4}});
  CHECK(models::uniform_layer_map(4, 6) == Map{{1, 1}, {2, 3}, {3, 4}, {4, 6}});
  d.layers = {{3, 1}};
  CHECK_THROWS_WITH(models::DistillationModel(student, teacher, 2.0, 0.0, d), Catch::Contains("past the student"));
}
