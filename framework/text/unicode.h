// Unicode helpers for the BERT tokenizer: UTF-8 decoding with replacement, and the character
// classes HF's `tokenization_bert.py` asks Python's `unicodedata` for (control, whitespace,
// punctuation, CJK ideograph, str.isspace, str.lower, NFD). All Unicode data comes from utf8proc;
// nothing here is a hand-written table except HF's own CJK code point ranges.
#pragma once
#include <string>
#include <string_view>

namespace unif::framework::unicode {

/// Decodes UTF-8 into code points. Every byte that does not begin a valid UTF-8 sequence (stray
/// continuation bytes, truncated or overlong sequences, encoded surrogates, > U+10FFFF) becomes one
/// U+FFFD, which the BERT text cleaning then drops — as Python's `decode(errors="replace")` would.
std::u32string decode_utf8(std::string_view utf8);

/// True when `utf8` is valid UTF-8 (Python's strict "utf-8" codec accepts it).
bool is_valid_utf8(std::string_view utf8);

/// Byte offset of the first byte that does not begin a valid UTF-8 sequence, or npos when
/// `utf8` is valid.
std::size_t invalid_utf8_at(std::string_view utf8);

/// Appends the UTF-8 encoding of `cp` to `out`.
void append_utf8(std::string& out, char32_t cp);

/// UTF-8 encoding of `cps`.
std::string encode_utf8(std::u32string_view cps);

/// HF `_is_control`: general category C* (Cc, Cf, Cs, Co, Cn) except \t \n \r.
bool is_control(char32_t cp);

/// HF `_is_whitespace`: space, \t, \n, \r or general category Zs.
bool is_bert_whitespace(char32_t cp);

/// Python `str.isspace`: category Zs or bidirectional class WS, B or S (adds U+2028/U+2029,
/// U+001C..U+001F, U+0085, \v, \f to the BERT set). `str.split()` splits on these.
bool is_python_space(char32_t cp);

/// The Unicode White_Space property (\t..\r, space, U+0085, Zs, Zl, Zp): Rust's
/// char::is_whitespace and Oniguruma's \s, which HF `tokenizers` split on.
bool is_white_space(char32_t cp);

/// HF `_is_punctuation`: ASCII 33-47, 58-64, 91-96, 123-126, or general category P*.
bool is_punctuation(char32_t cp);

/// HF `_is_chinese_char`: the CJK Unified Ideographs blocks (and extensions A-E, compatibility
/// ideographs) HF lists; not Hiragana, Katakana, Hangul or CJK punctuation.
bool is_chinese_char(char32_t cp);

/// General category Mn (nonspacing mark): what HF's `_run_strip_accents` drops after NFD.
bool is_nonspacing_mark(char32_t cp);

/// Python `str.lower` of one code point, appended to `out`: the full lower-case mapping, which
/// only differs from the simple one for U+0130 (-> "i\u0307"). Final-sigma context is not
/// applied: HF lower-cases the text one character at a time (see bert_tokenizer.cpp).
void append_lower(char32_t cp, std::u32string& out);

/// Canonical decomposition (NFD) of one code point, appended to `out` (not yet reordered).
void append_canonical_decomposition(char32_t cp, std::u32string& out);

/// Canonical combining class (0 for starters).
int combining_class(char32_t cp);

}  // namespace unif::framework::unicode
