// unif::Predictor's pieces and `unif serve`'s request side, without HTTP: the words of token
// classification's {"text"} input, entities grouped as HF's aggregation_strategy="simple" groups
// them (cases reasoned out by hand from transformers' TokenClassificationPipeline.group_entities),
// the typed results on the tiny fixture (scores by name, to_json), the request decoding, and the
// dynamic batcher (batches across concurrent callers, bounded queue, stop answers what is queued;
// more of it in test_batcher.cpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fstream>

#include "apps/unif/serve/request.h"
#include "framework/config/run_config.h"
#include "framework/inference/batcher.h"
#include "framework/inference/predictor.h"
#include "models/quantize.h"
#include "support/temp_dir.h"
#include "support/user_error.h"

using nlohmann::json;
using unif::Word;

namespace {

std::vector<std::string> texts(const std::vector<Word>& words) {
  std::vector<std::string> out;
  for (const auto& w : words) out.push_back(w.text);
  return out;
}

std::vector<std::optional<std::string>> tags(std::initializer_list<const char*> t) {
  std::vector<std::optional<std::string>> out;
  for (const char* s : t) out.push_back(s ? std::optional<std::string>(s) : std::nullopt);
  return out;
}

}  // namespace

TEST_CASE("predict splits a text into words at white space, punctuation and CJK ideographs", "[predict]") {
  const auto w = unif::split_words("John lives in New-York. 我爱北京 café!");
  CHECK(texts(w) ==
        std::vector<std::string>{"John", "lives", "in", "New", "-", "York", ".", "我", "爱", "北", "京", "café", "!"});
  // Code point offsets (Python str indices): "café" starts at 29 and is 4 characters long.
  CHECK(w[0].start == 0);
  CHECK(w[0].end == 4);
  CHECK(w[7].start == 24);
  CHECK(w[11].start == 29);
  CHECK(w[11].end == 33);
  CHECK(unif::split_words("  \t\n ").empty());
  // Control and format characters are deleted and the characters around them join, as BERT's basic
  // tokenizer (HF's and unif's) cleans text: HF's pipeline finds one entity in "soft\u00ADware".
  CHECK(texts(unif::split_words("a\x07"
                                "b")) == std::vector<std::string>{"ab"});
  const auto joined = unif::split_words("soft\u00ADware zero\u200Bwidth a\u200Db \u200Bx");
  CHECK(texts(joined) == std::vector<std::string>{"software", "zerowidth", "ab", "x"});
  CHECK(joined[0].start == 0);
  CHECK(joined[0].end == 9);  // the span covers the deleted character
  CHECK(joined[3].start == 26);
}

TEST_CASE("predict groups BIO tags into entities as HF's simple aggregation does", "[predict]") {
  // HF: pipeline("ner", aggregation_strategy="simple") on "John lives in New York." with one
  // token per word tagged B-PER O O B-LOC I-LOC O (scores .9 .99 .99 .8 .6 .99) gives
  // [{entity_group: PER, score: .9, word: John, start: 0, end: 4},
  //  {entity_group: LOC, score: .7, word: New York, start: 14, end: 22}].
  const std::string text = "John lives in New York.";
  const auto words = unif::split_words(text);
  REQUIRE(words.size() == 6);
  auto e = unif::group_entities(text, words, tags({"B-PER", "O", "O", "B-LOC", "I-LOC", "O"}),
                                {0.9, 0.99, 0.99, 0.8, 0.6, 0.99});
  REQUIRE(e.size() == 2);
  CHECK(e[0].type == "PER");
  CHECK(e[0].text == "John");
  CHECK(e[0].start == 0);
  CHECK(e[0].end == 4);
  CHECK(e[0].score == Approx(0.9));
  CHECK(e[1].type == "LOC");
  CHECK(e[1].text == "New York");
  CHECK(e[1].start == 14);
  CHECK(e[1].end == 22);
  CHECK(e[1].score == Approx(0.7));

  // HF's get_tag: B- always starts a group; I- of another type starts one; I- after O starts one.
  e = unif::group_entities(text, words, tags({"I-PER", "B-PER", "I-LOC", "I-LOC", "O", "I-MISC"}), {1, 1, 1, 1, 1, 1});
  REQUIRE(e.size() == 4);
  CHECK(e[0].text == "John");
  CHECK(e[1].text == "lives");
  CHECK(e[1].type == "PER");
  CHECK(e[2].text == "in New");
  CHECK(e[2].type == "LOC");
  CHECK(e[3].text == ".");
  CHECK(e[3].type == "MISC");
  // BIOES: S- is one word, E- ends an entity; a word without a tag (no piece) is skipped.
  e = unif::group_entities(text, words, tags({"S-PER", "S-PER", nullptr, "B-LOC", "E-LOC", "E-LOC"}),
                           {1, 1, NAN, 1, 1, 1});
  REQUIRE(e.size() == 4);
  CHECK(e[0].text == "John");
  CHECK(e[1].text == "lives");
  CHECK(e[2].text == "New York");
  CHECK(e[3].text == ".");
  // Offsets are code points into the text, the entity text its slice.
  const std::string zh = "我爱北京天安门";
  e = unif::group_entities(zh, unif::split_words(zh), tags({"O", "O", "B-LOC", "I-LOC", "B-LOC", "I-LOC", "I-LOC"}),
                           {1, 1, 0.5, 1, 1, 1, 1});
  REQUIRE(e.size() == 2);
  CHECK(e[0].text == "北京");
  CHECK(e[0].start == 2);
  CHECK(e[0].end == 4);
  CHECK(e[0].score == Approx(0.75));
  CHECK(e[1].text == "天安门");
}

TEST_CASE("predict through the C++ API gives scores by label name and predict's JSON", "[predict]") {
  const auto dir = std::filesystem::path(UNIF_TEST_FIXTURES) / "tiny-bert-zh";
  unif::PredictorOptions options;
  options.top_k = 1;
  const auto p = unif::Predictor::load(dir, options);
  CHECK(p.task() == unif::Task::Classification);
  const auto out =
      p.predict({json{{"text", "今天天气很好"}}, json{{"nope", 1}}, json(3), json{{"text_a", "a"}, {"text_b", "b"}}});
  REQUIRE(out.size() == 4);
  REQUIRE(out[0].ok());
  REQUIRE(out[0].scores.size() == p.labels().size());
  CHECK(out[0].scores[0].label == out[0].label);
  CHECK(out[0].scores[0].score >= out[0].scores[1].score);
  const json j = out[0].to_json();
  CHECK(j.at("label") == out[0].label);
  CHECK(j.at("top").size() == 1);
  CHECK(j.at("input") == json{{"text", "今天天气很好"}});
  CHECK(out[1].rejected);
  CHECK(out[1].to_json() ==
        json{{"error", "record:2: missing field 'text' (or 'text_a' and 'text_b' for a sentence pair)"}});
  CHECK(out[2].to_json() == json{{"error", "record:3: expected a JSON object, a string or a pair of strings"}});
  CHECK(out[3].ok());
  // A label field is not an input: a class the model lacks, or a number, predicts as without it, and
  // the record comes back whole.
  const auto labelled = p.predict(
      {json{{"text", "今天天气很好"}, {"label", "no-such-class"}}, json{{"text", "今天天气很好"}, {"label", 7}}});
  for (const auto& l : labelled) {
    REQUIRE(l.ok());
    CHECK(l.label == out[0].label);
    CHECK(l.scores[0].score == out[0].scores[0].score);
  }
  CHECK(labelled[0].to_json().at("input") == json{{"text", "今天天气很好"}, {"label", "no-such-class"}});
  // Concurrent callers get the answers one caller alone gets.
  std::vector<std::thread> threads;
  std::atomic<int> same{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int k = 0; k < 3; ++k) same += p.predict_one(json{{"text", "今天天气很好"}}).label == out[0].label;
    });
  for (auto& t : threads) t.join();
  CHECK(same == 12);
}

// A model trained on a column named `utterance` (or a pair `premise`, `hypothesis`) also takes the
// standard shapes: {"text"} or a string; {"text", "text_pair"} or [a, b]. A plain HF directory too.
TEST_CASE("predict takes records by the standard names as well as the model's own", "[predict]") {
  unif::test::TempDir tmp;
  const auto fixture = std::filesystem::path(UNIF_TEST_FIXTURES) / "tiny-bert-zh";
  const auto make = [&](const std::string& name, const std::string& fields) {
    const auto dir = tmp / name;
    std::filesystem::create_directories(dir);
    for (const char* f : {"config.json", "vocab.txt", "model.safetensors"})
      std::filesystem::copy_file(fixture / f, dir / f);
    std::ofstream(dir / "unif.yaml") << "task: classification\nlabels: [neg, pos]\ntext_fields: " << fields
                                     << "\nlabel_field: label\nmax_seq_length: 32\n";
    std::ofstream(dir / "COMPLETE") << "ok\n";
    return unif::Predictor::load(dir);
  };
  const auto score = [](const unif::Prediction& p) {
    REQUIRE(p.ok());
    return p.scores.at(0).score;
  };
  const auto single = make("single", "[utterance]");
  const auto own = single.predict({json{{"utterance", "今天天气很好"}}, json{{"utterance", "北京"}}});
  const auto standard = single.predict({json{{"text", "今天天气很好"}}, json("北京")});
  CHECK(score(own[0]) != score(own[1]));
  CHECK(score(standard[0]) == score(own[0]));
  CHECK(score(standard[1]) == score(own[1]));
  CHECK(standard[0].to_json().at("input").at("utterance") == "今天天气很好");
  // A pair is not a single-text model's input; a record with neither name says what it takes.
  const auto bad = single.predict({json::array({"a", "b"}), json{{"sentence", "x"}}});
  CHECK(bad[0].rejected);
  CHECK_THAT(bad[0].error, Catch::Contains("{\"utterance\": ...}, {\"text\": ...} or a string"));
  CHECK(bad[1].rejected);
  CHECK_THAT(bad[1].error, Catch::Contains("utterance"));

  const auto pair = make("pair", "[premise, hypothesis]");
  const auto pair_own = pair.predict({json{{"premise", "今天"}, {"hypothesis", "天气很好"}}});
  const auto pair_standard =
      pair.predict({json{{"text", "今天"}, {"text_pair", "天气很好"}}, json::array({"今天", "天气很好"})});
  CHECK(score(pair_standard[0]) == score(pair_own[0]));
  CHECK(score(pair_standard[1]) == score(pair_own[0]));
  CHECK(pair.predict({json("今天")})[0].rejected);  // one text is not a pair

  const auto plain = unif::Predictor::load(fixture);
  const auto plain_own = plain.predict({json{{"text", "今天"}}, json{{"text_a", "今天"}, {"text_b", "天气很好"}}});
  const auto plain_standard = plain.predict(
      {json("今天"), json{{"text", "今天"}, {"text_pair", "天气很好"}}, json::array({"今天", "天气很好"})});
  CHECK(score(plain_standard[0]) == score(plain_own[0]));
  CHECK(score(plain_standard[1]) == score(plain_own[1]));
  CHECK(score(plain_standard[2]) == score(plain_own[1]));
  CHECK(score(plain_own[0]) != score(plain_own[1]));
}

TEST_CASE("evaluate through the C++ API: unif eval's metrics, agreeing with the predictions", "[predict]") {
  const auto dir = std::filesystem::path(UNIF_TEST_FIXTURES) / "tiny-bert-zh";
  const auto p = unif::Predictor::load(dir);
  const std::vector<std::string> texts{
      "今天天气很好", "北京是中国的首都。", "我爱北京天安门", "明天下雨", "这部电影太无聊了",
      "很好吃",       "服务很差",           "还会再来"};
  unif::test::TempDir tmp;
  {
    std::ofstream f(tmp / "dev.jsonl");
    for (size_t i = 0; i < texts.size(); ++i)
      f << json{{"text", texts[i]}, {"label", p.labels()[i % p.labels().size()]}}.dump() << "\n";
  }
  const auto cfg = p.eval_config((tmp / "dev.jsonl").string());
  CHECK(cfg.task == unif::Task::Classification);
  const auto r = p.evaluate(cfg, /*report=*/true);
  CHECK(r.examples == static_cast<int64_t>(texts.size()));
  // Its accuracy is the share of the predictions (the other path) that are the gold label.
  std::vector<json> records;
  for (const auto& t : texts) records.push_back({{"text", t}});
  const auto out = p.predict(records);
  int right = 0;
  for (size_t i = 0; i < out.size(); ++i) right += out[i].label == p.labels()[i % p.labels().size()];
  CHECK(r.metrics.at("accuracy") == Approx(right / static_cast<double>(texts.size())));
  CHECK(r.metrics.at("loss") > 0.0);
  CHECK_THAT(r.report_text, Catch::Contains("support"));
  const json j = r.to_json();
  CHECK(j.at("examples") == texts.size());
  CHECK(j.at("accuracy") == r.metrics.at("accuracy"));
  CHECK(j.contains("report"));
  CHECK_FALSE(p.evaluate(cfg).to_json().contains("report"));
  // The classes of bad configuration, each named.
  auto regression = cfg;
  regression.task = unif::Task::Regression;
  CHECK_THAT(unif::test::user_error_of([&] { p.evaluate(regression); }),
             Catch::Contains("the model was trained for task classification but the config says regression"));
  auto no_data = cfg;
  no_data.data.dev.clear();
  CHECK_THAT(unif::test::user_error_of([&] { p.evaluate(no_data); }), Catch::Contains("data.dev: required"));
  CHECK_THAT(unif::test::user_error_of([&] { p.eval_config((tmp / "dev.jsonl").string(), {"data.nope=1"}); }),
             Catch::Contains("nope"));
  // A config's devices and model.unpadded become the loading options.
  auto padded = cfg;
  padded.model.unpadded = false;
  padded.parallel.devices = {"cpu", "cpu"};
  const auto o = unif::Predictor::options_for(padded, "int8");
  CHECK(o.device == "cpu");
  CHECK(o.threads == 2);
  CHECK_FALSE(o.unpadded);
  CHECK(o.quantize == "int8");
}

TEST_CASE("predict with int8 Linear layers: every Linear packed, scores near fp32's, not equal to them", "[predict]") {
  const auto dir = std::filesystem::path(UNIF_TEST_FIXTURES) / "tiny-bert-zh";
  REQUIRE_FALSE(unif::models::int8_engines().empty());  // Debian's LibTorch and the wheel's both have one
  unif::PredictorOptions fp32, int8;
  int8.quantize = "int8";
  const auto a = unif::Predictor::load(dir, fp32);
  const auto b = unif::Predictor::load(dir, int8);
  CHECK(a.quantization().empty());
  // tiny-bert-zh: 2 layers x (query, key, value, attention output, intermediate, output) + pooler + classifier.
  CHECK_THAT(b.quantization(), Catch::StartsWith("int8: 14 Linear layers on "));
  const std::vector<json> records{json{{"text", "今天天气很好"}}, json{{"text", "北京是中国的首都。"}},
                                  json{{"text_a", "我爱北京"}, {"text_b", "天安门"}}};
  const auto pa = a.predict(records), pb = b.predict(records);
  // The fixture's random weights give logits near 0.01, so their int8 error (7-bit activations on
  // a CPU without VNNI: about half of that) is measured where it matters, in the probabilities.
  double differ = 0.0, prob_differ = 0.0;
  for (size_t i = 0; i < records.size(); ++i) {
    REQUIRE(pb[i].ok());
    for (size_t k = 0; k < pa[i].logits.size(); ++k) {
      differ = std::max(differ, std::abs(pa[i].logits[k] - pb[i].logits[k]));
      prob_differ = std::max(prob_differ, std::abs(pa[i].probs[k] - pb[i].probs[k]));
    }
  }
  CHECK(differ > 0.0);        // int8 arithmetic ran
  CHECK(prob_differ < 0.01);  // and stays near fp32
  // The fp32 predictor in the same process is untouched by the other's packing.
  const auto again = a.predict(records);
  for (size_t i = 0; i < records.size(); ++i) CHECK(again[i].logits == pa[i].logits);
  unif::PredictorOptions bad;
  bad.quantize = "int4";
  CHECK_THROWS_WITH(unif::Predictor::load(dir, bad), "quantize must be none or int8, got 'int4'");
}

TEST_CASE("serve decodes a request body or says why it refuses it", "[serve]") {
  using unif::app::serve::decode_predict_request;
  auto r = decode_predict_request(R"({"inputs": [{"text": "a"}, 3]})", "application/json; charset=utf-8");
  CHECK(r.status == 200);
  CHECK(r.inputs.size() == 2);
  CHECK(decode_predict_request(R"({"inputs": []})", "").status == 200);
  CHECK(decode_predict_request(R"({"inputs": []})", "application/vnd.api+json").status == 200);
  CHECK(decode_predict_request(R"({"inputs": []})", "text/plain").status == 415);
  // A Content-Type holding bytes that are not UTF-8 is named with them replaced: the answer is JSON.
  const auto odd = decode_predict_request(R"({"inputs": []})", "text/\xff\xfe\x01plain");
  CHECK(odd.status == 415);
  CHECK(odd.error == "Content-Type must be application/json, not 'text/???plain'");
  CHECK_NOTHROW(json{{"error", odd.error}}.dump());
  CHECK(decode_predict_request(R"({"inputs": [)", "application/json").status == 400);
  CHECK(decode_predict_request(R"({"input": []})", "application/json").status == 400);
  CHECK(decode_predict_request(R"({"inputs": {}})", "application/json").status == 400);
  CHECK(decode_predict_request("[1, 2]", "application/json").status == 400);
  CHECK(decode_predict_request("\"\xff\"", "application/json").status == 400);                // invalid UTF-8
  CHECK(decode_predict_request(std::string(100000, '['), "application/json").status == 400);  // too deep
}

TEST_CASE("serve batches the records of concurrent requests and bounds its queue", "[serve]") {
  using namespace std::chrono_literals;
  using unif::Batcher;
  const auto p = unif::Predictor::load(std::filesystem::path(UNIF_TEST_FIXTURES) / "tiny-bert-zh");
  std::atomic<int> batches{0};
  std::atomic<size_t> largest{0};
  // The predictor's run, counting the batches and their sizes.
  Batcher::Run run = [&](const std::vector<unif::PreparedRecord>& records) {
    ++batches;
    largest = std::max<size_t>(largest, records.size());
    return p.postprocess(records, p.forward(records));
  };
  const auto options = [](size_t max_batch, std::chrono::milliseconds wait, size_t capacity) {
    unif::BatcherOptions o;
    o.max_batch = max_batch;
    o.max_wait = wait;
    o.capacity = capacity;
    return o;
  };
  const auto record = [](int i) { return json{{"text", "第" + std::to_string(i) + "天"}, {"id", i}}; };
  const auto inputs = [](const std::optional<Batcher::Answers>& a) {
    std::vector<json> out;
    if (a)
      for (const auto& o : a->outputs) out.push_back(o.input);
    return out;
  };
  {
    // 8 callers within the 300 ms wait: fewer batches than callers, every caller its own answers.
    Batcher b(run, options(64, 300ms, 100));
    std::vector<std::thread> callers;
    std::atomic<int> right{0};
    for (int i = 0; i < 8; ++i)
      callers.emplace_back([&, i] {
        auto a = b.submit_prepared(p.preprocess({record(i), record(i + 100)}));
        right += a && inputs(a) == std::vector<json>{record(i), record(i + 100)} && a->failed.empty();
      });
    for (auto& c : callers) c.join();
    CHECK(right == 8);
    CHECK(batches < 8);
    CHECK(largest > 2);
  }
  {
    // max_batch 3: no batch larger, except one request that is larger on its own.
    batches = 0;
    largest = 0;
    Batcher b(run, options(3, 50ms, 100));
    std::vector<std::thread> callers;
    for (int i = 0; i < 6; ++i) callers.emplace_back([&] { b.submit_prepared(p.preprocess({record(1)})); });
    for (auto& c : callers) c.join();
    CHECK(largest <= 3);
    CHECK(b.submit_prepared(p.preprocess({record(1), record(2), record(3), record(4), record(5)}))->outputs.size() ==
          5);
  }
  {
    // Queue of 1: while one request waits out its 2 s, a second is refused; stop() answers the first.
    Batcher b(p, options(64, 2000ms, 1));
    std::optional<Batcher::Answers> first;
    std::thread t([&] { first = b.submit({record(1)}); });
    while (b.queued() == 0) std::this_thread::sleep_for(1ms);
    CHECK_FALSE(b.submit({record(2)}).has_value());
    const auto t0 = std::chrono::steady_clock::now();
    b.stop();
    t.join();
    CHECK(std::chrono::steady_clock::now() - t0 < 1500ms);  // stop does not wait out max_wait
    REQUIRE(first.has_value());
    CHECK(inputs(first) == std::vector<json>{record(1)});
    CHECK_FALSE(b.submit({record(3)}).has_value());  // stopped
  }
}

TEST_CASE("serve answers a record that makes the run throw in its own place, and the rest of the batch", "[serve]") {
  using namespace std::chrono_literals;
  using unif::Batcher;
  // unif.yaml's max_seq_length (128) over config.json's max_position_embeddings (64): a text of
  // over 62 pieces makes the forward pass throw (as the model does for an input it cannot take), a
  // short one does not.
  unif::test::TempDir tmp;
  const auto fixture = std::filesystem::path(UNIF_TEST_FIXTURES) / "tiny-bert-zh";
  const auto dir = tmp / "too_long";
  std::filesystem::create_directories(dir);
  for (const char* f : {"config.json", "vocab.txt", "model.safetensors"})
    std::filesystem::copy_file(fixture / f, dir / f);
  std::ofstream(dir / "unif.yaml") << "task: classification\nlabels: [neg, pos]\ntext_fields: [text]\n"
                                      "label_field: label\nmax_seq_length: 128\n";
  std::ofstream(dir / "COMPLETE") << "ok\n";
  const auto p = unif::Predictor::load(dir);
  std::atomic<int> runs{0}, batches{0};
  Batcher::Run run = [&](const std::vector<unif::PreparedRecord>& records) {
    ++runs;
    return p.postprocess(records, p.forward(records));
  };
  unif::BatcherOptions o;
  o.max_batch = 64;
  o.max_wait = 500ms;
  Batcher b(run, o, [&](const unif::BatchStats&) { ++batches; });
  std::string long_text;
  for (int i = 0; i < 100; ++i) long_text += "长";
  const json bad{{"text", long_text}};
  // Two requests in one batch; the first one's second record throws.
  std::optional<Batcher::Answers> first, second;
  std::thread t1([&] { first = b.submit_prepared(p.preprocess({json{{"text", "a"}}, bad, json{{"text", "c"}}})); });
  while (b.queued() == 0) std::this_thread::sleep_for(1ms);
  std::thread t2([&] { second = b.submit_prepared(p.preprocess({json{{"nope", 1}}, json{{"text", "y"}}})); });
  t1.join();
  t2.join();
  CHECK(batches == 1);
  CHECK(runs > 1);  // retried without the record
  REQUIRE(first.has_value());
  REQUIRE(first->outputs.size() == 3);
  CHECK(first->outputs[0].ok());
  CHECK(first->outputs[0].input == json{{"text", "a"}});
  CHECK(first->outputs[2].input == json{{"text", "c"}});
  REQUIRE(first->failed.size() == 1);
  CHECK(first->failed[0].first == 1);
  CHECK_THROWS_WITH(std::rethrow_exception(first->failed[0].second), Catch::Contains("max_position_embeddings"));
  // The other request is answered as if alone: its records numbered from 1.
  REQUIRE(second.has_value());
  CHECK(second->failed.empty());
  REQUIRE(second->outputs.size() == 2);
  CHECK(second->outputs[0].to_json() == json{{"error", "record:1: missing field 'text'"}});
  CHECK(second->outputs[1].input == json{{"text", "y"}});
  // A request of bad records only: each fails alone.
  const auto all_bad = b.submit_prepared(p.preprocess({bad, bad}));
  REQUIRE(all_bad.has_value());
  CHECK(all_bad->failed.size() == 2);
  // A run that answers the wrong number of records fails its records, not the server.
  Batcher::Run short_run = [](const std::vector<unif::PreparedRecord>&) { return std::vector<unif::Prediction>{}; };
  unif::BatcherOptions quick;
  quick.max_wait = 1ms;
  Batcher s(short_run, quick);
  const auto cut = s.submit_prepared(p.preprocess({json{{"text", "a"}}}));
  REQUIRE(cut.has_value());
  REQUIRE(cut->failed.size() == 1);
  CHECK_THROWS_WITH(std::rethrow_exception(cut->failed[0].second), Catch::Contains("wrong number of records"));
}

TEST_CASE("serve frames a request in its connection's bytes before a worker takes it", "[serve]") {
  using unif::app::serve::frame_request;
  using unif::app::serve::kMaxRequestHead;
  using State = unif::app::serve::RequestFrame::State;
  const size_t max_body = 100;
  // A head alone: no body (no Content-Length, not chunked), whatever the method.
  const std::string get = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  auto f = frame_request(get, max_body);
  CHECK(f.state == State::Complete);
  CHECK(f.size == get.size());
  CHECK(f.method == "GET");
  CHECK(f.target == "/health");
  CHECK(frame_request("PUT /v1/predict HTTP/1.1\r\n\r\nnext", max_body).size == 28);
  // Bytes of the head so far: the request line once it is whole.
  f = frame_request("POST /v1/predict HTTP/1.1\r\nHost: x\r\nConte", max_body);
  CHECK(f.state == State::Incomplete);
  CHECK(f.method == "POST");
  CHECK(f.target == "/v1/predict");
  CHECK(frame_request("POS", max_body).method.empty());
  // Content-Length (any case): the body, then the next request's bytes are not this one's.
  const std::string post = "POST /v1/predict?x=1 HTTP/1.1\r\ncontent-length: 5\r\n\r\n";
  CHECK(frame_request(post + "{\"in", max_body).state == State::Incomplete);
  f = frame_request(post + "{\"in\"}GET / HTTP/1.1\r\n\r\n", max_body);
  CHECK(f.state == State::Complete);
  CHECK(f.size == post.size() + 5);
  CHECK(f.target == "/v1/predict?x=1");
  // Expect: 100-continue while the body is to come.
  const std::string expect = "POST / HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n";
  CHECK(frame_request(expect, max_body).expects_continue);
  CHECK_FALSE(frame_request(expect + "12345", max_body).expects_continue);
  // Chunks, up to the last one and its empty line.
  const std::string chunked = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n";
  CHECK(frame_request(chunked + "5;ext=1\r\nhello\r\nA\r\n0123456789\r\n0\r\n", max_body).state == State::Incomplete);
  f = frame_request(chunked + "5;ext=1\r\nhello\r\nA\r\n0123456789\r\n0\r\n\r\nGET", max_body);
  CHECK(f.state == State::Complete);
  CHECK(f.size == chunked.size() + 36);
  CHECK(frame_request(chunked + "5\r\nhel", max_body).state == State::Incomplete);
  // What cannot be framed: the HTTP library reads what came and refuses it.
  CHECK(frame_request(chunked + "zz\r\n", max_body).state == State::Unframed);
  CHECK(frame_request(chunked + "65\r\n", max_body).state == State::Unframed);  // 101 bytes > max_body
  CHECK(frame_request(chunked + "5\r\nhelloXX", max_body).state == State::Unframed);
  CHECK(frame_request("POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n", max_body).state == State::Unframed);
  CHECK(frame_request("POST / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", max_body).state == State::Unframed);
  CHECK(frame_request("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", max_body).state ==
        State::Unframed);
  CHECK(frame_request("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", max_body).state == State::Unframed);
  CHECK(frame_request("GET / HTTP/1.1\r\nX: " + std::string(kMaxRequestHead, 'a'), max_body).state == State::Unframed);
  CHECK(frame_request("GET / HTTP/1.1\r\nX: " + std::string(1000, 'a'), max_body).state == State::Incomplete);
}
