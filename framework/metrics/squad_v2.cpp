// SQuAD 2.0 evaluation: see squad_v2.h.
#include "framework/metrics/squad_v2.h"

#include <algorithm>
#include <numeric>

#include "framework/common/error.h"
#include "framework/metrics/check.h"
#include "framework/metrics/span.h"

namespace unif::framework {

namespace {

constexpr const char* kMetric = "squad_v2";

bool has_tokens(const std::string& s) { return !squad_normalize_answer(s).empty(); }

void check_input(const SquadV2Input& in) {
  detail::check_same_length(kMetric, in.predictions.size(), in.golds.size(), "predictions", "golds");
  detail::check_not_empty(kMetric, in.predictions.size());
  if (!in.na_probs.empty())
    detail::check_same_length(kMetric, in.predictions.size(), in.na_probs.size(), "predictions", "na_probs");
}

}  // namespace

double squad_v2_f1(const std::string& gold, const std::string& prediction) {
  const bool g = has_tokens(gold), p = has_tokens(prediction);
  if (!g || !p) return g == p ? 1.0 : 0.0;  // int(gold_toks == pred_toks)
  return squad_f1(prediction, gold);
}

std::vector<std::pair<double, double>> squad_v2_raw_scores(const SquadV2Input& in) {
  check_input(in);
  std::vector<std::pair<double, double>> out;
  for (size_t i = 0; i < in.predictions.size(); ++i) {
    const auto& pred = in.predictions[i];
    const auto& golds = in.golds[i];
    if (in.scorer == SpanScorer::Cmrc) {
      // CMRC 2018's scores where there are golds; an unanswerable question wants no answer.
      if (golds.empty()) {
        const double v = pred.empty() ? 1.0 : 0.0;
        out.emplace_back(v, v);
      } else {
        out.emplace_back(cmrc_exact_match(pred, golds), cmrc_f1(pred, golds));
      }
      continue;
    }
    std::vector<std::string> kept;
    for (const auto& g : golds)
      if (has_tokens(g)) kept.push_back(g);
    if (kept.empty()) kept.emplace_back();  // gold_answers = ['']
    double exact = 0, f1 = 0;
    for (const auto& g : kept) {
      exact = std::max(exact, squad_exact_match(pred, g));
      f1 = std::max(f1, squad_v2_f1(g, pred));
    }
    out.emplace_back(exact, f1);
  }
  return out;
}

MetricSet squad_v2_evaluation(const SquadV2Input& in, double threshold) {
  const auto raw = squad_v2_raw_scores(in);
  const size_t n = raw.size();
  std::vector<double> na(in.na_probs);
  if (na.empty()) na.assign(n, 0.0);
  // apply_no_ans_threshold
  std::vector<double> exact(n), f1(n);
  for (size_t i = 0; i < n; ++i) {
    const bool has_ans = !in.golds[i].empty();
    const bool pred_na = na[i] > threshold;
    exact[i] = pred_na ? (has_ans ? 0.0 : 1.0) : raw[i].first;
    f1[i] = pred_na ? (has_ans ? 0.0 : 1.0) : raw[i].second;
  }
  // make_eval_dict over all, the answerable and the unanswerable questions (sums in order).
  MetricSet out;
  auto add = [&](const std::string& prefix, bool answerable, bool all) {
    double e = 0, f = 0;
    int64_t count = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!all && in.golds[i].empty() == answerable) continue;
      e += exact[i];
      f += f1[i];
      ++count;
    }
    if (count == 0) return;
    out[prefix + "exact"] = 100.0 * e / static_cast<double>(count);
    out[prefix + "f1"] = 100.0 * f / static_cast<double>(count);
    out[prefix + "total"] = static_cast<double>(count);
  };
  add("", true, true);
  add("HasAns_", true, false);
  add("NoAns_", false, false);
  if (in.na_probs.empty()) return out;
  // find_all_best_thresh on the raw scores: walk the questions by na_prob (a stable sort: ties
  // keep question order); below each one's na_prob the question keeps its prediction.
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return na[a] < na[b]; });
  int64_t no_ans = 0;
  for (const auto& g : in.golds) no_ans += g.empty() ? 1 : 0;
  auto best = [&](bool use_f1, const std::string& name) {
    double cur = static_cast<double>(no_ans), best_score = cur, best_thresh = 0.0;
    for (size_t i : order) {
      double diff;
      if (!in.golds[i].empty())
        diff = use_f1 ? raw[i].second : raw[i].first;
      else
        diff = in.predictions[i].empty() ? 0.0 : -1.0;
      cur += diff;
      if (cur > best_score) {
        best_score = cur;
        best_thresh = na[i];
      }
    }
    out["best_" + name] = 100.0 * best_score / static_cast<double>(n);
    out["best_" + name + "_thresh"] = best_thresh;
  };
  best(false, "exact");
  best(true, "f1");
  return out;
}

}  // namespace unif::framework
