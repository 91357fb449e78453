// Unit tests for unif::metrics retrieval ranking and cosine similarity metrics: equal to
// sentence-transformers' InformationRetrievalEvaluator and EmbeddingSimilarityEvaluator on the
// crafted cases of tests/fixtures/retrieval (make_reference.py), hand-worked cases, bad input.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "framework/common/error.h"
#include "framework/metrics/retrieval.h"
#include "support/approx.h"

using namespace unif::framework;
using unif::test::exact;

#define REQUIRE_USER_ERROR(expr, text)                \
  do {                                                \
    REQUIRE_THROWS_AS(expr, unif::UserError);         \
    REQUIRE_THROWS_WITH(expr, Catch::Contains(text)); \
  } while (0)

namespace {

nlohmann::json retrieval_reference() {
  std::ifstream in(std::string(UNIF_TEST_FIXTURES) + "/retrieval/reference.json");
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

std::vector<RankingQuery> queries_of(const nlohmann::json& c) {
  std::vector<RankingQuery> out;
  for (const auto& q : c.at("queries"))
    out.push_back({q.at("scores").get<std::vector<double>>(), q.at("relevant").get<std::vector<std::size_t>>()});
  return out;
}

std::set<std::string> keys_of(const MetricSet& m) {
  std::set<std::string> out;
  for (const auto& [k, v] : m) out.insert(k);
  return out;
}

std::set<std::string> as_set(const std::vector<std::string>& v) { return {v.begin(), v.end()}; }

/// `n` candidates scored n-1 .. 0 (candidate 0 ranks first), `relevant` the hits.
RankingQuery ranked_in_order(std::size_t n, std::vector<std::size_t> relevant) {
  RankingQuery q;
  for (std::size_t i = 0; i < n; ++i) q.scores.push_back(static_cast<double>(n - i));
  q.relevant = std::move(relevant);
  return q;
}

}  // namespace

TEST_CASE("Retrieval metrics equal sentence-transformers' InformationRetrievalEvaluator", "[metrics][retrieval]") {
  const auto ref = retrieval_reference();
  INFO("sentence-transformers " << ref.at("sentence_transformers").get<std::string>());
  REQUIRE(ref.at("retrieval").size() >= 5);
  for (const auto& c : ref.at("retrieval")) {
    const std::string name = c.at("name");
    INFO("case " << name);
    const auto ids = c.at("corpus_ids").get<std::vector<std::string>>();
    const auto got = retrieval_metrics(queries_of(c), ids);
    CHECK(keys_of(got) == as_set(retrieval_metric_names()));
    for (const auto& [metric, value] : c.at("metrics").items()) {
      INFO("metric " << metric);
      REQUIRE(got.count(metric) == 1);
      CHECK(got.at(metric) == exact(value.get<double>()));
    }
    // Without ids ties rank by index: the same ranking wherever the ids sort in index order.
    std::vector<std::string> sorted_ids = ids;
    std::sort(sorted_ids.begin(), sorted_ids.end());
    if (sorted_ids == ids) CHECK(retrieval_metrics(queries_of(c)) == got);
  }
}

TEST_CASE("Ties rank by id as sentence-transformers ranks them, and the reference's ties matter",
          "[metrics][retrieval]") {
  const auto ref = retrieval_reference();
  bool found = false;
  for (const auto& c : ref.at("retrieval")) {
    if (c.at("name") != "ties_40_string_ids") continue;
    found = true;
    const auto by_index = retrieval_metrics(queries_of(c));
    bool differs = false;
    for (const auto& [metric, value] : c.at("metrics").items())
      differs = differs || std::abs(by_index.at(metric) - value.get<double>()) > 1e-9;
    CHECK(differs);  // index order is not the ids' string order here, and the metrics see it
  }
  CHECK(found);
  // Three tied candidates, the relevant one last by index but first by id.
  const std::vector<RankingQuery> tied = {{{0.5, 0.5, 0.5}, {2}}};
  CHECK(retrieval_metrics(tied).at("mrr@10") == exact(1.0 / 3.0));
  CHECK(retrieval_metrics(tied, {"c", "b", "a"}).at("mrr@10") == exact(1.0));
  // Byte order of ids: "10" < "9", as Python compares str.
  CHECK(retrieval_metrics(tied, {"9", "8", "10"}).at("mrr@10") == exact(1.0));
  // A higher score always ranks first, whatever the ids.
  CHECK(retrieval_metrics({{{0.5, 0.6, 0.5}, {0}}}, {"a", "z", "b"}).at("mrr@10") == exact(0.5));
  // 0.0 and -0.0 are equal scores, ordered by index.
  CHECK(retrieval_metrics({{{-0.0, 0.0}, {1}}}).at("mrr@10") == exact(0.5));
}

TEST_CASE("Cosine similarity metrics equal sentence-transformers' EmbeddingSimilarityEvaluator",
          "[metrics][retrieval]") {
  const auto ref = retrieval_reference();
  REQUIRE(ref.at("similarity").size() >= 2);
  for (const auto& c : ref.at("similarity")) {
    INFO("case " << c.at("name").get<std::string>());
    const auto got =
        similarity_metrics(c.at("gold").get<std::vector<double>>(), c.at("cosine").get<std::vector<double>>());
    CHECK(keys_of(got) == as_set(similarity_metric_names()));
    CHECK(got.at("pearson_cosine") == exact(c.at("metrics").at("pearson_cosine").get<double>()));
    CHECK(got.at("spearman_cosine") == exact(c.at("metrics").at("spearman_cosine").get<double>()));
  }
}

TEST_CASE("Retrieval metrics on hand-worked rankings", "[metrics][retrieval]") {
  SECTION("the header's example: the one relevant candidate ranks second") {
    const auto m = retrieval_metrics({{{0.9, 0.5, 0.7}, {2}}});
    CHECK(m.at("accuracy@1") == 0.0);
    CHECK(m.at("accuracy@5") == 1.0);
    CHECK(m.at("recall@1") == 0.0);
    CHECK(m.at("recall@5") == 1.0);
    CHECK(m.at("mrr@10") == exact(0.5));
    CHECK(m.at("ndcg@10") == exact(1.0 / std::log2(3.0)));
    CHECK(m.at("map@100") == exact(0.5));
  }
  SECTION("three relevant at ranks 0, 3 and 11 of 12") {
    const auto m = retrieval_metrics({ranked_in_order(12, {11, 0, 3})});
    CHECK(m.at("accuracy@1") == 1.0);
    CHECK(m.at("accuracy@10") == 1.0);
    CHECK(m.at("recall@1") == exact(1.0 / 3.0));
    CHECK(m.at("recall@5") == exact(2.0 / 3.0));
    CHECK(m.at("recall@10") == exact(2.0 / 3.0));  // rank 11 is outside the top 10
    CHECK(m.at("mrr@10") == exact(1.0));
    // DCG: ranks 0 and 3 -> 1 + 1/log2(5); ideal: three at the top -> 1 + 1/log2(3) + 1/2
    CHECK(m.at("ndcg@10") == exact((1.0 + 1.0 / std::log2(5.0)) / (1.0 + 1.0 / std::log2(3.0) + 0.5)));
    // AP@100: precisions at the hits 1/1, 2/4, 3/12, over min(100, 3)
    CHECK(m.at("map@100") == exact((1.0 + 0.5 + 0.25) / 3.0));
  }
  SECTION("the mean over queries") {
    const auto m = retrieval_metrics({ranked_in_order(5, {0}), ranked_in_order(5, {4})});
    CHECK(m.at("accuracy@1") == exact(0.5));
    CHECK(m.at("mrr@10") == exact((1.0 + 0.2) / 2.0));
    CHECK(m.at("map@100") == exact((1.0 + 0.2) / 2.0));
    CHECK(m.at("ndcg@10") == exact((1.0 + 1.0 / std::log2(6.0)) / 2.0));
  }
  SECTION("a relevant candidate below rank 100 counts nowhere") {
    const auto m = retrieval_metrics({ranked_in_order(150, {100})});
    for (const auto& name : retrieval_metric_names()) CHECK(m.at(name) == 0.0);
    CHECK(retrieval_metrics({ranked_in_order(150, {99})}).at("map@100") == exact(0.01));
  }
  SECTION("more than 10 and more than 100 relevant: ideal DCG stops at 10, AP divides by 100") {
    std::vector<std::size_t> all(150);
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    const auto m = retrieval_metrics({ranked_in_order(150, all)});
    CHECK(m.at("ndcg@10") == exact(1.0));
    CHECK(m.at("map@100") == exact(1.0));
    CHECK(m.at("recall@10") == exact(10.0 / 150.0));
    // 12 relevant, the top 10 among them: nDCG 1; AP (10 hits at precision 1) / 10
    const auto twelve = retrieval_metrics({ranked_in_order(20, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 18, 19})});
    CHECK(twelve.at("ndcg@10") == exact(1.0));
    CHECK(twelve.at("map@100") == exact((10.0 + 11.0 / 19.0 + 12.0 / 20.0) / 12.0));
  }
  SECTION("fewer candidates than k") {
    const auto m = retrieval_metrics({ranked_in_order(2, {1})});
    CHECK(m.at("accuracy@1") == 0.0);
    CHECK(m.at("accuracy@5") == 1.0);
    CHECK(m.at("recall@10") == 1.0);
  }
}

TEST_CASE("Cosine similarity metrics are Pearson and Spearman of the scores", "[metrics][retrieval]") {
  // gold 1 2 3 4, cosine .2 .4 .5 .9: as regression's hand example scaled (Pearson is scale-free)
  const auto m = similarity_metrics({1, 2, 3, 4}, {0.2, 0.4, 0.5, 0.9});
  CHECK(m.at("pearson_cosine") == exact(11.0 / std::sqrt(130.0)));
  CHECK(m.at("spearman_cosine") == exact(1.0));
  CHECK(similarity_metrics({1, 1, 1}, {0.1, 0.2, 0.3}).at("pearson_cosine") == 0.0);  // constant: 0, not NaN
}

TEST_CASE("Retrieval metrics reject bad input", "[metrics][retrieval]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  REQUIRE_USER_ERROR(retrieval_metrics({}), "retrieval_metrics: no examples");
  REQUIRE_USER_ERROR(retrieval_metrics({{{}, {0}}}), "query 0 has no candidates");
  REQUIRE_USER_ERROR(retrieval_metrics({{{0.1}, {0}}, {{0.1, nan}, {0}}}), "query 1: scores[1] is not a finite number");
  REQUIRE_USER_ERROR(retrieval_metrics({{{0.1, 0.2}, {}}}), "query 0 has no relevant candidate");
  REQUIRE_USER_ERROR(retrieval_metrics({{{0.1, 0.2}, {2}}}), "relevant index 2 is out of range (it has 2 candidates");
  REQUIRE_USER_ERROR(retrieval_metrics({{{0.1, 0.2}, {1, 1}}}), "relevant index 1 is listed twice");
  REQUIRE_USER_ERROR(retrieval_metrics({{{0.1, 0.2}, {0}}}, {"a", "b", "c"}),
                     "query 0 has 2 scores but there are 3 candidate ids");
  REQUIRE_USER_ERROR(retrieval_metrics({{{0.1, 0.2, 0.3}, {0}}}, {"a", "b", "a"}),
                     "candidate id 'a' is listed twice (candidates 0 and 2");
}

TEST_CASE("Cosine similarity metrics reject bad input", "[metrics][retrieval]") {
  REQUIRE_USER_ERROR(similarity_metrics({1, 2}, {0.5}), "similarity_metrics: gold has 2 entries but cosine has 1");
  REQUIRE_USER_ERROR(similarity_metrics({}, {}), "similarity_metrics: no examples");
  REQUIRE_USER_ERROR(similarity_metrics({1, 2}, {0.5, std::numeric_limits<double>::infinity()}),
                     "cosine[1] is not a finite number");
  REQUIRE_USER_ERROR(similarity_metrics({std::numeric_limits<double>::quiet_NaN(), 2}, {0.5, 0.6}),
                     "gold[0] is not a finite number");
}
