// A model family's tokenizer read from a model directory (its architecture row names the kind, a
// row of framework/text/tokenizer_kinds.h: the files, the loader), and the files a saved model
// directory gets so that HF's AutoTokenizer reads the same tokenizer.
//
//   auto files = load_tokenizer("models/roberta-base", models::architecture("roberta"), false);
//   encode(*files.tokenizer, "Hello", std::nullopt, 128, TruncateMethod::LIFO, true);
#pragma once
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "framework/text/tokenizer.h"
#include "models/architectures.h"

namespace unif::framework {

struct TokenizerFiles {
  std::shared_ptr<const Tokenizer> tokenizer;
  std::vector<std::filesystem::path> files;  // read from; copied into saved model directories
  std::string tokenizer_class;               // HF's class name for tokenizer_config.json (BertTokenizer, ...)
  bool do_lower_case = false;                // WordPiece's lower-casing (written to tokenizer_config.json)
  std::filesystem::path config;              // the directory's tokenizer_config.json, if any (special
                                             // tokens, normalization flags: kept when saving)
};

/// The tokenizer of `arch`'s family in `dir`. vocab (WordPiece only): the vocabulary file to use
/// instead of dir/vocab.txt (model.vocab). do_lower_case: WordPiece's lower-casing. Throws
/// UserError naming the missing or bad file.
TokenizerFiles load_tokenizer(const std::filesystem::path& dir, const models::Architecture& arch, bool do_lower_case,
                              const std::filesystem::path& vocab = {});

/// Whether two tokenizers give the same ids: same kind, specials and vocabulary (distillation
/// between models that share a tokenizer).
bool same_vocabulary(const Tokenizer& a, const Tokenizer& b);

}  // namespace unif::framework
