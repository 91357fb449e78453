// Unit tests of unif::models: HF parameter names and shapes of every head, options validation,
// activations against hand-computed values, and the loss contract of the heads (per-example sums,
// -100 ignored, sample weights, span clamping), the delta hook and clone_model.
#include <catch2/catch.hpp>

#include "models/deberta_v2/family.h"
#include "models/mpnet/family.h"

#include <cmath>
#include <set>
#include <stdexcept>
#include <string>

#include <ATen/Parallel.h>
#include <torch/nn/functional/loss.h>
#include <torch/types.h>

#include "framework/checkpoint/safetensors.h"
#include "models/layers/activations.h"
#include "models/bert/bert_model.h"
#include "models/layers/dropout.h"
#include "models/heads/factory.h"
#include "models/heads/sequence_classification.h"
#include "models/heads/span_extraction.h"
#include "models/heads/token_classification.h"

using namespace unif::models;
using unif::Task;
namespace F = torch::nn::functional;

namespace {

EncoderConfig tiny_options() {
  EncoderConfig opt;
  opt.vocab_size(50).hidden_size(8).num_hidden_layers(2).num_attention_heads(2).intermediate_size(16);
  opt.max_position_embeddings(16).hidden_dropout_prob(0.0).attention_probs_dropout_prob(0.0);
  return opt;
}

// The fixture's options (tests/fixtures/tiny-bert-zh/config.json).
EncoderConfig fixture_options() {
  EncoderConfig opt;
  opt.vocab_size(21128).hidden_size(32).num_hidden_layers(2).num_attention_heads(4).intermediate_size(64);
  opt.max_position_embeddings(64);
  return opt;
}

Batch tiny_batch() {
  Batch b;
  b.input_ids = torch::tensor({3, 7, 9, 2, 0, 3, 11, 2, 0, 0}, torch::kLong).view({2, 5});  // padded
  b.attention_mask = b.input_ids.ne(0).to(torch::kLong);
  b.attention_mask[0][0] = 1;
  b.token_type_ids = torch::zeros({2, 5}, torch::kLong);
  return b;
}

std::map<std::string, std::vector<int64_t>> shapes(const torch::nn::Module& m) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const auto& p : m.named_parameters()) out[p.key()] = p.value().sizes().vec();
  for (const auto& p : m.named_buffers()) out[p.key()] = p.value().sizes().vec();
  return out;
}

}  // namespace

TEST_CASE("classification head has exactly the HF fixture's parameter names and shapes", "[unit][bert]") {
  auto file = unif::framework::read_safetensors(std::string(UNIF_TEST_FIXTURES) + "/tiny-bert-zh/model.safetensors");
  std::map<std::string, std::vector<int64_t>> expected;
  for (const auto& [name, t] : file.tensors)
    if (name != "bert.embeddings.position_ids") expected[name] = t.sizes().vec();
  REQUIRE(expected.size() == 41);  // 5 embeddings + 2 x 16 per layer + pooler 2 + classifier 2

  torch::manual_seed(0);
  auto model = make_encoder_task_model(Task::Classification, fixture_options(), 2);
  CHECK(shapes(*model) == expected);
  CHECK(model->named_buffers().size() == 0);  // no position_ids buffer
  int64_t count = 0;
  for (const auto& p : model->parameters()) count += p.numel();
  CHECK(count == 696482);  // tests/fixtures/tiny-bert-zh/README.md
}

TEST_CASE("token and QA heads: no pooler, classifier / qa_outputs shapes", "[unit][bert]") {
  const EncoderConfig opt = tiny_options();
  auto token = make_encoder_task_model(Task::TokenClassification, opt, 5);
  auto qa = make_encoder_task_model(Task::SpanExtraction, opt, 0);
  auto seq = make_encoder_task_model(Task::Classification, opt, 3);
  auto token_shapes = shapes(*token), qa_shapes = shapes(*qa), seq_shapes = shapes(*seq);

  CHECK(token_shapes.at("classifier.weight") == std::vector<int64_t>{5, 8});
  CHECK(token_shapes.at("classifier.bias") == std::vector<int64_t>{5});
  CHECK(qa_shapes.at("qa_outputs.weight") == std::vector<int64_t>{2, 8});
  CHECK(qa_shapes.at("qa_outputs.bias") == std::vector<int64_t>{2});
  CHECK(token_shapes.count("bert.pooler.dense.weight") == 0);
  CHECK(qa_shapes.count("bert.pooler.dense.weight") == 0);
  CHECK(seq_shapes.count("bert.pooler.dense.weight") == 1);
  CHECK(token_shapes.at("bert.encoder.layer.1.intermediate.dense.weight") == std::vector<int64_t>{16, 8});
  CHECK(token_shapes.at("bert.encoder.layer.1.output.dense.weight") == std::vector<int64_t>{8, 16});
  // bert.* keys are the sequence head's minus the pooler.
  std::set<std::string> seq_bert, token_bert;
  for (const auto& [k, v] : seq_shapes)
    if (k.rfind("bert.", 0) == 0 && k.rfind("bert.pooler.", 0) != 0) seq_bert.insert(k);
  for (const auto& [k, v] : token_shapes)
    if (k.rfind("bert.", 0) == 0) token_bert.insert(k);
  CHECK(seq_bert == token_bert);
  CHECK(token_shapes.size() == token_bert.size() + 2);
  CHECK(qa_shapes.size() == token_bert.size() + 2);
}

TEST_CASE("options validation names the inconsistent field", "[unit][bert]") {
  EncoderConfig opt = tiny_options();
  opt.hidden_size(10).num_attention_heads(4);
  CHECK_THROWS_WITH(BertModel(opt), Catch::Contains("must be a multiple of num_attention_heads"));
  opt = tiny_options();
  opt.hidden_act("swish");
  CHECK_THROWS_WITH(BertModel(opt), Catch::Contains("hidden_act must be gelu, gelu_new or relu, got 'swish'"));
  CHECK_THROWS_WITH(activation("tanh"), Catch::Contains("got 'tanh'"));
  CHECK_THROWS_WITH(make_encoder_task_model(Task::Classification, tiny_options(), 1),
                    Catch::Contains("num_labels >= 2"));
  BertModel model(tiny_options());
  auto too_long = torch::ones({1, 17}, torch::kLong);
  CHECK_THROWS_WITH(model->forward(too_long), Catch::Contains("exceeds max_position_embeddings (16)"));
}

TEST_CASE("gelu_new, gelu and relu against hand-computed values", "[unit][bert]") {
  auto x = torch::tensor({-2.0, -0.5, 0.0, 1.0, 3.0}, torch::kDouble);
  // 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))) and 0.5x(1 + erf(x/sqrt(2))), evaluated in Python's math.
  auto gelu_new = torch::tensor(
      {-0.04540230591222494, -0.15428599017485606, 0.0, 0.8411919906082768, 2.996362607918227}, torch::kDouble);
  auto gelu = torch::tensor({-0.04550026389635842, -0.15426876936299344, 0.0, 0.8413447460685429, 2.99595030590511},
                            torch::kDouble);
  CHECK((activation("gelu_new")(x) - gelu_new).abs().max().item<double>() < 1e-12);
  CHECK((activation("gelu")(x) - gelu).abs().max().item<double>() < 1e-12);
  CHECK(torch::equal(activation("relu")(x), torch::tensor({0.0, 0.0, 0.0, 1.0, 3.0}, torch::kDouble)));
}

TEST_CASE("HF initialisation: N(0, range), LayerNorm 1/0, zero biases and padding row", "[unit][bert]") {
  torch::manual_seed(1);
  EncoderConfig opt = tiny_options();
  opt.vocab_size(2000).hidden_size(64).num_attention_heads(4).initializer_range(0.05);
  BertModel model(opt);
  auto words = model->embeddings->word_embeddings->weight;
  CHECK(words[0].abs().max().item<double>() == 0.0);  // pad_token_id 0
  CHECK(std::abs(words.slice(0, 1).std().item<double>() - 0.05) < 0.002);
  CHECK(std::abs(model->encoder->layer[0]->as<BertLayerImpl>()->intermediate->dense->weight.std().item<double>() -
                 0.05) < 0.005);
  CHECK(torch::equal(model->embeddings->layer_norm->weight, torch::ones({64})));
  CHECK(model->embeddings->layer_norm->bias.abs().max().item<double>() == 0.0);
  CHECK(model->pooler->dense->bias.abs().max().item<double>() == 0.0);
}

TEST_CASE("BertModel: inputs_embeds equals word_embeddings(input_ids), default mask is all ones", "[unit][bert]") {
  torch::manual_seed(2);
  BertModel model(tiny_options());
  model->eval();
  Batch b = tiny_batch();
  auto by_ids = model->forward(b.input_ids, b.token_type_ids, torch::ones_like(b.input_ids));
  auto by_embeds = model->forward({}, {}, {}, model->embeddings->word_embeddings(b.input_ids));
  CHECK(torch::allclose(by_ids.last_hidden_state, by_embeds.last_hidden_state, 0.0, 1e-6));
  CHECK(by_ids.pooler_output.sizes() == std::vector<int64_t>{2, 8});
  CHECK(by_ids.embedding_output.sizes() == std::vector<int64_t>{2, 5, 8});
  // Padding changes the real positions' outputs only through the mask: masked-out keys are ignored.
  auto masked = model->forward(b.input_ids, b.token_type_ids, b.attention_mask);
  auto short_out =
      model->forward(b.input_ids.slice(1, 0, 4).slice(0, 0, 1), {}, b.attention_mask.slice(1, 0, 4).slice(0, 0, 1));
  CHECK(torch::allclose(masked.last_hidden_state[0].slice(0, 0, 4), short_out.last_hidden_state[0], 0.0, 1e-5));
}

TEST_CASE("BertModel first_token_only: the last layer's [CLS] row and the pooler as the full pass, same gradients",
          "[unit][bert]") {
  torch::manual_seed(5);
  BertModel model(tiny_options());
  model->eval();
  Batch b = tiny_batch();  // padded: the mask still applies to the keys of the last layer
  auto full = model->forward(b.input_ids, b.token_type_ids, b.attention_mask);
  auto first = model->forward(b.input_ids, b.token_type_ids, b.attention_mask, {}, /*first_token_only=*/true);
  REQUIRE(first.last_hidden_state.sizes() == std::vector<int64_t>{2, 1, 8});
  CHECK(torch::allclose(first.last_hidden_state, full.last_hidden_state.narrow(1, 0, 1), 0.0, 1e-6));
  CHECK(torch::allclose(first.pooler_output, full.pooler_output, 0.0, 1e-6));
  // Every parameter gets the gradient the full pass gives it (the last layer's L - 1 other rows
  // never reach the pooler).
  auto grads = [&](bool only) {
    model->zero_grad();
    model->forward(b.input_ids, b.token_type_ids, b.attention_mask, {}, only).pooler_output.pow(2).sum().backward();
    std::vector<torch::Tensor> g;
    for (const auto& p : model->parameters()) g.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
    return g;
  };
  const auto g_full = grads(false), g_first = grads(true);
  for (size_t i = 0; i < g_full.size(); ++i) CHECK(torch::allclose(g_first[i], g_full[i], 1e-5, 1e-7));
}

TEST_CASE("a zero delta gives the same logits as no delta - a non-zero one changes them", "[unit][bert]") {
  torch::manual_seed(3);
  auto model = make_encoder_task_model(Task::Classification, tiny_options(), 3);
  model->eval();
  Batch b = tiny_batch();
  auto plain = model->forward(b).logits;
  CHECK(torch::equal(plain, model->forward(b, torch::zeros({2, 5, 8})).logits));
  // (A constant delta would vanish in the embeddings LayerNorm: use a random one.)
  CHECK(!torch::allclose(plain, model->forward(b, torch::randn({2, 5, 8})).logits));
  CHECK_THROWS_WITH(model->forward(b, torch::zeros({2, 5, 7})), Catch::Contains("(B, L, H)"));
}

TEST_CASE("sequence losses are per-example sums - sample weights scale them", "[unit][bert]") {
  torch::manual_seed(4);
  Batch b = tiny_batch();
  SECTION("single label: cross-entropy") {
    auto model = make_encoder_task_model(Task::Classification, tiny_options(), 3);
    b.labels = torch::tensor({2, 0}, torch::kLong);
    auto out = model->forward(b);
    auto expected = F::cross_entropy(out.logits, b.labels, F::CrossEntropyFuncOptions().reduction(torch::kNone));
    CHECK(out.loss_count == 2);
    CHECK(torch::allclose(out.example_losses, expected));
    CHECK(torch::allclose(out.example_losses.sum() / 2, F::cross_entropy(out.logits, b.labels)));
    b.sample_weights = torch::tensor({2.0f, 0.5f});
    auto weighted = model->forward(b);
    CHECK(torch::allclose(weighted.example_losses, expected * b.sample_weights));
  }
  SECTION("multi label: mean BCE over classes") {
    auto model = make_encoder_task_model(Task::Multilabel, tiny_options(), 3);
    b.labels = torch::tensor({1.0f, 0.0f, 1.0f, 0.0f, 0.0f, 1.0f}).view({2, 3});
    auto out = model->forward(b);
    CHECK(torch::allclose(out.example_losses.sum() / 2, F::binary_cross_entropy_with_logits(out.logits, b.labels)));
    auto p = torch::sigmoid(out.logits[1]);
    double by_hand =
        -(std::log(1 - p[0].item<double>()) + std::log(1 - p[1].item<double>()) + std::log(p[2].item<double>())) / 3;
    CHECK(out.example_losses[1].item<double>() == Approx(by_hand).epsilon(1e-5));
  }
  SECTION("regression: squared error") {
    auto model = make_encoder_task_model(Task::Regression, tiny_options(), 1);
    b.labels = torch::tensor({0.5f, -1.5f});
    auto out = model->forward(b);
    REQUIRE(out.logits.sizes() == std::vector<int64_t>{2, 1});
    auto expected = (out.logits.squeeze(1) - b.labels).pow(2);
    CHECK(torch::allclose(out.example_losses, expected));
    b.sample_weights = torch::tensor({0.0f, 3.0f});
    CHECK(torch::allclose(model->forward(b).example_losses, expected * b.sample_weights));
  }
  SECTION("no labels: logits only") {
    auto out = make_encoder_task_model(Task::Classification, tiny_options(), 3)->forward(b);
    CHECK(!out.example_losses.defined());
    CHECK(out.loss_count == 0);
  }
}

TEST_CASE("token loss sums labeled tokens and ignores -100", "[unit][bert]") {
  torch::manual_seed(5);
  auto model = make_encoder_task_model(Task::TokenClassification, tiny_options(), 4);
  Batch b = tiny_batch();
  b.labels = torch::tensor({-100, 1, 3, -100, -100, -100, 2, -100, -100, -100}, torch::kLong).view({2, 5});
  auto out = model->forward(b);
  REQUIRE(out.logits.sizes() == std::vector<int64_t>{2, 5, 4});
  CHECK(out.loss_count == 3);
  auto lsm = torch::log_softmax(out.logits, -1);
  double l0 = -(lsm[0][1][1].item<double>() + lsm[0][2][3].item<double>());
  double l1 = -lsm[1][1][2].item<double>();
  CHECK(out.example_losses[0].item<double>() == Approx(l0).epsilon(1e-5));
  CHECK(out.example_losses[1].item<double>() == Approx(l1).epsilon(1e-5));
  // sum / count is HF's CrossEntropyLoss(ignore_index=-100) mean.
  CHECK(torch::allclose(out.example_losses.sum() / out.loss_count,
                        F::cross_entropy(out.logits.view({10, 4}), b.labels.view({10}))));
}

TEST_CASE("span loss: (CE_start + CE_end) / 2, positions clamped to L and then ignored", "[unit][bert]") {
  torch::manual_seed(6);
  auto model = make_encoder_task_model(Task::SpanExtraction, tiny_options(), 0);
  Batch b = tiny_batch();
  b.labels = torch::tensor({1, 2, 3, 99}, torch::kLong).view({2, 2});  // 99 -> clamped to L = 5 -> ignored
  auto out = model->forward(b);
  REQUIRE(out.logits.sizes() == std::vector<int64_t>{2, 5, 2});
  auto lsm = torch::log_softmax(out.logits, 1);  // over positions
  double l0 = -(lsm[0][1][0].item<double>() + lsm[0][2][1].item<double>()) / 2;
  double l1 = -(lsm[1][3][0].item<double>()) / 2;
  CHECK(out.loss_count == 2);
  CHECK(out.example_losses[0].item<double>() == Approx(l0).epsilon(1e-5));
  CHECK(out.example_losses[1].item<double>() == Approx(l1).epsilon(1e-5));
}

TEST_CASE("clone_model is a deep copy with equal outputs", "[unit][bert]") {
  torch::manual_seed(7);
  auto model = make_encoder_task_model(Task::TokenClassification, tiny_options(), 3);
  model->eval();
  auto copy = std::dynamic_pointer_cast<EncoderTaskModel>(model->clone_model());
  REQUIRE(copy != nullptr);
  CHECK(!copy->is_training());
  Batch b = tiny_batch();
  CHECK(torch::equal(model->forward(b).logits, copy->forward(b).logits));
  {
    torch::NoGradGuard no_grad;
    copy->word_embeddings()->weight.add_(1.0);
  }
  CHECK(!torch::equal(model->forward(b).logits, copy->forward(b).logits));
  CHECK(copy->word_embeddings()->weight.data_ptr() != model->word_embeddings()->weight.data_ptr());
}

TEST_CASE("sparse_embeddings gives a sparse word-embedding gradient equal to the dense one", "[unit][bert]") {
  EncoderConfig opt = tiny_options();
  torch::manual_seed(8);
  auto dense = make_encoder_task_model(Task::Classification, opt, 2);
  auto sparse = make_encoder_task_model(Task::Classification, opt.sparse_embeddings(true), 2);
  unif::models::copy_module_state(*dense, *sparse);
  Batch b = tiny_batch();
  b.labels = torch::tensor({1, 0}, torch::kLong);
  dense->forward(b).example_losses.sum().backward();
  sparse->forward(b).example_losses.sum().backward();
  auto g = sparse->word_embeddings()->weight.grad();
  REQUIRE(g.is_sparse());
  CHECK(torch::allclose(g.to_dense(), dense->word_embeddings()->weight.grad(), 0.0, 1e-7));
  CHECK(dense->word_embeddings()->weight.grad()[0].abs().max().item<double>() == 0.0);  // padding_idx row
}

TEST_CASE("Dropout: keep rate 1-p, kept values scaled, gradient through the mask, same mask on any thread count",
          "[unit][models]") {
  Dropout d(0.25);
  d->train();
  auto x = torch::ones({1000, 1000}, torch::requires_grad());
  torch::manual_seed(3);
  const int threads = at::get_num_threads();
  auto y = d(x);
  const auto kept = (y != 0).to(torch::kDouble).mean().item<double>();
  CHECK(std::abs(kept - 0.75) < 0.003);  // 1e6 draws: standard error 4.3e-4
  CHECK(((y == 0) | (y == static_cast<float>(1.0 / 0.75))).all().item<bool>());
  // Rows and columns are not correlated (a broken counter mix would stripe the mask).
  const auto row_rate = (y != 0).to(torch::kDouble).mean(1);
  CHECK((row_rate - 0.75).abs().max().item<double>() < 0.07);  // 1000 draws per row: 6 sigma
  y.sum().backward();
  CHECK(torch::equal(x.grad(), y.detach()));  // d(sum y)/dx = mask = y for x = 1

  at::set_num_threads(1);
  torch::manual_seed(3);
  auto y1 = d(x).detach();
  at::set_num_threads(threads);
  CHECK(torch::equal(y1, y.detach()));  // the same seed gives the same mask on 1 thread
  auto y2 = d(x).detach();              // the next pass draws a new seed
  CHECK_FALSE(torch::equal(y2, y1));

  d->eval();
  CHECK(torch::equal(d(x), x));
  Dropout none(0.0);
  none->train();
  CHECK(torch::equal(none(x), x));
}

TEST_CASE("DeBERTa's log buckets with max_relative_positions 1 are HF's: finite, within the table",
          "[unit][bert][deberta]") {
  // HF's make_log_bucket_position divides by log((max_position - 1) / mid) = log(0) = -inf there: every
  // distance past mid lands on +-mid (ceil(-0) + mid), and the NaN of mid = 1's log(0) / log(0) sits
  // only where torch.where keeps the distance itself. The same operations here give the same buckets,
  // so index rel + position_buckets stays inside the 2 * position_buckets rows of the table.
  const auto rel = torch::arange(-300, 301, torch::kLong);
  for (const int64_t buckets : {256, 2}) {
    INFO("position_buckets " << buckets);
    const auto got = unif::models::make_log_bucket_position(rel, buckets, 1);
    CHECK(torch::isfinite(got).all().item<bool>());
    const int64_t mid = buckets / 2;
    CHECK(torch::equal(got.to(torch::kLong), rel.clamp(-mid, mid)));
  }
  // The usual setting (DeBERTa-v3: 256 buckets, 512 positions): near distances kept, far ones logged.
  const auto usual = unif::models::make_log_bucket_position(torch::tensor({0, 5, -127, 128, 129, 300, -300}), 256, 512);
  CHECK(usual.to(torch::kLong).equal(torch::tensor({0, 5, -127, 128, 129, 207, -207})));
}

TEST_CASE("MPNet's relative-position buckets are HF's T5 buckets: exact near, logarithmic far, capped",
          "[unit][bert][mpnet]") {
  // HF MPNetEncoder.relative_position_bucket(arange(-700, 701)) (32 buckets, max_distance 128): the
  // first distance |j - i| of each bucket, keys before the query (buckets 0-15) and after it (17-31;
  // 16 is never used). 16, 32 and 64 fall exactly on a log boundary in float32.
  const std::vector<int64_t> firsts{0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 23, 32, 46, 64, 91};
  auto expected = [&](int64_t rel) {
    const int64_t n = rel < 0 ? -rel : rel;
    int64_t bucket = 0;
    while (bucket + 1 < static_cast<int64_t>(firsts.size()) && firsts[static_cast<size_t>(bucket + 1)] <= n) ++bucket;
    return rel > 0 ? 16 + bucket : bucket;
  };
  const auto rel = torch::arange(-700, 701, torch::kLong);
  const auto got = unif::models::mpnet_relative_position_bucket(rel);
  REQUIRE(got.scalar_type() == torch::kLong);
  std::vector<int64_t> want;
  for (int64_t r = -700; r <= 700; ++r) want.push_back(expected(r));
  CHECK(torch::equal(got, torch::tensor(want, torch::kLong)));
  // Buckets of j - i over a length-5 input: the table compute_position_bias looks up.
  const auto ids = torch::arange(5, torch::kLong);
  CHECK(torch::equal(
      unif::models::mpnet_relative_position_bucket(ids.unsqueeze(0) - ids.unsqueeze(1)),
      torch::tensor({{0, 17, 18, 19, 20}, {1, 0, 17, 18, 19}, {2, 1, 0, 17, 18}, {3, 2, 1, 0, 17}, {4, 3, 2, 1, 0}},
                    torch::kLong)));
}
