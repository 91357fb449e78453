// SQuAD 2.0 metrics (framework/metrics/squad_v2.h) against the official evaluate-v2.0.py's logic
// on crafted cases: tests/fixtures/squad2/reference.json (made by make_reference.py beside it):
// normalization, per-pair F1 with its empty-side rule, every output key of nine runs (thresholds,
// no na-prob file, all answerable, all unanswerable, ties in both orders, logit-difference
// na_probs). Also the CMRC scorer on unanswerable questions and each class of bad input.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/common/error.h"
#include "framework/metrics/span.h"
#include "framework/metrics/squad_v2.h"

namespace {

const nlohmann::json& squad_v2_reference() {
  static const nlohmann::json ref = [] {
    std::ifstream in(std::string(UNIF_TEST_FIXTURES) + "/squad2/reference.json");
    REQUIRE(in.good());
    return nlohmann::json::parse(in);
  }();
  return ref;
}

}  // namespace

TEST_CASE("squad v2: normalization and per-pair F1 equal the official script's", "[unit][metrics][squad_v2]") {
  const auto& ref = squad_v2_reference();
  for (const auto& pair : ref.at("normalize")) {
    INFO(pair.dump());
    CHECK(unif::framework::squad_normalize_answer(pair[0].get<std::string>()) == pair[1].get<std::string>());
  }
  for (const auto& row : ref.at("f1")) {
    INFO(row.dump());
    const auto gold = row[0].get<std::string>(), pred = row[1].get<std::string>();
    CHECK(unif::framework::squad_exact_match(pred, gold) == row[2].get<double>());
    CHECK(unif::framework::squad_v2_f1(gold, pred) == Approx(row[3].get<double>()).margin(1e-15));
  }
}

TEST_CASE("squad v2: every key of the official output on the crafted runs", "[unit][metrics][squad_v2]") {
  for (const auto& c : squad_v2_reference().at("cases")) {
    INFO(c.at("name").get<std::string>());
    unif::framework::SquadV2Input in;
    const auto& preds = c.at("predictions");
    const auto& na = c.at("na_probs");
    for (const auto& q : c.at("questions")) {
      const auto id = q.at("id").get<std::string>();
      in.golds.push_back(q.at("answers").get<std::vector<std::string>>());
      in.predictions.push_back(preds.at(id).get<std::string>());
      if (!na.is_null() && !na.empty()) in.na_probs.push_back(na.at(id).get<double>());
    }
    const auto got = unif::framework::squad_v2_evaluation(in, c.at("threshold").get<double>());
    const auto& want = c.at("expected");
    CHECK(got.size() == want.size());
    for (const auto& [key, value] : want.items()) {
      INFO(key);
      REQUIRE(got.count(key));
      CHECK(got.at(key) == Approx(value.get<double>()).epsilon(1e-12).margin(1e-12));
    }
  }
}

TEST_CASE("squad v2: the CMRC scorer, and bad inputs", "[unit][metrics][squad_v2]") {
  using unif::framework::SquadV2Input;
  SquadV2Input in;
  in.predictions = {"北京大学", "", "上海"};
  in.golds = {{"北京大学"}, {}, {}};
  in.scorer = unif::framework::SpanScorer::Cmrc;
  const auto m = unif::framework::squad_v2_evaluation(in, 1.0);
  CHECK(m.at("HasAns_exact") == Approx(100.0));
  CHECK(m.at("NoAns_exact") == Approx(50.0));  // "" right, "上海" wrong
  CHECK(m.at("exact") == Approx(200.0 / 3));
  CHECK(m.count("best_f1") == 0);  // no na_probs

  SquadV2Input bad;
  CHECK_THROWS_AS(unif::framework::squad_v2_evaluation(bad, 1.0), unif::UserError);
  bad.predictions = {"a"};
  bad.golds = {{"a"}, {"b"}};
  CHECK_THROWS_AS(unif::framework::squad_v2_evaluation(bad, 1.0), unif::UserError);
  bad.golds = {{"a"}};
  bad.na_probs = {0.1, 0.2};
  CHECK_THROWS_AS(unif::framework::squad_v2_evaluation(bad, 1.0), unif::UserError);
}
