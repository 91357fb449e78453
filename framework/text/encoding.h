// Model inputs from text: `[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]` with token_type_ids 0/1 (or
// the tokenizer's own template, e.g. RoBERTa's `<s> a </s></s> b </s>` with types all 0: tokenizer.h),
// attention_mask and optional padding, after cutting the word pieces to fit max_seq_length with
// one of UNIF's truncation methods or HF's `longest_first`. encode_words() does the same for
// pre-split words (token classification) and records where each word starts.
//
//   auto enc = encode(tok, "今天天气很好", "我们去公园吧", 128, TruncateMethod::LIFO, true);
//   enc.input_ids;  // (128) [CLS] 今 天 ... [SEP] 我 ... [SEP] [PAD] ...
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "framework/text/tokenizer.h"

namespace unif::framework {

/// How pieces are removed when a text (pair) is longer than max_seq_length allows.
enum class TruncateMethod {
  LIFO,         ///< UNIF: pop from the END of the LAST non-empty segment (b first, then a)
  FIFO,         ///< UNIF: pop from the FRONT of the FIRST non-empty segment (a first, then b)
  LongerFO,     ///< UNIF "longer-FO": pop from the end of the longer segment; a tie cuts the FIRST
  LongestFirst  ///< HF "longest_first": pop from the end of the longer; a tie cuts the SECOND
};

/// Parses "LIFO", "FIFO", "longer-FO" or "longest_first" (exact spelling); any other name
/// throws unif::UserError listing the accepted ones.
TruncateMethod parse_truncate_method(std::string_view name);
/// The spelling parse_truncate_method accepts.
std::string_view to_string(TruncateMethod method);

/// Kept piece range [first, second) of each segment once their total is cut to `budget`.
/// Segments are cut one piece at a time following `method`; ties in LongestFirst cut the later
/// segment, in LongerFO the earlier one.
std::vector<std::pair<size_t, size_t>> truncate_ranges(const std::vector<size_t>& lengths, size_t budget,
                                                       TruncateMethod method);

/// One encoded example.
struct Encoding {
  std::vector<int64_t> input_ids;       // (L): L = max_seq_length when padded, else length()
  std::vector<int64_t> token_type_ids;  // (L): 0 for [CLS] a [SEP] and padding, 1 for b [SEP]
  std::vector<int64_t> attention_mask;  // (L): 1 for real tokens, 0 for padding
  std::vector<std::string> tokens;      // real tokens only: [CLS] ... [SEP] (no padding)
  std::vector<CharSpan> offsets;        // per real token: span in its own segment's text,
                                        // {-1,-1} for the [CLS]/[SEP] added here
  bool truncated = false;               // whether any piece was cut
  /// Number of real (unpadded) tokens.
  int64_t length() const { return static_cast<int64_t>(tokens.size()); }
};

/// Encodes a single sentence (b = nullopt) or a pair. max_seq_length counts [CLS]/[SEP]; it must
/// be >= 3 for a sentence and >= 4 for a pair (5 with a double separator) (else unif::UserError). pad_to_max pads with
/// the [PAD] id to exactly max_seq_length.
Encoding encode(const Tokenizer& tokenizer, std::string_view a, std::optional<std::string_view> b, int max_seq_length,
                TruncateMethod method, bool pad_to_max);

/// As encode(), from already tokenized segments (b may be null).
Encoding encode_tokenized(const Tokenizer& tokenizer, const Tokenized& a, const Tokenized* b, int max_seq_length,
                          TruncateMethod method, bool pad_to_max);

/// A word-level encoding: Encoding plus, per position (L), the index of the word whose FIRST
/// piece sits there, else -1 ([CLS], [SEP], padding, later pieces). A word that yields no
/// piece (e.g. only control characters) or whose first piece was truncated has no position.
struct WordEncoding : Encoding {
  std::vector<int64_t> word_start;  // (L)
};

/// Encodes pre-split words as one segment, each word tokenized on its own by
/// Tokenizer::tokenize_word (HF is_split_into_words; RoBERTa as with add_prefix_space=True).
/// offsets are spans inside the piece's own word.
WordEncoding encode_words(const Tokenizer& tokenizer, const std::vector<std::string>& words, int max_seq_length,
                          TruncateMethod method, bool pad_to_max);

}  // namespace unif::framework
