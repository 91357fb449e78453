// The tokenizer kinds: one row per algorithm and its files, the table every model directory's
// tokenizer is read through. A family's architecture row (models/architectures.h) names its kind;
// the config check (does a directory hold any tokenizer?), the loader and the files copied into an
// output directory all read this table, so a new kind is one row here.
//
// Example:
//   const TokenizerKind& k = tokenizer_kind("ByteLevelBPE");
//   LoadedTokenizer t = k.load(dir, /*vocab=*/"", /*do_lower_case=*/false);   // t.files: what it read
#pragma once
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "framework/text/tokenizer.h"

namespace unif::framework {

/// A tokenizer read from a model directory, and the files it read (copied into output directories).
struct LoadedTokenizer {
  std::shared_ptr<const Tokenizer> tokenizer;
  std::vector<std::filesystem::path> files;
};

struct TokenizerKind {
  const char* name;  // the row's name, as architecture rows spell it ("WordPiece", ...)
  /// The files that identify this kind: a directory holding any of them holds its tokenizer.
  std::vector<std::string> files;
  /// What a directory needs, for messages: "vocab.txt", "vocab.json + merges.txt or tokenizer.json".
  const char* needs;
  /// Whether the vocabulary may come from another file (model.vocab, `unif tokenize --vocab`):
  /// WordPiece's vocab.txt (BERT's and MPNet's); the other kinds are read from the model directory only.
  bool vocab_file;
  /// Reads the tokenizer of `dir` (`vocab`, when given and vocab_file, instead of dir's own);
  /// UserError naming the missing file (the `family` tokenizer's file), std::runtime_error or
  /// std::invalid_argument on a bad one.
  LoadedTokenizer (*load)(const std::filesystem::path& dir, const std::filesystem::path& vocab, bool do_lower_case,
                          const std::string& family);
};

/// Every row, in the order messages list them.
const std::vector<TokenizerKind>& tokenizer_kinds();

/// The row named `name`; std::invalid_argument otherwise.
const TokenizerKind& tokenizer_kind(const std::string& name);

/// Whether `dir` holds the files of any tokenizer kind.
bool has_tokenizer_files(const std::filesystem::path& dir);

/// Every kind's identifying files, for messages: "vocab.txt, vocab.json + merges.txt or tokenizer.json, ...".
std::string tokenizer_files_text();

}  // namespace unif::framework
