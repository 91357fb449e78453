// Ranking metrics for retrieval (and reranking) and the similarity metrics of scored sentence
// pairs, with exactly the definitions of sentence-transformers' InformationRetrievalEvaluator and
// EmbeddingSimilarityEvaluator (tests/fixtures/retrieval holds their values on crafted cases).
// Pure C++, no Torch.
//
// A query is ranked by its candidates' scores, highest first; the candidates it marks relevant are
// the hits (binary relevance). Per query, with R its relevant set and rel_i = 1 when the candidate
// at rank i (0-based) is relevant:
//   accuracy@k  1 when a relevant candidate is in the top k, else 0           (k = 1, 5, 10)
//   recall@k    (relevant candidates in the top k) / |R|                       (k = 1, 5, 10)
//   mrr@10      1 / (r + 1) for the first relevant rank r < 10, else 0
//   ndcg@10     Σ_{i<10} rel_i / log2(i + 2), divided by the ideal Σ_{i<min(|R|,10)} 1 / log2(i + 2)
//   map@100     Σ over relevant ranks r < 100 of (hits in ranks 0..r) / (r + 1), divided by
//               min(100, |R|)  (sentence-transformers' AP@k: not divided by |R|)
// and each metric is the mean over queries. Precision@k is not reported.
//
// Ties: candidates with equal scores rank in ascending candidate index, or, given the candidates'
// ids, in ascending id (byte order, which is Python's str order for UTF-8): sentence-transformers
// sorts its hits by (-score, corpus_id) (and re-selects torch.topk's arbitrary picks at the top-k
// boundary under that order), so with the corpus ids the ranking is its ranking, ties included.
//
// A query needs at least one relevant candidate: sentence-transformers leaves a query without
// relevant documents out of every mean; here it is a UserError, so the number of queries scored is
// the number given.
//
//   std::vector<RankingQuery> q = {{{0.9, 0.5, 0.7}, {2}}};  // candidate 2 ranks second
//   retrieval_metrics(q);  // mrr@10 0.5, ndcg@10 1/log2(3), accuracy@1 0, recall@5 1, map@100 0.5
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "framework/metrics/metric_set.h"

namespace unif::framework {

/// One query: a score per candidate (higher ranks first) and the indices of its relevant candidates.
struct RankingQuery {
  std::vector<double> scores;         // one per candidate, finite
  std::vector<std::size_t> relevant;  // indices into scores, distinct, at least one
};

/// {"accuracy@1", "accuracy@5", "accuracy@10", "recall@1", "recall@5", "recall@10", "mrr@10",
/// "ndcg@10", "map@100"}, each the mean over `queries`; ties rank in ascending candidate index.
/// UserError (naming the query by position) on no queries, a query without candidates, a
/// non-finite score, no relevant candidate, a relevant index outside the candidates, or one listed
/// twice.
MetricSet retrieval_metrics(const std::vector<RankingQuery>& queries);

/// As above for queries that all rank the same candidates (a corpus), `candidate_ids` naming them
/// in score order: ties rank in ascending id, as sentence-transformers ranks them. UserError also
/// when a query's score count differs from the number of ids, or an id is listed twice.
MetricSet retrieval_metrics(const std::vector<RankingQuery>& queries, const std::vector<std::string>& candidate_ids);

/// The names retrieval_metrics reports, in the order above. Sentence-transformers' main metric of
/// retrieval is "ndcg@10".
std::vector<std::string> retrieval_metric_names();

/// {"pearson_cosine", "spearman_cosine"}: pearson() and spearman() (regression.h) of the gold scores
/// and the pairs' cosine similarities, as sentence-transformers' EmbeddingSimilarityEvaluator
/// (scipy's pearsonr and spearmanr) reports them; a constant input gives 0, not NaN. UserError on
/// different lengths, empty input or a non-finite value.
MetricSet similarity_metrics(const std::vector<double>& gold, const std::vector<double>& cosine);

/// The names similarity_metrics reports. Sentence-transformers' main metric of scored pairs is
/// "spearman_cosine".
std::vector<std::string> similarity_metric_names();

}  // namespace unif::framework
