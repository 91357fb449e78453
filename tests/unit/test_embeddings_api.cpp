// The embedding routes' requests and answers (apps/unif/serve/embeddings_api.h) without HTTP: TEI's
// and OpenAI's request shapes decoded, each class of bad request refused with its API's status and
// error shape, the cut and normalization, base64 against RFC 4648's vectors and Python's decoding;
// and unif::Predictor::embed on the tiny fixture as a plain BertModel directory.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/unif/serve/embeddings_api.h"
#include "framework/common/error.h"
#include "framework/inference/predictor.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"

using nlohmann::json;
using unif::app::serve::base64_encode;
using unif::app::serve::decode_embed_request;
using unif::app::serve::embed_answer;
using unif::app::serve::embed_error;
using unif::app::serve::EmbeddingApi;
using unif::app::serve::EmbedRequest;
using unif::app::serve::shape_embedding;

namespace {
constexpr size_t kMaxEmbedTexts = 4;
EmbedRequest tei(const std::string& body) {
  return decode_embed_request(EmbeddingApi::Tei, body, "application/json", kMaxEmbedTexts);
}
EmbedRequest openai(const std::string& body) {
  return decode_embed_request(EmbeddingApi::OpenAi, body, "application/json", kMaxEmbedTexts);
}
}  // namespace

TEST_CASE("TEI /embed requests: a string or a list, normalize, dimensions; bad ones are 422 (413 over the bound)",
          "[unit][serve][embedding]") {
  auto r = tei(R"({"inputs": "a cat"})");
  REQUIRE(r.status == 200);
  CHECK(r.texts == std::vector<std::string>{"a cat"});
  CHECK(r.normalize);
  CHECK(r.dimensions == 0);
  r = tei(R"({"inputs": ["a", "b"], "normalize": false, "dimensions": 8, "truncate": true,
              "truncation_direction": "Right", "prompt_name": null, "encoding_format": null})");
  REQUIRE(r.status == 200);
  CHECK(r.texts.size() == 2);
  CHECK_FALSE(r.normalize);
  CHECK(r.dimensions == 8);
  for (const char* bad : {R"({"inputs": 5})", R"({"inputs": []})", R"({"inputs": [1, 2]})", R"({"text": "a"})",
                          R"({"inputs": "a", "normalize": "yes"})", R"({"inputs": "a", "dimensions": 0})",
                          R"({"inputs": "a", "dimensions": 1.5})", R"({"inputs": "a", "truncation_direction": "left"})",
                          R"({"inputs": "a", "prompt_name": "query"})", "not json", "[]"}) {
    INFO(bad);
    const auto e = tei(bad);
    CHECK(e.status == 422);
    CHECK_FALSE(e.error.empty());
    CHECK(e.texts.empty());
  }
  CHECK(tei(R"({"inputs": ["a", "b", "c", "d", "e"]})").status == 413);
  CHECK(decode_embed_request(EmbeddingApi::Tei, R"({"inputs": "a"})", "text/plain", kMaxEmbedTexts).status == 415);
  const auto body = embed_error(EmbeddingApi::Tei, "bad");
  CHECK(body == json{{"error", "bad"}, {"error_type", "Validation"}});
}

TEST_CASE("OpenAI /v1/embeddings requests: input, model, encoding_format, dimensions; bad ones are 400",
          "[unit][serve][embedding]") {
  auto r = openai(R"({"input": ["a", "b"], "model": "m", "encoding_format": "base64", "dimensions": 3, "user": "u"})");
  REQUIRE(r.status == 200);
  CHECK(r.texts.size() == 2);
  CHECK(r.model == "m");
  CHECK(r.base64);
  CHECK(r.normalize);
  CHECK(r.dimensions == 3);
  for (const char* bad : {R"({"input": []})", R"({"input": [[1, 2]]})", R"({"input": {"a": 1}})", R"({"inputs": "a"})",
                          R"({"input": "a", "encoding_format": "int8"})", R"({"input": "a", "model": 3})",
                          R"({"input": "a", "dimensions": -1})", R"({"input": ["a", "b", "c", "d", "e"]})"}) {
    INFO(bad);
    const auto e = openai(bad);
    CHECK(e.status == 400);
    CHECK_FALSE(e.error.empty());
  }
  CHECK(openai(R"({"input": [[1]]})").param == "input");
  const auto body = embed_error(EmbeddingApi::OpenAi, "bad", "input");
  CHECK(body.at("error").at("message") == "bad");
  CHECK(body.at("error").at("type") == "invalid_request_error");
  CHECK(body.at("error").at("param") == "input");
  CHECK(body.at("error").at("code").is_null());
}

TEST_CASE("embeddings cut then normalized; answers in each API's shape; base64 of little-endian float32",
          "[unit][serve][embedding]") {
  CHECK(shape_embedding({3.0, 4.0, 12.0}, 2, true) == std::vector<float>{0.6f, 0.8f});
  CHECK(shape_embedding({3.0, 4.0, 12.0}, 0, false) == std::vector<float>{3.0f, 4.0f, 12.0f});
  CHECK(shape_embedding({3.0, 4.0}, 10, false).size() == 2);
  CHECK(shape_embedding({0.0, 0.0}, 0, true) == std::vector<float>{0.0f, 0.0f});
  // RFC 4648 section 10.
  const std::vector<std::pair<std::string, std::string>> vectors{{"", ""},
                                                                 {"f", "Zg=="},
                                                                 {"fo", "Zm8="},
                                                                 {"foo", "Zm9v"},
                                                                 {"foob", "Zm9vYg=="},
                                                                 {"fooba", "Zm9vYmE="},
                                                                 {"foobar", "Zm9vYmFy"}};
  for (const auto& [in, out] : vectors) CHECK(base64_encode(in) == out);
  CHECK(base64_encode(std::string("\xff\xfe\x00", 3)) == "//4A");

  EmbedRequest request;
  const std::vector<std::vector<float>> e{{1.0f, -2.0f}, {0.5f, 0.25f}};
  CHECK(embed_answer(EmbeddingApi::Tei, request, e, 7) == json::parse("[[1.0, -2.0], [0.5, 0.25]]"));
  request.model = "m";
  auto a = embed_answer(EmbeddingApi::OpenAi, request, e, 7);
  CHECK(a.at("object") == "list");
  CHECK(a.at("model") == "m");
  CHECK(a.at("usage") == json{{"prompt_tokens", 7}, {"total_tokens", 7}});
  REQUIRE(a.at("data").size() == 2);
  CHECK(a.at("data")[1] == json{{"object", "embedding"}, {"index", 1}, {"embedding", {0.5, 0.25}}});
  request.base64 = true;
  a = embed_answer(EmbeddingApi::OpenAi, request, e, 7);
  // base64.b64encode(struct.pack("<2f", 1.0, -2.0)) in Python.
  CHECK(a.at("data")[0].at("embedding") == "AACAPwAAAMA=");
}

TEST_CASE("Predictor::embed: a plain BertModel directory's embeddings; a classifier refuses", "[unit][embedding]") {
  const auto fixture = std::filesystem::path(UNIF_TEST_FIXTURES) / "tiny-bert-zh";
  unif::test::TempDir tmp;
  for (const char* f : {"vocab.txt", "model.safetensors"}) std::filesystem::copy_file(fixture / f, tmp / f);
  auto config = json::parse(unif::test::slurp(fixture / "config.json"));
  config["architectures"] = {"BertModel"};
  unif::test::spit(tmp / "config.json", config.dump());
  const auto p = unif::Predictor::load(tmp.path);
  const auto e = p.embed({"今天天气很好", "明天下雨"});
  REQUIRE(e.size() == 2);
  REQUIRE(e[0].size() == static_cast<size_t>(config.at("hidden_size").get<int>()));
  const auto one = p.predict_one(json{{"text", "明天下雨"}});
  REQUIRE(one.embedding.size() == e[1].size());
  for (size_t i = 0; i < e[1].size(); ++i) CHECK(e[1][i] == static_cast<float>(one.embedding[i]));
  CHECK(one.tokens == 6);  // 4 characters, [CLS] and [SEP]
  CHECK(p.embed({}).empty());
  CHECK_THROWS_AS(unif::Predictor::load(fixture).embed({"a"}), unif::UserError);
}
