// BertTokenizer: HF transformers 4.28 slow `BertTokenizer` (as loaded by from_pretrained) in C++ —
// special-token cutting, BasicTokenizer (cleaning, CJK split, lower-casing + accent stripping,
// punctuation split) and WordPiece — with the code point span of every piece in the input.
//
//   auto vocab = std::make_shared<const Vocab>(Vocab::load("vocab.txt"));
//   BertTokenizer tok(vocab, /*do_lower_case=*/true);
//   auto pieces = tok.tokenize("今天天气很好");            // {"今", "天", ...}
//   auto ids = tok.convert_tokens_to_ids(pieces);
//   auto mpnet = BertTokenizer::load_mpnet("model_dir", "model_dir/vocab.txt", true);  // <s> a </s>
//
// MPNet's layout (load_mpnet) is HF 5's MPNetTokenizer, a fast tokenizer over the same vocabulary and
// steps: its added tokens (<s>, </s>, <pad>, [UNK], <mask>, ... from the model directory) are cut out
// instead of kSpecialTokens, <mask> taking the white space before it (lstrip); a token marked
// normalized is matched in the normalized text (cleaned, lower-cased, accents stripped, CJK spaced);
// no word is kept whole (no never_split); template <s> a </s></s> b </s>, token types all 0.
//
// Input is UTF-8; invalid bytes become U+FFFD, which cleaning drops (see unicode::decode_utf8).
#pragma once
#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "framework/text/added_tokens.h"
#include "framework/text/tokenizer.h"
#include "framework/text/vocab.h"

namespace unif::framework {

/// Spans of BertTokenizer pieces: when do_lower_case strips accents or a character expands
/// (U+0130), the span still covers the source characters the piece came from; a `##` piece's span
/// excludes the "##".

class BertTokenizer : public Tokenizer {
 public:
  /// The tokens from_pretrained registers as never-split: cut out of the text wherever they
  /// occur, case-sensitively, before any other step.
  static constexpr std::array<std::string_view, 5> kSpecialTokens = {"[CLS]", "[SEP]", "[MASK]", "[UNK]", "[PAD]"};
  /// HF WordpieceTokenizer.max_input_chars_per_word: longer words (in code points) become [UNK].
  static constexpr size_t kMaxInputCharsPerWord = 100;

  /// do_lower_case: lower-case (Python str.lower), NFD and drop Mn accents (HF "uncased").
  explicit BertTokenizer(std::shared_ptr<const Vocab> vocab, bool do_lower_case = true);

  /// MPNet's layout over `vocab_file` (HF's MPNetTokenizer): the added tokens of `dir`/tokenizer.json
  /// (added_tokens) or else of `dir`/tokenizer_config.json (added_tokens_decoder), and the special
  /// tokens tokenizer_config.json names (cls_token ... unk_token; MPNetTokenizer's <s> </s> <pad>
  /// <mask> [UNK] without it, <mask> lstrip), each of which must be in the vocabulary under the id
  /// the files give it. Throws UserError naming the file and what is wrong with it.
  static BertTokenizer load_mpnet(const std::filesystem::path& dir, const std::filesystem::path& vocab_file,
                                  bool do_lower_case);

  /// Word pieces of `utf8` (no [CLS]/[SEP] added) with their code point spans, as HF's
  /// `tokenizer.tokenize(text)`.
  Tokenized tokenize_with_offsets(std::string_view utf8) const override;

  int64_t find_id(std::string_view token) const override;
  bool continues_word(const std::string& piece) const override { return piece.rfind("##", 0) == 0; }
  std::string id_to_token(int64_t id) const override { return std::string(vocab_->token(id)); }
  int64_t vocab_size() const override { return vocab_->size(); }

  const Vocab& vocab() const { return *vocab_; }
  bool do_lower_case() const { return do_lower_case_; }
  /// MPNet's layout: the added tokens cut out of the raw text, and those matched in the normalized
  /// text (normalized true). Both empty in BERT's layout (kSpecialTokens).
  const std::vector<AddedToken>& added_tokens() const { return added_raw_; }
  const std::vector<AddedToken>& normalized_added_tokens() const { return added_normalized_; }

 private:
  struct Text;  // code points with their source positions
  static Text strip_accents(const Text& word);
  void basic_tokenize(const Text& segment, std::vector<Text>& words) const;
  void wordpiece(const Text& word, Tokenized& out) const;
  // A lower-cased stretch between raw added tokens: normalized, cut at the normalized added tokens,
  // the rest basic_tokenize'd and wordpiece'd into `out`.
  void tokenize_normalized(const Text& segment, Tokenized& out) const;

  std::shared_ptr<const Vocab> vocab_;
  bool do_lower_case_;
  bool mpnet_ = false;  // added tokens instead of kSpecialTokens, no never_split
  std::vector<AddedToken> added_raw_, added_normalized_;
};

}  // namespace unif::framework
