// SQuAD v1.1 and CMRC 2018 EM / F1, following the official evaluation scripts, on Unicode code
// points (utf8proc decodes, lower-cases and classifies them).
#include "framework/metrics/span.h"

#include <algorithm>
#include <map>

#include <utf8proc.h>

#include "framework/metrics/check.h"

namespace unif::framework {
namespace {

// ---- code point helpers (Python str semantics) ----

std::u32string decode(const std::string& s, const std::string& metric) {
  std::u32string out;
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(s.size());
  while (left > 0) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t n = utf8proc_iterate(p, left, &cp);
    if (n < 0) {
      throw UserError(metric + ": invalid UTF-8 at byte " + std::to_string(s.size() - static_cast<std::size_t>(left)) +
                      " of \"" + s + "\" (expected UTF-8 text)");
    }
    out.push_back(static_cast<char32_t>(cp));
    p += n;
    left -= n;
  }
  return out;
}

std::string encode(const std::u32string& s) {
  std::string out;
  utf8proc_uint8_t buf[4];
  for (char32_t c : s) {
    const auto n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(c), buf);
    out.append(reinterpret_cast<const char*>(buf), static_cast<std::size_t>(n));
  }
  return out;
}

// Python's str.isspace() (what str.split() and str.strip() use).
bool is_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// Python's `\w` on str: letters (L*), numbers (N*), underscore.
bool is_word(char32_t c) {
  if (c == U'_') return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO: return true;
    default: return false;
  }
}

// str.lower() per code point (utf8proc's simple case mapping; Python's full mapping differs only
// for a few characters such as U+0130).
std::u32string lower(std::u32string s) {
  for (auto& c : s) c = static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c)));
  return s;
}

std::u32string strip(const std::u32string& s) {
  std::size_t b = 0, e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

// str.split(): runs of non-whitespace.
std::vector<std::u32string> split(const std::u32string& s) {
  std::vector<std::u32string> out;
  std::u32string cur;
  for (char32_t c : s) {
    if (is_space(c)) {
      if (!cur.empty()) out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

bool is_ascii_punctuation(char32_t c) {  // Python's string.punctuation
  return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
}

void check_examples(const std::string& metric, const std::vector<std::string>& predictions,
                    const std::vector<std::vector<std::string>>& gold_answers) {
  detail::check_same_length(metric, predictions.size(), gold_answers.size(), "predictions", "gold_answers");
  detail::check_not_empty(metric, predictions.size());
  for (std::size_t i = 0; i < gold_answers.size(); ++i) {
    if (gold_answers[i].empty()) {
      throw UserError(metric + ": example " + std::to_string(i) + " has no gold answers (expected at least one)");
    }
  }
}

// ---- SQuAD ----

std::u32string squad_normalize(const std::string& s, const std::string& metric) {
  std::u32string text;
  for (char32_t c : lower(decode(s, metric))) {  // lower, then remove_punc
    if (!is_ascii_punctuation(c)) text.push_back(c);
  }
  // remove_articles: re.sub(r'\b(a|an|the)\b', ' ', text). A match needs a word boundary on both
  // sides, so it is exactly a maximal run of word characters that equals a, an or the.
  std::u32string no_articles;
  for (std::size_t i = 0; i < text.size();) {
    if (!is_word(text[i])) {
      no_articles.push_back(text[i++]);
      continue;
    }
    std::size_t j = i;
    while (j < text.size() && is_word(text[j])) ++j;
    const std::u32string word = text.substr(i, j - i);
    no_articles += (word == U"a" || word == U"an" || word == U"the") ? U" " : word;
    i = j;
  }
  // white_space_fix: ' '.join(text.split())
  std::u32string out;
  for (const auto& tok : split(no_articles)) {
    if (!out.empty()) out.push_back(U' ');
    out += tok;
  }
  return out;
}

double squad_f1_normalized(const std::u32string& pred, const std::u32string& gold) {
  const auto p = split(pred), g = split(gold);
  std::map<std::u32string, int64_t> gold_count;
  for (const auto& t : g) ++gold_count[t];
  int64_t same = 0;  // sum of (Counter(p) & Counter(g)).values()
  for (const auto& t : p) {
    auto it = gold_count.find(t);
    if (it != gold_count.end() && it->second > 0) {
      --it->second;
      ++same;
    }
  }
  if (same == 0) return 0.0;
  const double precision = static_cast<double>(same) / static_cast<double>(p.size());
  const double recall = static_cast<double>(same) / static_cast<double>(g.size());
  return 2.0 * precision * recall / (precision + recall);
}

// ---- CMRC 2018 ----

bool is_cmrc_chinese(char32_t c) { return c >= 0x4E00 && c <= 0x9FA5; }  // [\u4e00-\u9fa5]

bool is_treebank_split(char32_t c) {
  switch (c) {
    case U';':
    case U'@':
    case U'#':
    case U'$':
    case U'%':
    case U'&':
    case U'?':
    case U'!':
    case U'(':
    case U')':
    case U'[':
    case U']':
    case U'{':
    case U'}':
    case U'<':
    case U'>':
    case U'"': return true;
    default: return false;
  }
}

bool is_digit(char32_t c) { return c >= U'0' && c <= U'9'; }

// Approximation of nltk.word_tokenize for a run of non-Chinese, non-sp_char text (see span.h).
void word_tokenize(const std::u32string& run, std::vector<std::u32string>& out) {
  const std::size_t first = out.size();
  for (const auto& piece : split(run)) {
    std::u32string cur;
    for (std::size_t i = 0; i < piece.size(); ++i) {
      const char32_t c = piece[i];
      const bool comma = c == U',' && !(i + 1 < piece.size() && is_digit(piece[i + 1]));
      if (is_treebank_split(c) || comma) {
        if (!cur.empty()) out.push_back(std::move(cur));
        cur.clear();
        out.emplace_back(1, c);
      } else {
        cur.push_back(c);
      }
    }
    if (!cur.empty()) out.push_back(std::move(cur));
  }
  // A '.' ending the run (not part of "..") becomes its own token.
  if (out.size() > first) {
    std::u32string& last = out.back();
    if (last.size() > 1 && last.back() == U'.' && last[last.size() - 2] != U'.') {
      last.pop_back();
      out.emplace_back(U".");
    }
  }
}

std::vector<std::u32string> mixed_segmentation(const std::string& s, bool remove_punc, const std::string& metric) {
  const std::u32string in = strip(lower(decode(s, metric)));
  std::vector<std::u32string> segs;
  std::u32string run;
  for (char32_t c : in) {
    const bool punc = cmrc_is_punctuation(c);
    if (remove_punc && punc) continue;
    if (is_cmrc_chinese(c) || punc) {
      if (!run.empty()) word_tokenize(run, segs);
      run.clear();
      segs.emplace_back(1, c);
    } else {
      run.push_back(c);
    }
  }
  if (!run.empty()) word_tokenize(run, segs);
  return segs;
}

std::u32string remove_punctuation(const std::string& s, const std::string& metric) {
  std::u32string out;
  for (char32_t c : strip(lower(decode(s, metric)))) {
    if (!cmrc_is_punctuation(c)) out.push_back(c);
  }
  return out;
}

// Length of the longest common contiguous run of segments (the script's find_lcs).
std::size_t longest_common_substring(const std::vector<std::u32string>& a, const std::vector<std::u32string>& b) {
  std::vector<std::size_t> prev(b.size() + 1, 0), cur(b.size() + 1, 0);
  std::size_t best = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    for (std::size_t j = 0; j < b.size(); ++j) {
      cur[j + 1] = a[i] == b[j] ? prev[j] + 1 : 0;
      best = std::max(best, cur[j + 1]);
    }
    std::swap(prev, cur);
  }
  return best;
}

double cmrc_f1_impl(const std::string& prediction, const std::vector<std::string>& golds, const std::string& metric) {
  const auto pred = mixed_segmentation(prediction, /*remove_punc=*/true, metric);
  double best = 0.0;
  for (const auto& gold : golds) {
    const auto ans = mixed_segmentation(gold, /*remove_punc=*/true, metric);
    const std::size_t lcs = longest_common_substring(ans, pred);
    if (lcs == 0) continue;
    const double precision = static_cast<double>(lcs) / static_cast<double>(pred.size());
    const double recall = static_cast<double>(lcs) / static_cast<double>(ans.size());
    best = std::max(best, 2.0 * precision * recall / (precision + recall));
  }
  return best;
}

double cmrc_em_impl(const std::string& prediction, const std::vector<std::string>& golds, const std::string& metric) {
  const auto pred = remove_punctuation(prediction, metric);
  for (const auto& gold : golds) {
    if (remove_punctuation(gold, metric) == pred) return 1.0;
  }
  return 0.0;
}

}  // namespace

std::string squad_normalize_answer(const std::string& s) {
  return encode(squad_normalize(s, "squad_normalize_answer"));
}

double squad_exact_match(const std::string& prediction, const std::string& gold) {
  return squad_normalize(prediction, "squad_exact_match") == squad_normalize(gold, "squad_exact_match") ? 1.0 : 0.0;
}

double squad_f1(const std::string& prediction, const std::string& gold) {
  return squad_f1_normalized(squad_normalize(prediction, "squad_f1"), squad_normalize(gold, "squad_f1"));
}

MetricSet squad_metrics(const std::vector<std::string>& predictions,
                        const std::vector<std::vector<std::string>>& gold_answers) {
  const std::string metric = "squad_metrics";
  check_examples(metric, predictions, gold_answers);
  double em_sum = 0.0, f1_sum = 0.0;
  for (std::size_t i = 0; i < predictions.size(); ++i) {
    const auto pred = squad_normalize(predictions[i], metric);
    double em = 0.0, f1 = 0.0;
    for (const auto& gold : gold_answers[i]) {
      const auto g = squad_normalize(gold, metric);
      em = std::max(em, pred == g ? 1.0 : 0.0);
      f1 = std::max(f1, squad_f1_normalized(pred, g));
    }
    em_sum += em;
    f1_sum += f1;
  }
  const auto n = static_cast<double>(predictions.size());
  return {{"exact_match", em_sum / n}, {"f1", f1_sum / n}};
}

bool cmrc_is_punctuation(char32_t c) {
  switch (c) {
    case U'-':
    case U':':
    case U'_':
    case U'*':
    case U'^':
    case U'/':
    case U'\\':
    case U'~':
    case U'`':
    case U'+':
    case U'=':
    case 0xFF0C:  // ，
    case 0x3002:  // 。
    case 0xFF1A:  // ：
    case 0xFF1F:  // ？
    case 0xFF01:  // ！
    case 0x201C:  // “
    case 0x201D:  // ”
    case 0xFF1B:  // ；
    case 0x2019:  // ’
    case 0x300A:  // 《
    case 0x300B:  // 》
    case 0x00B7:  // ·
    case 0x3001:  // 、
    case 0x300C:  // 「
    case 0x300D:  // 」
    case 0xFF08:  // （
    case 0xFF09:  // ）
    case 0xFF0D:  // －
    case 0xFF5E:  // ～
    case 0x300E:  // 『
    case 0x300F:  // 』
      return true;
    default: return false;
  }
}

std::string cmrc_remove_punctuation(const std::string& s) {
  return encode(remove_punctuation(s, "cmrc_remove_punctuation"));
}

std::vector<std::string> cmrc_mixed_segmentation(const std::string& s, bool remove_punc) {
  std::vector<std::string> out;
  for (const auto& seg : mixed_segmentation(s, remove_punc, "cmrc_mixed_segmentation")) { out.push_back(encode(seg)); }
  return out;
}

double cmrc_exact_match(const std::string& prediction, const std::vector<std::string>& golds) {
  if (golds.empty()) throw UserError("cmrc_exact_match: no gold answers (expected at least one)");
  return cmrc_em_impl(prediction, golds, "cmrc_exact_match");
}

double cmrc_f1(const std::string& prediction, const std::vector<std::string>& golds) {
  if (golds.empty()) throw UserError("cmrc_f1: no gold answers (expected at least one)");
  return cmrc_f1_impl(prediction, golds, "cmrc_f1");
}

MetricSet cmrc_metrics(const std::vector<std::string>& predictions,
                       const std::vector<std::vector<std::string>>& gold_answers) {
  const std::string metric = "cmrc_metrics";
  check_examples(metric, predictions, gold_answers);
  double em_sum = 0.0, f1_sum = 0.0;
  for (std::size_t i = 0; i < predictions.size(); ++i) {
    em_sum += cmrc_em_impl(predictions[i], gold_answers[i], metric);
    f1_sum += cmrc_f1_impl(predictions[i], gold_answers[i], metric);
  }
  const auto n = static_cast<double>(predictions.size());
  return {{"exact_match", em_sum / n}, {"f1", f1_sum / n}};
}

}  // namespace unif::framework
