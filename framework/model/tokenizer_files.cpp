// A family's tokenizer files: see tokenizer_files.h.
#include "framework/model/tokenizer_files.h"

#include <system_error>
#include <typeinfo>

#include "framework/common/error.h"
#include "framework/text/bert_tokenizer.h"
#include "framework/text/byte_level_bpe.h"
#include "framework/text/sentencepiece_tokenizer.h"
#include "framework/text/tokenizer_kinds.h"
#include "framework/text/vocab.h"

namespace unif::framework {

namespace fs = std::filesystem;

namespace {}  // namespace

TokenizerFiles load_tokenizer(const fs::path& dir, const models::Architecture& arch, bool do_lower_case,
                              const fs::path& vocab) {
  TokenizerFiles t;
  t.tokenizer_class = std::string(arch.class_prefix) + "Tokenizer";
  std::error_code ec;
  const TokenizerKind& kind = tokenizer_kind(arch.tokenizer);
  LoadedTokenizer loaded = kind.load(dir, kind.vocab_file ? vocab : fs::path(), do_lower_case, arch.class_prefix);
  t.tokenizer = std::move(loaded.tokenizer);
  t.files = std::move(loaded.files);
  if (kind.vocab_file) t.do_lower_case = do_lower_case;
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
