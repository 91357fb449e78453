// BertTokenizer: HF transformers 4.28 slow `BertTokenizer` (as loaded by from_pretrained) in C++ —
// special-token cutting, BasicTokenizer (cleaning, CJK split, lower-casing + accent stripping,
// punctuation split) and WordPiece — with the code point span of every piece in the input.
//
//   auto vocab = std::make_shared<const Vocab>(Vocab::load("vocab.txt"));
//   BertTokenizer tok(vocab, /*do_lower_case=*/true);
//   auto pieces = tok.tokenize("今天天气很好");            // {"今", "天", ...}
//   auto ids = tok.convert_tokens_to_ids(pieces);
//
// Input is UTF-8; invalid bytes become U+FFFD, which cleaning drops (see unicode::decode_utf8).
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "framework/text/vocab.h"

namespace unif::framework {

/// `[start, end)` in code points of the tokenized string (invalid UTF-8 bytes count one each).
/// {-1, -1} marks a token with no source text ([CLS], [SEP], padding added by encoding).
struct CharSpan {
  int64_t start = -1;
  int64_t end = -1;
  bool operator==(const CharSpan& o) const { return start == o.start && end == o.end; }
};

/// Word pieces of one string with, per piece, its span in that string. When do_lower_case
/// strips accents or a character expands (U+0130), the span still covers the source characters
/// the piece came from; a `##` piece's span excludes the "##".
struct Tokenized {
  std::vector<std::string> tokens;
  std::vector<CharSpan> offsets;  // one per token
};

class BertTokenizer {
 public:
  /// The tokens from_pretrained registers as never-split: cut out of the text wherever they
  /// occur, case-sensitively, before any other step.
  static constexpr std::array<std::string_view, 5> kSpecialTokens = {"[CLS]", "[SEP]", "[MASK]",
                                                                     "[UNK]", "[PAD]"};
  /// HF WordpieceTokenizer.max_input_chars_per_word: longer words (in code points) become [UNK].
  static constexpr size_t kMaxInputCharsPerWord = 100;

  /// do_lower_case: lower-case (Python str.lower), NFD and drop Mn accents (HF "uncased").
  explicit BertTokenizer(std::shared_ptr<const Vocab> vocab, bool do_lower_case = true);

  /// Word pieces of `utf8` (no [CLS]/[SEP] added), as HF `tokenizer.tokenize(text)`.
  std::vector<std::string> tokenize(std::string_view utf8) const;
  /// The same pieces with their code point spans in `utf8`.
  Tokenized tokenize_with_offsets(std::string_view utf8) const;

  /// Vocabulary ids; unknown tokens map to the [UNK] id.
  std::vector<int64_t> convert_tokens_to_ids(const std::vector<std::string>& tokens) const;
  int64_t token_to_id(std::string_view token) const { return vocab_->id(token); }

  const Vocab& vocab() const { return *vocab_; }
  bool do_lower_case() const { return do_lower_case_; }

 private:
  struct Text;  // code points with their source positions
  void basic_tokenize(const Text& segment, std::vector<Text>& words) const;
  void wordpiece(const Text& word, Tokenized& out) const;

  std::shared_ptr<const Vocab> vocab_;
  bool do_lower_case_;
};

}  // namespace unif::framework
