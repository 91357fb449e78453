// The tokenizer kinds' table: see tokenizer_kinds.h.
#include "framework/text/tokenizer_kinds.h"

#include <algorithm>
#include <stdexcept>
#include <system_error>

#include "framework/common/error.h"
#include "framework/text/bert_tokenizer.h"
#include "framework/text/byte_level_bpe.h"
#include "framework/text/sentencepiece_tokenizer.h"
#include "framework/text/vocab.h"

namespace unif::framework {

namespace fs = std::filesystem;

namespace {

bool is_file(const fs::path& file) {
  std::error_code ec;
  return fs::is_regular_file(file, ec);
}

fs::path require(const fs::path& file, const std::string& family) {
  if (!is_file(file))
    throw UserError("model directory '" + file.parent_path().string() + "' has no " + file.filename().string() +
                    " (the " + family + " tokenizer's file)");
  return file;
}

// BERT's BasicTokenizer + WordPiece over vocab.txt (or model.vocab).
LoadedTokenizer load_wordpiece(const fs::path& dir, const fs::path& vocab, bool do_lower_case, const std::string&) {
  const fs::path file = vocab.empty() ? dir / "vocab.txt" : vocab;
  auto v = std::make_shared<const Vocab>(Vocab::load(file.string()));
  return {std::make_shared<BertTokenizer>(v, do_lower_case), {file}};
}

// WordPiece with MPNet's added tokens and template (vocab.txt or model.vocab; the directory's
// tokenizer.json and tokenizer_config.json name the added and special tokens when present).
LoadedTokenizer load_wordpiece_mpnet(const fs::path& dir, const fs::path& vocab, bool do_lower_case,
                                     const std::string&) {
  const fs::path file = vocab.empty() ? dir / "vocab.txt" : vocab;
  LoadedTokenizer t{std::make_shared<BertTokenizer>(BertTokenizer::load_mpnet(dir, file, do_lower_case)), {file}};
  // Its added tokens travel with a saved model (the vocabulary stays first: the file named in messages).
  if (is_file(dir / "tokenizer.json")) t.files.push_back(dir / "tokenizer.json");
  return t;
}

// Byte-level BPE: tokenizer.json, or vocab.json + merges.txt.
LoadedTokenizer load_byte_level_bpe(const fs::path& dir, const fs::path&, bool, const std::string& family) {
  LoadedTokenizer t{std::make_shared<ByteLevelBpe>(ByteLevelBpe::load(dir.string())), {}};
  for (const char* name : {"tokenizer.json", "vocab.json", "merges.txt"})
    if (is_file(dir / name)) t.files.push_back(dir / name);
  if (t.files.empty()) require(dir / "vocab.json", family);
  return t;
}

// SentencePiece with fairseq's ids (XLM-R).
LoadedTokenizer load_sentencepiece_fairseq(const fs::path& dir, const fs::path&, bool, const std::string& family) {
  require(dir / "sentencepiece.bpe.model", family);
  return {std::make_shared<SentencePieceTokenizer>(SentencePieceTokenizer::load(dir.string())),
          {dir / "sentencepiece.bpe.model"}};
}

// SentencePiece with the model's own ids (ALBERT): do_lower_case / keep_accents from the directory's
// tokenizer_config.json (HF's defaults without it).
LoadedTokenizer load_sentencepiece(const fs::path& dir, const fs::path&, bool, const std::string& family) {
  require(dir / "spiece.model", family);
  return {std::make_shared<SentencePieceTokenizer>(SentencePieceTokenizer::load_albert(dir.string())),
          {dir / "spiece.model"}};
}

// SentencePiece with the model's own ids and [MASK] added last (DeBERTa-v2/v3): do_lower_case from
// the directory's tokenizer_config.json (false without it).
LoadedTokenizer load_sentencepiece_deberta(const fs::path& dir, const fs::path&, bool, const std::string& family) {
  require(dir / "spm.model", family);
  return {std::make_shared<SentencePieceTokenizer>(SentencePieceTokenizer::load_deberta(dir.string())),
          {dir / "spm.model"}};
}

}  // namespace

const std::vector<TokenizerKind>& tokenizer_kinds() {
  static const std::vector<TokenizerKind> rows{
      {"WordPiece", {"vocab.txt"}, "vocab.txt", true, load_wordpiece},
      {"ByteLevelBPE",
       {"tokenizer.json", "vocab.json"},
       "vocab.json + merges.txt or tokenizer.json",
       false,
       load_byte_level_bpe},
      {"SentencePieceFairseq",
       {"sentencepiece.bpe.model"},
       "sentencepiece.bpe.model",
       false,
       load_sentencepiece_fairseq},
      {"SentencePiece", {"spiece.model"}, "spiece.model", false, load_sentencepiece},
      {"SentencePieceDeberta", {"spm.model"}, "spm.model", false, load_sentencepiece_deberta},
      {"WordPieceMPNet", {"vocab.txt"}, "vocab.txt", true, load_wordpiece_mpnet},
  };
  return rows;
}

const TokenizerKind& tokenizer_kind(const std::string& name) {
  for (const auto& k : tokenizer_kinds())
    if (name == k.name) return k;
  std::string names;
  for (const auto& k : tokenizer_kinds()) names += (names.empty() ? "" : ", ") + std::string(k.name);
  throw std::invalid_argument("unknown tokenizer kind \"" + name + "\" (expected one of " + names + ")");
}

bool has_tokenizer_files(const fs::path& dir) {
  for (const auto& k : tokenizer_kinds())
    for (const auto& name : k.files)
      if (is_file(dir / name)) return true;
  return false;
}

std::string tokenizer_files_text() {
  std::string out;
  std::vector<std::string> listed;  // two kinds may read the same files (WordPiece's vocab.txt)
  for (const auto& k : tokenizer_kinds()) {
    if (std::find(listed.begin(), listed.end(), k.needs) != listed.end()) continue;
    listed.emplace_back(k.needs);
    out += (out.empty() ? "" : ", ") + std::string(k.needs);
  }
  return out;
}

}  // namespace unif::framework
