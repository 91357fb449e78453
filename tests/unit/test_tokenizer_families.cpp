// Every family's tokenizer, loaded as unif loads it, against HF transformers 5's fast tokenizers with
// special tokens (tests/fixtures/families, made by make.py / make_words.py):
//   tokenizer.ref.jsonl   edge texts, pairs, longest_first truncation to 12, dev lines: encode()'s ids,
//                         token types, offsets ([0, 0] for HF's added specials, {-1, -1} here) and tokens
//   tokenizer.hash.jsonl  every text of data/*/*.jsonl: a hash of the ids and offsets (100% must match)
//   words.ref.jsonl       pre-split words (HF is_split_into_words; RoBERTa with add_prefix_space):
//                         encode_words()'s ids, offsets and where each word starts
// Families: roberta (byte-level BPE), xlm-roberta (SentencePiece, fairseq ids), distilbert and electra
// (WordPiece, lower-cased), albert (SentencePiece, ALBERT's ids and normalisation), deberta-v2
// (SentencePiece spm.model, DeBERTa-v3's ids, [MASK] added last, Metaspace without a white-space split),
// modernbert (byte-level BPE in tokenizer.json), mpnet (WordPiece with MPNet's added tokens, <mask>
// lstrip, RoBERTa's template).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "framework/text/bert_tokenizer.h"
#include "framework/text/byte_level_bpe.h"
#include "framework/text/encoding.h"
#include "framework/text/sentencepiece_tokenizer.h"
#include "framework/text/vocab.h"
#include "support/fixture_config.h"
#include "support/temp_dir.h"

using namespace unif::framework;
namespace fs = std::filesystem;
using nlohmann::json;

using unif::test::kFamilies;

namespace {

const fs::path kRoot = UNIF_SOURCE_DIR;
constexpr int kNoLimit = 1 << 20;

std::vector<json> read_jsonl(const fs::path& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::vector<json> out;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(json::parse(line));
  return out;
}

// The family's tokenizer as unif loads it from a model directory (framework/model/tokenizer_files.cpp).
std::unique_ptr<Tokenizer> load_family(const std::string& family) {
  const fs::path dir = kFamilies / family;
  if (family == "roberta" || family == "modernbert")
    return std::make_unique<ByteLevelBpe>(ByteLevelBpe::load(dir.string()));
  if (family == "xlm-roberta")
    return std::make_unique<SentencePieceTokenizer>(SentencePieceTokenizer::load(dir.string()));
  if (family == "albert")
    return std::make_unique<SentencePieceTokenizer>(SentencePieceTokenizer::load_albert(dir.string()));
  if (family == "deberta-v2")
    return std::make_unique<SentencePieceTokenizer>(SentencePieceTokenizer::load_deberta(dir.string()));
  // WordPiece: do_lower_case from tokenizer_config.json (true for the three fixtures).
  std::ifstream config(dir / "tokenizer_config.json");
  REQUIRE(config.good());
  const bool lower = json::parse(config).value("do_lower_case", true);
  if (family == "mpnet")
    return std::make_unique<BertTokenizer>(BertTokenizer::load_mpnet(dir, dir / "vocab.txt", lower));
  auto vocab = std::make_shared<const Vocab>(Vocab::load((dir / "vocab.txt").string()));
  return std::make_unique<BertTokenizer>(vocab, lower);
}

// HF's offsets: [0, 0] for the specials the template adds ({-1, -1} here).
std::vector<std::vector<int64_t>> hf_offsets(const std::vector<CharSpan>& offsets) {
  std::vector<std::vector<int64_t>> out;
  for (const auto& o : offsets)
    out.push_back(o.start < 0 ? std::vector<int64_t>{0, 0} : std::vector<int64_t>{o.start, o.end});
  return out;
}

std::string hash_of(const std::vector<int64_t>& ids, const std::vector<CharSpan>& offsets) {
  uint64_t h = 0xcbf29ce484222325ULL;
  auto add = [&](int64_t v) {
    for (int b = 0; b < 8; ++b) {
      h ^= static_cast<uint64_t>(v) >> (8 * b) & 0xFF;
      h *= 0x100000001b3ULL;
    }
  };
  for (auto id : ids) add(id);
  for (const auto& o : hf_offsets(offsets)) add(o[0]), add(o[1]);
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// The text of `field` in a data line, as make.py's texts_of reads it (tokens joined by spaces).
std::string text_of(const json& record, const std::string& field) {
  if (field != "tokens") return record.at(field).get<std::string>();
  std::string text;
  for (const auto& t : record.at("tokens")) text += (text.empty() ? "" : " ") + t.get<std::string>();
  return text;
}

// HF fast tokenizers' longest_first for a pair (tokenizers' truncate_encodings): when the pair is
// over `budget`, the shorter segment stays whole if it takes at most half, else the two get
// budget/2 and the rest (the longer one, or the second of equals, the larger half). encode()'s
// LongestFirst is HF 4.28's slow rule (one piece at a time from the longer, ties from the second;
// tests/parity holds it to BERT's references): they differ when both segments are over half an odd
// budget and the first is not the longer.
std::pair<size_t, size_t> fast_longest_first(size_t a, size_t b, size_t budget) {
  if (a + b <= budget) return {a, b};
  const bool swap = a > b;
  size_t n1 = swap ? b : a, n2 = swap ? a : b;
  n2 = n1 > budget ? n1 : std::max(n1, budget - n1);
  if (n1 + n2 > budget) n1 = budget / 2, n2 = n1 + budget % 2;
  return swap ? std::pair<size_t, size_t>{n2, n1} : std::pair<size_t, size_t>{n1, n2};
}

Tokenized head(const Tokenized& t, size_t n) {
  Tokenized out;
  out.tokens.assign(t.tokens.begin(), t.tokens.begin() + static_cast<std::ptrdiff_t>(n));
  out.offsets.assign(t.offsets.begin(), t.offsets.begin() + static_cast<std::ptrdiff_t>(n));
  return out;
}

// Whether HF's tokenizer returns token_type_ids: ELECTRA's (BertTokenizer) and DeBERTa's.
// DistilBERT's returns none and its model takes none; ours still types a pair's second segment 1
// (BertTokenizer's template), which DistilBERT's model ignores.
bool hf_returns_types(const std::string& family) { return family == "electra" || family == "deberta-v2"; }

void check_references(const std::string& family) {
  const auto tok = load_family(family);
  const auto refs = read_jsonl(kFamilies / family / "tokenizer.ref.jsonl");
  REQUIRE(refs.size() > 250);
  if (!hf_returns_types(family) && family != "distilbert") CHECK_FALSE(tok->specials().pair_token_types);
  if (family == "electra" || family == "distilbert" || family == "deberta-v2") CHECK(tok->specials().pair_token_types);
  size_t pairs = 0, truncated = 0, slow_rule_differs = 0;
  for (const auto& r : refs) {
    const std::string text = r.at("text");
    std::optional<std::string> pair;
    // HF's unbatched tok(a, "") drops an empty second text (its batched call keeps the pair, as
    // encode() does): the reference line is then a single text.
    if (!r.at("text_pair").is_null() && !r.at("text_pair").get<std::string>().empty())
      pair = r.at("text_pair").get<std::string>(), ++pairs;
    const int max_length = r.contains("max_length") ? r.at("max_length").get<int>() : kNoLimit;
    if (r.contains("max_length")) {
      REQUIRE(r.at("truncation") == "longest_first");
      ++truncated;
    }
    INFO(family << ": text from " << r.at("from").get<std::string>() << ": '" << text << "'"
                << (pair ? " + '" + *pair + "'" : std::string()));
    auto e = encode(*tok, text, pair ? std::optional<std::string_view>(*pair) : std::nullopt, max_length,
                    TruncateMethod::LongestFirst, /*pad_to_max=*/false);
    if (pair && max_length < kNoLimit) {
      // A truncated pair: HF's references follow the fast rule. Where encode()'s (4.28) rule keeps
      // other lengths, check it against that rule, and HF against our pieces cut by the fast one.
      const Tokenized ta = tok->tokenize_with_offsets(text), tb = tok->tokenize_with_offsets(*pair);
      const size_t budget = static_cast<size_t>(max_length - tok->specials().pair_overhead());
      const auto slow = truncate_ranges({ta.tokens.size(), tb.tokens.size()}, budget, TruncateMethod::LongestFirst);
      CHECK(e.length() == static_cast<int64_t>(slow[0].second + slow[1].second) + tok->specials().pair_overhead());
      const auto fast = fast_longest_first(ta.tokens.size(), tb.tokens.size(), budget);
      if (fast != std::make_pair(slow[0].second, slow[1].second)) {
        ++slow_rule_differs;
        WARN(family << ": longest_first keeps " << slow[0].second << " + " << slow[1].second << " pieces of "
                    << ta.tokens.size() << " + " << tb.tokens.size() << ", HF's fast tokenizer " << fast.first << " + "
                    << fast.second << ": '" << text << "' + '" << *pair << "'");
        const Tokenized ca = head(ta, fast.first), cb = head(tb, fast.second);
        e = encode_tokenized(*tok, ca, &cb, kNoLimit, TruncateMethod::LongestFirst, false);
      }
    }
    CHECK(e.input_ids == r.at("input_ids").get<std::vector<int64_t>>());
    CHECK(e.tokens == r.at("tokens").get<std::vector<std::string>>());
    CHECK(hf_offsets(e.offsets) == r.at("offsets").get<std::vector<std::vector<int64_t>>>());
    if (!r.at("token_type_ids").is_null()) {
      CHECK(hf_returns_types(family));
      CHECK(e.token_type_ids == r.at("token_type_ids").get<std::vector<int64_t>>());
    } else if (family != "distilbert") {
      CHECK(e.token_type_ids == std::vector<int64_t>(e.input_ids.size(), 0));
    }
  }
  CHECK(pairs >= 10);
  CHECK(truncated == 10);
  // The pairs where HF's fast longest_first keeps other lengths than encode() (see fast_longest_first).
  const size_t expected_differ = family == "albert" || family == "modernbert"    ? 3
                                 : family == "deberta-v2"                        ? 2
                                 : family == "distilbert" || family == "electra" ? 1
                                                                                 : 0;
  CHECK(slow_rule_differs == expected_differ);
}

// encode_words() against HF's is_split_into_words (words.ref.jsonl, made by make_words.py).
void check_words(const std::string& family) {
  const auto tok = load_family(family);
  const auto refs = read_jsonl(kFamilies / family / "words.ref.jsonl");
  REQUIRE(refs.size() >= 20);
  for (const auto& r : refs) {
    const auto words = r.at("words").get<std::vector<std::string>>();
    INFO(family << ": words from " << r.at("from").get<std::string>() << ": " << r.at("words").dump());
    const auto e = encode_words(*tok, words, kNoLimit, TruncateMethod::LongestFirst, /*pad_to_max=*/false);
    CHECK(e.input_ids == r.at("input_ids").get<std::vector<int64_t>>());
    CHECK(e.tokens == r.at("tokens").get<std::vector<std::string>>());
    CHECK(hf_offsets(e.offsets) == r.at("offsets").get<std::vector<std::vector<int64_t>>>());
    // HF's word_ids: where a word's first piece sits is where its index first appears.
    std::vector<int64_t> starts(e.input_ids.size(), -1);
    const auto& word_ids = r.at("word_ids");
    REQUIRE(word_ids.size() == r.at("input_ids").size());
    for (size_t i = 0; i < word_ids.size() && i < starts.size(); ++i)
      if (!word_ids[i].is_null() && (i == 0 || word_ids[i - 1] != word_ids[i])) starts[i] = word_ids[i].get<int64_t>();
    CHECK(e.word_start == starts);
  }
}

void check_all_texts(const std::string& family) {
  const auto tok = load_family(family);
  size_t texts = 0, mismatches = 0;
  for (const auto& file : read_jsonl(kFamilies / family / "tokenizer.hash.jsonl")) {
    const std::string name = file.at("file");
    std::ifstream in(kRoot / name);
    REQUIRE(in.good());
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    for (const auto& entry : file.at("entries")) {
      const auto line = entry.at(0).get<size_t>();
      const std::string field = entry.at(1);
      REQUIRE(line <= lines.size());
      const std::string text = text_of(json::parse(lines[line - 1]), field);
      const auto e = encode(*tok, text, std::nullopt, kNoLimit, TruncateMethod::LongestFirst, false);
      ++texts;
      if (hash_of(e.input_ids, e.offsets) != entry.at(3).get<std::string>() ||
          e.input_ids.size() != entry.at(2).get<size_t>()) {
        if (++mismatches <= 5)
          UNSCOPED_INFO(family << ": " << name << " line " << line << " " << field << ": " << e.input_ids.size()
                               << " ids, HF " << entry.at(2) << "; text '" << text.substr(0, 300) << "'");
      }
    }
  }
  INFO(family << ": " << texts << " texts compared, " << mismatches << " differ");
  CHECK(texts > 20000);
  CHECK(mismatches == 0);
}

}  // namespace

TEST_CASE("families: encode() gives HF's ids, types, offsets and tokens (edge texts, pairs, truncation)",
          "[unit][tokenizer][families]") {
  for (const char* family :
       {"roberta", "xlm-roberta", "distilbert", "electra", "albert", "deberta-v2", "modernbert", "mpnet"}) {
    SECTION(family) { check_references(family); }
  }
}

TEST_CASE("families: every text of the bundled datasets with special tokens as HF encodes it",
          "[unit][tokenizer][families]") {
  for (const char* family :
       {"roberta", "xlm-roberta", "distilbert", "electra", "albert", "deberta-v2", "modernbert", "mpnet"}) {
    SECTION(family) { check_all_texts(family); }
  }
}

TEST_CASE("families: encode_words() gives HF's pieces, offsets and word starts for pre-split words",
          "[unit][tokenizer][families][words]") {
  for (const char* family :
       {"roberta", "xlm-roberta", "distilbert", "electra", "albert", "deberta-v2", "modernbert", "mpnet"}) {
    SECTION(family) { check_words(family); }
  }
}

TEST_CASE("families: ALBERT's ids, specials and options", "[unit][tokenizer][families][albert]") {
  const auto al = SentencePieceTokenizer::load_albert((kFamilies / "albert").string());
  CHECK(al.vocab_size() == 4000);
  CHECK(al.convert_tokens_to_ids({"<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]", "no such piece"}) ==
        std::vector<int64_t>{0, 1, 2, 3, 4, 1});
  CHECK(al.id_to_token(2) == "[CLS]");
  const SpecialTokens& s = al.specials();
  CHECK(s.cls == "[CLS]");
  CHECK(s.sep == "[SEP]");
  CHECK(s.pad == "<pad>");
  CHECK(s.mask == "[MASK]");
  CHECK(s.unk == "<unk>");
  CHECK_FALSE(s.pair_double_sep);
  CHECK_FALSE(s.pair_token_types);
  CHECK(al.albert());
  CHECK(al.albert_options().do_lower_case);
  CHECK_FALSE(al.albert_options().keep_accents);

  // tokenizer_config.json's options; the model alone gives HF's defaults.
  const fs::path dir = fs::temp_directory_path() / ("unif_albert_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(kFamilies / "albert" / "spiece.model", dir / "spiece.model");
  const auto plain = SentencePieceTokenizer::load_albert(dir.string());
  CHECK(plain.albert_options().do_lower_case);
  CHECK_FALSE(plain.albert_options().keep_accents);
  CHECK(plain.tokenize("Héllo ``World''") == al.tokenize("Héllo ``World''"));
  // A pair's token types follow the library that wrote the model: transformers 5 (the fixture's
  // config.json) returns none, so the model sees zeros; transformers 4 and the original ALBERT (a
  // directory that says nothing) give b and its [SEP] type 1; model_input_names decides first.
  const auto types_of = [](const Tokenizer& t) {
    return encode(t, "a b", std::string_view("c"), 16, TruncateMethod::LIFO, false).token_type_ids;
  };
  CHECK(types_of(al) == std::vector<int64_t>(types_of(al).size(), 0));
  CHECK(plain.specials().pair_token_types);
  const auto v4 = types_of(plain);
  REQUIRE(v4.size() >= 5);
  CHECK(v4.front() == 0);
  CHECK(v4.back() == 1);
  CHECK(v4[v4.size() - 2] == 1);
  std::ofstream(dir / "config.json") << R"({"model_type": "albert", "transformers_version": "4.46.3"})";
  CHECK(SentencePieceTokenizer::load_albert(dir.string()).specials().pair_token_types);
  std::ofstream(dir / "config.json") << R"({"model_type": "albert", "transformers_version": "5.0.0"})";
  CHECK_FALSE(SentencePieceTokenizer::load_albert(dir.string()).specials().pair_token_types);
  std::ofstream(dir / "tokenizer_config.json") << R"({"model_input_names": ["input_ids", "token_type_ids"]})";
  CHECK(SentencePieceTokenizer::load_albert(dir.string()).specials().pair_token_types);
  std::ofstream(dir / "config.json") << R"({"model_type": "albert", "transformers_version": "4.46.3"})";
  std::ofstream(dir / "tokenizer_config.json") << R"({"model_input_names": ["input_ids", "attention_mask"]})";
  CHECK_FALSE(SentencePieceTokenizer::load_albert(dir.string()).specials().pair_token_types);
  fs::remove(dir / "config.json");
  fs::remove(dir / "tokenizer_config.json");
  std::ofstream(dir / "tokenizer_config.json") << R"({"do_lower_case": false, "keep_accents": true})";
  const auto cased = SentencePieceTokenizer::load_albert(dir.string());
  CHECK_FALSE(cased.albert_options().do_lower_case);
  CHECK(cased.albert_options().keep_accents);
  std::vector<CharSpan> spans;
  CHECK(cased.normalize(U"A``é''", &spans) == U"A\"é\"");
  CHECK(spans == std::vector<CharSpan>{{0, 1}, {2, 3}, {3, 4}, {5, 6}});
  spans.clear();
  CHECK(al.normalize(U"A``é''", &spans) == U"a\"e\"");
  CHECK(spans == std::vector<CharSpan>{{0, 1}, {2, 3}, {3, 4}, {5, 6}});
  std::ofstream(dir / "tokenizer_config.json") << R"({"do_lower_case": "yes"})";
  CHECK_THROWS_WITH(SentencePieceTokenizer::load_albert(dir.string()),
                    Catch::Contains("tokenizer_config.json: do_lower_case must be true or false"));
  std::ofstream(dir / "tokenizer_config.json") << "{";
  CHECK_THROWS_WITH(SentencePieceTokenizer::load_albert(dir.string()),
                    Catch::Contains("tokenizer_config.json: not valid JSON"));
  fs::remove(dir / "tokenizer_config.json");
  // XLM-R's model is not ALBERT's (no [CLS]), and ALBERT's is not XLM-R's layout.
  fs::copy_file(kFamilies / "xlm-roberta" / "sentencepiece.bpe.model", dir / "spiece.model",
                fs::copy_options::overwrite_existing);
  CHECK_THROWS_WITH(SentencePieceTokenizer::load_albert(dir.string()),
                    Catch::Contains("spiece.model: not an ALBERT SentencePiece model"));
  fs::copy_file(kFamilies / "albert" / "spiece.model", dir / "sentencepiece.bpe.model");
  CHECK_THROWS_WITH(SentencePieceTokenizer::load(dir.string()), Catch::Contains("expected XLM-R's layout"));
  fs::remove(dir / "spiece.model");
  CHECK_THROWS_WITH(SentencePieceTokenizer::load_albert(dir.string()), Catch::Contains("spiece.model: cannot be read"));
  fs::remove_all(dir);
}

TEST_CASE("families: DeBERTa-v3's ids, specials and options", "[unit][tokenizer][families][deberta]") {
  const auto de = SentencePieceTokenizer::load_deberta((kFamilies / "deberta-v2").string());
  CHECK(de.vocab_size() == 4001);
  CHECK(de.convert_tokens_to_ids({"[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]", "no such piece"}) ==
        std::vector<int64_t>{0, 1, 2, 3, 4000, 3});
  CHECK(de.id_to_token(4000) == "[MASK]");
  const SpecialTokens& s = de.specials();
  CHECK(s.cls == "[CLS]");
  CHECK(s.sep == "[SEP]");
  CHECK(s.pad == "[PAD]");
  CHECK(s.mask == "[MASK]");
  CHECK(s.unk == "[UNK]");
  CHECK_FALSE(s.pair_double_sep);
  CHECK(s.pair_token_types);
  CHECK(de.deberta());
  CHECK_FALSE(de.albert());
  CHECK_FALSE(de.deberta_options().do_lower_case);
  // The space before a piece is in its offsets; [MASK] is an added token, cut out before the model.
  const Tokenized t = de.tokenize_with_offsets("Hi  there [MASK]!");
  REQUIRE(t.tokens.size() >= 3);
  CHECK(t.tokens[t.tokens.size() - 2] == "[MASK]");
  CHECK(t.offsets[t.offsets.size() - 2] == CharSpan{10, 16});
  CHECK(t.tokens.back() == "\xE2\x96\x81!");
  CHECK(t.offsets.back() == CharSpan{16, 17});
  std::vector<CharSpan> spans;
  CHECK(de.normalize(U"a   b  ", &spans) == U"a b");
  CHECK(spans == std::vector<CharSpan>{{0, 1}, {3, 4}, {4, 5}});

  const fs::path dir = fs::temp_directory_path() / ("unif_deberta_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(kFamilies / "deberta-v2" / "spm.model", dir / "spm.model");
  const auto plain = SentencePieceTokenizer::load_deberta(dir.string());
  CHECK(plain.tokenize("Héllo World") == de.tokenize("Héllo World"));
  std::ofstream(dir / "tokenizer_config.json") << R"({"do_lower_case": true})";
  const auto lower = SentencePieceTokenizer::load_deberta(dir.string());
  CHECK(lower.deberta_options().do_lower_case);
  CHECK(lower.tokenize("HELLO") == de.tokenize("hello"));
  std::ofstream(dir / "tokenizer_config.json") << R"({"split_by_punct": true})";
  CHECK_THROWS_WITH(SentencePieceTokenizer::load_deberta(dir.string()), Catch::Contains("split_by_punct"));
  fs::remove(dir / "tokenizer_config.json");
  // ALBERT's model is not DeBERTa's (no [PAD]).
  fs::copy_file(kFamilies / "albert" / "spiece.model", dir / "spm.model", fs::copy_options::overwrite_existing);
  CHECK_THROWS_WITH(SentencePieceTokenizer::load_deberta(dir.string()),
                    Catch::Contains("spm.model: not a DeBERTa SentencePiece model"));
  fs::remove(dir / "spm.model");
  CHECK_THROWS_WITH(SentencePieceTokenizer::load_deberta(dir.string()), Catch::Contains("spm.model: cannot be read"));
  fs::remove_all(dir);
}

TEST_CASE("families: MPNet's ids, specials, added tokens and files", "[unit][tokenizer][families][mpnet]") {
  const fs::path fixture = kFamilies / "mpnet";
  const auto mp = BertTokenizer::load_mpnet(fixture, fixture / "vocab.txt", true);
  CHECK(mp.vocab_size() == 4005);
  CHECK(mp.convert_tokens_to_ids({"<s>", "<pad>", "</s>", "<unk>", "[UNK]", "<mask>", "no such piece"}) ==
        std::vector<int64_t>{0, 1, 2, 3, 5, 4004, 5});
  const SpecialTokens& s = mp.specials();
  CHECK(s.cls == "<s>");
  CHECK(s.sep == "</s>");
  CHECK(s.pad == "<pad>");
  CHECK(s.mask == "<mask>");
  CHECK(s.unk == "[UNK]");
  CHECK(s.pair_double_sep);
  CHECK_FALSE(s.pair_token_types);
  // tokenizer.json's added tokens: <mask> alone takes the white space before it; none is normalized.
  std::vector<std::string> contents;
  for (const auto& a : mp.added_tokens()) {
    contents.push_back(a.content);
    CHECK(a.lstrip == (a.content == "<mask>"));
    CHECK_FALSE(a.rstrip);
  }
  CHECK(contents == std::vector<std::string>{"<s>", "<pad>", "</s>", "[UNK]", "<mask>"});
  CHECK(mp.normalized_added_tokens().empty());
  struct Case {
    std::string text;
    std::vector<int64_t> ids;
    std::vector<CharSpan> offsets;
  };
  auto check = [](const BertTokenizer& tok, const std::vector<Case>& cases) {
    for (const auto& c : cases) {
      INFO("'" << c.text << "'");
      const Tokenized t = tok.tokenize_with_offsets(c.text);
      CHECK(tok.convert_tokens_to_ids(t.tokens) == c.ids);
      CHECK(t.offsets == c.offsets);
    }
  };
  // HF's MPNetTokenizer on the same texts: "<unk>" is no added token here, "[UNK]" is, the specials of
  // BERT's layout are plain text; an unknown "<" is [UNK].
  const std::vector<Case> plain{
      {"Hello <mask>!", {2870, 1033, 4004, 9}, {{0, 4}, {4, 5}, {6, 12}, {12, 13}}},
      {"x <unk> [UNK] <s>", {61, 5, 3872, 1029, 5, 5, 0}, {{0, 1}, {2, 3}, {3, 5}, {5, 6}, {6, 7}, {8, 13}, {14, 17}}},
  };
  check(mp, plain);

  unif::test::TempDir tmp;
  fs::copy_file(fixture / "vocab.txt", tmp.path / "vocab.txt");
  // vocab.txt alone: MPNetTokenizer's defaults, the same tokens as tokenizer.json's.
  const auto defaults = BertTokenizer::load_mpnet(tmp.path, tmp.path / "vocab.txt", true);
  check(defaults, plain);
  CHECK(defaults.specials().unk == "[UNK]");
  // tokenizer_config.json's added_tokens_decoder (HF's reading without tokenizer.json): <unk> cut out too.
  std::ofstream(tmp.path / "tokenizer_config.json")
      << R"({"do_lower_case": true, "added_tokens_decoder": {"3": {"content": "<unk>", "lstrip": false,
            "rstrip": false, "normalized": false, "single_word": false, "special": true}}})";
  check(BertTokenizer::load_mpnet(tmp.path, tmp.path / "vocab.txt", true),
        {{"x <unk> [UNK] <s>", {61, 3, 5, 0}, {{0, 1}, {2, 7}, {8, 13}, {14, 17}}}});
  fs::remove(tmp.path / "tokenizer_config.json");

  // A normalized added token is matched in BertNormalizer's text (lower-cased, cleaned, accents
  // stripped, CJK spaced), lstrip taking the white space there; HF tokenizers' ids and offsets.
  json j = json::parse(std::ifstream(fixture / "tokenizer.json"));
  for (auto& a : j.at("added_tokens"))
    if (a.at("content") == "<mask>") a["normalized"] = true;
  std::ofstream(tmp.path / "tokenizer.json") << j.dump();
  const auto normalized = BertTokenizer::load_mpnet(tmp.path, tmp.path / "vocab.txt", true);
  REQUIRE(normalized.normalized_added_tokens().size() == 1);
  check(normalized, {
                        {"Hello <MASK>!", {2870, 1033, 4004, 9}, {{0, 4}, {4, 5}, {6, 12}, {12, 13}}},
                        {"x <Mask> y", {61, 4004, 62}, {{0, 1}, {2, 8}, {9, 10}}},
                        {"x  <mask>", {61, 4004}, {{0, 1}, {3, 9}}},
                        {"\xC3\xA9<M\xC3\x81SK>", {42, 4004}, {{0, 1}, {1, 7}}},
                        {std::string("<ma\x01sk>"), {4004}, {{0, 7}}},
                        {"\xE4\xBB\x8A<mask>\xE5\xA4\xA9", {126, 4004, 333}, {{0, 1}, {1, 7}, {7, 8}}},
                        {"a<MASK>b <s>", {38, 4004, 39, 0}, {{0, 1}, {1, 7}, {7, 8}, {9, 12}}},
                    });

  // Files that do not describe this vocabulary are refused by name.
  j = json::parse(std::ifstream(fixture / "tokenizer.json"));
  j.at("added_tokens").back()["id"] = 17;
  std::ofstream(tmp.path / "tokenizer.json") << j.dump();
  CHECK_THROWS_WITH(BertTokenizer::load_mpnet(tmp.path, tmp.path / "vocab.txt", true),
                    Catch::Contains("tokenizer.json: the added token '<mask>' has id 17, but ") &&
                        Catch::Contains("vocab.txt gives it id 4004"));
  j = json::parse(std::ifstream(fixture / "tokenizer.json"));
  j.at("added_tokens").back()["single_word"] = true;
  std::ofstream(tmp.path / "tokenizer.json") << j.dump();
  CHECK_THROWS_WITH(BertTokenizer::load_mpnet(tmp.path, tmp.path / "vocab.txt", true),
                    Catch::Contains("tokenizer.json: the added token '<mask>' has single_word true"));
  fs::remove(tmp.path / "tokenizer.json");
  std::ofstream(tmp.path / "tokenizer_config.json") << R"({"cls_token": "[CLS]", "mask_token": 3})";
  CHECK_THROWS_WITH(BertTokenizer::load_mpnet(tmp.path, tmp.path / "vocab.txt", true),
                    Catch::Contains("tokenizer_config.json: mask_token: expected a token, got 3"));
  std::ofstream(tmp.path / "tokenizer_config.json") << R"({"cls_token": "<cls>"})";
  CHECK_THROWS_WITH(BertTokenizer::load_mpnet(tmp.path, tmp.path / "vocab.txt", true),
                    Catch::Contains("vocab.txt: has no '<cls>' (MPNet's cls_token)"));
  fs::remove(tmp.path / "tokenizer_config.json");
  // BERT's vocabulary (no <s>) is not MPNet's.
  CHECK_THROWS_WITH(BertTokenizer::load_mpnet(tmp.path, kFamilies / "distilbert" / "vocab.txt", true),
                    Catch::Contains("has no '<s>' (MPNet's cls_token)"));
}
