// Retrieval ranking metrics (sentence-transformers' InformationRetrievalEvaluator) and the cosine
// similarity metrics of scored pairs (its EmbeddingSimilarityEvaluator).
#include "framework/metrics/retrieval.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "framework/metrics/check.h"
#include "framework/metrics/regression.h"

namespace unif::framework {
namespace {

constexpr std::size_t kRankingKs[] = {1, 5, 10};
constexpr std::size_t kMrrK = 10, kNdcgK = 10, kMapK = 100;
constexpr std::size_t kRankingDepth = 100;  // the deepest rank any metric reads (map@100)

std::string query_at(std::size_t q) { return "retrieval_metrics: query " + std::to_string(q); }

void check_ranking_query(const RankingQuery& query, std::size_t q) {
  if (query.scores.empty()) throw UserError(query_at(q) + " has no candidates (expected at least one score)");
  for (std::size_t i = 0; i < query.scores.size(); ++i)
    if (!std::isfinite(query.scores[i]))
      throw UserError(query_at(q) + ": scores[" + std::to_string(i) +
                      "] is not a finite number (expected a finite score)");
  if (query.relevant.empty())
    throw UserError(query_at(q) +
                    " has no relevant candidate (expected at least one; a query without relevant documents "
                    "cannot be scored)");
  std::vector<char> seen(query.scores.size(), 0);
  for (const std::size_t r : query.relevant) {
    if (r >= query.scores.size())
      throw UserError(query_at(q) + ": relevant index " + std::to_string(r) + " is out of range (it has " +
                      std::to_string(query.scores.size()) + " candidates: indices 0.." +
                      std::to_string(query.scores.size() - 1) + ")");
    if (seen[r]) throw UserError(query_at(q) + ": relevant index " + std::to_string(r) + " is listed twice");
    seen[r] = 1;
  }
}

/// Σ_{i<n} 1 / log2(i + 2): the DCG of n relevant candidates at the top.
double ideal_dcg(std::size_t n) {
  double dcg = 0.0;
  for (std::size_t i = 0; i < n; ++i) dcg += 1.0 / std::log2(static_cast<double>(i) + 2.0);
  return dcg;
}

/// The metrics of every query, ranked by score (descending), ties by tie_rank (ascending, distinct).
MetricSet ranking_metrics_by(const std::vector<RankingQuery>& queries,
                             const std::vector<std::size_t>* shared_tie_rank) {
  detail::check_not_empty("retrieval_metrics", queries.size());
  double accuracy[3] = {0, 0, 0}, recall[3] = {0, 0, 0};
  double mrr = 0.0, ndcg = 0.0, map = 0.0;
  std::vector<std::size_t> order, own_tie_rank;
  std::vector<char> relevant;
  for (std::size_t q = 0; q < queries.size(); ++q) {
    const RankingQuery& query = queries[q];
    check_ranking_query(query, q);
    const std::size_t n = query.scores.size();
    if (shared_tie_rank && shared_tie_rank->size() != n)
      throw UserError(query_at(q) + " has " + std::to_string(n) + " scores but there are " +
                      std::to_string(shared_tie_rank->size()) + " candidate ids (expected one score per candidate)");
    if (!shared_tie_rank) {
      own_tie_rank.resize(n);
      std::iota(own_tie_rank.begin(), own_tie_rank.end(), std::size_t{0});
    }
    const std::vector<std::size_t>& tie_rank = shared_tie_rank ? *shared_tie_rank : own_tie_rank;
    order.resize(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    const std::size_t depth = std::min(n, kRankingDepth);
    const auto& s = query.scores;
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(depth), order.end(),
                      [&](std::size_t a, std::size_t b) {
                        if (s[a] != s[b]) return s[a] > s[b];
                        return tie_rank[a] < tie_rank[b];
                      });
    relevant.assign(n, 0);
    for (const std::size_t r : query.relevant) relevant[r] = 1;
    const double num_relevant = static_cast<double>(query.relevant.size());

    std::size_t hits = 0, first_hit = depth;
    double dcg = 0.0, precision_sum = 0.0;
    std::size_t hits_at[3] = {0, 0, 0};
    for (std::size_t rank = 0; rank < depth; ++rank) {
      if (!relevant[order[rank]]) continue;
      ++hits;
      if (first_hit == depth) first_hit = rank;
      for (std::size_t j = 0; j < 3; ++j) hits_at[j] += rank < kRankingKs[j];
      if (rank < kNdcgK) dcg += 1.0 / std::log2(static_cast<double>(rank) + 2.0);
      if (rank < kMapK) precision_sum += static_cast<double>(hits) / static_cast<double>(rank + 1);
    }
    for (std::size_t j = 0; j < 3; ++j) {
      accuracy[j] += hits_at[j] > 0 ? 1.0 : 0.0;
      recall[j] += static_cast<double>(hits_at[j]) / num_relevant;
    }
    if (first_hit < kMrrK) mrr += 1.0 / static_cast<double>(first_hit + 1);
    ndcg += dcg / ideal_dcg(std::min(query.relevant.size(), kNdcgK));
    map += precision_sum / static_cast<double>(std::min(query.relevant.size(), kMapK));
  }
  const double count = static_cast<double>(queries.size());
  MetricSet out;
  for (std::size_t j = 0; j < 3; ++j) {
    const std::string k = std::to_string(kRankingKs[j]);
    out["accuracy@" + k] = accuracy[j] / count;
    out["recall@" + k] = recall[j] / count;
  }
  out["mrr@10"] = mrr / count;
  out["ndcg@10"] = ndcg / count;
  out["map@100"] = map / count;
  return out;
}

void check_finite_similarities(const std::vector<double>& v, const char* name) {
  for (std::size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i]))
      throw UserError(std::string("similarity_metrics: ") + name + "[" + std::to_string(i) +
                      "] is not a finite number (expected a finite value)");
}

}  // namespace

MetricSet retrieval_metrics(const std::vector<RankingQuery>& queries) { return ranking_metrics_by(queries, nullptr); }

MetricSet retrieval_metrics(const std::vector<RankingQuery>& queries, const std::vector<std::string>& candidate_ids) {
  std::vector<std::size_t> by_id(candidate_ids.size());
  std::iota(by_id.begin(), by_id.end(), std::size_t{0});
  std::sort(by_id.begin(), by_id.end(),
            [&](std::size_t a, std::size_t b) { return candidate_ids[a] < candidate_ids[b]; });
  std::vector<std::size_t> tie_rank(candidate_ids.size());
  for (std::size_t i = 0; i < by_id.size(); ++i) {
    if (i > 0 && candidate_ids[by_id[i]] == candidate_ids[by_id[i - 1]])
      throw UserError("retrieval_metrics: candidate id '" + candidate_ids[by_id[i]] + "' is listed twice (candidates " +
                      std::to_string(std::min(by_id[i], by_id[i - 1])) + " and " +
                      std::to_string(std::max(by_id[i], by_id[i - 1])) + "; expected distinct ids)");
    tie_rank[by_id[i]] = i;
  }
  return ranking_metrics_by(queries, &tie_rank);
}

std::vector<std::string> retrieval_metric_names() {
  return {"accuracy@1", "accuracy@5", "accuracy@10", "recall@1", "recall@5",
          "recall@10",  "mrr@10",     "ndcg@10",     "map@100"};
}

MetricSet similarity_metrics(const std::vector<double>& gold, const std::vector<double>& cosine) {
  detail::check_same_length("similarity_metrics", gold.size(), cosine.size(), "gold", "cosine");
  detail::check_not_empty("similarity_metrics", gold.size());
  check_finite_similarities(gold, "gold");
  check_finite_similarities(cosine, "cosine");
  return {{"pearson_cosine", pearson(gold, cosine)}, {"spearman_cosine", spearman(gold, cosine)}};
}

std::vector<std::string> similarity_metric_names() { return {"pearson_cosine", "spearman_cosine"}; }

}  // namespace unif::framework
