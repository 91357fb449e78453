// fill_mask: HF's fill-mask pipeline on a masked_lm model (SPEC §7 `unif predict`): every [MASK]
// of a text gets the top-k vocabulary tokens with their softmax probabilities, highest first. A
// [MASK] the cut to max_seq_length drops, or outputs that are not finite, give the text an error
// instead of fills.
//
//   auto r = fill_mask(model, tokenizer, {"北京是中国的[MASK]都。"}, 128, 32, 5);
//   r[0].masks[0].tokens;  // {"首", ...}
#pragma once
#include <string>
#include <vector>

#include "framework/text/bert_tokenizer.h"
#include "models/task_model.h"

namespace unif::framework {

class WorkerPool;

struct MaskFill {
  std::vector<std::string> tokens;  // top k, highest probability first
  std::vector<double> scores;       // their probabilities (softmax over the vocabulary)
};

struct FillMaskResult {
  std::vector<MaskFill> masks;  // one per [MASK] of the input, in order
  /// Set instead of masks when the text cannot be answered: "[MASK] at token N is past
  /// max_seq_length M ..." (N counts from [CLS] = 1), or the model's outputs at a [MASK] are not
  /// finite (NaN or inf).
  std::string error;
};

/// `[CLS] text [SEP]` (cut to max_seq_length) through `model` (a BertForMaskedLM; eval mode, no
/// gradients), in batches of similar lengths (spread over `workers` when given); per text the
/// fills of its [MASK] positions (none: an empty list) or an error. encode_masked_text, then
/// fill_mask_encoded.
std::vector<FillMaskResult> fill_mask(models::TaskModel& model, const Tokenizer& tokenizer,
                                      const std::vector<std::string>& texts, int64_t max_seq_length, int64_t batch_size,
                                      int64_t top_k = 5, WorkerPool* workers = nullptr);

/// A text made ready for fill_mask's forward pass: the ids of `[CLS] text [SEP]` cut to
/// max_seq_length, or (ids empty) why it cannot be answered.
struct MaskedText {
  std::vector<int64_t> ids;
  std::string error;  // "[MASK] at token N is past max_seq_length M ..."
};

/// The tokenizing half of fill_mask (no model: any thread).
MaskedText encode_masked_text(const Tokenizer& tokenizer, const std::string& text, int64_t max_seq_length);

/// The forward half of fill_mask: per encoded text its fills, or its error (its own, or outputs
/// that are not finite). The batches are those fill_mask makes of the same texts.
std::vector<FillMaskResult> fill_mask_encoded(models::TaskModel& model, const Tokenizer& tokenizer,
                                              const std::vector<MaskedText>& texts, int64_t batch_size,
                                              int64_t top_k = 5, WorkerPool* workers = nullptr);

}  // namespace unif::framework
