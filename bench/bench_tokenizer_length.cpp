// bench_tokenizer_length: the cost of tokenizing one input as it grows, for every tokenizer kind
// (WordPiece, byte-level BPE, SentencePiece unigram in its three layouts), on the families' fixture
// tokenizers. For each kind and each length (100 to 100,000 characters) it tokenizes one word of
// random letters (no white space: the worst case of a merge loop) and one text of short words, and
// prints the microseconds per character: flat when the cost is linear in the length.
//
// Usage (from the repository root, after building the bench_tokenizer_length target):
//   build/bin/bench_tokenizer_length [--repeat 3]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "framework/text/bert_tokenizer.h"
#include "framework/text/byte_level_bpe.h"
#include "framework/text/sentencepiece_tokenizer.h"
#include "framework/text/vocab.h"

using namespace unif::framework;

namespace {

const std::string kFamilies = std::string(UNIF_SOURCE_DIR) + "/tests/fixtures/families/";

// The best of `repeat` runs, in microseconds per character of `text`.
double us_per_char(const Tokenizer& tok, const std::string& text, size_t chars, int repeat) {
  double best = 1e300;
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto out = tok.tokenize_with_offsets(text);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (out.tokens.empty()) std::abort();
    best = std::min(best, s);
  }
  return best * 1e6 / static_cast<double>(chars);
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else {
      std::printf("usage: bench_tokenizer_length [--repeat N]\n");
      return a == "-h" || a == "--help" ? 0 : 2;
    }
  }
  struct Kind {
    const char* name;
    std::function<std::unique_ptr<Tokenizer>()> load;
  };
  const std::vector<Kind> kinds{
      {"WordPiece (distilbert)",
       [] {
         auto vocab = std::make_shared<const Vocab>(Vocab::load(kFamilies + "distilbert/vocab.txt"));
         return std::make_unique<BertTokenizer>(vocab, true);
       }},
      {"byte-level BPE (roberta)",
       [] { return std::make_unique<ByteLevelBpe>(ByteLevelBpe::load(kFamilies + "roberta")); }},
      {"byte-level BPE (modernbert)",
       [] { return std::make_unique<ByteLevelBpe>(ByteLevelBpe::load(kFamilies + "modernbert")); }},
      {"SentencePiece (xlm-roberta)",
       [] {
         return std::make_unique<SentencePieceTokenizer>(SentencePieceTokenizer::load(kFamilies + "xlm-roberta"));
       }},
      {"SentencePiece (albert)",
       [] {
         return std::make_unique<SentencePieceTokenizer>(SentencePieceTokenizer::load_albert(kFamilies + "albert"));
       }},
      {"SentencePiece (deberta-v2)",
       [] {
         return std::make_unique<SentencePieceTokenizer>(
             SentencePieceTokenizer::load_deberta(kFamilies + "deberta-v2"));
       }},
  };
  const std::vector<size_t> lengths{100, 1000, 10000, 100000};
  std::printf("%-28s %-6s", "tokenizer", "input");
  for (size_t n : lengths) std::printf(" %10zu", n);
  std::printf("   (us per character)\n");
  for (const auto& kind : kinds) {
    const auto tok = kind.load();
    for (const bool word : {true, false}) {
      std::printf("%-28s %-6s", kind.name, word ? "word" : "text");
      for (size_t n : lengths) {
        std::mt19937 rng(static_cast<unsigned>(n));
        std::string text;
        while (text.size() < n) {
          text.push_back(static_cast<char>('a' + rng() % 26));
          if (!word && rng() % 6 == 0 && text.size() < n) text.push_back(' ');
        }
        std::printf(" %10.3f", us_per_char(*tok, text, n, repeat));
      }
      std::printf("\n");
    }
  }
  return 0;
}
