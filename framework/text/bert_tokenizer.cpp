// BertTokenizer: the steps of HF 4.28 `PreTrainedTokenizer.tokenize` + `BertTokenizer._tokenize`
// in their order, carrying each code point's source position along for the offsets.
//
// 1. do_lower_case: HF lower-cases the whole text ONE CHARACTER AT A TIME (a regex `(.+?)` over
//    everything but the special tokens), so Python's final-sigma rule never fires ("ΟΔΟΣ" -> "οδοσ").
// 2. The special tokens are cut out wherever they occur (case-sensitive; from_pretrained's
//    no-split trie). Each piece between them is tokenized on its own.
// 3. BasicTokenizer: drop U+0000, U+FFFD and controls; whitespace splits; CJK ideographs become
//    single words; then per word (unless it is a special token): strip accents (NFD, drop Mn) when
//    lower-casing, split off every punctuation character. Words are split on Python's whitespace
//    (str.split), which also includes U+2028/U+2029.
// 4. WordPiece: greedy longest-match-first, "##" continuation pieces, [UNK] for a word over 100
//    code points or one that cannot be matched completely.
#include "framework/text/bert_tokenizer.h"

#include <algorithm>
#include <utility>

#include "framework/text/unicode.h"

namespace unif::framework {

struct BertTokenizer::Text {
  std::u32string cps;
  std::vector<int64_t> src;  // source code point index of each cps[i]
  void push(char32_t cp, int64_t s) {
    cps.push_back(cp);
    src.push_back(s);
  }
  bool empty() const { return cps.empty(); }
  void clear() {
    cps.clear();
    src.clear();
  }
};

namespace {

bool equals_ascii(std::u32string_view cps, std::string_view ascii) {
  if (cps.size() != ascii.size()) return false;
  for (size_t i = 0; i < cps.size(); ++i)
    if (cps[i] != static_cast<char32_t>(ascii[i])) return false;
  return true;
}

bool is_special(std::u32string_view cps) {
  for (auto s : BertTokenizer::kSpecialTokens)
    if (equals_ascii(cps, s)) return true;
  return false;
}

// Length of the special token starting at cps[i], or 0.
size_t special_at(const std::u32string& cps, size_t i) {
  for (auto s : BertTokenizer::kSpecialTokens)
    if (i + s.size() <= cps.size() && equals_ascii(std::u32string_view(cps).substr(i, s.size()), s)) return s.size();
  return 0;
}

}  // namespace

BertTokenizer::BertTokenizer(std::shared_ptr<const Vocab> vocab, bool do_lower_case)
    : vocab_(std::move(vocab)), do_lower_case_(do_lower_case) {}

Tokenized BertTokenizer::tokenize_with_offsets(std::string_view utf8) const {
  const std::u32string cps = unicode::decode_utf8(utf8);
  Tokenized out;
  std::vector<Text> words;
  Text segment;
  auto flush_segment = [&] {
    words.clear();
    basic_tokenize(segment, words);
    for (const auto& w : words) wordpiece(w, out);
    segment.clear();
  };
  size_t i = 0;
  while (i < cps.size()) {
    if (size_t n = special_at(cps, i)) {
      flush_segment();
      out.tokens.push_back(unicode::encode_utf8(std::u32string_view(cps).substr(i, n)));
      out.offsets.push_back({static_cast<int64_t>(i), static_cast<int64_t>(i + n)});
      i += n;
      continue;
    }
    if (do_lower_case_) {
      unicode::append_lower(cps[i], segment.cps);
      segment.src.resize(segment.cps.size(), static_cast<int64_t>(i));
    } else {
      segment.push(cps[i], static_cast<int64_t>(i));
    }
    ++i;
  }
  flush_segment();
  return out;
}

void BertTokenizer::basic_tokenize(const Text& segment, std::vector<Text>& words) const {
  // Cleaning + CJK split + whitespace split.
  std::vector<Text> raw;
  Text cur;
  auto flush = [&](std::vector<Text>& to) {
    if (!cur.empty()) to.push_back(std::move(cur));
    cur.clear();
  };
  for (size_t k = 0; k < segment.cps.size(); ++k) {
    const char32_t cp = segment.cps[k];
    if (cp == 0 || cp == 0xFFFD || unicode::is_control(cp)) continue;
    if (unicode::is_bert_whitespace(cp) || unicode::is_python_space(cp)) {
      flush(raw);
    } else if (unicode::is_chinese_char(cp)) {
      flush(raw);
      cur.push(cp, segment.src[k]);
      flush(raw);
    } else {
      cur.push(cp, segment.src[k]);
    }
  }
  flush(raw);

  for (auto& word : raw) {
    if (is_special(word.cps)) {  // HF never_split: kept whole, no accent stripping or split
      words.push_back(std::move(word));
      continue;
    }
    Text w;
    if (do_lower_case_) {  // _run_strip_accents: NFD, canonical order, drop Mn
      for (size_t k = 0; k < word.cps.size(); ++k) {
        unicode::append_canonical_decomposition(word.cps[k], w.cps);
        w.src.resize(w.cps.size(), word.src[k]);
      }
      for (size_t k = 1; k < w.cps.size(); ++k) {
        for (size_t j = k; j > 0; --j) {
          const int cj = unicode::combining_class(w.cps[j]);
          if (cj == 0 || unicode::combining_class(w.cps[j - 1]) <= cj) break;
          std::swap(w.cps[j], w.cps[j - 1]);
          std::swap(w.src[j], w.src[j - 1]);
        }
      }
      Text kept;
      for (size_t k = 0; k < w.cps.size(); ++k)
        if (!unicode::is_nonspacing_mark(w.cps[k])) kept.push(w.cps[k], w.src[k]);
      w = std::move(kept);
    } else {
      w = std::move(word);
    }
    // _run_split_on_punc; then str.split() again (a no-op: no whitespace is left).
    for (size_t k = 0; k < w.cps.size(); ++k) {
      if (unicode::is_punctuation(w.cps[k])) {
        flush(words);
        cur.push(w.cps[k], w.src[k]);
        flush(words);
      } else {
        cur.push(w.cps[k], w.src[k]);
      }
    }
    flush(words);
  }
}

void BertTokenizer::wordpiece(const Text& word, Tokenized& out) const {
  const size_t n = word.cps.size();
  auto span = [&](size_t a, size_t b) {  // source span of word.cps[a, b)
    auto [lo, hi] = std::minmax_element(word.src.begin() + static_cast<std::ptrdiff_t>(a),
                                        word.src.begin() + static_cast<std::ptrdiff_t>(b));
    return CharSpan{*lo, *hi + 1};
  };
  const std::string unk(Vocab::kUnkToken);
  if (n > kMaxInputCharsPerWord) {
    out.tokens.push_back(unk);
    out.offsets.push_back(span(0, n));
    return;
  }
  // Byte offset of each code point in the word's UTF-8.
  std::string utf8;
  std::vector<size_t> at;
  at.reserve(n + 1);
  for (char32_t cp : word.cps) {
    at.push_back(utf8.size());
    unicode::append_utf8(utf8, cp);
  }
  at.push_back(utf8.size());

  const size_t max_chars = static_cast<size_t>(vocab_->max_token_chars());
  const size_t first_piece = out.tokens.size();
  std::string candidate;
  size_t start = 0;
  while (start < n) {
    // A candidate longer than the longest vocabulary entry cannot match.
    const size_t budget = start == 0 ? max_chars : (max_chars >= 2 ? max_chars - 2 : 0);
    size_t end = std::min(n, start + budget);
    bool found = false;
    for (; end > start; --end) {
      candidate.assign(start > 0 ? "##" : "");
      candidate.append(utf8, at[start], at[end] - at[start]);
      if (vocab_->find(candidate)) {
        found = true;
        break;
      }
    }
    if (!found) {  // the whole word becomes [UNK]
      out.tokens.resize(first_piece);
      out.offsets.resize(first_piece);
      out.tokens.push_back(unk);
      out.offsets.push_back(span(0, n));
      return;
    }
    out.tokens.push_back(candidate);
    out.offsets.push_back(span(start, end));
    start = end;
  }
}

int64_t BertTokenizer::find_id(std::string_view token) const {
  const auto id = vocab_->find(std::string(token));
  return id ? *id : -1;
}

}  // namespace unif::framework
