// Unit tests of the text library on tiny in-memory vocabularies: vocab file rules (HF load_vocab),
// each class of bad input, BasicTokenizer/WordPiece rules, invalid UTF-8, truncation methods,
// word-level encoding and piece offsets.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "framework/common/error.h"
#include "framework/text/bert_tokenizer.h"
#include "framework/text/encoding.h"
#include "framework/text/unicode.h"

using namespace unif::framework;
using Strings = std::vector<std::string>;

namespace {

// ids: [PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3 [MASK]=4, then the words below in order.
const char* kVocabText =
    "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n"
    "un\n##aff\n##able\nhello\nworld\n,\n!\n.\n-\n'\n"
    "ca\n##fe\ncafé\nis\ni\n##stan\n##bul\n今\n天\na\nb\nc\nd\n##b\n##c\n";

std::shared_ptr<const Vocab> tiny_vocab() {
  static auto v = std::make_shared<const Vocab>(Vocab::parse(kVocabText, "tiny"));
  return v;
}

std::filesystem::path write_temp(const std::string& name, const std::string& content) {
  auto p = std::filesystem::temp_directory_path() / ("unif_test_tokenizer_" + name);
  std::ofstream(p, std::ios::binary) << content;
  return p;
}

// Substring of `s` between code points [start, end).
std::string slice(const std::string& s, CharSpan sp) {
  auto cps = unicode::decode_utf8(s);
  return unicode::encode_utf8(
      std::u32string_view(cps).substr(static_cast<size_t>(sp.start), static_cast<size_t>(sp.end - sp.start)));
}

}  // namespace

TEST_CASE("vocab: ids are line numbers - blank lines and duplicates as HF load_vocab", "[unit][tokenizer]") {
  // "a" on lines 1 and 4: the later id wins; line 2 is the blank token "".
  auto v = Vocab::parse("[UNK]\na\n\nb\na\n", "dup");
  CHECK(v.size() == 5);
  CHECK(v.distinct_size() == 4);
  CHECK(v.id("a") == 4);
  CHECK(v.id("") == 2);
  CHECK(v.contains(""));
  CHECK(v.token(1) == "[UNK]");  // shadowed by the later "a"
  CHECK(v.token(4) == "a");
  CHECK(v.token(99) == "[UNK]");
  CHECK(v.id("zzz") == 0);
  CHECK(v.unk_id() == 0);
}

TEST_CASE("vocab: \\r\\n, \\r and a missing final newline end lines - nothing else is stripped", "[unit][tokenizer]") {
  auto v = Vocab::parse("[UNK]\r\nx \r\ty\rlast", "eol");
  CHECK(v.size() == 4);
  CHECK(v.id("x ") == 1);  // trailing space is part of the token
  CHECK(v.id("\ty") == 2);
  CHECK(v.id("last") == 3);
  CHECK(v.max_token_chars() == 5);
}

TEST_CASE("vocab: missing file is a UserError naming it", "[unit][tokenizer]") {
  CHECK_THROWS_WITH(Vocab::load("/nonexistent/vocab.txt"),
                    Catch::Contains("/nonexistent/vocab.txt") && Catch::Contains("not found"));
}

TEST_CASE("vocab: a directory is not a vocab file", "[unit][tokenizer]") {
  auto dir = std::filesystem::temp_directory_path();
  CHECK_THROWS_AS(Vocab::load(dir), unif::UserError);
}

TEST_CASE("vocab: empty file is a UserError naming it", "[unit][tokenizer]") {
  auto p = write_temp("empty.txt", "");
  CHECK_THROWS_WITH(Vocab::load(p), Catch::Contains(p.string()) && Catch::Contains("empty"));
}

TEST_CASE("vocab: no [UNK] line is a UserError naming the file", "[unit][tokenizer]") {
  auto p = write_temp("nounk.txt", "[PAD]\nhello\n[unk]\n");
  CHECK_THROWS_WITH(Vocab::load(p), Catch::Contains(p.string()) && Catch::Contains("[UNK]"));
}

TEST_CASE("vocab: invalid UTF-8 is a UserError with the line number", "[unit][tokenizer]") {
  auto p = write_temp("badutf8.txt", "[UNK]\nok\nbad\xff\n");
  CHECK_THROWS_WITH(Vocab::load(p),
                    Catch::Contains(p.string()) && Catch::Contains("line 3") && Catch::Contains("UTF-8"));
}

TEST_CASE("wordpiece: greedy longest match with ## pieces, [UNK] when unmatchable", "[unit][tokenizer]") {
  BertTokenizer tok(tiny_vocab(), true);
  CHECK(tok.tokenize("unaffable") == Strings{"un", "##aff", "##able"});
  CHECK(tok.tokenize("bcc") == Strings{"b", "##c", "##c"});
  CHECK(tok.tokenize("bx") == Strings{"[UNK]"});  // the whole word, not only the tail
  CHECK(tok.convert_tokens_to_ids({"un", "##aff", "nope"}) == std::vector<int64_t>{5, 6, 1});
}

TEST_CASE("wordpiece: words over 100 code points are [UNK]", "[unit][tokenizer]") {
  BertTokenizer tok(tiny_vocab(), true);
  // "a" + 99 "b": 100 code points -> matches as pieces; 101 -> [UNK]
  std::string w100 = "a" + std::string(99, 'b');
  CHECK(tok.tokenize(w100).size() == 100);
  CHECK(tok.tokenize(w100 + "b") == Strings{"[UNK]"});
  // counted in code points, not bytes: 60 "今" are 180 bytes but one word each (CJK split)
  std::string cjk;
  for (int i = 0; i < 60; ++i) cjk += "今";
  CHECK(tok.tokenize(cjk).size() == 60);
}

TEST_CASE("basic: punctuation split, whitespace, CJK, lower-casing and accents", "[unit][tokenizer]") {
  BertTokenizer uncased(tiny_vocab(), true);
  BertTokenizer cased(tiny_vocab(), false);
  CHECK(uncased.tokenize(" Hello,\tWORLD!\u00a0") == Strings{"hello", ",", "world", "!"});
  CHECK(cased.tokenize("Hello, world") == Strings{"[UNK]", ",", "world"});
  CHECK(uncased.tokenize("今天") == Strings{"今", "天"});
  CHECK(uncased.tokenize("a今b") == Strings{"a", "今", "b"});
  CHECK(uncased.tokenize("CAFÉ") == Strings{"ca", "##fe"});  // lower, NFD, drop Mn
  CHECK(cased.tokenize("café") == Strings{"café"});
  CHECK(uncased.tokenize("İ") == Strings{"i"});              // U+0130 -> i + U+0307, the mark stripped
  CHECK(uncased.tokenize("a\u2028b") == Strings{"a", "b"});  // str.split() space
  CHECK(uncased.tokenize("a\x01"
                         "b\xEF\xBF\xBD"
                         "c") == Strings{"a", "##b", "##c"});  // "abc"
  CHECK(uncased.tokenize("don't-") == Strings{"[UNK]", "'", "[UNK]", "-"});
}

TEST_CASE("special tokens are cut out anywhere, case-sensitively", "[unit][tokenizer]") {
  BertTokenizer tok(tiny_vocab(), true);
  CHECK(tok.tokenize("a[SEP]b") == Strings{"a", "[SEP]", "b"});
  CHECK(tok.tokenize("[CLS][MASK]") == Strings{"[CLS]", "[MASK]"});
  // not special: "[", "sep", "]" are ordinary words (none in the tiny vocab)
  CHECK(tok.tokenize("[sep]") == Strings{"[UNK]", "[UNK]", "[UNK]"});
  BertTokenizer cased(tiny_vocab(), false);
  CHECK(cased.tokenize("[Sep] [SEP]") == Strings{"[UNK]", "[UNK]", "[UNK]", "[SEP]"});
}

TEST_CASE("invalid UTF-8 bytes become U+FFFD and are dropped", "[unit][tokenizer]") {
  BertTokenizer tok(tiny_vocab(), true);
  CHECK(unicode::decode_utf8("a\xff"
                             "b") == std::u32string{U'a', 0xFFFD, U'b'});
  CHECK(unicode::decode_utf8("\xe4\xbb") == std::u32string{0xFFFD, 0xFFFD});  // truncated
  CHECK(unicode::decode_utf8("\xed\xa0\x80").size() == 3);                    // encoded surrogate: 3 bad bytes
  CHECK(tok.tokenize("hello\xff\xfeworld") == Strings{"[UNK]"});              // "helloworld": one word
  CHECK(tok.tokenize("hello \xc0\xaf world") == Strings{"hello", "world"});
  // offsets count each bad byte as one code point
  auto t = tok.tokenize_with_offsets(
      "\xff"
      "hello");
  REQUIRE(t.offsets.size() == 1);
  CHECK(t.offsets[0] == CharSpan{1, 6});
}

TEST_CASE("offsets: each piece's span slices back to its source text", "[unit][tokenizer]") {
  BertTokenizer tok(tiny_vocab(), true);
  const std::string text = "  Hello, 今天 unaffable [SEP]CAFÉ!";
  auto t = tok.tokenize_with_offsets(text);
  REQUIRE(t.tokens == Strings{"hello", ",", "今", "天", "un", "##aff", "##able", "[SEP]", "ca", "##fe", "!"});
  REQUIRE(t.offsets.size() == t.tokens.size());
  Strings sliced;
  for (auto sp : t.offsets) sliced.push_back(slice(text, sp));
  CHECK(sliced == Strings{"Hello", ",", "今", "天", "un", "aff", "able", "[SEP]", "CA", "FÉ", "!"});
}

TEST_CASE("truncate method names parse - unknown names are a UserError", "[unit][tokenizer]") {
  CHECK(parse_truncate_method("LIFO") == TruncateMethod::LIFO);
  CHECK(parse_truncate_method("FIFO") == TruncateMethod::FIFO);
  CHECK(parse_truncate_method("longer-FO") == TruncateMethod::LongerFO);
  CHECK(parse_truncate_method("longest_first") == TruncateMethod::LongestFirst);
  CHECK(to_string(TruncateMethod::LongerFO) == "longer-FO");
  CHECK_THROWS_WITH(parse_truncate_method("lifo"), Catch::Contains("\"lifo\"") && Catch::Contains("longer-FO"));
}

TEST_CASE("truncate_ranges: LIFO, FIFO, longer-FO and longest_first", "[unit][tokenizer]") {
  using R = std::vector<std::pair<size_t, size_t>>;
  // 5 + 3 pieces into 4
  CHECK(truncate_ranges({5, 3}, 4, TruncateMethod::LIFO) == R{{0, 4}, {0, 0}});
  CHECK(truncate_ranges({5, 3}, 4, TruncateMethod::FIFO) == R{{4, 5}, {0, 3}});
  CHECK(truncate_ranges({5, 3}, 4, TruncateMethod::LongerFO) == R{{0, 2}, {0, 2}});
  CHECK(truncate_ranges({5, 3}, 4, TruncateMethod::LongestFirst) == R{{0, 2}, {0, 2}});
  // ties: longer-FO cuts the first, longest_first the second
  CHECK(truncate_ranges({3, 3}, 5, TruncateMethod::LongerFO) == R{{0, 2}, {0, 3}});
  CHECK(truncate_ranges({3, 3}, 5, TruncateMethod::LongestFirst) == R{{0, 3}, {0, 2}});
  CHECK(truncate_ranges({2, 1}, 9, TruncateMethod::LIFO) == R{{0, 2}, {0, 1}});
}

TEST_CASE("encode: [CLS] a [SEP] b [SEP], token types, mask, padding", "[unit][tokenizer]") {
  BertTokenizer tok(tiny_vocab(), true);
  auto e = encode(tok, "hello", std::string_view("world !"), 8, TruncateMethod::LIFO, true);
  CHECK(e.tokens == Strings{"[CLS]", "hello", "[SEP]", "world", "!", "[SEP]"});
  CHECK(e.input_ids == std::vector<int64_t>{2, 8, 3, 9, 11, 3, 0, 0});
  CHECK(e.token_type_ids == std::vector<int64_t>{0, 0, 0, 1, 1, 1, 0, 0});
  CHECK(e.attention_mask == std::vector<int64_t>{1, 1, 1, 1, 1, 1, 0, 0});
  CHECK(!e.truncated);
  CHECK(e.offsets[1] == CharSpan{0, 5});
  CHECK(e.offsets[0] == CharSpan{});
  auto u = encode(tok, "a b c d", std::nullopt, 4, TruncateMethod::FIFO, false);
  CHECK(u.tokens == Strings{"[CLS]", "c", "d", "[SEP]"});
  CHECK(u.input_ids.size() == 4);
  CHECK(u.truncated);
}

TEST_CASE("encode: max_seq_length too small is a UserError", "[unit][tokenizer]") {
  BertTokenizer tok(tiny_vocab(), true);
  CHECK_THROWS_WITH(encode(tok, "a", std::nullopt, 2, TruncateMethod::LIFO, true),
                    Catch::Contains("max_seq_length 2") && Catch::Contains("at least 3"));
  CHECK_NOTHROW(encode(tok, "a", std::nullopt, 3, TruncateMethod::LIFO, true));
  CHECK_THROWS_WITH(encode(tok, "a", std::string_view("b"), 3, TruncateMethod::LIFO, true),
                    Catch::Contains("sentence pair") && Catch::Contains("at least 4"));
}

TEST_CASE("encode_words: pieces per word and the position of each word's first piece", "[unit][tokenizer]") {
  BertTokenizer tok(tiny_vocab(), true);
  const Strings words{"Hello", "unaffable", "\x01", "今天"};
  auto e = encode_words(tok, words, 10, TruncateMethod::LIFO, true);
  CHECK(e.tokens == Strings{"[CLS]", "hello", "un", "##aff", "##able", "今", "天", "[SEP]"});
  CHECK(e.word_start == std::vector<int64_t>{-1, 0, 1, -1, -1, 3, -1, -1, -1, -1});
  CHECK(e.offsets[3] == CharSpan{2, 5});  // "aff" inside "unaffable"
  auto cut = encode_words(tok, words, 5, TruncateMethod::LIFO, false);
  CHECK(cut.tokens == Strings{"[CLS]", "hello", "un", "##aff", "[SEP]"});
  CHECK(cut.word_start == std::vector<int64_t>{-1, 0, 1, -1, -1});
  CHECK(cut.truncated);
  auto fifo = encode_words(tok, words, 5, TruncateMethod::FIFO, false);
  CHECK(fifo.tokens == Strings{"[CLS]", "##able", "今", "天", "[SEP]"});
  CHECK(fifo.word_start == std::vector<int64_t>{-1, -1, 3, -1, -1});
}
