// Retrieval evaluation: see retrieval_eval.h.
#include "framework/model/retrieval_eval.h"

#include <algorithm>
#include <numeric>

#include "framework/data/batching.h"
#include "framework/data/dataset.h"
#include "framework/metrics/retrieval.h"
#include "framework/parallel/device_transfer.h"

namespace unif::framework {

torch::Tensor embed_texts(models::TaskModel& model, const std::vector<std::string>& texts, const Tokenizer& tokenizer,
                          int max_seq_length, TruncateMethod truncate, int64_t batch_size) {
  std::vector<Example> examples(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) examples[i].texts = {texts[i]};
  const auto encoded = encode_examples(Task::Embedding, examples, tokenizer, max_seq_length, truncate);
  // Longest first, so that each batch pads little (the rows go back to text order below).
  std::vector<int64_t> order(encoded.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return encoded[static_cast<size_t>(a)].input_ids.size() > encoded[static_cast<size_t>(b)].input_ids.size();
  });
  torch::Device device = torch::kCPU;
  for (const auto& p : model.parameters()) {
    device = p.device();
    break;
  }
  const bool training = model.is_training();
  model.eval();
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> rows(texts.size());
  const int64_t n = static_cast<int64_t>(order.size());
  for (int64_t begin = 0; begin < n; begin += std::max<int64_t>(1, batch_size)) {
    const std::vector<int64_t> idx(order.begin() + begin,
                                   order.begin() + std::min(n, begin + std::max<int64_t>(1, batch_size)));
    const auto batch = to_device(collate(Task::Embedding, encoded, examples, idx, 1), device);
    const auto out = model.forward(batch).logits.to(torch::kCPU, torch::kFloat32);
    const auto flat = out.reshape({static_cast<int64_t>(idx.size()), -1});
    for (size_t b = 0; b < idx.size(); ++b) rows[static_cast<size_t>(idx[b])] = flat[static_cast<int64_t>(b)];
  }
  model.train(training);
  if (rows.empty()) return torch::zeros({0, 0});
  return torch::stack(rows);
}

MetricSet evaluate_retrieval(models::TaskModel& model, const RetrievalData& data, const Tokenizer& tokenizer,
                             int max_seq_length, TruncateMethod truncate, int64_t batch_size) {
  std::vector<std::string> query_texts, corpus_texts, corpus_ids;
  for (const auto& q : data.queries) query_texts.push_back(q.text);
  for (const auto& d : data.corpus) {
    corpus_texts.push_back(d.text);
    corpus_ids.push_back(d.id);
  }
  // util.cos_sim: rows L2-normalized (eps 1e-12), then the matrix product; scored in float64 so that
  // ties are ties of the float32 embeddings' cosines, not of rounding.
  const auto unit = [](const torch::Tensor& e) {
    const auto d = e.to(torch::kFloat64);
    return d / d.norm(2, 1, true).clamp_min(1e-12);
  };
  const auto q = unit(embed_texts(model, query_texts, tokenizer, max_seq_length, truncate, batch_size));
  const auto c = unit(embed_texts(model, corpus_texts, tokenizer, max_seq_length, truncate, batch_size));
  const auto scores = torch::matmul(q, c.t()).contiguous();
  std::vector<RankingQuery> ranked(data.queries.size());
  const double* s = scores.data_ptr<double>();
  const size_t m = data.corpus.size();
  for (size_t i = 0; i < ranked.size(); ++i) {
    ranked[i].scores.assign(s + i * m, s + (i + 1) * m);
    ranked[i].relevant = data.queries[i].relevant;
  }
  return retrieval_metrics(ranked, corpus_ids);
}

}  // namespace unif::framework
