// Unit tests for seqeval-compatible entity extraction and entity-level P/R/F1. Each expected entity
// list is derived by hand from seqeval's end_of_chunk / start_of_chunk rules (non-strict mode).
#include <catch2/catch.hpp>

#include "framework/common/error.h"
#include "framework/metrics/sequence_labeling.h"
#include "support/approx.h"

using namespace unif::framework;
using Tags = std::vector<std::string>;
using Ents = std::vector<Entity>;

#define REQUIRE_USER_ERROR(expr, text)                \
  do {                                                \
    REQUIRE_THROWS_AS(expr, unif::UserError);         \
    REQUIRE_THROWS_WITH(expr, Catch::Contains(text)); \
  } while (0)

using unif::test::exact;

TEST_CASE("get_entities: plain BIO chunks and an entity at the sentence end", "[metrics]") {
  CHECK(get_entities(Tags{"B-PER", "I-PER", "O", "B-LOC"}) == Ents{{"PER", 0, 1}, {"LOC", 3, 3}});
  CHECK(get_entities(Tags{"O", "O"}).empty());
  CHECK(get_entities(Tags{}).empty());
  // B after B closes the first chunk.
  CHECK(get_entities(Tags{"B-PER", "B-PER"}) == Ents{{"PER", 0, 0}, {"PER", 1, 1}});
}

TEST_CASE("get_entities: lenient rules for I- without B- and type switches", "[metrics]") {
  // I after O starts a chunk (seqeval default mode; strict IOB2 would drop it).
  CHECK(get_entities(Tags{"O", "I-PER", "I-PER", "O"}) == Ents{{"PER", 1, 2}});
  CHECK(get_entities(Tags{"I-PER"}) == Ents{{"PER", 0, 0}});
  // Type switch mid-chunk: B-PER I-LOC I-LOC -> the type change ends PER at 0 and starts LOC.
  CHECK(get_entities(Tags{"B-PER", "I-LOC", "I-LOC"}) == Ents{{"PER", 0, 0}, {"LOC", 1, 2}});
  // B-X I-X I-Y B-X: X(0,1), Y(2,2), X(3,3).
  CHECK(get_entities(Tags{"B-X", "I-X", "I-Y", "B-X"}) == Ents{{"X", 0, 1}, {"Y", 2, 2}, {"X", 3, 3}});
}

TEST_CASE("get_entities: IOBES tags as seqeval reads them", "[metrics]") {
  // S-PER: chunk ends after S. B-LOC E-LOC: one chunk; a second E after E starts a new chunk.
  CHECK(get_entities(Tags{"S-PER", "B-LOC", "E-LOC", "E-LOC", "O"}) ==
        Ents{{"PER", 0, 0}, {"LOC", 1, 2}, {"LOC", 3, 3}});
  // I after E starts a new chunk.
  CHECK(get_entities(Tags{"B-X", "E-X", "I-X"}) == Ents{{"X", 0, 1}, {"X", 2, 2}});
}

TEST_CASE("get_entities: tags without a dash split like seqeval (first char = prefix)", "[metrics]") {
  // "B"/"I" have type "_" ; "PER" is prefix 'P', type "ER": no rule but the type change applies,
  // so PER PER is one chunk of type "ER" closed by the sentinel O (type "_").
  CHECK(get_entities(Tags{"B", "I", "O", "PER", "PER"}) == Ents{{"_", 0, 1}, {"ER", 3, 4}});
}

TEST_CASE("get_entities over sentences: an O separates them, offsets are global", "[metrics]") {
  // flat: B-PER I-PER O | I-PER O O -> PER(0,1), PER(3,3): no chunk crosses the boundary.
  CHECK(get_entities(std::vector<Tags>{{"B-PER", "I-PER"}, {"I-PER", "O"}}) == Ents{{"PER", 0, 1}, {"PER", 3, 3}});
}

TEST_CASE("token_metrics: seqeval's documented example", "[metrics]") {
  // seqeval README: true MISC(3,5) PER(8,9); pred MISC(2,5) PER(8,9) -> 1 of 2 correct each way.
  const std::vector<Tags> t = {{"O", "O", "O", "B-MISC", "I-MISC", "I-MISC", "O"}, {"B-PER", "I-PER", "O"}};
  const std::vector<Tags> p = {{"O", "O", "B-MISC", "I-MISC", "I-MISC", "I-MISC", "O"}, {"B-PER", "I-PER", "O"}};
  auto m = token_metrics(t, p);
  REQUIRE(m.size() == 3);
  CHECK(m.at("precision") == exact(0.5));
  CHECK(m.at("recall") == exact(0.5));
  CHECK(m.at("f1") == exact(0.5));
}

TEST_CASE("token_metrics: micro average and per-type rows", "[metrics]") {
  // true: PER(0,1) LOC(3,3) | ORG(5,5);  pred: PER(0,1) LOC(3,3) (I-LOC after O) | PER(5,5)
  // correct 2 of 3 predicted, 2 of 3 true -> P = R = F1 = 2/3.
  // per type (rows for true types only): LOC 1/1/1; ORG p 0 (none predicted), r 0;
  // PER p 1/2 (2 predicted, 1 right), r 1, f1 2/3.
  const std::vector<Tags> t = {{"B-PER", "I-PER", "O", "B-LOC"}, {"B-ORG", "O"}};
  const std::vector<Tags> p = {{"B-PER", "I-PER", "O", "I-LOC"}, {"B-PER", "O"}};
  auto m = token_metrics(t, p);
  CHECK(m.at("precision") == exact(2.0 / 3.0));
  CHECK(m.at("recall") == exact(2.0 / 3.0));
  CHECK(m.at("f1") == exact(2.0 / 3.0));

  auto s = token_type_scores(t, p);
  REQUIRE(s.size() == 3);
  CHECK(s.at("LOC").f1 == exact(1.0));
  CHECK(s.at("ORG").precision == exact(0.0));
  CHECK(s.at("ORG").recall == exact(0.0));
  CHECK(s.at("ORG").support == 1);
  CHECK(s.at("PER").precision == exact(0.5));
  CHECK(s.at("PER").recall == exact(1.0));
  CHECK(s.at("PER").f1 == exact(2.0 / 3.0));

  // No entities anywhere: every score 0 (seqeval's zero-denominator rule).
  auto none = token_metrics({{"O", "O"}}, {{"O", "O"}});
  CHECK(none.at("precision") == 0.0);
  CHECK(none.at("f1") == 0.0);
}

TEST_CASE("token_metrics rejects mismatched shapes and empty tags", "[metrics]") {
  REQUIRE_USER_ERROR(token_metrics({{"O"}}, {{"O"}, {"O"}}),
                     "token_metrics: true_tags (sentences) has 1 entries but pred_tags (sentences) has 2");
  REQUIRE_USER_ERROR(token_metrics({{"O", "B-PER"}}, {{"O"}}),
                     "token_metrics: sentence 0 has 2 true tags but 1 predicted tags");
  REQUIRE_USER_ERROR(token_metrics({{"O", ""}}, {{"O", "O"}}), "sentence 0 token 1 has an empty true tag");
  REQUIRE_USER_ERROR(token_type_scores({}, {}), "token_type_scores: no examples");
}
