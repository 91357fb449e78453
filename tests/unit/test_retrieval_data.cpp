// Retrieval dev data (framework/data/retrieval): the queries and corpus JSONL files, ids as strings
// or integers, one error per class of bad input, and the bundled sample data/xquad_en_retrieval.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "framework/data/retrieval.h"
#include "support/files.h"
#include "support/temp_dir.h"
#include "support/user_error.h"

using namespace unif::framework;
using unif::test::user_error_of;

namespace {

const char* kCorpus =
    "{\"id\": \"d1\", \"text\": \"first\"}\n"
    "{\"id\": 2, \"text\": \"second\", \"title\": \"ignored\"}\n"
    "\n"
    "{\"id\": \"d3\", \"text\": \"third\"}\n";

/// The error read_retrieval_data gives for `queries` against `corpus` (files in a fresh directory).
std::string retrieval_error(const std::string& queries, const std::string& corpus = kCorpus,
                            const std::string& queries_name = "queries.jsonl") {
  unif::test::TempDir dir;
  unif::test::write_text(dir / queries_name, queries);
  unif::test::write_text(dir / "corpus.jsonl", corpus);
  return user_error_of([&] { read_retrieval_data(dir / queries_name, dir / "corpus.jsonl"); });
}

}  // namespace

TEST_CASE("Retrieval data: queries and corpus in file order, integer ids as text", "[unit][data][retrieval]") {
  unif::test::TempDir dir;
  unif::test::write_text(dir / "corpus.jsonl", kCorpus);
  unif::test::write_text(dir / "queries.jsonl",
                         "{\"id\": 7, \"text\": \"which first?\", \"relevant\": [\"d1\"]}\n"
                         "\n"
                         "{\"id\": \"q2\", \"text\": \"\", \"relevant\": [\"d3\", 2], \"extra\": 1}\n");
  const auto data = read_retrieval_data(dir / "queries.jsonl", dir / "corpus.jsonl");
  REQUIRE(data.corpus.size() == 3);
  CHECK(data.corpus[0].id == "d1");
  CHECK(data.corpus[1].id == "2");
  CHECK(data.corpus[1].text == "second");
  CHECK(data.corpus[2].line == 4);
  REQUIRE(data.queries.size() == 2);
  CHECK(data.queries[0].id == "7");
  CHECK(data.queries[0].text == "which first?");
  CHECK(data.queries[0].relevant == std::vector<std::size_t>{0});
  CHECK(data.queries[1].line == 3);
  CHECK(data.queries[1].text.empty());
  CHECK(data.queries[1].relevant_ids == std::vector<std::string>{"d3", "2"});
  CHECK(data.queries[1].relevant == std::vector<std::size_t>{2, 1});
  CHECK(read_retrieval_corpus(dir / "corpus.jsonl").size() == 3);
}

TEST_CASE("Retrieval data: missing, empty and non-JSONL files", "[unit][data][retrieval]") {
  unif::test::TempDir dir;
  unif::test::write_text(dir / "corpus.jsonl", kCorpus);
  CHECK_THAT(user_error_of([&] { read_retrieval_data(dir / "absent.jsonl", dir / "corpus.jsonl"); }),
             Catch::Contains("absent.jsonl: retrieval queries file not found"));
  CHECK_THAT(user_error_of([&] { read_retrieval_corpus(dir / "none.jsonl"); }),
             Catch::Contains("none.jsonl: retrieval corpus file not found"));
  CHECK_THAT(retrieval_error("\n  \n"), Catch::Contains("queries.jsonl: no queries in retrieval queries file"));
  CHECK_THAT(retrieval_error("{\"id\": 1, \"text\": \"a\", \"relevant\": [\"d1\"]}\n", ""),
             Catch::Contains("corpus.jsonl: no documents in retrieval corpus file"));
  CHECK_THAT(
      retrieval_error("id\ttext\n", kCorpus, "queries.tsv"),
      Catch::Contains("queries.tsv: retrieval queries files are JSONL (.jsonl, one JSON object a line), got '.tsv'"));
}

TEST_CASE("Retrieval data: invalid JSON and lines that are no object name the line", "[unit][data][retrieval]") {
  CHECK_THAT(retrieval_error("{\"id\": 1, \"text\": \"a\", \"relevant\": [\"d1\"]}\n{\"id\": 2,\n"),
             Catch::Contains("queries.jsonl:2: invalid JSON"));
  CHECK_THAT(retrieval_error("[\"d1\"]\n"), Catch::Contains("queries.jsonl:1: expected a JSON object per line"));
  CHECK_THAT(
      retrieval_error("{\"id\": 1, \"text\": \"a\", \"relevant\": [\"d1\"]}\n", "{\"id\": \"d1\" \"text\": 1}\n"),
      Catch::Contains("corpus.jsonl:1: invalid JSON"));
}

TEST_CASE("Retrieval data: a missing or mistyped id or text", "[unit][data][retrieval]") {
  CHECK_THAT(retrieval_error("{\"text\": \"a\", \"relevant\": [\"d1\"]}\n"),
             Catch::Contains("queries.jsonl:1: missing field 'id'"));
  CHECK_THAT(retrieval_error("{\"id\": 1.5, \"text\": \"a\", \"relevant\": [\"d1\"]}\n"),
             Catch::Contains("queries.jsonl:1: field 'id' is 1.5 (expected a string or an integer)"));
  CHECK_THAT(retrieval_error("{\"id\": null, \"text\": \"a\", \"relevant\": [\"d1\"]}\n"),
             Catch::Contains("field 'id' is null (expected a string or an integer)"));
  CHECK_THAT(retrieval_error("{\"id\": \"\", \"text\": \"a\", \"relevant\": [\"d1\"]}\n"),
             Catch::Contains("queries.jsonl:1: field 'id' is empty"));
  CHECK_THAT(retrieval_error("{\"id\": \"q\", \"relevant\": [\"d1\"]}\n"),
             Catch::Contains("queries.jsonl:1: missing field 'text'"));
  CHECK_THAT(retrieval_error("{\"id\": \"q\", \"text\": [\"a\"], \"relevant\": [\"d1\"]}\n"),
             Catch::Contains("queries.jsonl:1: field 'text' is [\"a\"] (expected a string)"));
  const std::string good_query = "{\"id\": \"q\", \"text\": \"a\", \"relevant\": [\"d1\"]}\n";
  CHECK_THAT(retrieval_error(good_query, "{\"id\": \"d1\", \"text\": \"x\"}\n{\"id\": true, \"text\": \"y\"}\n"),
             Catch::Contains("corpus.jsonl:2: field 'id' is true (expected a string or an integer)"));
  CHECK_THAT(retrieval_error(good_query, "{\"id\": \"d1\", \"text\": 3}\n"),
             Catch::Contains("corpus.jsonl:1: field 'text' is 3 (expected a string)"));
  CHECK_THAT(retrieval_error(good_query, "{\"id\": \"d1\"}\n"),
             Catch::Contains("corpus.jsonl:1: missing field 'text'"));
}

TEST_CASE("Retrieval data: a missing, mistyped or empty relevant list", "[unit][data][retrieval]") {
  CHECK_THAT(retrieval_error("{\"id\": \"q\", \"text\": \"a\"}\n"),
             Catch::Contains("queries.jsonl:1: missing field 'relevant'"));
  CHECK_THAT(retrieval_error("{\"id\": \"q\", \"text\": \"a\", \"relevant\": \"d1\"}\n"),
             Catch::Contains("queries.jsonl:1: field 'relevant' is \"d1\" (expected a list of corpus ids)"));
  CHECK_THAT(retrieval_error("{\"id\": \"q\", \"text\": \"a\", \"relevant\": []}\n"),
             Catch::Contains("queries.jsonl:1: field 'relevant' is empty (expected at least one corpus id"));
  CHECK_THAT(retrieval_error("{\"id\": \"q\", \"text\": \"a\", \"relevant\": [\"d1\", {\"id\": 2}]}\n"),
             Catch::Contains("queries.jsonl:1: field 'relevant'[1] is {\"id\":2} (expected a corpus id"));
  CHECK_THAT(retrieval_error("{\"id\": \"q\", \"text\": \"a\", \"relevant\": [2, \"2\"]}\n"),
             Catch::Contains("queries.jsonl:1: field 'relevant' lists corpus id '2' twice"));
}

TEST_CASE("Retrieval data: a relevant id outside the corpus", "[unit][data][retrieval]") {
  CHECK_THAT(
      retrieval_error("{\"id\": \"q\", \"text\": \"a\", \"relevant\": [\"d1\"]}\n"
                      "{\"id\": \"r\", \"text\": \"b\", \"relevant\": [\"d1\", \"d9\"]}\n"),
      Catch::Contains("queries.jsonl:2: relevant id 'd9' is not in the corpus (") && Catch::Contains("corpus.jsonl)"));
}

TEST_CASE("Retrieval data: an id used twice", "[unit][data][retrieval]") {
  CHECK_THAT(retrieval_error("{\"id\": \"q\", \"text\": \"a\", \"relevant\": [\"d1\"]}\n"
                             "{\"id\": \"q\", \"text\": \"b\", \"relevant\": [\"d3\"]}\n"),
             Catch::Contains("queries.jsonl:2: query id 'q' is already the id of line 1 (expected distinct ids)"));
  CHECK_THAT(retrieval_error(
                 "{\"id\": \"q\", \"text\": \"a\", \"relevant\": [\"d1\"]}\n",
                 "{\"id\": 5, \"text\": \"x\"}\n{\"id\": \"d1\", \"text\": \"y\"}\n{\"id\": \"5\", \"text\": \"z\"}\n"),
             Catch::Contains("corpus.jsonl:3: corpus id '5' is already the id of line 1"));
}

TEST_CASE("The bundled sample data/xquad_en_retrieval loads, every relevant id in its corpus",
          "[unit][data][retrieval]") {
  const std::filesystem::path dir = std::filesystem::path(UNIF_SOURCE_DIR) / "data" / "xquad_en_retrieval";
  const auto data = read_retrieval_data(dir / "queries.jsonl", dir / "corpus.jsonl");
  CHECK(data.queries.size() == 203);
  CHECK(data.corpus.size() == 200);
  std::set<std::size_t> used;
  for (const auto& q : data.queries) {
    INFO("query " << q.id);
    CHECK(!q.text.empty());
    REQUIRE(q.relevant.size() == 1);
    REQUIRE(q.relevant[0] < data.corpus.size());
    CHECK(data.corpus[q.relevant[0]].id == q.relevant_ids[0]);
    used.insert(q.relevant[0]);
  }
  CHECK(used.size() == 40);  // the dev paragraphs; the other 160 are distractors
  for (const auto& d : data.corpus) CHECK(!d.text.empty());
}
