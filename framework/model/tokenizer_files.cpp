// A family's tokenizer files: see tokenizer_files.h.
#include "framework/model/tokenizer_files.h"

#include <system_error>
#include <typeinfo>

#include "framework/common/error.h"
#include "framework/text/bert_tokenizer.h"
#include "framework/text/byte_level_bpe.h"
#include "framework/text/sentencepiece_tokenizer.h"
#include "framework/text/vocab.h"

namespace unif::framework {

namespace fs = std::filesystem;

namespace {

fs::path require(const fs::path& file, const models::Architecture& arch) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    throw UserError("model directory '" + file.parent_path().string() + "' has no " + file.filename().string() +
                    " (the " + arch.class_prefix + " tokenizer's file)");
  return file;
}

}  // namespace

TokenizerFiles load_tokenizer(const fs::path& dir, const models::Architecture& arch, bool do_lower_case,
                              const fs::path& vocab) {
  TokenizerFiles t;
  t.tokenizer_class = std::string(arch.class_prefix) + "Tokenizer";
  std::error_code ec;
  switch (arch.tokenizer) {
    case models::TokenizerKind::WordPiece: {
      const fs::path file = vocab.empty() ? dir / "vocab.txt" : vocab;
      auto v = std::make_shared<const Vocab>(Vocab::load(file.string()));
      t.tokenizer = std::make_shared<BertTokenizer>(v, do_lower_case);
      t.files = {file};
      t.do_lower_case = do_lower_case;
      break;
    }
    case models::TokenizerKind::ByteLevelBpe: {
      t.tokenizer = std::make_shared<ByteLevelBpe>(ByteLevelBpe::load(dir.string()));
      if (fs::is_regular_file(dir / "tokenizer.json", ec)) t.files.push_back(dir / "tokenizer.json");
      for (const char* name : {"vocab.json", "merges.txt"})
        if (fs::is_regular_file(dir / name, ec)) t.files.push_back(dir / name);
      if (t.files.empty()) require(dir / "vocab.json", arch);
      break;
    }
    case models::TokenizerKind::SentencePieceFairseq:
      require(dir / "sentencepiece.bpe.model", arch);
      t.tokenizer = std::make_shared<SentencePieceTokenizer>(SentencePieceTokenizer::load(dir.string()));
      t.files = {dir / "sentencepiece.bpe.model"};
      break;
    case models::TokenizerKind::SentencePiece:
      // ALBERT: do_lower_case / keep_accents come from dir/tokenizer_config.json (HF's defaults without it).
      require(dir / "spiece.model", arch);
      t.tokenizer = std::make_shared<SentencePieceTokenizer>(SentencePieceTokenizer::load_albert(dir.string()));
      t.files = {dir / "spiece.model"};
      break;
    case models::TokenizerKind::SentencePieceDeberta:
      // DeBERTa-v2/v3: do_lower_case from dir/tokenizer_config.json (false without it).
      require(dir / "spm.model", arch);
      t.tokenizer = std::make_shared<SentencePieceTokenizer>(SentencePieceTokenizer::load_deberta(dir.string()));
      t.files = {dir / "spm.model"};
      break;
  }
  if (fs::is_regular_file(dir / "tokenizer_config.json", ec)) t.config = dir / "tokenizer_config.json";
  return t;
}

bool same_vocabulary(const Tokenizer& a, const Tokenizer& b) {
  if (typeid(a) != typeid(b) || a.vocab_size() != b.vocab_size()) return false;
  const SpecialTokens &sa = a.specials(), &sb = b.specials();
  if (sa.cls != sb.cls || sa.sep != sb.sep || sa.pad != sb.pad || sa.mask != sb.mask || sa.unk != sb.unk) return false;
  for (int64_t id = 0; id < a.vocab_size(); ++id)
    if (a.id_to_token(id) != b.id_to_token(id)) return false;
  return true;
}

}  // namespace unif::framework
