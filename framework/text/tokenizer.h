// Tokenizer: what encoding (encoding.h), the datasets and predict need of a model family's
// tokenizer — pieces with their code point spans, ids, and the special tokens of its template:
//   WordPiece (BERT, DistilBERT, ELECTRA):   [CLS] a [SEP]      [CLS] a [SEP] b [SEP]   types 0.. 1..
//   byte-level BPE (RoBERTa), SentencePiece (XLM-R): <s> a </s>   <s> a </s></s> b </s>  types all 0
//   SentencePiece (ALBERT):                  [CLS] a [SEP]      [CLS] a [SEP] b [SEP]   types 0.. 1..
//     (all 0 for a model written by transformers 5, whose AlbertTokenizer returns no token_type_ids)
// Implementations: BertTokenizer, ByteLevelBpe, SentencePieceTokenizer; load_tokenizer.h picks one
// for a model directory.
//
//   const Tokenizer& tok = ...;
//   Tokenized t = tok.tokenize_with_offsets("Hello world");
//   int64_t cls = tok.token_to_id(tok.specials().cls);
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace unif::framework {

/// `[start, end)` in code points of the tokenized string (invalid UTF-8 bytes count one each).
/// {-1, -1} marks a token with no source text ([CLS], [SEP], padding added by encoding).
struct CharSpan {
  int64_t start = -1;
  int64_t end = -1;
  bool operator==(const CharSpan& o) const { return start == o.start && end == o.end; }
};

/// Pieces of one string with, per piece, its span in that string.
struct Tokenized {
  std::vector<std::string> tokens;
  std::vector<CharSpan> offsets;  // one per token
};

/// The special tokens of a tokenizer and how its template joins a pair.
struct SpecialTokens {
  std::string cls = "[CLS]";  // first token (RoBERTa: <s>)
  std::string sep = "[SEP]";  // after each segment (RoBERTa: </s>)
  std::string pad = "[PAD]";
  std::string mask = "[MASK]";
  std::string unk = "[UNK]";
  /// A pair is `cls a sep sep b sep` (RoBERTa, XLM-R) instead of `cls a sep b sep`.
  bool pair_double_sep = false;
  /// The second segment (and its sep) has token type 1; false: every token type is 0.
  bool pair_token_types = true;
  /// Pieces a pair adds around its two segments: 3, or 4 with pair_double_sep.
  int pair_overhead() const { return pair_double_sep ? 4 : 3; }
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  /// Pieces of `utf8` (no special tokens added) with their code point spans, as HF's
  /// `tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)`.
  virtual Tokenized tokenize_with_offsets(std::string_view utf8) const = 0;
  /// Pieces of one pre-split word (HF `is_split_into_words=True`; encode_words), spans inside the
  /// word. By default tokenize_with_offsets(word); byte-level BPE tokenizes it as if a space came
  /// before it (HF requires add_prefix_space=True for pre-split words: each word's first piece has "Ġ").
  virtual Tokenized tokenize_word(std::string_view word) const { return tokenize_with_offsets(word); }
  /// The first pieces of tokenize_with_offsets(utf8): at least `max_pieces` of them where the text
  /// has that many (a tokenizer may give more, up to the whole text). For a caller that keeps no
  /// more than max_pieces from the front (truncation that cuts from the end): a long text costs
  /// the work of its first pieces, not of all of it.
  virtual Tokenized tokenize_head(std::string_view utf8, size_t max_pieces) const {
    (void)max_pieces;
    return tokenize_with_offsets(utf8);
  }
  /// The pieces alone (HF `tokenizer.tokenize(text)`).
  std::vector<std::string> tokenize(std::string_view utf8) const { return tokenize_with_offsets(utf8).tokens; }

  /// The id of `token`, or -1 when the vocabulary lacks it.
  virtual int64_t find_id(std::string_view token) const = 0;
  /// The id of `token`; the unknown token's id when the vocabulary lacks it.
  int64_t token_to_id(std::string_view token) const {
    const int64_t id = find_id(token);
    return id >= 0 ? id : find_id(specials_.unk);
  }
  std::vector<int64_t> convert_tokens_to_ids(const std::vector<std::string>& tokens) const {
    std::vector<int64_t> ids;
    ids.reserve(tokens.size());
    for (const auto& t : tokens) ids.push_back(token_to_id(t));
    return ids;
  }
  /// The token of `id`; the unknown token for an id without one.
  virtual std::string id_to_token(int64_t id) const = 0;
  /// Number of ids (HF's len(tokenizer)).
  virtual int64_t vocab_size() const = 0;

  const SpecialTokens& specials() const { return specials_; }

  /// Whether `piece` continues the word of the piece before it (whole-word masking): WordPiece's
  /// "##" pieces; for tokenizers that mark a word's start instead ("Ġ", "▁"), every piece without it.
  virtual bool continues_word(const std::string& piece) const = 0;

 protected:
  SpecialTokens specials_;
};

}  // namespace unif::framework
