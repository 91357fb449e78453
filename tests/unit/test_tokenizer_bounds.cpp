// The cost bounds of tokenization, and the vocabulary checks that keep ids below vocab_size:
// byte-level BPE merges by rank in O(n log n) of a word's length with the same pieces as the
// rank-by-rank rescan it replaced; encode() tokenizes a long text only as far as truncation keeps
// it; a vocabulary's largest id, not its entry count, is its size.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/common/error.h"
#include "framework/text/byte_level_bpe.h"
#include "framework/text/encoding.h"
#include "framework/text/unicode.h"

using namespace unif::framework;
namespace fs = std::filesystem;

namespace {

const fs::path kRoberta = fs::path(UNIF_SOURCE_DIR) / "tests/fixtures/families/roberta";

// The merge loop as written before: rescan every adjacent pair for the lowest rank (leftmost of
// equals), merge it, repeat. Quadratic, and the definition the heap must reproduce.
std::vector<std::string> rescan_bpe(const std::string& symbols, const std::unordered_map<std::string, int64_t>& vocab,
                                    const std::unordered_map<std::string, int>& ranks) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < symbols.size();) {
    size_t n = 1;
    while (i + n < symbols.size() && (static_cast<unsigned char>(symbols[i + n]) & 0xC0) == 0x80) ++n;
    std::string s = symbols.substr(i, n);
    if (vocab.count(s)) parts.push_back(std::move(s));
    i += n;
  }
  while (parts.size() > 1) {
    int best = std::numeric_limits<int>::max();
    size_t at = 0;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      const auto it = ranks.find(parts[i] + " " + parts[i + 1]);
      if (it != ranks.end() && it->second < best) best = it->second, at = i;
    }
    if (best == std::numeric_limits<int>::max()) break;
    parts[at] += parts[at + 1];
    parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(at) + 1);
  }
  return parts;
}

std::string symbols_of(const std::string& utf8) {
  std::string out;
  for (unsigned char b : utf8) unicode::append_utf8(out, ByteLevelBpe::byte_symbol(b));
  return out;
}

double seconds_to_tokenize(const Tokenizer& tok, const std::string& text) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto pieces = tok.tokenize_with_offsets(text);
  CHECK(!pieces.tokens.empty());
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("byte-level BPE: merging by rank with a heap gives the rescan's pieces", "[unit][tokenizer][bpe]") {
  const auto bpe = ByteLevelBpe::load(kRoberta.string());
  std::unordered_map<std::string, int64_t> vocab;
  const auto vocab_json = nlohmann::json::parse(std::ifstream(kRoberta / "vocab.json"));
  for (const auto& [piece, id] : vocab_json.items()) vocab.emplace(piece, id.get<int64_t>());
  std::unordered_map<std::string, int> ranks;
  std::ifstream merges(kRoberta / "merges.txt");
  int rank = 0;
  for (std::string line; std::getline(merges, line);)
    if (!line.empty() && line.rfind("#version", 0) != 0) ranks.emplace(line, rank++);
  REQUIRE(rank > 100);
  // Words drawn from few letters repeat pairs of equal rank, which is where the order of merges
  // (lowest rank, then leftmost) decides the pieces.
  std::mt19937 rng(7);
  for (const std::string alphabet : {"ab", "aeinst", "the quick brown fox", "aaaaab", "0123456789.,'"}) {
    for (int trial = 0; trial < 60; ++trial) {
      std::string word;
      const int length = 1 + static_cast<int>(rng() % 300);
      for (int i = 0; i < length; ++i) word.push_back(alphabet[rng() % alphabet.size()]);
      const std::string symbols = symbols_of(word);
      INFO(word);
      CHECK(bpe.bpe(symbols) == rescan_bpe(symbols, vocab, ranks));
      CHECK(bpe.bpe(symbols) == rescan_bpe(symbols, vocab, ranks));  // the second call is the cache's
    }
  }
}

TEST_CASE("byte-level BPE: a 200,000-character word tokenizes in linear time", "[unit][tokenizer][bpe]") {
  // The rescan took 13 s for 32,000 characters (quadratic: about 500 s for this word); the heap takes
  // tens of milliseconds. 20 s leaves room for any load on the machine.
  const auto bpe = ByteLevelBpe::load(kRoberta.string());
  std::string word;
  std::mt19937 rng(3);
  for (int i = 0; i < 200000; ++i) word.push_back(static_cast<char>('a' + rng() % 26));
  CHECK(seconds_to_tokenize(bpe, word) < 20.0);
  std::string text;
  for (int i = 0; i < 20000; ++i) text += word.substr(static_cast<size_t>(i) * 7 % 190000, 1 + i % 9) + " ";
  CHECK(seconds_to_tokenize(bpe, text) < 20.0);
}

TEST_CASE("encode(): a long text is tokenized only as far as truncation keeps it, with the same result",
          "[unit][tokenizer][bpe]") {
  const auto bpe = ByteLevelBpe::load(kRoberta.string());
  std::string a, b;
  for (int i = 0; i < 3000; ++i) a += "word" + std::to_string(i % 97) + (i % 13 == 0 ? ", " : " ");
  for (int i = 0; i < 40; ++i) b += "other" + std::to_string(i) + " ";
  const Tokenized full_a = bpe.tokenize_with_offsets(a);
  const Tokenized head = bpe.tokenize_head(a, 64);
  REQUIRE(head.tokens.size() >= 64);
  CHECK(head.tokens.size() < full_a.tokens.size() / 10);
  CHECK(std::equal(head.tokens.begin(), head.tokens.end(), full_a.tokens.begin()));
  CHECK(std::equal(head.offsets.begin(), head.offsets.end(), full_a.offsets.begin()));
  const Tokenized full_b = bpe.tokenize_with_offsets(b);
  for (auto method :
       {TruncateMethod::LIFO, TruncateMethod::FIFO, TruncateMethod::LongerFO, TruncateMethod::LongestFirst}) {
    for (int max_len : {8, 64, 200}) {
      INFO(std::string(to_string(method)) + " max_seq_length " + std::to_string(max_len));
      const Encoding got = encode(bpe, a, std::string_view(b), max_len, method, true);
      const Encoding want = encode_tokenized(bpe, full_a, &full_b, max_len, method, true);
      CHECK(got.input_ids == want.input_ids);
      CHECK(got.tokens == want.tokens);
      CHECK(got.offsets == want.offsets);
      CHECK(got.truncated);
      const Encoding single = encode(bpe, b, std::nullopt, max_len, method, false);
      const Encoding single_want = encode_tokenized(bpe, full_b, nullptr, max_len, method, false);
      CHECK(single.input_ids == single_want.input_ids);
      CHECK(single.truncated == single_want.truncated);
    }
  }
}

TEST_CASE("byte-level BPE: vocab_size is the largest id + 1; an id given twice is refused",
          "[unit][tokenizer][bpe][bad-input]") {
  std::unordered_map<std::string, int64_t> vocab{{"a", 0}, {"b", 1}, {"ab", 7}, {"<s>", 2}};
  const ByteLevelBpe sparse(vocab, {{"a", "b"}}, {});
  // 4 entries, but id 7 exists: a model with vocab_size 4 must be refused by the load check.
  CHECK(sparse.vocab_size() == 8);
  CHECK(sparse.bpe("ab") == std::vector<std::string>{"ab"});
  vocab["b"] = 0;
  try {
    ByteLevelBpe twice(vocab, {{"a", "b"}}, {});
    FAIL("an id given to two pieces was accepted");
  } catch (const unif::UserError& e) {
    const std::string what = e.what();
    CHECK(what.find("the id 0 is given to both") != std::string::npos);
  }
}
