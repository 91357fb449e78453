// bench_tokenizer: throughput of the BERT tokenizer (unif::text) on a real JSONL dataset.
// Tokenizes the "text" field (and "text_b" when present) of every line, `--repeat` times, and
// prints tokens/s, lines/s and MB/s (single thread).
//
// Usage (from the repository root, after building the bench_tokenizer target):
//   build/bin/bench_tokenizer [--vocab tests/fixtures/tiny-bert-zh/vocab.txt]
//                             [--cased] [--repeat 20] [FILE.jsonl ...]
// FILE defaults to data/sib200_zh/train.jsonl and data/sib200_zh/dev.jsonl.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/common/error.h"
#include "framework/text/bert_tokenizer.h"

using unif::framework::BertTokenizer;
using unif::framework::Vocab;

int main(int argc, char** argv) {
  std::string vocab_path = std::string(UNIF_SOURCE_DIR) + "/tests/fixtures/tiny-bert-zh/vocab.txt";
  bool cased = false;
  int repeat = 20;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--vocab" && i + 1 < argc) {
      vocab_path = argv[++i];
    } else if (a == "--cased") {
      cased = true;
    } else if (a == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (a == "-h" || a == "--help") {
      std::cout << "usage: bench_tokenizer [--vocab V] [--cased] [--repeat N] [FILE.jsonl ...]\n";
      return 0;
    } else {
      files.push_back(a);
    }
  }
  if (files.empty())
    for (const char* f : {"/data/sib200_zh/train.jsonl", "/data/sib200_zh/dev.jsonl"})
      files.push_back(std::string(UNIF_SOURCE_DIR) + f);

  try {
    std::vector<std::string> texts;
    size_t bytes = 0;
    for (const auto& f : files) {
      std::ifstream in(f);
      if (!in) throw unif::UserError("cannot open " + f);
      std::string line;
      for (long n = 1; std::getline(in, line); ++n) {
        if (line.empty()) continue;
        auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
        if (!j.is_object() || !j.contains("text"))
          throw unif::UserError(f + " line " + std::to_string(n) + ": expected {\"text\": ...}");
        for (const char* key : {"text", "text_b"})
          if (j.contains(key) && j[key].is_string()) {
            texts.push_back(j[key].get<std::string>());
            bytes += texts.back().size();
          }
      }
    }
    auto vocab = std::make_shared<const Vocab>(Vocab::load(vocab_path));
    const BertTokenizer tok(vocab, !cased);

    size_t tokens = 0;
    tok.tokenize(texts.empty() ? std::string() : texts.front());  // warm-up
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < repeat; ++r)
      for (const auto& t : texts) tokens += tok.convert_tokens_to_ids(tok.tokenize(t)).size();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double lines = static_cast<double>(texts.size()) * repeat;
    std::printf("bench_tokenizer: %zu texts x %d repeats, %s, vocab %s\n", texts.size(), repeat,
                cased ? "cased" : "uncased", vocab_path.c_str());
    std::printf("  %.3f s  %.0f tokens/s  %.0f lines/s  %.2f MB/s  (%.1f tokens/line)\n", s,
                static_cast<double>(tokens) / s, lines / s, static_cast<double>(bytes) * repeat / s / 1e6,
                lines > 0 ? static_cast<double>(tokens) / lines : 0.0);
  } catch (const unif::UserError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
