// Retrieval evaluation of an embedding model (SPEC §9 `data.retrieval`): every query and corpus
// text embedded by the model (eval mode, no gradients, batches of similar lengths), the corpus
// ranked for each query by the cosine of their embeddings with exact search, and the ranking
// metrics of framework/metrics/retrieval.h (mrr@10, ndcg@10, map@100, recall@K, accuracy@K):
// sentence-transformers' InformationRetrievalEvaluator on the same data, ties ranked by corpus id
// as it ranks them.
//
//   auto data = unif::framework::read_retrieval_data("queries.jsonl", "corpus.jsonl");
//   auto m = unif::framework::evaluate_retrieval(model, data, tokenizer, 128, TruncateMethod::LIFO, 64);
//   m.at("ndcg@10");
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include "framework/data/retrieval.h"
#include "framework/metrics/metric_set.h"
#include "framework/text/encoding.h"
#include "framework/text/tokenizer.h"
#include "models/task_model.h"

namespace unif::framework {

/// The embeddings (N, H) of `texts` by `model` (an embedding model: Task::Embedding's forward on one
/// text per example), in order, float32 on the CPU; each text encoded alone and truncated to
/// `max_seq_length` tokens; `batch_size` texts per forward, grouped by length.
torch::Tensor embed_texts(models::TaskModel& model, const std::vector<std::string>& texts, const Tokenizer& tokenizer,
                          int max_seq_length, TruncateMethod truncate, int64_t batch_size);

/// The retrieval metrics of `data` (retrieval_metric_names()) with `model`'s embeddings, ranked by
/// cosine similarity (sentence-transformers' default score function).
MetricSet evaluate_retrieval(models::TaskModel& model, const RetrievalData& data, const Tokenizer& tokenizer,
                             int max_seq_length, TruncateMethod truncate, int64_t batch_size);

}  // namespace unif::framework
