// Unit tests of the training building blocks: example order, collation, schedules, optimizers,
// clipping, parameter groups, data-file errors.
#include <catch2/catch.hpp>

#include <ATen/Parallel.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>

#include "framework/common/error.h"
#include "support/user_error.h"
#include "framework/data/batching.h"
#include "framework/data/dataset.h"
#include "framework/data/records.h"
#include "framework/text/bert_tokenizer.h"
#include "framework/train/adamw_kernel.h"
#include "framework/train/build.h"
#include "framework/train/optimizer.h"
#include "framework/train/schedule.h"
#include "models/architectures.h"

using namespace unif::framework;
using unif::Task;
using unif::models::architecture;
using unif::models::encoder_depth;
using unif::models::encoder_layer_index;
namespace fs = std::filesystem;

using unif::test::user_error_of;

namespace {

fs::path write_tmp(const std::string& name, const std::string& text) {
  auto dir = fs::temp_directory_path() / "unif_unit_train";
  fs::create_directories(dir);
  auto p = dir / name;
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

}  // namespace

TEST_CASE("epoch_order is a seeded permutation, different per epoch", "[unit][data]") {
  auto a = epoch_order(100, 42, 0, true), b = epoch_order(100, 42, 0, true), c = epoch_order(100, 42, 1, true);
  REQUIRE(a == b);
  REQUIRE(a != c);
  REQUIRE(std::set<int64_t>(a.begin(), a.end()).size() == 100);
  REQUIRE(epoch_order(5, 42, 0, false) == std::vector<int64_t>{0, 1, 2, 3, 4});
  REQUIRE(epoch_order(100, 43, 0, true) != a);
}

namespace {

// Padded positions of consecutive batches of `order` (sum over batches of B·max_len - Σ len).
int64_t padding(const std::vector<int64_t>& order, const std::vector<int64_t>& lengths, int64_t batch_size) {
  int64_t pad = 0;
  for (size_t start = 0; start < order.size(); start += static_cast<size_t>(batch_size)) {
    const size_t end = std::min(order.size(), start + static_cast<size_t>(batch_size));
    int64_t longest = 0, sum = 0;
    for (size_t i = start; i < end; ++i) {
      longest = std::max(longest, lengths[static_cast<size_t>(order[i])]);
      sum += lengths[static_cast<size_t>(order[i])];
    }
    pad += longest * static_cast<int64_t>(end - start) - sum;
  }
  return pad;
}

}  // namespace

TEST_CASE("length_grouped_order: a seeded permutation of batches of similar lengths", "[unit][data]") {
  // Synthetic lengths: a permutation, deterministic per (seed, epoch), partial batch last.
  std::vector<int64_t> lengths;
  for (int64_t i = 0; i < 1003; ++i) lengths.push_back(3 + (i * 7919) % 120);
  const auto a = length_grouped_order(lengths, 8, 42, 0);
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> iota(lengths.size());
  std::iota(iota.begin(), iota.end(), 0);
  REQUIRE(sorted == iota);
  CHECK(length_grouped_order(lengths, 8, 42, 0) == a);
  CHECK(length_grouped_order(lengths, 8, 42, 1) != a);
  CHECK(length_grouped_order(lengths, 8, 43, 0) != a);
  // The first batch holds the longest example; the 1003 % 8 = 3 leftovers form the last batch.
  CHECK(lengths[static_cast<size_t>(a[0])] == *std::max_element(lengths.begin(), lengths.end()));
  const auto full_end = a.begin() + 1000;
  CHECK(std::set<int64_t>(a.begin(), full_end).size() == 1000);
  CHECK(length_grouped_order({}, 8, 42, 0).empty());
  CHECK(length_grouped_order({5, 3}, 8, 42, 0).size() == 2);

  // Real data: sib200_zh train tokenized with the tiny-bert-zh vocab. Length grouping must cut the
  // padding of batch 16 well below a plain shuffle's.
  DataConfig data;
  data.train = std::string(UNIF_SOURCE_DIR) + "/data/sib200_zh/train.jsonl";
  auto records = read_records(data.train);
  const auto labels = collect_labels(Task::Classification, data, data.train, records);
  BertTokenizer tokenizer(
      std::make_shared<Vocab>(Vocab::load(std::string(UNIF_TEST_FIXTURES) + "/tiny-bert-zh/vocab.txt")));
  const auto task = load_task_data(Task::Classification, data, labels, data.train, tokenizer, 128, "LIFO", true);
  std::vector<int64_t> real;
  for (const auto& e : task.encoded) real.push_back(static_cast<int64_t>(e.input_ids.size()));
  REQUIRE(real.size() == 701);
  const int64_t plain = padding(epoch_order(701, 42, 0, true), real, 16);
  const int64_t grouped = padding(length_grouped_order(real, 16, 42, 0), real, 16);
  WARN("padding: plain shuffle " << plain << ", grouped " << grouped);
  CHECK(grouped * 10 < plain);  // measured 698 vs 23183 padded positions (seed 42, epoch 0)
}

TEST_CASE("collate pads to the longest example and builds task labels", "[unit][data]") {
  std::vector<Example> ex(2);
  ex[0].labels = {1}, ex[0].has_label = true;
  ex[1].labels = {0, 2}, ex[1].has_label = true, ex[1].weight = 0.5;
  std::vector<EncodedExample> enc(2);
  enc[0].input_ids = {101, 5, 102}, enc[0].token_type_ids = {0, 0, 0}, enc[0].example = 0;
  enc[1].input_ids = {101, 7, 8, 9, 102}, enc[1].token_type_ids = {0, 0, 0, 1, 1}, enc[1].example = 1;
  auto b = collate(Task::Multilabel, enc, ex, {0, 1}, 3);
  REQUIRE(b.input_ids.sizes() == torch::IntArrayRef{2, 5});
  REQUIRE(b.attention_mask.sum().item<int64_t>() == 8);
  REQUIRE(b.input_ids[0][3].item<int64_t>() == 0);
  REQUIRE(b.token_type_ids[1][4].item<int64_t>() == 1);
  REQUIRE(torch::equal(b.labels, torch::tensor({{0.f, 1.f, 0.f}, {1.f, 0.f, 1.f}})));
  REQUIRE(b.sample_weights[1].item<float>() == 0.5f);

  enc[0].token_labels = {-100, 3, -100};
  enc[1].token_labels = {-100, 1, -100, 2, -100};
  auto t = collate(Task::TokenClassification, enc, ex, {1, 0}, 4);
  REQUIRE(t.labels.sizes() == torch::IntArrayRef{2, 5});
  REQUIRE(t.labels[1][1].item<int64_t>() == 3);
  REQUIRE(t.labels[1][4].item<int64_t>() == -100);  // padding is ignored
}

TEST_CASE("schedules follow HF's warmup formulas", "[unit][train]") {
  Schedule lin(ScheduleKind::Linear, 10, 110);
  REQUIRE(lin.multiplier(0) == 0.0);
  REQUIRE(lin.multiplier(5) == Approx(0.5));
  REQUIRE(lin.multiplier(10) == Approx(1.0));
  REQUIRE(lin.multiplier(60) == Approx(0.5));
  REQUIRE(lin.multiplier(110) == Approx(0.0));
  Schedule cos(ScheduleKind::Cosine, 0, 100);
  REQUIRE(cos.multiplier(50) == Approx(0.5));
  REQUIRE(cos.multiplier(100) == Approx(0.0).margin(1e-12));
  REQUIRE(Schedule(ScheduleKind::Constant, 4, 100).multiplier(2) == Approx(0.5));
  REQUIRE(Schedule(ScheduleKind::Constant, 4, 100).multiplier(50) == 1.0);
  REQUIRE_FALSE(unif::enum_from_name<ScheduleKind>("exp"));  // the config rejects it (test_config.cpp)
}

TEST_CASE("AdamW matches a hand-computed torch.optim.AdamW step", "[unit][train]") {
  auto w = torch::tensor({1.0f, -2.0f}).requires_grad_(true);
  auto opt = make_optimizer({{"w", w, 1.0, 0.1}}, {OptimizerKind::AdamW, 0.1, 0.9, 0.999, 1e-8, 0.0});
  w.mutable_grad() = torch::tensor({0.5f, -0.25f});
  opt->step(0.01);
  // step 1: m = 0.1 g, v = 0.001 g^2; m_hat = g, v_hat = g^2 -> update = lr * g/(|g|+eps) = lr*sign(g)
  // decoupled decay first: w *= (1 - lr*wd) = 0.999
  REQUIRE(w[0].item<double>() == Approx(1.0 * 0.999 - 0.01).epsilon(1e-6));
  REQUIRE(w[1].item<double>() == Approx(-2.0 * 0.999 + 0.01).epsilon(1e-6));
  auto state = opt->state();
  REQUIRE(state.count("w.exp_avg"));
  REQUIRE(state.at("__step__").item<int64_t>() == 1);
  // State round trip: a second optimizer continues identically.
  auto w2 = w.detach().clone().requires_grad_(true);
  auto opt2 = make_optimizer({{"w", w2, 1.0, 0.1}}, {OptimizerKind::AdamW, 0.1, 0.9, 0.999, 1e-8, 0.0});
  opt2->load_state(state, "optimizer.safetensors");
  w.mutable_grad() = torch::tensor({0.1f, 0.2f});
  w2.mutable_grad() = torch::tensor({0.1f, 0.2f});
  opt->step(0.01);
  opt2->step(0.01);
  REQUIRE(torch::equal(w, w2));
}

TEST_CASE("a sparse gradient steps AdamW exactly like its dense equal", "[unit][train]") {
  auto a = torch::ones({4, 2}).requires_grad_(true), b = torch::ones({4, 2}).requires_grad_(true);
  auto oa = make_optimizer({{"a", a, 1.0, 0.01}}, {}), ob = make_optimizer({{"b", b, 1.0, 0.01}}, {});
  auto idx = torch::tensor({{1, 3, 1}}, torch::kInt64);
  auto val = torch::tensor({{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}});
  a.mutable_grad() = torch::sparse_coo_tensor(idx, val, {4, 2});  // row 1 twice: summed
  b.mutable_grad() = a.grad().coalesce().to_dense();
  oa->step(1e-3);
  ob->step(1e-3);
  REQUIRE(torch::allclose(a, b, 0, 0));
}

TEST_CASE("SGD with momentum and LAMB take the documented steps", "[unit][train]") {
  auto w = torch::tensor({1.0f}).requires_grad_(true);
  OptimizerOptions o;
  o.name = OptimizerKind::Sgd, o.momentum = 0.9, o.weight_decay = 0.0;
  auto opt = make_optimizer({{"w", w, 1.0, 0.0}}, o);
  w.mutable_grad() = torch::tensor({1.0f});
  opt->step(0.1);  // buf = 1 -> w = 0.9
  opt->step(0.1);  // buf = 0.9 + 1 = 1.9 -> w = 0.71
  REQUIRE(w.item<double>() == Approx(0.71));
  auto v = torch::tensor({3.0f, 4.0f}).requires_grad_(true);
  auto lamb = make_optimizer({{"v", v, 1.0, 0.0}}, {OptimizerKind::Lamb, 0.0, 0.9, 0.999, 1e-6, 0.0});
  v.mutable_grad() = torch::tensor({1.0f, -1.0f});
  lamb->step(0.1);  // r ~ (1, -1), |v| = 5, |r| = sqrt(2): v -= 0.1 * 5/sqrt2 * r
  REQUIRE(v[0].item<double>() == Approx(3.0 - 0.5 / std::sqrt(2.0)).epsilon(1e-4));
  REQUIRE_FALSE(unif::enum_from_name<OptimizerKind>("adam"));  // the config rejects it (test_config.cpp)
  REQUIRE_THROWS_AS(make_optimizer({}, {static_cast<OptimizerKind>(7)}), std::invalid_argument);
}

TEST_CASE("clip_grad_norm scales dense and sparse gradients to the global norm", "[unit][train]") {
  auto a = torch::zeros({2}).requires_grad_(true), b = torch::zeros({3, 1}).requires_grad_(true);
  a.mutable_grad() = torch::tensor({3.0f, 0.0f});
  b.mutable_grad() = torch::sparse_coo_tensor(torch::tensor({{2}}, torch::kInt64), torch::tensor({{4.0f}}), {3, 1});
  std::vector<OptimParam> ps{{"a", a}, {"b", b}};
  REQUIRE(clip_grad_norm(ps, 1.0) == Approx(5.0));
  REQUIRE(a.grad()[0].item<double>() == Approx(0.6).epsilon(1e-5));
  REQUIRE(b.grad().to_dense()[2][0].item<double>() == Approx(0.8).epsilon(1e-5));
  REQUIRE(clip_grad_norm(ps, 0.0) == Approx(1.0).epsilon(1e-5));  // 0 = measure only
}

TEST_CASE("clip_grad_norm: the double-precision norm of large gradients, the same for any thread count",
          "[unit][train]") {
  // Sizes around the 2^16-element blocks of the float32 fast path, plus a non-contiguous gradient
  // (the general path) and a NaN, which must come through.
  torch::manual_seed(3);
  auto a = torch::zeros({3 * 65536 + 17}).requires_grad_(true), b = torch::zeros({7}).requires_grad_(true);
  auto c = torch::zeros({64, 33}).requires_grad_(true);
  a.mutable_grad() = torch::randn({3 * 65536 + 17}) * 1e3;
  b.mutable_grad() = torch::randn({7});
  c.mutable_grad() = torch::randn({33, 64}).t();  // not contiguous
  std::vector<OptimParam> ps{{"a", a}, {"b", b}, {"c", c}};
  double want = 0.0;
  for (const auto& t : {a, b, c}) want += t.grad().to(torch::kDouble).pow(2).sum().item<double>();
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const double one = clip_grad_norm(ps, 0.0);
  at::set_num_threads(2);
  const double two = clip_grad_norm(ps, 0.0);
  at::set_num_threads(threads);
  CHECK(one == two);  // bitwise: fixed blocks, summed in order
  CHECK(one == Approx(std::sqrt(want)).epsilon(1e-13));
  b.mutable_grad()[3] = std::nan("");
  CHECK(std::isnan(clip_grad_norm(ps, 0.0)));
}

TEST_CASE("parameter groups: no decay on biases and LayerNorm weights, layer-wise LR decay", "[unit][train]") {
  auto t = torch::zeros({1}).requires_grad_(true);
  auto g = bert_param_groups({{"bert.embeddings.word_embeddings.weight", t},
                              {"bert.encoder.layer.0.attention.self.query.bias", t},
                              {"bert.encoder.layer.1.output.LayerNorm.weight", t},
                              {"classifier.weight", t}},
                             0.01, 0.5, 2, &architecture("bert"));
  REQUIRE(g[0].weight_decay == 0.01);
  REQUIRE(g[1].weight_decay == 0.0);
  REQUIRE(g[2].weight_decay == 0.0);
  REQUIRE(g[0].lr_scale == Approx(0.125));  // depth 0: 0.5^3
  REQUIRE(g[1].lr_scale == Approx(0.25));   // layer 0 -> depth 1
  REQUIRE(g[2].lr_scale == Approx(0.5));    // layer 1 -> depth 2
  REQUIRE(g[3].lr_scale == Approx(1.0));    // head
  // A model of no family (a custom TaskModel): no depths, every parameter the head's.
  const auto custom = bert_param_groups({{"bert.embeddings.word_embeddings.weight", t}}, 0.01, 0.5, 2, nullptr);
  REQUIRE(custom[0].lr_scale == Approx(1.0));
}

TEST_CASE("parameter groups by every family's names: DistilBERT and ALBERT layers, LayerNorm spellings",
          "[unit][train]") {
  auto t = torch::zeros({1}).requires_grad_(true);
  // One parameter of `family`'s model, its group as a 2-layer model with decay 0.5 has it.
  const auto group = [&](const char* family, const char* name) {
    return bert_param_groups({{name, t}}, 0.01, 0.5, 2, &architecture(family)).at(0);
  };
  const auto sa_norm = group("distilbert", "distilbert.transformer.layer.1.sa_layer_norm.weight");
  const auto lin1 = group("distilbert", "distilbert.transformer.layer.0.ffn.lin1.weight");
  const auto albert_norm =
      group("albert", "albert.encoder.albert_layer_groups.0.albert_layers.0.full_layer_layer_norm.weight");
  const auto mapping_in = group("albert", "albert.encoder.embedding_hidden_mapping_in.weight");
  const auto project = group("electra", "electra.embeddings_project.weight");
  const auto lm_norm = group("roberta", "lm_head.layer_norm.weight");
  const auto key = group("roberta", "roberta.encoder.layer.1.attention.self.key.weight");
  CHECK(sa_norm.weight_decay == 0.0);  // sa_layer_norm
  CHECK(lin1.weight_decay == 0.01);
  CHECK(albert_norm.weight_decay == 0.0);       // full_layer_layer_norm
  CHECK(lm_norm.weight_decay == 0.0);           // lm_head.layer_norm
  CHECK(sa_norm.lr_scale == Approx(0.5));       // transformer.layer.1 -> depth 2
  CHECK(lin1.lr_scale == Approx(0.25));         // transformer.layer.0 -> depth 1
  CHECK(albert_norm.lr_scale == Approx(0.25));  // group 0 -> depth 1
  CHECK(mapping_in.lr_scale == Approx(0.125));  // the embeddings' projection: depth 0
  CHECK(project.lr_scale == Approx(0.125));
  CHECK(lm_norm.lr_scale == Approx(1.0));  // head
  CHECK(key.lr_scale == Approx(0.5));
  // DeBERTa's relative-position table and its norm go with the first layer (every layer reads them), not
  // with the input embeddings: freeze.embeddings leaves them, freeze.layers >= 1 and LLRD take them as
  // layer 0's.
  const auto& deberta = architecture("deberta-v2");
  CHECK(encoder_depth(deberta, "deberta.encoder.rel_embeddings.weight") == 1);
  CHECK(encoder_depth(deberta, "deberta.encoder.LayerNorm.bias") == 1);
  CHECK(encoder_depth(deberta, "deberta.embeddings.word_embeddings.weight") == 0);
  CHECK(encoder_depth(deberta, "deberta.encoder.layer.0.attention.self.query_proj.weight") == 1);
  CHECK(encoder_depth(architecture("modernbert"), "model.embeddings.tok_embeddings.weight") == 0);
  CHECK(encoder_depth(architecture("modernbert"), "model.layers.3.mlp.Wi.weight") == 4);
  CHECK_FALSE(encoder_depth(architecture("modernbert"), "model.final_norm.weight").has_value());
  // MPNet's relative-position bias, as DeBERTa's table: with the first layer.
  const auto& mpnet = architecture("mpnet");
  CHECK(encoder_depth(mpnet, "mpnet.encoder.relative_attention_bias.weight") == 1);
  CHECK(encoder_depth(mpnet, "mpnet.embeddings.position_embeddings.weight") == 0);
  CHECK(encoder_depth(mpnet, "mpnet.encoder.layer.1.attention.attn.q.weight") == 2);
  CHECK_FALSE(encoder_depth(mpnet, "lm_head.dense.weight").has_value());
  CHECK(encoder_layer_index(architecture("bert"), "bert.encoder.layer.11.output.dense.weight") == 11);
  CHECK_FALSE(encoder_layer_index(architecture("roberta"), "classifier.out_proj.weight").has_value());
}

TEST_CASE("bad data files are errors naming file and line", "[unit][data]") {
  DataConfig dc;
  REQUIRE_THAT(user_error_of([] { read_records("/nonexistent/train.jsonl"); }), Catch::Contains("data file not found"));
  auto bad_json = write_tmp("bad.jsonl", "{\"text\":\"a\",\"label\":\"x\"}\n{\"text\": oops}\n");
  REQUIRE_THAT(user_error_of([&] { read_records(bad_json); }), Catch::Contains("bad.jsonl:2: invalid JSON"));
  auto not_obj = write_tmp("arr.jsonl", "[1,2]\n");
  REQUIRE_THAT(user_error_of([&] { read_records(not_obj); }), Catch::Contains("arr.jsonl:1: expected a JSON object"));
  auto ragged = write_tmp("r.tsv", "text\tlabel\nhello\tpos\nbroken\n");
  REQUIRE_THAT(user_error_of([&] { read_records(ragged); }),
               Catch::Contains("r.tsv:3: expected 2 tab-separated cells"));
  auto empty = write_tmp("empty.jsonl", "\n\n");
  REQUIRE_THAT(user_error_of([&] { read_records(empty); }), Catch::Contains("no examples"));

  auto file = write_tmp("ok.jsonl", "{\"text\":\"a\",\"label\":\"x\"}\n{\"text\":\"b\",\"label\":\"y\"}\n");
  auto recs = read_records(file);
  auto labels = collect_labels(Task::Classification, dc, file, recs);
  REQUIRE(labels.names == std::vector<std::string>{"x", "y"});
  auto unknown = write_tmp("dev.jsonl", "{\"text\":\"a\",\"label\":\"x\"}\n{\"text\":\"b\",\"label\":\"zzz\"}\n");
  REQUIRE_THAT(
      user_error_of([&] { make_examples(Task::Classification, dc, labels, unknown, read_records(unknown), true); }),
      Catch::Contains("dev.jsonl:2: label 'zzz' is not in the label set"));
  auto missing = write_tmp("m.jsonl", "{\"txt\":\"a\",\"label\":\"x\"}\n");
  REQUIRE_THAT(
      user_error_of([&] { make_examples(Task::Classification, dc, labels, missing, read_records(missing), true); }),
      Catch::Contains("m.jsonl:1: missing field 'text'"));
  auto reg = write_tmp("reg.jsonl", "{\"text\":\"a\",\"label\":\"high\"}\n");
  REQUIRE_THAT(user_error_of([&] { make_examples(Task::Regression, dc, {}, reg, read_records(reg), true); }),
               Catch::Contains("reg.jsonl:1: field 'label': expected a number"));
  DataConfig tc;
  tc.text_fields = {"tokens"}, tc.label_field = "tags";
  auto tok = write_tmp("tok.jsonl", "{\"tokens\":[\"a\",\"b\"],\"tags\":[\"O\"]}\n");
  auto tl = LabelSet::from_names({"O"});
  REQUIRE_THAT(user_error_of([&] { make_examples(Task::TokenClassification, tc, tl, tok, read_records(tok), true); }),
               Catch::Contains("tok.jsonl:1: field 'tags' has 1 tags for 2 tokens"));
  // Sample weights: a number >= 0 is read, null means 1, anything else names file and line.
  auto weighted = write_tmp("w.jsonl",
                            "{\"text\":\"a\",\"label\":\"x\",\"weight\":0.25}\n"
                            "{\"text\":\"b\",\"label\":\"y\",\"weight\":null}\n");
  const auto wex = make_examples(Task::Classification, dc, labels, weighted, read_records(weighted), true);
  REQUIRE(wex.size() == 2);
  CHECK(wex[0].weight == 0.25);
  CHECK(wex[1].weight == 1.0);
  for (const std::string bad : {"-1", "\"heavy\"", "[1]"}) {
    INFO(bad);
    auto wb = write_tmp("wb.jsonl",
                        "{\"text\":\"a\",\"label\":\"x\"}\n{\"text\":\"b\",\"label\":\"y\",\"weight\":" + bad + "}\n");
    REQUIRE_THAT(user_error_of([&] { make_examples(Task::Classification, dc, labels, wb, read_records(wb), true); }),
                 Catch::Contains("wb.jsonl:2: field 'weight' must be a non-negative number"));
  }
  auto one = write_tmp("one.jsonl", "{\"text\":\"a\",\"label\":\"x\"}\n");
  REQUIRE_THAT(user_error_of([&] { collect_labels(Task::Classification, dc, one, read_records(one)); }),
               Catch::Contains("fewer than 2 distinct labels"));
}

TEST_CASE("fused AdamW equals the tensor-op update, dense and sparse (untouched rows included)", "[unit][train]") {
  torch::manual_seed(5);
  const int64_t V = 37, H = 11;
  // Reference in double precision with torch.optim.AdamW's tensor operations.
  auto reference = [&](torch::Tensor p, torch::Tensor g, torch::Tensor m, torch::Tensor v, double lr, double wd,
                       int64_t t) {
    const double b1 = 0.9, b2 = 0.999, eps = 1e-6;
    const double bc1 = 1 - std::pow(b1, t), bc2s = std::sqrt(1 - std::pow(b2, t));
    p.mul_(1 - lr * wd);
    m.mul_(b1).add_(g, 1 - b1);
    v.mul_(b2).addcmul_(g, g, 1 - b2);
    p.addcdiv_(m, (v.sqrt() / bc2s).add_(eps), -lr / bc1);
  };
  for (const bool sparse : {false, true}) {
    INFO((sparse ? "sparse" : "dense"));
    auto p = torch::randn({V, H}), m = torch::zeros({V, H}), v = torch::zeros({V, H});
    auto pd = p.to(torch::kDouble), md = m.to(torch::kDouble), vd = v.to(torch::kDouble);
    for (int64_t t = 1; t <= 3; ++t) {
      torch::Tensor g, gd;
      if (sparse) {  // rows 3 (twice: coalesced), 4 and 30; every other row has a zero gradient
        auto idx = torch::tensor({3, 30, 3, 4}, torch::kLong).view({1, 4});
        auto val = torch::randn({4, H});
        g = torch::sparse_coo_tensor(idx, val, {V, H});
        gd = g.to_dense().to(torch::kDouble);
      } else {
        g = torch::randn({V, H});
        gd = g.to(torch::kDouble);
      }
      REQUIRE(adamw_fused_supported(p, g, m, v));
      const double lr = 1e-2, wd = 0.01;
      AdamWScalars s;
      s.decay = static_cast<float>(1 - lr * wd);
      s.bc2_sqrt = static_cast<float>(std::sqrt(1 - std::pow(0.999, t)));
      s.step = static_cast<float>(-lr / (1 - std::pow(0.9, t)));
      adamw_fused(p, g, m, v, s);
      reference(pd, gd, md, vd, lr, wd, t);
      CHECK(torch::allclose(p.to(torch::kDouble), pd, 1e-6, 1e-7));
      CHECK(torch::allclose(m.to(torch::kDouble), md, 1e-6, 1e-7));  // float rounding of |m| ~ 0.3
      CHECK(torch::allclose(v.to(torch::kDouble), vd, 1e-6, 1e-12));
    }
    if (sparse) CHECK(v[5].abs().sum().item<double>() == 0.0);  // never touched: moments stay 0
  }
  // Not for the fused path: other dtypes, non-contiguous, mismatched shapes.
  auto p = torch::zeros({4, 3});
  CHECK_FALSE(adamw_fused_supported(p.to(torch::kDouble), p, p, p));
  CHECK_FALSE(adamw_fused_supported(p, torch::zeros({3, 4}).t(), p, p));
  CHECK_FALSE(adamw_fused_supported(p, torch::zeros({4, 2}), p, p));
}
