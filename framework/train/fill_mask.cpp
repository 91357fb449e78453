// fill_mask: see fill_mask.h.
#include "framework/train/fill_mask.h"

#include <algorithm>
#include <optional>

#include "framework/text/encoding.h"

namespace unif::framework {

std::vector<FillMaskResult> fill_mask(models::TaskModel& model, const BertTokenizer& tokenizer,
                                      const std::vector<std::string>& texts, int64_t max_seq_length,
                                      int64_t batch_size, int64_t top_k) {
  torch::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  const int64_t mask_id = tokenizer.token_to_id("[MASK]");
  const auto n = static_cast<int64_t>(texts.size());
  std::vector<FillMaskResult> out(texts.size());
  for (int64_t start = 0; start < n; start += batch_size) {
    const int64_t b = std::min(n, start + batch_size) - start;
    std::vector<std::vector<int64_t>> ids;
    int64_t l = 0;
    for (int64_t i = 0; i < b; ++i) {
      ids.push_back(encode(tokenizer, texts[static_cast<size_t>(start + i)], std::nullopt,
                           static_cast<int>(max_seq_length), TruncateMethod::LIFO, false)
                        .input_ids);
      l = std::max<int64_t>(l, static_cast<int64_t>(ids.back().size()));
    }
    models::Batch batch;
    batch.input_ids = torch::zeros({b, l}, torch::kLong);
    batch.token_type_ids = torch::zeros({b, l}, torch::kLong);
    batch.attention_mask = torch::zeros({b, l}, torch::kLong);
    batch.labels = torch::full({b, l}, -100, torch::kLong);  // 0 at [MASK]: the head decodes those rows only
    for (int64_t i = 0; i < b; ++i)
      for (size_t p = 0; p < ids[static_cast<size_t>(i)].size(); ++p) {
        const int64_t id = ids[static_cast<size_t>(i)][p];
        batch.input_ids[i][static_cast<int64_t>(p)] = id;
        batch.attention_mask[i][static_cast<int64_t>(p)] = 1;
        if (id == mask_id) batch.labels[i][static_cast<int64_t>(p)] = 0;
      }
    const auto picked = batch.labels.ne(-100).nonzero();  // (M, 2) row-major, as the head's rows
    if (picked.size(0) == 0) continue;
    const auto probs = torch::softmax(model.forward(batch).logits.to(torch::kFloat64), -1);  // (M, V)
    const auto top = probs.topk(std::min<int64_t>(top_k, probs.size(1)), -1);
    const auto values = std::get<0>(top), indices = std::get<1>(top);
    for (int64_t m = 0; m < picked.size(0); ++m) {
      MaskFill fill;
      for (int64_t k = 0; k < values.size(1); ++k) {
        fill.tokens.push_back(tokenizer.vocab().token(indices[m][k].item<int64_t>()));
        fill.scores.push_back(values[m][k].item<double>());
      }
      out[static_cast<size_t>(start + picked[m][0].item<int64_t>())].masks.push_back(std::move(fill));
    }
  }
  if (was_training) model.train();
  return out;
}

}  // namespace unif::framework
