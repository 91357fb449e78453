#include "framework/data/span_decoding.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "framework/text/unicode.h"

namespace unif::framework {

namespace {

std::vector<int64_t> top_positions(const float* v, int64_t n, int64_t k) {
  std::vector<int64_t> idx(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), 0);
  k = std::min(k, n);
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                    [&](int64_t a, int64_t b) { return v[a] > v[b] || (v[a] == v[b] && a < b); });
  idx.resize(static_cast<size_t>(k));
  return idx;
}

}  // namespace

std::vector<SpanCandidate> decode_spans(const Example& example, const std::vector<const EncodedExample*>& windows,
                                        const std::vector<torch::Tensor>& logits, int64_t max_answer_length,
                                        int64_t n_best_size) {
  struct Raw {
    int64_t start, end;
    double score;
  };
  std::vector<Raw> raw;
  for (size_t w = 0; w < windows.size(); ++w) {
    const auto& e = *windows[w];
    auto t = logits[w].to(torch::kFloat32).contiguous();
    const auto n = std::min<int64_t>(t.size(0), static_cast<int64_t>(e.context_spans.size()));
    auto start_l = t.select(1, 0).contiguous(), end_l = t.select(1, 1).contiguous();
    const float* sl = start_l.data_ptr<float>();
    const float* el = end_l.data_ptr<float>();
    for (auto s : top_positions(sl, n, n_best_size)) {
      if (e.context_spans[static_cast<size_t>(s)].start < 0) continue;
      for (auto en : top_positions(el, n, n_best_size)) {
        if (e.context_spans[static_cast<size_t>(en)].start < 0 || en < s || en - s + 1 > max_answer_length) continue;
        raw.push_back({e.context_spans[static_cast<size_t>(s)].start, e.context_spans[static_cast<size_t>(en)].end,
                       static_cast<double>(sl[s]) + static_cast<double>(el[en])});
      }
    }
  }
  std::stable_sort(raw.begin(), raw.end(), [](const Raw& a, const Raw& b) { return a.score > b.score; });
  if (static_cast<int64_t>(raw.size()) > n_best_size) raw.resize(static_cast<size_t>(n_best_size));
  std::vector<SpanCandidate> out;
  if (raw.empty()) return out;
  const auto cps = unicode::decode_utf8(example.texts.at(1));
  double z = 0.0;
  for (const auto& r : raw) z += std::exp(r.score - raw.front().score);
  for (const auto& r : raw) {
    SpanCandidate c;
    c.start = r.start;
    c.end = r.end;
    c.score = r.score;
    c.probability = std::exp(r.score - raw.front().score) / z;
    c.text = unicode::encode_utf8(
        std::u32string_view(cps).substr(static_cast<size_t>(r.start), static_cast<size_t>(r.end - r.start)));
    out.push_back(std::move(c));
  }
  return out;
}

double null_score(const std::vector<torch::Tensor>& logits) {
  double best = std::numeric_limits<double>::infinity();
  for (const auto& t : logits) {
    if (t.size(0) == 0) continue;
    const auto row = t[0].to(torch::kDouble);
    best = std::min(best, row[0].item<double>() + row[1].item<double>());
  }
  return best;
}

double null_odds(const std::vector<SpanCandidate>& candidates, const std::vector<torch::Tensor>& logits,
                 double verifier_weight) {
  if (candidates.empty()) return std::numeric_limits<double>::infinity();
  const double span = null_score(logits) - candidates.front().score;
  if (logits.empty() || logits.front().dim() != 2 || logits.front().size(1) < 3) return span;
  double verdict = std::numeric_limits<double>::infinity();
  for (const auto& t : logits)
    if (t.size(0) > 0) verdict = std::min(verdict, t[0][2].item<double>());
  return (1.0 - verifier_weight) * span + verifier_weight * verdict;
}

SpanCandidate decide_null(const std::vector<SpanCandidate>& candidates, const std::vector<torch::Tensor>& logits,
                          double odds, double threshold) {
  if (!candidates.empty() && !(odds > threshold)) return candidates.front();
  SpanCandidate none;
  none.no_answer = true;
  none.score = null_score(logits);
  none.probability = 1.0 / (1.0 + std::exp(-odds));  // the sigmoid of the null odds (1 without a span)
  return none;
}

std::string first_sentence(const std::string& context) {
  const auto cps = unicode::decode_utf8(context);
  for (size_t i = 0; i < cps.size(); ++i) {
    const char32_t c = cps[i];
    const bool end = c == U'。' || c == U'！' || c == U'？' || c == U'!' || c == U'?' ||
                     (c == U'.' && (i + 1 == cps.size() || cps[i + 1] == U' '));
    if (end) return unicode::encode_utf8(std::u32string_view(cps).substr(0, i + 1));
  }
  return context;
}

}  // namespace unif::framework
