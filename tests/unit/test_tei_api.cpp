// The text-embeddings-inference routes' requests and answers (apps/unif/serve/tei_api.h) without
// HTTP: /predict's input shapes as TEI reads them (a string, a pair, a batch of [text] / [text,
// pair]), /rerank, /tokenize, /similarity; each class of bad request refused with TEI's status and
// error shape; scores (softmax, sigmoid, raw), TEI's order, /tokenize's code point slices, /info and
// /v1/models; and Predictor::tokenize / pooling / multilabel logits on the tiny fixture.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/unif/serve/tei_api.h"
#include "framework/inference/predictor.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"

using nlohmann::json;
namespace tei = unif::app::serve;

namespace {
constexpr size_t kMaxTeiInputs = 4;
tei::TeiPredictRequest tei_predict_of(const std::string& body) {
  return tei::decode_tei_predict(body, "application/json", kMaxTeiInputs);
}
tei::TeiRerankRequest tei_rerank_of(const std::string& body) {
  return tei::decode_tei_rerank(body, "application/json", kMaxTeiInputs);
}
tei::TeiTokenizeRequest tei_tokenize_of(const std::string& body) {
  return tei::decode_tei_tokenize(body, "application/json", kMaxTeiInputs);
}
tei::TeiSimilarityRequest tei_similarity_of(const std::string& body) {
  return tei::decode_tei_similarity(body, "application/json", kMaxTeiInputs);
}
double tei_logistic(double x) { return 1.0 / (1.0 + std::exp(-x)); }
}  // namespace

TEST_CASE("TEI /predict inputs: a string, [text], [text, pair], a batch of those; options; bad ones 422/413/415",
          "[unit][serve][tei]") {
  auto r = tei_predict_of(R"({"inputs": "a cat", "parameters": {"top_k": null}})");
  REQUIRE(r.ok());
  REQUIRE(r.inputs.size() == 1);
  CHECK(r.inputs[0].text == "a cat");
  CHECK_FALSE(r.inputs[0].pair);
  CHECK_FALSE(r.batch);
  CHECK_FALSE(r.raw_scores);
  CHECK(r.truncate);  // absent: the server truncates (auto_truncate)

  r = tei_predict_of(R"({"inputs": ["a question", "a passage"], "raw_scores": true, "truncate": false})");
  REQUIRE(r.ok());
  REQUIRE(r.inputs.size() == 1);
  CHECK(r.inputs[0].pair == std::optional<std::string>("a passage"));
  CHECK_FALSE(r.batch);
  CHECK(r.raw_scores);
  CHECK_FALSE(r.truncate);

  r = tei_predict_of(R"({"inputs": ["one text"], "truncation_direction": "Right", "truncate": null})");
  REQUIRE(r.ok());
  CHECK_FALSE(r.inputs.at(0).pair);
  CHECK(r.truncate);

  r = tei_predict_of(R"({"inputs": [["a"], ["b", "c"], ["d"]], "truncation_direction": "right"})");
  REQUIRE(r.ok());
  CHECK(r.batch);
  REQUIRE(r.inputs.size() == 3);
  CHECK(r.inputs[1].text == "b");
  CHECK(r.inputs[1].pair == std::optional<std::string>("c"));
  CHECK_FALSE(r.inputs[2].pair);

  for (const char* bad :
       {R"({"inputs": ["a", "b", "c"]})", R"({"inputs": []})", R"({"inputs": [5]})", R"({"inputs": [[]]})",
        R"({"inputs": [["a", "b", "c"]]})", R"({"inputs": [["a"], "b"]})", R"({"inputs": ["a", 5]})",
        R"({"inputs": 5})", R"({"text": "a"})", R"({"inputs": "a", "raw_scores": "yes"})",
        R"({"inputs": "a", "truncate": 1})", R"({"inputs": "a", "truncation_direction": "left"})",
        R"({"inputs": "a", "truncation_direction": "middle"})", R"({"inputs": "a", "prompt_name": "query"})",
        "not json", "[]", R"("a")"}) {
    INFO(bad);
    const auto e = tei_predict_of(bad);
    CHECK(e.status == 422);
    CHECK(e.error_type == "Validation");
    CHECK_FALSE(e.error.empty());
    CHECK(e.inputs.empty());
  }
  const auto big = tei_predict_of(R"({"inputs": [["a"], ["b"], ["c"], ["d"], ["e"]]})");
  CHECK(big.status == 413);
  CHECK(big.error == "batch size 5 > maximum allowed batch size 4");
  CHECK(tei::decode_tei_predict(R"({"inputs": "a"})", "text/plain", kMaxTeiInputs).status == 415);
  CHECK(tei::decode_tei_predict(R"({"inputs": "a"})", "", kMaxTeiInputs).ok());
  // A Content-Type that is not UTF-8 is echoed in the 415 message: the body replaces its bytes.
  const auto not_utf8 = tei::decode_tei_predict(R"({"inputs": "a"})", "ap\xd6\xd6tion/json", kMaxTeiInputs);
  CHECK(not_utf8.status == 415);
  CHECK(json::parse(tei::tei_error_body(not_utf8.error, not_utf8.error_type))["error_type"] == "Validation");
  const auto err = tei::tei_error("batch size 5 > maximum allowed batch size 4", "Validation");
  CHECK(err == json{{"error", "batch size 5 > maximum allowed batch size 4"}, {"error_type", "Validation"}});
}

TEST_CASE("TEI /rerank, /tokenize, /similarity requests; an empty list is 400 Empty", "[unit][serve][tei]") {
  auto r = tei_rerank_of(R"({"query": "q", "texts": ["a", "b"], "return_text": true, "raw_scores": true})");
  REQUIRE(r.ok());
  CHECK(r.query == "q");
  CHECK(r.texts == std::vector<std::string>{"a", "b"});
  CHECK(r.return_text);
  CHECK(r.raw_scores);
  CHECK(r.truncate);
  const auto empty = tei_rerank_of(R"({"query": "q", "texts": []})");
  CHECK(empty.status == 400);
  CHECK(empty.error_type == "Empty");
  CHECK(tei_rerank_of(R"({"query": "q", "texts": ["1", "2", "3", "4", "5"]})").status == 413);
  for (const char* bad : {R"({"texts": ["a"]})", R"({"query": 1, "texts": ["a"]})", R"({"query": "q", "texts": "a"})",
                          R"({"query": "q", "texts": ["a", 2]})", R"({"query": "q", "texts": ["a"], "return_text": 1})",
                          R"({"query": "q", "texts": ["a"], "truncation_direction": "Left"})"}) {
    INFO(bad);
    CHECK(tei_rerank_of(bad).status == 422);
  }

  auto t = tei_tokenize_of(R"({"inputs": "héllo"})");
  REQUIRE(t.ok());
  CHECK(t.inputs == std::vector<std::string>{"héllo"});
  CHECK(t.add_special_tokens);
  t = tei_tokenize_of(R"({"inputs": ["a", "b"], "add_special_tokens": false, "prompt_name": null})");
  REQUIRE(t.ok());
  CHECK(t.inputs.size() == 2);
  CHECK_FALSE(t.add_special_tokens);
  CHECK(tei_tokenize_of(R"({"inputs": []})").status == 400);
  CHECK(tei_tokenize_of(R"({"inputs": ["a", "b", "c", "d", "e"]})").status == 413);
  for (const char* bad : {R"({"inputs": [["a", "b"]]})", R"({"inputs": 3})", R"({"inputs": "a", "prompt_name": "q"})",
                          R"({"inputs": "a", "add_special_tokens": "no"})"}) {
    INFO(bad);
    CHECK(tei_tokenize_of(bad).status == 422);
  }

  const std::string sim = R"({"inputs": {"source_sentence": "a", "sentences": ["b", "c"]}, "parameters": {}})";
  auto s = tei_similarity_of(sim);
  REQUIRE(s.ok());
  CHECK(s.source_sentence == "a");
  CHECK(s.sentences == std::vector<std::string>{"b", "c"});
  CHECK(tei::is_similarity_body(sim));
  CHECK_FALSE(tei::is_similarity_body(R"({"inputs": ["a", "b"]})"));
  CHECK_FALSE(tei::is_similarity_body("not json"));
  CHECK(tei_similarity_of(R"({"inputs": {"source_sentence": "a", "sentences": []}})").status == 400);
  // The source sentence counts: 1 + 4 > 4.
  CHECK(tei_similarity_of(R"({"inputs": {"source_sentence": "a", "sentences": ["1", "2", "3", "4"]}})").status == 413);
  for (const char* bad : {R"({"inputs": "a"})", R"({"inputs": {"sentences": ["b"]}})",
                          R"({"inputs": {"source_sentence": "a", "sentences": ["b"]}, "parameters": 3})",
                          R"({"inputs": {"source_sentence": "a", "sentences": ["b"]},
                              "parameters": {"truncation_direction": "left"}})"}) {
    INFO(bad);
    CHECK(tei_similarity_of(bad).status == 422);
  }
}

TEST_CASE("TEI scores: softmax, sigmoid, a regression value as a one-output reranker; TEI's order",
          "[unit][serve][tei]") {
  using unif::Task;
  const std::vector<double> logits{1.0, 3.0, -1.0};
  const auto p = tei::tei_scores(Task::Classification, logits, 0.0, false);
  const double z = std::exp(1.0) + std::exp(3.0) + std::exp(-1.0);
  REQUIRE(p.size() == 3);
  CHECK(p[1] == Approx(std::exp(3.0) / z).epsilon(1e-12));
  CHECK(p[0] + p[1] + p[2] == Approx(1.0));
  CHECK(tei::tei_scores(Task::Classification, logits, 0.0, true) == logits);
  const auto m = tei::tei_scores(Task::Multilabel, logits, 0.0, false);
  CHECK(m[2] == Approx(tei_logistic(-1.0)));
  CHECK(tei::tei_scores(Task::Regression, {}, 2.5, false) == std::vector<double>{tei_logistic(2.5)});
  CHECK(tei::tei_scores(Task::Regression, {}, 2.5, true) == std::vector<double>{2.5});
  CHECK(tei::tei_labels(Task::Regression, {}) == std::vector<std::string>{"LABEL_0"});
  CHECK(tei::tei_labels(Task::Classification, {"neg", "pos"}) == std::vector<std::string>{"neg", "pos"});

  // A 2-label classifier reranks by its last label's softmax probability.
  const std::vector<double> two{0.2, 1.7};
  CHECK(tei::tei_rerank_score(Task::Classification, two, 0.0, false) ==
        Approx(tei::tei_scores(Task::Classification, two, 0.0, false)[1]).epsilon(1e-12));
  CHECK(tei::tei_rerank_score(Task::Classification, two, 0.0, true) == Approx(1.5));
  CHECK(tei::tei_rerank_score(Task::Regression, {}, -0.5, false) == Approx(tei_logistic(-0.5)));
  CHECK(tei::tei_rerank_score(Task::Regression, {}, -0.5, true) == -0.5);
  CHECK(tei::tei_rerank_score(Task::Multilabel, {0.3}, 0.0, false) == Approx(tei_logistic(0.3)));

  // Highest first; equal scores: the later one first (TEI sorts ascending, then reverses).
  CHECK(tei::tei_predictions({"a", "b", "c"}, {0.2, 0.5, 0.2}) ==
        json::parse(R"([{"score": 0.5, "label": "b"}, {"score": 0.2, "label": "c"}, {"score": 0.2, "label": "a"}])"));
  tei::TeiRerankRequest rq;
  rq.texts = {"x", "y", "z"};
  CHECK(tei::tei_ranks(rq, {0.1, 0.9, 0.5}) ==
        json::parse(R"([{"index": 1, "score": 0.9}, {"index": 2, "score": 0.5}, {"index": 0, "score": 0.1}])"));
  rq.return_text = true;
  CHECK(tei::tei_ranks(rq, {0.1, 0.9, 0.5})[0] == json::parse(R"({"index": 1, "score": 0.9, "text": "y"})"));

  CHECK(tei::tei_predict_refusal(Task::Classification).empty());
  CHECK(tei::tei_predict_refusal(Task::Regression).empty());
  CHECK_FALSE(tei::tei_predict_refusal(Task::Embedding).empty());
  CHECK(tei::tei_rerank_refusal(Task::Classification, 2, true).empty());
  CHECK(tei::tei_rerank_refusal(Task::Regression, 0, true).empty());
  CHECK(tei::tei_rerank_refusal(Task::Multilabel, 1, true).empty());
  CHECK_FALSE(tei::tei_rerank_refusal(Task::Classification, 3, true).empty());
  CHECK_FALSE(tei::tei_rerank_refusal(Task::Regression, 0, false).empty());
  CHECK_FALSE(tei::tei_rerank_refusal(Task::Embedding, 0, true).empty());

  const auto cos = tei::cosine_to_first({{1, 0}, {1, 0}, {0, 2}, {-3, 0}, {0, 0}});
  CHECK(cos == std::vector<double>{1.0, 0.0, -1.0, 0.0});
}

TEST_CASE("TEI /tokenize tokens: the input's code points, special tokens with null offsets; /info and /v1/models",
          "[unit][serve][tei]") {
  CHECK(tei::code_point_slice("héllo 今天", 1, 4) == "éll");
  CHECK(tei::code_point_slice("héllo 今天", 6, 8) == "今天");
  CHECK(tei::code_point_slice("héllo 今天", 7, 100) == "天");
  CHECK(tei::code_point_slice("ab", 1, 1).empty());
  CHECK(tei::code_point_slice("a\xff"
                              "b",
                              1, 3) ==
        "\xff"
        "b");  // a stray byte counts as one
  const auto tokens = tei::tei_tokens("Héllo", {{101, "[CLS]", true, -1, -1}, {200, "hello", false, 0, 5}});
  CHECK(tokens == json::parse(R"([{"id": 101, "text": "[CLS]", "special": true, "start": null, "stop": null},
                                   {"id": 200, "text": "Héllo", "special": false, "start": 0, "stop": 5}])"));

  tei::TeiServerInfo info;
  info.model_id = "tiny-bert-zh";
  info.model_dtype = "float32";
  info.task = unif::Task::Classification;
  info.labels = {"neg", "pos"};
  info.accepted_records = "a string";
  info.max_input_length = 64;
  info.version = "1.2.3";
  auto j = tei::tei_info(info);
  for (const char* key : {"model_id", "model_sha", "model_dtype", "model_type", "max_concurrent_requests",
                          "max_input_length", "max_batch_tokens", "max_client_batch_size", "auto_truncate",
                          "tokenization_workers", "version", "task", "accepted_records"}) {
    INFO(key);
    CHECK(j.contains(key));
  }
  CHECK(j["model_sha"].is_null());
  CHECK(j["model_type"] ==
        json::parse(R"({"classifier": {"id2label": {"0": "neg", "1": "pos"}, "label2id": {"neg": 0, "pos": 1}}})"));
  CHECK(j["max_input_length"] == 64);
  CHECK(j["task"] == "classification");
  info.task = unif::Task::Regression;
  CHECK(tei::tei_info(info)["model_type"] ==
        json::parse(R"({"reranker": {"id2label": {"0": "LABEL_0"}, "label2id": {"LABEL_0": 0}}})"));
  info.task = unif::Task::Embedding;
  info.pooling = "mean";
  CHECK(tei::tei_info(info)["model_type"] == json::parse(R"({"embedding": {"pooling": "mean"}})"));
  info.task = unif::Task::SpanExtraction;
  CHECK(tei::tei_info(info)["model_type"] == json::parse(R"({"span_extraction": {}})"));

  CHECK(tei::openai_model_list("tiny", 1700000000) ==
        json::parse(R"({"object": "list", "data": [{"id": "tiny", "object": "model", "created": 1700000000,
                        "owned_by": "unif"}]})"));
}

TEST_CASE("Predictor::tokenize: the model's ids, pieces, spans and template; pooling; multilabel logits",
          "[unit][serve][tei]") {
  const auto fixture = std::filesystem::path(UNIF_TEST_FIXTURES) / "tiny-bert-zh";
  const auto p = unif::Predictor::load(fixture);
  const auto t = p.tokenize("今天 x");
  REQUIRE(t.size() == 5);  // [CLS] 今 天 x [SEP]
  CHECK(t[0].token == "[CLS]");
  CHECK(t[0].special);
  CHECK(t[0].id == 101);
  CHECK(t[0].start == -1);
  CHECK(t[1].token == "今");
  CHECK(t[1].id == 791);
  CHECK_FALSE(t[1].special);
  CHECK(t[1].segment == 0);
  CHECK((t[1].start == 0 && t[1].end == 1));
  CHECK((t[3].start == 3 && t[3].end == 4));
  CHECK(t[4].token == "[SEP]");
  CHECK(t[4].id == 102);
  CHECK(t[4].special);
  const auto bare = p.tokenize("今天", std::nullopt, false);
  REQUIRE(bare.size() == 2);
  CHECK(bare[1].id == 1921);
  const auto pair = p.tokenize("今", std::string_view("天天"));
  REQUIRE(pair.size() == 6);  // [CLS] 今 [SEP] 天 天 [SEP]
  CHECK(pair[3].segment == 1);
  CHECK((pair[4].start == 1 && pair[4].end == 2));  // offsets in the pair's own text
  CHECK(pair[5].special);
  // Not cut to max_seq_length (64 in the fixture's config).
  std::string long_text;
  for (int i = 0; i < 100; ++i) long_text += "今";
  CHECK(p.tokenize(long_text).size() == 102);
  CHECK(p.pooling().empty());

  // A multilabel model keeps its logits: the probabilities are their sigmoids.
  unif::test::TempDir tmp;
  for (const char* f : {"vocab.txt", "model.safetensors"}) std::filesystem::copy_file(fixture / f, tmp.path / f);
  auto config = json::parse(unif::test::slurp(fixture / "config.json"));
  config["problem_type"] = "multi_label_classification";
  unif::test::spit(tmp.path / "config.json", config.dump());
  const auto ml = unif::Predictor::load(tmp.path).predict_one(json("今天天气很好"));
  REQUIRE(ml.ok());
  REQUIRE(ml.logits.size() == 2);
  for (size_t i = 0; i < 2; ++i) CHECK(ml.probs[i] == Approx(tei_logistic(ml.logits[i])).epsilon(1e-6));
}
