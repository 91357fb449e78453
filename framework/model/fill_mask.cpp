// fill_mask: see fill_mask.h.
#include "framework/model/fill_mask.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "framework/common/runtime.h"
#include "framework/parallel/worker_pool.h"
#include "framework/text/encoding.h"

namespace unif::framework {

MaskedText encode_masked_text(const Tokenizer& tokenizer, const std::string& text, int64_t max_seq_length) {
  MaskedText out;
  // A [MASK] the cut would drop: say where it is rather than answer fewer masks.
  const auto pieces = tokenizer.tokenize_with_offsets(text).tokens;
  for (size_t p = static_cast<size_t>(std::max<int64_t>(0, max_seq_length - 2)); p < pieces.size(); ++p)
    if (pieces[p] == tokenizer.specials().mask) {
      out.error = "[MASK] at token " + std::to_string(p + 2) + " is past max_seq_length " +
                  std::to_string(max_seq_length) + " (the text is cut there)";
      return out;
    }
  out.ids =
      encode(tokenizer, text, std::nullopt, static_cast<int>(max_seq_length), TruncateMethod::LIFO, false).input_ids;
  return out;
}

std::vector<FillMaskResult> fill_mask(models::TaskModel& model, const Tokenizer& tokenizer,
                                      const std::vector<std::string>& texts, int64_t max_seq_length, int64_t batch_size,
                                      int64_t top_k, WorkerPool* workers) {
  std::vector<MaskedText> encoded;
  encoded.reserve(texts.size());
  for (const auto& t : texts) encoded.push_back(encode_masked_text(tokenizer, t, max_seq_length));
  return fill_mask_encoded(model, tokenizer, encoded, batch_size, top_k, workers);
}

std::vector<FillMaskResult> fill_mask_encoded(models::TaskModel& model, const Tokenizer& tokenizer,
                                              const std::vector<MaskedText>& texts, int64_t batch_size, int64_t top_k,
                                              WorkerPool* workers) {
  torch::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  const int64_t mask_id = tokenizer.token_to_id(tokenizer.specials().mask);
  const auto n = static_cast<int64_t>(texts.size());
  std::vector<FillMaskResult> out(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) out[i].error = texts[i].error;
  const auto ids = [&](size_t i) -> const std::vector<int64_t>& { return texts[i].ids; };
  // Batches of similar lengths (longest first), each answer back in its text's slot.
  std::vector<int64_t> order(texts.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return ids(static_cast<size_t>(a)).size() > ids(static_cast<size_t>(b)).size();
  });
  const int64_t batches = (n + batch_size - 1) / batch_size;
  auto run_batch = [&](int64_t k) {
    torch::NoGradGuard no_grad_here;
    const int64_t start = k * batch_size, b = std::min(n, start + batch_size) - start;
    int64_t l = 0;
    for (int64_t i = 0; i < b; ++i)
      l = std::max<int64_t>(
          l, static_cast<int64_t>(ids(static_cast<size_t>(order[static_cast<size_t>(start + i)])).size()));
    if (l == 0) return;  // only texts with an error
    models::Batch batch;
    batch.input_ids = torch::zeros({b, l}, torch::kLong);
    batch.token_type_ids = torch::zeros({b, l}, torch::kLong);
    batch.attention_mask = torch::zeros({b, l}, torch::kLong);
    batch.labels = torch::full({b, l}, -100, torch::kLong);  // 0 at [MASK]: the head decodes those rows only
    auto input_ids = batch.input_ids.accessor<int64_t, 2>(), mask = batch.attention_mask.accessor<int64_t, 2>(),
         labels = batch.labels.accessor<int64_t, 2>();
    for (int64_t i = 0; i < b; ++i) {
      const auto& row = ids(static_cast<size_t>(order[static_cast<size_t>(start + i)]));
      for (size_t p = 0; p < row.size(); ++p) {
        input_ids[i][static_cast<int64_t>(p)] = row[p];
        mask[i][static_cast<int64_t>(p)] = 1;
        if (row[p] == mask_id) labels[i][static_cast<int64_t>(p)] = 0;
      }
    }
    const auto picked = batch.labels.ne(-100).nonzero();  // (M, 2) row-major, as the head's rows
    if (picked.size(0) == 0) return;
    const auto logits = model.forward(batch).logits.to(torch::kFloat64);  // (M, V)
    const auto finite = torch::isfinite(logits).all(-1);
    const auto probs = torch::softmax(logits, -1);
    const auto top = probs.topk(std::min<int64_t>(top_k, probs.size(1)), -1);
    const auto values = std::get<0>(top), indices = std::get<1>(top);
    for (int64_t m = 0; m < picked.size(0); ++m) {
      auto& r = out[static_cast<size_t>(order[static_cast<size_t>(start + picked[m][0].item<int64_t>())])];
      if (!finite[m].item<bool>()) r.error = "the model's outputs are not finite (NaN or inf) for this input";
      if (!r.error.empty()) continue;
      MaskFill fill;
      for (int64_t k2 = 0; k2 < values.size(1); ++k2) {
        fill.tokens.push_back(tokenizer.id_to_token(indices[m][k2].item<int64_t>()));
        fill.scores.push_back(values[m][k2].item<double>());
      }
      r.masks.push_back(std::move(fill));
    }
  };
  if (workers == nullptr || workers->size() <= 1 || batches <= 1) {
    for (int64_t k = 0; k < batches; ++k) run_batch(k);
  } else {
    ScopedBlasThreads blas(1);  // each worker's products on its own thread, all at once
    workers->run(batches, run_batch);
  }
  for (auto& r : out)
    if (!r.error.empty()) r.masks.clear();  // a later mask of the text was not finite
  if (was_training) model.train();
  return out;
}

}  // namespace unif::framework
