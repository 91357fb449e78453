// evaluate() in batches of similar lengths: the outputs are those of the
// unsorted path and of one example at a time (no padding at all) to float rounding, and each
// belongs to its own example (input order), for a sequence task and a token task, under inference
// mode as `unif predict` and `unif eval` run it, on one thread and on several worker threads.
#include <catch2/catch.hpp>

#include <c10/core/InferenceMode.h>

#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "framework/data/records.h"
#include "framework/model/model_dir.h"
#include "framework/text/encoding.h"
#include "framework/train/trainer.h"
#include "support/temp_dir.h"

namespace fs = std::filesystem;
using namespace unif;
using nlohmann::json;

namespace {

const fs::path kModel = fs::path(UNIF_TEST_FIXTURES) / "tiny-bert-zh";

// Whether a and b agree within |a-b| <= 1e-6 + 1e-5|b| everywhere.
bool close(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.sizes() != b.sizes()) return false;
  const auto ad = a.to(torch::kDouble), bd = b.to(torch::kDouble);
  return ((ad - bd).abs() - (1e-6 + 1e-5 * bd.abs())).max().item<double>() <= 0;
}

// The first `n` texts of sib200_zh's dev set (lengths 10-60 pieces), as records.
std::vector<framework::Record> records(size_t n, bool tokens) {
  std::ifstream in(fs::path(UNIF_SOURCE_DIR) / "data" / "sib200_zh" / "dev.jsonl");
  std::vector<framework::Record> out;
  for (std::string line; out.size() < n && std::getline(in, line);) {
    const auto text = json::parse(line).at("text").get<std::string>();
    json fields;
    if (tokens) {
      std::vector<std::string> words;  // one word per 3 bytes (a CJK character), enough for the test
      for (size_t i = 0; i + 3 <= text.size() && words.size() < 40; i += 3) words.push_back(text.substr(i, 3));
      fields["tokens"] = words;
    } else {
      fields["text"] = text;
    }
    out.push_back({fields, static_cast<int64_t>(out.size() + 1)});
  }
  return out;
}

void check_order(const fs::path& model_dir, bool tokens) {
  auto lm = framework::load_model_dir(model_dir);
  c10::InferenceMode inference;
  const auto labels = framework::LabelSet::from_names(lm.meta.labels);
  framework::DataConfig dc;
  dc.text_fields = lm.meta.text_fields;
  dc.label_field = lm.meta.label_field;
  framework::TaskData data;
  data.examples = framework::make_examples(lm.meta.task, dc, labels, "test.jsonl", records(40, tokens), false);
  data.encoded =
      framework::encode_examples(lm.meta.task, data.examples, *lm.tokenizer, 64, framework::TruncateMethod::LIFO);
  // The lengths vary and are not sorted already: sorting really reorders the batches.
  std::vector<size_t> lengths;
  for (const auto& e : data.encoded) lengths.push_back(e.input_ids.size());
  REQUIRE(!std::is_sorted(lengths.begin(), lengths.end(), std::greater<size_t>()));
  REQUIRE(*std::min_element(lengths.begin(), lengths.end()) < *std::max_element(lengths.begin(), lengths.end()));

  const auto single = framework::evaluate(*lm.model, lm.meta.task, data, labels, 1, {}, false);
  const auto plain = framework::evaluate(*lm.model, lm.meta.task, data, labels, 8, {}, false);
  const auto sorted = framework::evaluate(*lm.model, lm.meta.task, data, labels, 8, {}, true);
  // Three worker threads on the one model (5 batches: dealt 2, 2, 1), as `unif predict` runs on
  // several cores; twice, to see that the timing changes nothing.
  framework::WorkerPool pool(3);
  const auto workers = framework::evaluate(*lm.model, lm.meta.task, data, labels, 8, {}, true, &pool);
  const auto again = framework::evaluate(*lm.model, lm.meta.task, data, labels, 8, {}, true, &pool);
  // 40 entries over two workers in two batches (as a server's batch): cut by tokens, not counts.
  framework::WorkerPool two(2);
  const auto balanced = framework::evaluate(*lm.model, lm.meta.task, data, labels, 20, {}, true, &two);
  REQUIRE(balanced.logits.size() == data.examples.size());
  REQUIRE(sorted.logits.size() == data.examples.size());
  REQUIRE(workers.logits.size() == data.examples.size());
  for (size_t i = 0; i < data.examples.size(); ++i) {
    INFO("example " << i << " (" << lengths[i] << " pieces)");
    CHECK(close(sorted.logits[i], single.logits[i]));
    CHECK(close(plain.logits[i], single.logits[i]));
    CHECK(close(workers.logits[i], single.logits[i]));
    CHECK(torch::equal(workers.logits[i], again.logits[i]));
    CHECK(close(balanced.logits[i], single.logits[i]));
  }
  // The comparison tells examples apart: the outputs shifted by one do not pass it.
  size_t told_apart = 0;
  for (size_t i = 0; i + 1 < data.examples.size(); ++i) told_apart += !close(sorted.logits[i + 1], single.logits[i]);
  CHECK(told_apart == data.examples.size() - 1);
}

}  // namespace

TEST_CASE("evaluate with length-sorted batches gives each example its own outputs: classification",
          "[unit][train][inference]") {
  check_order(kModel, false);
}

TEST_CASE("evaluate with length-sorted batches gives each example its own outputs: token classification",
          "[unit][train][inference]") {
  unif::test::TempDir tmp;
  const auto dir = tmp / "ner";
  fs::create_directories(dir);
  for (const char* f : {"vocab.txt", "model.safetensors"}) fs::copy_file(kModel / f, dir / f);
  std::ifstream in(kModel / "config.json");
  json config = json::parse(in);
  config["architectures"] = {"BertForTokenClassification"};
  config["id2label"] = {{"0", "O"}, {"1", "B-LOC"}};
  config["label2id"] = {{"O", 0}, {"B-LOC", 1}};
  std::ofstream(dir / "config.json") << config.dump(2);
  check_order(dir, true);
}

TEST_CASE("WorkerPool deals task k to worker k mod N, rethrows a task's error and stays usable",
          "[unit][train][inference]") {
  framework::WorkerPool pool(3);
  std::vector<std::thread::id> ran(10);
  pool.run(10, [&](int64_t k) { ran[static_cast<size_t>(k)] = std::this_thread::get_id(); });
  for (size_t k = 0; k < ran.size(); ++k) {
    INFO("task " << k);
    CHECK(ran[k] == ran[k % 3]);
    CHECK(ran[k] != std::this_thread::get_id());
  }
  CHECK(ran[0] != ran[1]);
  CHECK_THROWS_WITH(pool.run(5,
                             [](int64_t k) {
                               if (k == 3) throw std::runtime_error("task 3 failed");
                             }),
                    "task 3 failed");
  int64_t sum = 0;
  std::mutex m;
  pool.run(4, [&](int64_t k) {
    std::lock_guard<std::mutex> lock(m);
    sum += k;
  });
  CHECK(sum == 6);
  // The caller's inference mode reaches the workers.
  c10::InferenceMode inference;
  bool seen = false;
  pool.run(1, [&](int64_t) { seen = c10::InferenceMode::is_enabled(); });
  CHECK(seen);
}

TEST_CASE("batch_bounds: fixed-size batches, or an equal share of tokens per worker", "[evaluate]") {
  auto entries = [](std::vector<size_t> lengths) {
    std::vector<framework::EncodedExample> out(lengths.size());
    for (size_t i = 0; i < lengths.size(); ++i) out[i].input_ids.assign(lengths[i], 1);
    return out;
  };
  // Sorted longest first, as evaluate() sorts: 4 long (30 pieces) then 12 short (10 pieces).
  std::vector<size_t> lengths(4, 30);
  lengths.insert(lengths.end(), 12, 10);
  const auto enc = entries(lengths);
  std::vector<int64_t> order(enc.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  using V = std::vector<int64_t>;
  // One worker, or more batches than workers: batch_size entries each.
  CHECK(framework::batch_bounds(enc, order, 8, 1) == V{0, 8, 16});
  CHECK(framework::batch_bounds(enc, order, 5, 2) == V{0, 5, 10, 15, 16});
  CHECK(framework::batch_bounds(enc, order, 16, 2) == V{0, 16});
  // Two batches on two workers: 240 tokens, 120 each (4 x 30 = 120: the long four alone).
  CHECK(framework::batch_bounds(enc, order, 8, 2) == V{0, 4, 16});
  // Three workers, 80 tokens each: cuts nearest 80 (90 after three, nearer than 60 after two) and
  // 160 (exactly, after 4 long and 4 short).
  CHECK(framework::batch_bounds(enc, order, 6, 3) == V{0, 3, 8, 16});
  // Never an empty batch: one entry much longer than all the others.
  const auto skew = entries({100, 1, 1});
  const V o3{0, 1, 2};
  CHECK(framework::batch_bounds(skew, o3, 2, 2) == V{0, 1, 3});
  CHECK(framework::batch_bounds(entries({5}), V{0}, 4, 2) == V{0, 1});
  CHECK(framework::batch_bounds(entries({}), V{}, 4, 2) == V{0});
}
