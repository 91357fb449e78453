// Unit tests for SQuAD v1.1 and CMRC 2018 EM / F1, expected values worked out by hand from the
// official scripts' rules.
#include <catch2/catch.hpp>

#include "framework/common/error.h"
#include "framework/metrics/span.h"
#include "support/approx.h"

using namespace unif::framework;
using Segs = std::vector<std::string>;

#define REQUIRE_USER_ERROR(expr, text)                \
  do {                                                \
    REQUIRE_THROWS_AS(expr, unif::UserError);         \
    REQUIRE_THROWS_WITH(expr, Catch::Contains(text)); \
  } while (0)

using unif::test::exact;

TEST_CASE("SQuAD normalize_answer", "[metrics]") {
  // lower -> "the  cat!", drop punctuation -> "the  cat", article -> "   cat", whitespace -> "cat"
  CHECK(squad_normalize_answer("The  Cat!") == "cat");
  CHECK(squad_exact_match("The  Cat!", "cat") == 1.0);
  CHECK(squad_normalize_answer("An apple, a day; THE end.") == "apple day end");
  // Articles only as whole words; punctuation is removed before, so "the-end" becomes one word.
  CHECK(squad_normalize_answer("theater anthem") == "theater anthem");
  CHECK(squad_normalize_answer("the-end") == "theend");
  // Lower-casing is per code point, not per byte.
  CHECK(squad_normalize_answer("The \xC3\x89"
                               "clair") ==
        "\xC3\xA9"
        "clair");  // "The Éclair"
}

TEST_CASE("SQuAD token F1 with Counter overlap", "[metrics]") {
  // pred "cat sat on mat" (4), gold "cat on mat" (3): overlap 3 -> p 3/4, r 1, f1 6/7
  CHECK(squad_f1("the cat sat on the mat", "a cat on a mat") == exact(6.0 / 7.0));
  // duplicates count once per gold occurrence: overlap min(3,1) = 1 -> p 1/3, r 1/2, f1 2/5
  CHECK(squad_f1("cat cat cat", "cat dog") == exact(0.4));
  CHECK(squad_f1("", "cat") == 0.0);
  CHECK(squad_f1("the", "a") == 0.0);  // both normalize to empty: no overlap -> 0 (as the script)
}

TEST_CASE("squad_metrics: max over golds, mean over examples", "[metrics]") {
  // ex 0: matches gold "cat" -> EM 1, F1 1;  ex 1: F1 0.4 (above), EM 0;  ex 2: empty pred -> 0, 0
  auto m = squad_metrics({"The  Cat!", "cat cat cat", ""}, {{"dog", "cat"}, {"cat dog"}, {"x"}});
  REQUIRE(m.size() == 2);
  CHECK(m.at("exact_match") == exact(1.0 / 3.0));
  CHECK(m.at("f1") == exact(1.4 / 3.0));
  REQUIRE_USER_ERROR(squad_metrics({"a"}, {{}}), "squad_metrics: example 0 has no gold answers");
  REQUIRE_USER_ERROR(squad_metrics({"a", "b"}, {{"a"}}),
                     "squad_metrics: predictions has 2 entries but gold_answers has 1");
  REQUIRE_USER_ERROR(squad_metrics({}, {}), "squad_metrics: no examples");
}

TEST_CASE("CMRC mixed segmentation: Chinese per character, English/digit runs as words", "[metrics]") {
  const std::string s = "《红楼梦》的作者是Cao Xueqin。";
  CHECK(cmrc_mixed_segmentation(s, false) ==
        Segs{"《", "红", "楼", "梦", "》", "的", "作", "者", "是", "cao", "xueqin", "。"});
  CHECK(cmrc_mixed_segmentation(s, true) == Segs{"红", "楼", "梦", "的", "作", "者", "是", "cao", "xueqin"});
  // Runs go through the word tokenizer: ',' (not before a digit), '%', a final '.' split off;
  // "5.5" and "u.s." stay whole.
  CHECK(cmrc_mixed_segmentation("在2019年, it rose 5.5%.", false) ==
        Segs{"在", "2019", "年", ",", "it", "rose", "5.5", "%", "."});
  CHECK(cmrc_mixed_segmentation("U.S. Army", false) == Segs{"u.s.", "army"});
  // With remove_punc an sp_char inside a run is dropped without splitting it: "a-b" -> "ab".
  CHECK(cmrc_mixed_segmentation("a-b", true) == Segs{"ab"});
  CHECK(cmrc_mixed_segmentation("a-b", false) == Segs{"a", "-", "b"});
}

TEST_CASE("CMRC remove_punctuation and EM", "[metrics]") {
  CHECK(cmrc_remove_punctuation(" 《红楼梦》 ") == "红楼梦");
  CHECK(cmrc_exact_match("《红楼梦》", {"红楼梦"}) == 1.0);
  CHECK(cmrc_exact_match("红楼梦.", {"红楼梦"}) == 0.0);  // ASCII '.' is not in sp_char
  CHECK(cmrc_exact_match(" Cao-Xueqin ", {"x", "caoxueqin"}) == 1.0);
  CHECK(cmrc_exact_match("Cao Xueqin", {"caoxueqin"}) == 0.0);  // inner space is kept
  CHECK(cmrc_is_punctuation(U'，'));
  CHECK_FALSE(cmrc_is_punctuation(U'…'));  // the script's "……" entry never matches one char
}

TEST_CASE("CMRC F1 is the longest-common-substring F1", "[metrics]") {
  // pred 曹 雪 芹 cao xueqin (5 segs, brackets removed); gold 作 者 是 曹 雪 芹 cao xueqin (8, 。
  // removed). Longest common run = all 5 pred segs, English words included -> p 1, r 5/8, f1 10/13.
  CHECK(cmrc_f1("曹雪芹（Cao Xueqin）", {"作者是曹雪芹（Cao Xueqin）。"}) == exact(10.0 / 13.0));
  // pred 作 者 是 cao xueqin (5); gold 红 楼 梦 的 作 者 是 曹 雪 芹 cao xueqin (12): the longest
  // *contiguous* run is 作者是 (3) -> p 3/5, r 1/4, f1 = 0.3 / 0.85 = 6/17.
  CHECK(cmrc_f1("作者是Cao Xueqin，", {"《红楼梦》的作者是曹雪芹（Cao Xueqin）"}) == exact(6.0 / 17.0));
  CHECK(cmrc_f1("", {"北京"}) == 0.0);
  CHECK(cmrc_f1("上海", {"北京"}) == 0.0);
}

TEST_CASE("cmrc_metrics: max over golds, mean over examples", "[metrics]") {
  // ex 0: golds give 10/13 and (曹雪芹: lcs 3, p 3/5, r 1 -> 3/4) -> max 10/13; EM 0
  // ex 1: empty prediction -> 0, 0;  ex 2: "北京。" vs "北京" -> EM 1, F1 1
  // EM = 1/3, F1 = (10/13 + 0 + 1)/3 = 23/39
  auto m = cmrc_metrics({"曹雪芹（Cao Xueqin）", "", "北京。"},
                        {{"作者是曹雪芹（Cao Xueqin）。", "曹雪芹"}, {"北京"}, {"北京"}});
  REQUIRE(m.size() == 2);
  CHECK(m.at("exact_match") == exact(1.0 / 3.0));
  CHECK(m.at("f1") == exact(23.0 / 39.0));
}

TEST_CASE("cmrc_metrics rejects bad input", "[metrics]") {
  REQUIRE_USER_ERROR(cmrc_metrics({"a"}, {{"a"}, {"b"}}),
                     "cmrc_metrics: predictions has 1 entries but gold_answers has 2");
  REQUIRE_USER_ERROR(cmrc_metrics({"a", "b"}, {{"a"}, {}}), "cmrc_metrics: example 1 has no gold answers");
  REQUIRE_USER_ERROR(cmrc_metrics({"\xFF"}, {{"a"}}), "cmrc_metrics: invalid UTF-8 at byte 0");
  REQUIRE_USER_ERROR(cmrc_f1("a", {}), "cmrc_f1: no gold answers");
}
