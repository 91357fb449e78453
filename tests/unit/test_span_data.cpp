// Span extraction data: SQuAD-style records, windows with code-point offsets, decoding, and the
// offset round trip over every context of the bundled sample sets (cmrc2018_zh, drcd_zh, xquad_en).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <memory>

#include "framework/common/error.h"
#include "support/user_error.h"
#include "framework/data/batching.h"
#include "framework/data/records.h"
#include "framework/data/span_dataset.h"
#include "framework/data/span_decoding.h"
#include "framework/text/unicode.h"

using namespace unif::framework;
using unif::Task;
namespace fs = std::filesystem;

using unif::test::user_error_of;

namespace {

const fs::path kSource = UNIF_SOURCE_DIR;

std::shared_ptr<BertTokenizer> tokenizer(bool lower = true) {
  static auto vocab =
      std::make_shared<const Vocab>(Vocab::load((kSource / "tests/fixtures/tiny-bert-zh/vocab.txt").string()));
  return std::make_shared<BertTokenizer>(vocab, lower);
}

DataConfig span_fields() {
  DataConfig d;
  d.text_fields = {"question", "context"};
  d.label_field = "answers";
  return d;
}

std::vector<Record> records_of(const std::vector<std::string>& lines) {
  std::vector<Record> out;
  for (size_t i = 0; i < lines.size(); ++i)
    out.push_back({nlohmann::json::parse(lines[i]), static_cast<int64_t>(i + 1)});
  return out;
}

std::string answer_text(const Example& ex, const EncodedExample& e) {
  return code_point_substr(ex.texts[1], e.context_spans[static_cast<size_t>(e.start_position)].start,
                           e.context_spans[static_cast<size_t>(e.end_position)].end);
}

}  // namespace

TEST_CASE("span records: SQuAD list form, HF column form, ids", "[span]") {
  auto recs = records_of({
      R"({"id":"q1","question":"谁?","context":"我叫小明。","answers":[{"text":"小明","answer_start":2}]})",
      R"({"question":"谁?","context":"我叫小明。","answers":{"text":["小明","明"],"answer_start":[2,3]}})",
  });
  auto ex = make_span_examples(span_fields(), "f.jsonl", recs, true);
  REQUIRE(ex.size() == 2);
  CHECK(ex[0].id == "q1");
  CHECK(ex[1].id == "2");  // no id: the line number
  REQUIRE(ex[1].answers.size() == 2);
  CHECK(ex[1].answers[1].text == "明");
  CHECK(ex[1].answers[1].start == 3);
  CHECK(ex[0].has_label);
}

TEST_CASE("span records: one error per class of bad input, naming file and line", "[span]") {
  auto bad = [](const std::string& line, bool require = true) {
    return user_error_of([&] { make_span_examples(span_fields(), "qa.jsonl", records_of({line}), require); });
  };
  // answer_start counts code points: 2 is right, 6 (the UTF-8 byte offset) is not.
  CHECK_THAT(bad(R"({"question":"q","context":"我叫小明。","answers":[{"text":"小明","answer_start":6}]})"),
             Catch::Contains("qa.jsonl:1:") && Catch::Contains("runs past the end"));
  CHECK_THAT(bad(R"({"question":"q","context":"我叫小明。","answers":[{"text":"小明","answer_start":1}]})"),
             Catch::Contains("reads '叫小'") && Catch::Contains("code points"));
  CHECK_THAT(bad(R"({"question":"q","context":"c","answers":[{"text":"c","answer_start":-1}]})"),
             Catch::Contains("non-negative integer"));
  CHECK_THAT(bad(R"({"question":"q","context":"c","answers":[{"text":"c"}]})"), Catch::Contains("answer_start"));
  CHECK_THAT(bad(R"({"question":"q","context":"c","answers":"c"})"), Catch::Contains("expected [{"));
  // "answers": [] is an unanswerable question (SQuAD 2.0 style), not an error.
  const auto none = make_span_examples(span_fields(), "qa.jsonl",
                                       records_of({R"({"question":"q","context":"c","answers":[]})"}), true);
  REQUIRE(none.size() == 1);
  CHECK(none[0].has_label);
  CHECK(none[0].answers.empty());
  CHECK_THAT(bad(R"({"question":"q","context":"c","answers":[{"text":"","answer_start":0}]})"),
             Catch::Contains("empty"));
  CHECK_THAT(bad(R"({"question":"q","answers":[]})"), Catch::Contains("missing field 'context'"));
  CHECK_THAT(bad(R"({"question":3,"context":"c"})"), Catch::Contains("field 'question' must be a string"));
  CHECK_THAT(bad(R"({"question":"q","context":"c"})"), Catch::Contains("missing field 'answers'"));
  CHECK(bad(R"({"question":"q","context":"c"})", /*require=*/false).empty());  // predict: no answers needed
  CHECK_THAT(bad(R"({"question":"q","context":"c","answers":[{"text":"c","answer_start":0}],"weight":-2})"),
             Catch::Contains("qa.jsonl:1: field 'weight' must be a non-negative number"));
  auto weighted = make_span_examples(
      span_fields(), "qa.jsonl",
      records_of({R"({"question":"q","context":"c","answers":[{"text":"c","answer_start":0}],"weight":3})"}), true);
  REQUIRE(weighted.size() == 1);
  CHECK(weighted[0].weight == 3.0);
}

TEST_CASE("span windows: non-BMP characters and code-point offsets", "[span]") {
  // U+20000 and U+1F600 are outside the BMP (4 UTF-8 bytes, 2 UTF-16 units, 1 code point each).
  const std::string ctx = "\xF0\xA0\x80\x80\xF0\x9F\x98\x80 北京是中国的首都。";
  auto recs = records_of(
      {R"({"question":"首都是哪里？","context":")" + ctx + R"(","answers":[{"text":"北京","answer_start":3}]})"});
  auto ex = make_span_examples(span_fields(), "f", recs, true);
  SpanConfig sc;
  auto enc = encode_span_examples(ex, *tokenizer(), 64, sc);
  REQUIRE(enc.size() == 1);
  const auto& e = enc[0];
  REQUIRE(e.start_position > 0);
  CHECK(answer_text(ex[0], e) == "北京");
  CHECK(e.context_spans[static_cast<size_t>(e.start_position)].start == 3);
  // [CLS] question [SEP] context [SEP]: types 0 then 1; spans only on context pieces.
  CHECK(e.token_type_ids.front() == 0);
  CHECK(e.token_type_ids.back() == 1);
  CHECK(e.context_spans.front().start == -1);
  CHECK(e.context_spans.back().start == -1);
}

TEST_CASE("span windows: an answer ending in a combining mark keeps it", "[span]") {
  // "cafe" + U+0301 (decomposed é): lower-casing strips the mark from the piece, not from the answer.
  auto recs = records_of(
      {R"({"question":"q","context":"au cafe\u0301 noir","answers":[{"text":"cafe\u0301","answer_start":3}]})"});
  auto ex = make_span_examples(span_fields(), "f", recs, true);
  auto enc = encode_span_examples(ex, *tokenizer(), 32, SpanConfig{});
  REQUIRE(enc.size() == 1);
  REQUIRE(enc[0].start_position > 0);
  CHECK(answer_text(ex[0], enc[0]) == "cafe\xCC\x81");
}

TEST_CASE("span windows: a long context over several windows with doc_stride", "[span]") {
  std::string ctx;
  for (int i = 0; i < 30; ++i) ctx += "天气很好";  // 120 pieces
  ctx += "答案在这里";
  for (int i = 0; i < 10; ++i) ctx += "天气很好";
  const int64_t answer_start = 120;
  auto recs = records_of({R"({"question":"问题","context":")" + ctx + R"(","answers":[{"text":"答案","answer_start":)" +
                          std::to_string(answer_start) + "}]}"});
  auto ex = make_span_examples(span_fields(), "f", recs, true);
  SpanConfig sc;
  sc.doc_stride = 20;
  const int max_len = 32;  // room = 32 - 2 - 3 = 27 pieces per window
  auto enc = encode_span_examples(ex, *tokenizer(), max_len, sc);
  const int64_t n = 165, room = 27;
  CHECK(static_cast<int64_t>(enc.size()) == 1 + (n - room + sc.doc_stride - 1) / sc.doc_stride);
  std::vector<int> covered(static_cast<size_t>(n), 0);
  int64_t with_answer = 0, prev_first = -sc.doc_stride;
  for (const auto& e : enc) {
    CHECK(static_cast<int64_t>(e.input_ids.size()) <= max_len);
    int64_t first = -1;
    for (const auto& s : e.context_spans)
      if (s.start >= 0) {
        covered[static_cast<size_t>(s.start)] = 1;
        if (first < 0) first = s.start;
      }
    CHECK(first - prev_first == sc.doc_stride);  // window starts are doc_stride pieces apart
    prev_first = first;
    if (e.start_position > 0) {
      ++with_answer;
      CHECK(answer_text(ex[0], e) == "答案");
    } else {
      CHECK(e.end_position == 0);  // no answer in this window: [CLS]
    }
  }
  CHECK(std::count(covered.begin(), covered.end(), 1) == n);  // every context piece is in some window
  CHECK(with_answer >= 1);
  // Collate: (B, 2) labels from the windows.
  std::vector<int64_t> idx(enc.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int64_t>(i);
  auto batch = collate(Task::SpanExtraction, enc, ex, idx, 0);
  REQUIRE(batch.labels.sizes() == torch::IntArrayRef({static_cast<int64_t>(enc.size()), 2}));
  CHECK(batch.labels.sum().item<int64_t>() > 0);
}

TEST_CASE("span offsets round trip over every context of the sample sets", "[span][data]") {
  // Every gold answer of every record is recovered from the pieces of the window(s) that hold it:
  // exactly when the answer starts and ends on piece boundaries (all but a handful), else as the
  // smallest piece-aligned text around it (a gold "8" inside the piece "80"). Answers too long for
  // any window (CMRC 2018 has answers of 130+ characters) cannot be labelled and are counted apart.
  const int max_len = 128;
  for (const char* set : {"cmrc2018_zh", "drcd_zh", "xquad_en"})
    for (const char* split : {"train.jsonl", "dev.jsonl"}) {
      const auto file = kSource / "data" / set / split;
      INFO(file.string());
      auto recs = read_records(file);
      auto ex = make_span_examples(span_fields(), file, recs, true);
      SpanConfig sc;
      sc.doc_stride = 16;  // any answer of up to room - 15 pieces lies wholly in some window
      auto tok = tokenizer();
      auto enc = encode_span_examples(ex, *tok, max_len, sc);
      std::vector<int> found(ex.size(), 0);
      int64_t exact = 0, inside_piece = 0, wrong = 0, multi_window = 0, too_long = 0;
      std::vector<int64_t> windows(ex.size(), 0);
      for (const auto& e : enc) {
        ++windows[static_cast<size_t>(e.example)];
        if (e.start_position == 0) continue;
        const auto& x = ex[static_cast<size_t>(e.example)];
        const auto got = answer_text(x, e);
        // The gold without surrounding whitespace (pieces never include whitespace).
        auto gold = x.answers[0].text;
        gold.erase(0, gold.find_first_not_of(" \t\n"));
        gold.erase(gold.find_last_not_of(" \t\n") + 1);
        found[static_cast<size_t>(e.example)] = 1;
        if (got == gold)
          ++exact;
        else if (got.find(gold) != std::string::npos) {
          ++inside_piece;
          UNSCOPED_INFO("gold '" << gold << "' inside pieces '" << got << "'");
        } else {
          ++wrong;
          UNSCOPED_INFO("gold '" << gold << "' recovered as '" << got << "'");
        }
      }
      for (auto w : windows) multi_window += w > 1;
      for (size_t i = 0; i < ex.size(); ++i) {
        if (found[i]) continue;
        const auto q =
            std::min<int64_t>(static_cast<int64_t>(tok->tokenize(ex[i].texts[0]).size()), sc.max_query_length);
        const auto a = static_cast<int64_t>(tok->tokenize(ex[i].answers[0].text).size());
        if (a > max_len - 3 - q - sc.doc_stride + 1)
          ++too_long;
        else
          UNSCOPED_INFO("no window labels " << ex[i].id << " '" << ex[i].answers[0].text << "'");
      }
      CHECK(wrong == 0);
      CHECK(inside_piece * 100 <= exact);  // at most 1%: data whose answer cuts a piece
      CHECK(std::count(found.begin(), found.end(), 1) + too_long == static_cast<int64_t>(ex.size()));
      CHECK(too_long * 20 <= static_cast<int64_t>(ex.size()));  // cmrc2018 train: 25 of 650 (long answers)
      CHECK(multi_window > 0);                                  // the sets do exercise contexts longer than one window
    }
}

TEST_CASE("span decoding: best valid span across windows, max_answer_length, exact substring", "[span]") {
  auto recs =
      records_of({R"({"question":"q","context":"Hello  World, 北京","answers":[{"text":"World","answer_start":7}]})"});
  auto ex = make_span_examples(span_fields(), "f", recs, true);
  SpanConfig sc;
  auto enc = encode_span_examples(ex, *tokenizer(), 32, sc);
  REQUIRE(enc.size() == 1);
  const auto& e = enc[0];
  const auto L = static_cast<int64_t>(e.input_ids.size());
  // positions: [CLS] q [SEP] hello world , 北 京 [SEP]
  auto logits = torch::zeros({L, 2});
  logits[0][0] = 100.0;  // [CLS] is never an answer
  logits[0][1] = 100.0;
  logits[4][0] = 5.0;  // "world"
  logits[4][1] = 4.0;
  logits[7][1] = 4.5;  // "京" as end: world..京 scores 9.5 > world..world 9
  auto c = decode_spans(ex[0], {&e}, {logits}, 30, 20);
  REQUIRE(!c.empty());
  CHECK(c[0].text == "World, 北京");  // the original casing and spacing, not the pieces
  CHECK(c[0].start == 7);
  CHECK(c[0].end == 16);
  CHECK(c[0].score == Approx(9.5));
  auto short_only = decode_spans(ex[0], {&e}, {logits}, 1, 20);  // one piece at most
  REQUIRE(!short_only.empty());
  CHECK(short_only[0].text == "World");
  double total = 0;
  for (const auto& x : c) total += x.probability;
  CHECK(total == Approx(1.0));
  // A second window with a better span wins.
  auto better = logits.clone();
  better[5][0] = 20.0;
  better[5][1] = 20.0;
  auto two = decode_spans(ex[0], {&e, &e}, {logits, better}, 30, 20);
  CHECK(two[0].text == ",");
}

TEST_CASE("unanswerable questions: every window targets [CLS]; the null decision and its odds", "[span]") {
  auto recs = records_of({R"({"question":"q","context":"Hello World, 北京","answers":[]})"});
  auto ex = make_span_examples(span_fields(), "f", recs, true);
  SpanConfig sc;
  sc.doc_stride = 2;
  auto enc = encode_span_examples(ex, *tokenizer(), 7, sc);  // [CLS] q [SEP] + 3 context pieces + [SEP]
  REQUIRE(enc.size() > 1);
  for (const auto& e : enc) {
    CHECK(e.start_position == 0);
    CHECK(e.end_position == 0);
  }
  // Logits of two windows: null scores 3 and 1 (the least counts), best span 4.5.
  auto w0 = torch::zeros({static_cast<int64_t>(enc[0].input_ids.size()), 2});
  auto w1 = w0.clone();
  w0[0][0] = 1.0;
  w0[0][1] = 2.0;
  w1[0][0] = 0.5;
  w1[0][1] = 0.5;
  w0[3][0] = 2.0;
  w0[3][1] = 2.5;  // "hello" alone: 4.5
  const std::vector<torch::Tensor> logits{w0, w1};
  CHECK(null_score(logits) == Approx(1.0));
  const auto c = decode_spans(ex[0], {&enc[0], &enc[1]}, logits, 30, 20);
  REQUIRE(!c.empty());
  CHECK(c[0].score == Approx(4.5));
  const double odds = null_odds(c, logits, 0.5);
  CHECK(odds == Approx(1.0 - 4.5));
  CHECK_FALSE(decide_null(c, logits, odds, 0.0).no_answer);                   // -3.5 is not above 0
  CHECK(decide_null(c, logits, odds, -4.0).no_answer);                        // above -4: no answer
  CHECK(decide_null(c, logits, odds, -4.0).score == Approx(1.0));             // the null score
  CHECK(decide_null({}, logits, null_odds({}, logits, 0.5), 1e9).no_answer);  // no span at all
  // A verifier's third channel: odds = 0.5 · span odds + 0.5 · its least logit over the windows.
  auto v0 = torch::cat({w0, torch::full({w0.size(0), 1}, 6.0)}, 1);
  auto v1 = torch::cat({w1, torch::full({w1.size(0), 1}, 2.0)}, 1);
  CHECK(null_odds(c, {v0, v1}, 0.5) == Approx(0.5 * (1.0 - 4.5) + 0.5 * 2.0));
  CHECK(null_odds(c, {v0, v1}, 0.0) == Approx(1.0 - 4.5));
}

TEST_CASE("first-sentence baseline", "[span]") {
  CHECK(first_sentence("北京是首都。上海很大。") == "北京是首都。");
  CHECK(first_sentence("Mr. Smith went. Then") == "Mr.");  // the rule is plain: '.' then a space
  CHECK(first_sentence("3.14 is pi. Yes") == "3.14 is pi.");
  CHECK(first_sentence("no end") == "no end");
}
