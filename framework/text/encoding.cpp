// Truncation and [CLS]/[SEP]/padding assembly (see encoding.h). The UNIF methods restate
// geyingli/unif `truncate_segments`; `longest_first` restates HF 4.28 `truncate_sequences`.
#include "framework/text/encoding.h"

#include <algorithm>

#include "framework/common/error.h"

namespace unif::framework {
namespace {

void check_length(const Tokenizer& tok, int max_seq_length, bool pair) {
  const SpecialTokens& s = tok.specials();
  const int need = pair ? s.pair_overhead() + 1 : 3;
  if (max_seq_length < need)
    throw UserError("max_seq_length " + std::to_string(max_seq_length) + " is too small" +
                    (pair ? " for a sentence pair: " + s.cls + " a " + s.sep + (s.pair_double_sep ? s.sep : "") +
                                " b " + s.sep + " needs at least " + std::to_string(need)
                          : ": " + s.cls + " text " + s.sep + " needs at least 3"));
}

void append_special(const Tokenizer& tok, const std::string& token, int64_t type, Encoding& e) {
  e.tokens.push_back(token);
  e.offsets.push_back({});
  e.input_ids.push_back(tok.token_to_id(token));
  e.token_type_ids.push_back(type);
}

// Appends segment pieces [r.first, r.second) with token type `type`, then the separator.
void append_segment(const Tokenizer& tok, const Tokenized& seg, std::pair<size_t, size_t> r, int64_t type,
                    Encoding& e) {
  for (size_t i = r.first; i < r.second; ++i) {
    e.tokens.push_back(seg.tokens[i]);
    e.offsets.push_back(seg.offsets[i]);
    e.input_ids.push_back(tok.token_to_id(seg.tokens[i]));
    e.token_type_ids.push_back(type);
  }
  append_special(tok, tok.specials().sep, type, e);
}

void finish(const Tokenizer& tok, int max_seq_length, bool pad_to_max, Encoding& e) {
  e.attention_mask.assign(e.input_ids.size(), 1);
  if (!pad_to_max) return;
  const auto n = static_cast<size_t>(max_seq_length);
  e.input_ids.resize(n, tok.token_to_id(tok.specials().pad));
  e.token_type_ids.resize(n, 0);
  e.attention_mask.resize(n, 0);
}

}  // namespace

TruncateMethod parse_truncate_method(std::string_view name) {
  for (auto m : {TruncateMethod::LIFO, TruncateMethod::FIFO, TruncateMethod::LongerFO, TruncateMethod::LongestFirst})
    if (name == to_string(m)) return m;
  throw UserError("unknown truncate method \"" + std::string(name) +
                  "\" (expected one of LIFO, FIFO, longer-FO, longest_first)");
}

std::string_view to_string(TruncateMethod method) {
  switch (method) {
    case TruncateMethod::LIFO: return "LIFO";
    case TruncateMethod::FIFO: return "FIFO";
    case TruncateMethod::LongerFO: return "longer-FO";
    case TruncateMethod::LongestFirst: return "longest_first";
  }
  return "?";
}

std::vector<std::pair<size_t, size_t>> truncate_ranges(const std::vector<size_t>& lengths, size_t budget,
                                                       TruncateMethod method) {
  std::vector<std::pair<size_t, size_t>> kept;
  size_t total = 0;
  for (size_t n : lengths) {
    kept.emplace_back(0, n);
    total += n;
  }
  auto len = [&](size_t i) { return kept[i].second - kept[i].first; };
  for (; total > budget; --total) {
    size_t victim = 0;
    switch (method) {
      case TruncateMethod::FIFO:  // first non-empty segment, from its front
        while (len(victim) == 0) ++victim;
        ++kept[victim].first;
        continue;
      case TruncateMethod::LIFO:  // last non-empty segment, from its end
        victim = kept.size() - 1;
        while (len(victim) == 0) --victim;
        break;
      case TruncateMethod::LongerFO:  // longest; the first of equals
        for (size_t i = 1; i < kept.size(); ++i)
          if (len(i) > len(victim)) victim = i;
        break;
      case TruncateMethod::LongestFirst:  // longest; the last of equals
        for (size_t i = 1; i < kept.size(); ++i)
          if (len(i) >= len(victim)) victim = i;
        break;
    }
    --kept[victim].second;
  }
  return kept;
}

Encoding encode_tokenized(const Tokenizer& tokenizer, const Tokenized& a, const Tokenized* b, int max_seq_length,
                          TruncateMethod method, bool pad_to_max) {
  check_length(tokenizer, max_seq_length, b != nullptr);
  const SpecialTokens& specials = tokenizer.specials();
  std::vector<size_t> lengths{a.tokens.size()};
  if (b) lengths.push_back(b->tokens.size());
  const size_t budget = static_cast<size_t>(max_seq_length) - (b ? specials.pair_overhead() : 2);
  const auto kept = truncate_ranges(lengths, budget, method);

  Encoding e;
  e.truncated = a.tokens.size() + (b ? b->tokens.size() : 0) > budget;
  append_special(tokenizer, specials.cls, 0, e);
  append_segment(tokenizer, a, kept[0], 0, e);
  if (b) {
    const int64_t type = specials.pair_token_types ? 1 : 0;
    if (specials.pair_double_sep) append_special(tokenizer, specials.sep, type, e);
    append_segment(tokenizer, *b, kept[1], type, e);
  }
  finish(tokenizer, max_seq_length, pad_to_max, e);
  return e;
}

Encoding encode(const Tokenizer& tokenizer, std::string_view a, std::optional<std::string_view> b, int max_seq_length,
                TruncateMethod method, bool pad_to_max) {
  check_length(tokenizer, max_seq_length, b.has_value());
  // Every method but FIFO keeps pieces from a segment's front, and never more than max_seq_length
  // of them: a longer text is tokenized only as far as that (truncate_ranges gives the same cut
  // for any length past the budget, and the encoding is marked truncated either way).
  auto pieces = [&](std::string_view text) {
    return method == TruncateMethod::FIFO ? tokenizer.tokenize_with_offsets(text)
                                          : tokenizer.tokenize_head(text, static_cast<size_t>(max_seq_length));
  };
  const Tokenized ta = pieces(a);
  if (!b) return encode_tokenized(tokenizer, ta, nullptr, max_seq_length, method, pad_to_max);
  const Tokenized tb = pieces(*b);
  return encode_tokenized(tokenizer, ta, &tb, max_seq_length, method, pad_to_max);
}

WordEncoding encode_words(const Tokenizer& tokenizer, const std::vector<std::string>& words, int max_seq_length,
                          TruncateMethod method, bool pad_to_max) {
  check_length(tokenizer, max_seq_length, false);
  Tokenized all;
  std::vector<int64_t> starts;  // per piece: word index if it is the word's first piece, else -1
  for (size_t w = 0; w < words.size(); ++w) {
    Tokenized t = tokenizer.tokenize_word(words[w]);
    for (size_t i = 0; i < t.tokens.size(); ++i) {
      all.tokens.push_back(std::move(t.tokens[i]));
      all.offsets.push_back(t.offsets[i]);
      starts.push_back(i == 0 ? static_cast<int64_t>(w) : -1);
    }
  }
  WordEncoding e;
  static_cast<Encoding&>(e) = encode_tokenized(tokenizer, all, nullptr, max_seq_length, method, pad_to_max);
  const size_t budget = static_cast<size_t>(max_seq_length) - 2;
  const auto kept = truncate_ranges({all.tokens.size()}, budget, method)[0];
  e.word_start.assign(e.input_ids.size(), -1);
  for (size_t i = kept.first; i < kept.second; ++i) e.word_start[1 + i - kept.first] = starts[i];
  return e;
}

}  // namespace unif::framework
