// ByteLevelBpe: the byte-level BPE of GPT-2 and RoBERTa as HF `tokenizers` runs it for
// RobertaTokenizerFast (tokenizer.json: ByteLevel pre-tokenizer with the GPT-2 split pattern, BPE
// model over the 256 byte symbols, offsets trimmed of the spaces a piece carries) — with the code
// point span of every piece in the input.
//
//   auto bpe = ByteLevelBpe::load("model_dir");       // vocab.json + merges.txt, or tokenizer.json
//   auto out = bpe.tokenize_with_offsets("Hello world");   // {"Hello", "Ġworld"}, {0,5}, {6,11}
//
// Special tokens (<s>, </s>, <pad>, <unk>, <mask>, and any other added token of the model's files)
// are cut out of the text before the split, as HF's added vocabulary does; `<mask>` takes the white
// space before it (lstrip), as RoBERTa's tokenizer.json says. Input is UTF-8; invalid bytes become
// U+FFFD (see unicode::decode_utf8).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "framework/text/added_tokens.h"
#include "framework/text/tokenizer.h"

namespace unif::framework {

class ByteLevelBpe : public Tokenizer {
 public:
  /// `vocab` piece -> id; `merges` in rank order (first = applied first); `added` the special
  /// tokens, each of which must be in `vocab`. add_prefix_space: a space is put before the text and
  /// each stretch after an added token that does not start with one (HF's ByteLevel
  /// add_prefix_space; RoBERTa's default is false). ignore_merges: a pre-token that is in
  /// the vocabulary is one piece without merging (HF's BPE ignore_merges).
  ByteLevelBpe(std::unordered_map<std::string, int64_t> vocab,
               const std::vector<std::pair<std::string, std::string>>& merges, std::vector<AddedToken> added,
               bool add_prefix_space = false, bool ignore_merges = false);

  /// Reads `dir`/tokenizer.json when present (model.vocab, model.merges, model.ignore_merges,
  /// added_tokens, pre_tokenizer.add_prefix_space, an NFC normalizer, the post_processor's template:
  /// RoBERTa's <s> a </s></s> b </s> or ModernBERT's [CLS] a [SEP] b [SEP]), else `dir`/vocab.json +
  /// `dir`/merges.txt with RoBERTa's special tokens; tokenizer_config.json's pad/mask/unk tokens where
  /// given. Throws UserError naming the file and what is wrong with it.
  static ByteLevelBpe load(const std::string& dir);

  /// Pieces of `utf8` (no <s>/</s> added) with their code point spans in `utf8` (HF's
  /// offset_mapping, trimmed).
  Tokenized tokenize_with_offsets(std::string_view utf8) const override;
  /// Stops after the pre-token (word) in which the max_pieces-th piece falls.
  Tokenized tokenize_head(std::string_view utf8, size_t max_pieces) const override;

  /// One pre-split word as HF encodes it with is_split_into_words: RoBERTa's tokenizer (which
  /// requires add_prefix_space=True there) puts a space before it unless it starts with one, so its
  /// first piece has "Ġ"; spans inside the word (the added space takes the first character's). A
  /// tokenizer.json with another template (ModernBERT's) encodes the word as it is.
  Tokenized tokenize_word(std::string_view word) const override;

  int64_t find_id(std::string_view piece) const override;
  bool continues_word(const std::string& piece) const override {
    return piece.rfind("\xC4\xA0", 0) != 0;
  }  // "Ġ", a space before the piece
  std::string id_to_token(int64_t id) const override;
  /// The largest id + 1 (every id the tokenizer can produce is below it).
  int64_t vocab_size() const override { return vocab_size_; }

  /// The BPE pieces of one pre-token given as bytes (already mapped to byte symbols, not split
  /// further): exposed for tests.
  std::vector<std::string> bpe(const std::string& symbols) const;

  /// GPT-2's byte -> printable code point map (bytes_to_unicode), e.g. ' ' -> U+0120 'Ġ'.
  static char32_t byte_symbol(unsigned char byte);

 private:
  Tokenized tokenize_spaced(std::string_view utf8, bool add_prefix_space, size_t max_pieces) const;
  // The pieces of `text` (one stretch between added tokens, a space already put before it when
  // add_prefix_space) with spans through src (per character: its index in the input); stops once
  // `out` holds max_pieces.
  void split_and_encode(const std::u32string& text, const std::vector<int64_t>& src, bool add_prefix_space,
                        size_t max_pieces, Tokenized& out) const;

  std::unordered_map<std::string, int64_t> vocab_;
  std::unordered_map<int64_t, std::string> tokens_;  // id -> piece
  struct Merge {
    int rank;      // the merge's line in merges (lower merges first)
    int64_t made;  // the id of the piece it makes
  };
  struct PairHash {
    size_t operator()(const std::pair<int64_t, int64_t>& p) const {
      return std::hash<int64_t>()(p.first * 1000003 ^ p.second);
    }
  };
  std::unordered_map<std::pair<int64_t, int64_t>, Merge, PairHash> merges_;  // (left id, right id)
  int64_t vocab_size_ = 0;
  // Words of up to kCachedWordBytes byte-symbol bytes, their pieces (as HF's BPE cache: the first
  // kCachedWords distinct words); shared by copies, safe across threads.
  static constexpr size_t kCachedWordBytes = 256;
  class WordCache {
   public:
    std::optional<std::vector<std::string>> find(const std::string& word) const;
    void insert(const std::string& word, const std::vector<std::string>& pieces);

   private:
    static constexpr size_t kCachedWords = 10000;
    mutable std::shared_mutex mutex_;
    std::unordered_map<std::string, std::vector<std::string>> words_;
  };
  std::shared_ptr<WordCache> cache_ = std::make_shared<WordCache>();
  std::vector<AddedToken> added_;
  bool add_prefix_space_;
  bool ignore_merges_;
  bool nfc_ = false;              // tokenizer.json's NFC normalizer (ModernBERT)
  bool words_with_space_ = true;  // tokenize_word puts a space before the word (RoBERTa's, not ModernBERT's)
  bool trim_offsets_ = true;      // a piece's spaces are cut from its span (RobertaProcessing's trim_offsets)
};

}  // namespace unif::framework
