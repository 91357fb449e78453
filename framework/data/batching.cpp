#include "framework/data/batching.h"

#include <algorithm>
#include <stdexcept>
#include <numeric>

namespace unif::framework {

namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace

std::vector<int64_t> epoch_order(int64_t n, uint64_t seed, int64_t epoch, bool shuffle) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  if (!shuffle) return order;
  uint64_t state = seed * 0x9E3779B97F4A7C15ULL ^ (static_cast<uint64_t>(epoch) + 0x632BE59BD9B4E019ULL);
  for (int64_t i = n - 1; i > 0; --i) {
    // Unbiased bounded draw (Lemire's rejection would be overkill for n < 2^32: use modulo on 64 bits).
    const auto j = static_cast<int64_t>(splitmix64(state) % static_cast<uint64_t>(i + 1));
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
  }
  return order;
}

std::vector<int64_t> length_grouped_order(const std::vector<int64_t>& lengths, int64_t batch_size, uint64_t seed,
                                          int64_t epoch) {
  const auto n = static_cast<int64_t>(lengths.size());
  std::vector<int64_t> order = epoch_order(n, seed, epoch, true);
  if (n == 0 || batch_size <= 0) return order;
  const auto length = [&lengths](int64_t i) { return lengths[static_cast<size_t>(i)]; };
  const int64_t mega = kMegaBatchBatches * batch_size;
  for (int64_t start = 0; start < n; start += mega) {
    const auto first = order.begin() + start, last = order.begin() + std::min(n, start + mega);
    std::stable_sort(first, last, [&](int64_t a, int64_t b) { return length(a) > length(b); });
  }
  // Shuffle the full batches (Fisher-Yates on a stream of its own); a partial last batch stays last.
  const int64_t full = n / batch_size;
  std::vector<int64_t> batches(static_cast<size_t>(full));
  std::iota(batches.begin(), batches.end(), 0);
  uint64_t state =
      (seed + 0xD1B54A32D192ED03ULL) * 0x9E3779B97F4A7C15ULL ^ (static_cast<uint64_t>(epoch) * 0xBF58476D1CE4E5B9ULL);
  for (int64_t i = full - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(splitmix64(state) % static_cast<uint64_t>(i + 1));
    std::swap(batches[static_cast<size_t>(i)], batches[static_cast<size_t>(j)]);
  }
  // The batch with the longest example first (the first such batch in the shuffled order).
  int64_t longest = 0;
  for (int64_t k = 1; k < full; ++k)
    if (length(order[static_cast<size_t>(batches[static_cast<size_t>(k)] * batch_size)]) >
        length(order[static_cast<size_t>(batches[static_cast<size_t>(longest)] * batch_size)]))
      longest = k;
  if (full > 0) std::swap(batches[0], batches[static_cast<size_t>(longest)]);
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(n));
  for (int64_t b : batches) out.insert(out.end(), order.begin() + b * batch_size, order.begin() + (b + 1) * batch_size);
  out.insert(out.end(), order.begin() + full * batch_size, order.end());
  return out;
}

namespace {

// Embedding: (B, C, L) ids and mask of every example's C texts, each from position 0, padded to
// the longest text of the batch; token types 0; labels (B) float scores when every example has one.
models::Batch collate_texts(const std::vector<EncodedExample>& encoded, const std::vector<Example>& examples,
                            const std::vector<int64_t>& indices) {
  const auto B = static_cast<int64_t>(indices.size());
  int64_t C = 0, L = 0;
  for (auto i : indices) {
    const auto& e = encoded[static_cast<size_t>(i)];
    C = std::max<int64_t>(C, static_cast<int64_t>(e.columns.size()));
    for (const auto& c : e.columns) L = std::max<int64_t>(L, static_cast<int64_t>(c.size()));
  }
  auto i64 = torch::TensorOptions().dtype(torch::kInt64);
  auto ids = torch::zeros({B, C, L}, i64), mask = torch::zeros({B, C, L}, i64);
  auto ids_a = ids.accessor<int64_t, 3>(), mask_a = mask.accessor<int64_t, 3>();
  bool labeled = true;
  for (int64_t b = 0; b < B; ++b) {
    const auto& e = encoded[static_cast<size_t>(indices[static_cast<size_t>(b)])];
    if (static_cast<int64_t>(e.columns.size()) != C)
      throw std::logic_error("collate: embedding examples with different numbers of texts in one batch");
    for (int64_t c = 0; c < C; ++c)
      for (size_t l = 0; l < e.columns[static_cast<size_t>(c)].size(); ++l) {
        ids_a[b][c][static_cast<int64_t>(l)] = e.columns[static_cast<size_t>(c)][l];
        mask_a[b][c][static_cast<int64_t>(l)] = 1;
      }
    labeled = labeled && examples[static_cast<size_t>(e.example)].has_label;
  }
  models::Batch batch;
  batch.input_ids = ids;
  batch.token_type_ids = torch::zeros({B, C, L}, i64);
  batch.attention_mask = mask;
  if (labeled && B > 0) {
    batch.labels = torch::empty({B}, torch::kFloat32);
    auto a = batch.labels.accessor<float, 1>();
    for (int64_t b = 0; b < B; ++b)
      a[b] = static_cast<float>(
          examples[static_cast<size_t>(encoded[static_cast<size_t>(indices[static_cast<size_t>(b)])].example)].value);
  }
  return batch;
}

}  // namespace

models::Batch collate(Task task, const std::vector<EncodedExample>& encoded, const std::vector<Example>& examples,
                      const std::vector<int64_t>& indices, int64_t num_labels) {
  if (task_spec(task).input == TaskInput::Texts) return collate_texts(encoded, examples, indices);
  const auto B = static_cast<int64_t>(indices.size());
  int64_t L = 0;
  for (auto i : indices)
    L = std::max<int64_t>(L, static_cast<int64_t>(encoded[static_cast<size_t>(i)].input_ids.size()));
  auto i64 = torch::TensorOptions().dtype(torch::kInt64);
  auto ids = torch::zeros({B, L}, i64), types = torch::zeros({B, L}, i64), mask = torch::zeros({B, L}, i64);
  auto ids_a = ids.accessor<int64_t, 2>(), types_a = types.accessor<int64_t, 2>(), mask_a = mask.accessor<int64_t, 2>();
  bool labeled = true, weighted = false;
  for (int64_t b = 0; b < B; ++b) {
    const auto& e = encoded[static_cast<size_t>(indices[static_cast<size_t>(b)])];
    for (size_t l = 0; l < e.input_ids.size(); ++l) {
      ids_a[b][static_cast<int64_t>(l)] = e.input_ids[l];
      types_a[b][static_cast<int64_t>(l)] = e.token_type_ids[l];
      mask_a[b][static_cast<int64_t>(l)] = 1;
    }
    const auto& ex = examples[static_cast<size_t>(e.example)];
    labeled = labeled && ex.has_label;
    weighted = weighted || ex.weight != 1.0;
  }
  models::Batch batch;
  batch.input_ids = ids;
  batch.token_type_ids = types;
  batch.attention_mask = mask;
  if (weighted) {
    batch.sample_weights = torch::empty({B}, torch::kFloat32);
    for (int64_t b = 0; b < B; ++b)
      batch.sample_weights[b] =
          examples[static_cast<size_t>(encoded[static_cast<size_t>(indices[static_cast<size_t>(b)])].example)].weight;
  }
  if (!labeled) return batch;
  switch (task_spec(task).labels) {  // the label tensor of each kind of label
    case TaskLabels::OneClass: {
      batch.labels = torch::empty({B}, i64);
      auto a = batch.labels.accessor<int64_t, 1>();
      for (int64_t b = 0; b < B; ++b)
        a[b] = examples[static_cast<size_t>(encoded[static_cast<size_t>(indices[static_cast<size_t>(b)])].example)]
                   .labels.at(0);
      break;
    }
    case TaskLabels::ClassSet: {
      batch.labels = torch::zeros({B, num_labels}, torch::kFloat32);
      auto a = batch.labels.accessor<float, 2>();
      for (int64_t b = 0; b < B; ++b)
        for (auto l :
             examples[static_cast<size_t>(encoded[static_cast<size_t>(indices[static_cast<size_t>(b)])].example)]
                 .labels)
          a[b][l] = 1.0f;
      break;
    }
    case TaskLabels::Value: {
      batch.labels = torch::empty({B}, torch::kFloat32);
      for (int64_t b = 0; b < B; ++b)
        batch.labels[b] =
            examples[static_cast<size_t>(encoded[static_cast<size_t>(indices[static_cast<size_t>(b)])].example)].value;
      break;
    }
    case TaskLabels::TagList: {
      batch.labels = torch::full({B, L}, -100, i64);
      auto a = batch.labels.accessor<int64_t, 2>();
      for (int64_t b = 0; b < B; ++b) {
        const auto& e = encoded[static_cast<size_t>(indices[static_cast<size_t>(b)])];
        for (size_t l = 0; l < e.token_labels.size(); ++l) a[b][static_cast<int64_t>(l)] = e.token_labels[l];
      }
      break;
    }
    case TaskLabels::None:   // masked_lm: collate_mlm (mlm.h) masks the batch
    case TaskLabels::Score:  // embedding: collate_texts
      break;
    case TaskLabels::Answers: {  // start and end positions
      batch.labels = torch::empty({B, 2}, i64);
      auto a = batch.labels.accessor<int64_t, 2>();
      for (int64_t b = 0; b < B; ++b) {
        const auto& e = encoded[static_cast<size_t>(indices[static_cast<size_t>(b)])];
        a[b][0] = e.start_position;
        a[b][1] = e.end_position;
      }
      break;
    }
  }
  return batch;
}

std::vector<torch::Tensor> pool_windows(const std::vector<EncodedExample>& encoded,
                                        const std::vector<torch::Tensor>& logits, size_t examples, bool max_pooling) {
  std::vector<std::vector<torch::Tensor>> rows(examples);
  for (size_t k = 0; k < encoded.size() && k < logits.size(); ++k)
    rows.at(static_cast<size_t>(encoded[k].example)).push_back(logits[k]);
  std::vector<torch::Tensor> out(examples);
  for (size_t x = 0; x < examples; ++x) {
    if (rows[x].empty()) continue;
    if (rows[x].size() == 1) {
      out[x] = rows[x].front();
      continue;
    }
    const auto all = torch::stack(rows[x]);
    out[x] = max_pooling ? std::get<0>(all.max(0)) : all.mean(0);
  }
  return out;
}

}  // namespace unif::framework
