// Masked-language-model data (task masked_lm, SPEC §7): raw texts (a .txt file of one text a line,
// or JSONL/TSV with one data.text_fields field) encoded as `[CLS] pieces [SEP]` (cut to
// max_seq_length, HF run_mlm --line_by_line), and HF's DataCollatorForLanguageModeling masking:
// each non-special token is selected with probability p (mlm_probability); a selected token becomes
// [MASK] with probability 0.8, a random vocabulary id (uniform over [0, V)) with 0.1, and stays as
// it is with 0.1; labels hold the original id at selected positions and -100 elsewhere. With
// whole-word masking (HF DataCollatorForWholeWordMask) whole words are selected instead: words (a
// piece and its "##" continuations) in a random order, taken while the selected piece count stays
// within round(n·p) (at least 1), then 80/10/10 per piece.
//
// Masks are a pure function of (seed, epoch, example index): dynamic (new every epoch), the same
// on any number of replicas or processes, and reproduced exactly by a resumed run. Evaluation uses
// one fixed draw (epoch kEvalEpoch) so that dev losses are comparable across evaluations.
#pragma once
#include <cstdint>
#include <filesystem>
#include <vector>

#include "framework/config/run_config.h"
#include "framework/data/dataset.h"
#include "models/io.h"

namespace unif::framework {

/// How masks are drawn (framework side of model.mlm_probability / model.whole_word_mask).
struct MlmMasking {
  double probability = 0.15;
  bool whole_word = false;
  int64_t mask_id = -1;    // [MASK]
  int64_t vocab_size = 0;  // random replacements are drawn from [0, vocab_size)
  uint64_t seed = 0;
  /// Also a uniform in [0, 1) per position (Batch::uniforms) from its own stream of (seed, epoch,
  /// example index): what replaced-token detection's generator samples with.
  bool uniforms = false;
  bool enabled() const { return mask_id >= 0; }
};

constexpr int64_t kEvalEpoch = -1;

/// Reads the texts of an MLM data file: .txt = one text a line (blank lines skipped), else
/// read_records with the single data.text_fields field. Examples have texts = {text}, no label.
std::vector<Example> read_mlm_examples(const std::filesystem::path& file, const DataConfig& data);

/// `[CLS] pieces [SEP]` of each example, cut to max_seq_length; word_start[p] = the word index of
/// every piece of a word ("##" pieces continue the previous word), -1 at [CLS]/[SEP].
std::vector<EncodedExample> encode_mlm_examples(const std::vector<Example>& examples, const Tokenizer& tokenizer,
                                                int64_t max_seq_length);

/// The masked input ids and labels of one encoded example for (seed, epoch, example index).
void mlm_mask(const EncodedExample& e, const MlmMasking& masking, int64_t epoch, int64_t index,
              std::vector<int64_t>& input_ids, std::vector<int64_t>& labels);

/// How many tokens the evaluation draw (epoch kEvalEpoch) selects over all of `encoded`.
int64_t masked_tokens(const std::vector<EncodedExample>& encoded, const MlmMasking& masking);

/// The budget of whole-word masking for n tokens: HF's int(round(n·p)) with Python's round (half to
/// even: round(4.5) = 4), at least 1, at most 512.
size_t whole_word_budget(size_t n, double probability);

/// The examples at `indices` as a padded batch with masked input_ids and labels (B, L), -100 at
/// unselected positions and padding; with masking.uniforms, Batch::uniforms (B, L) too.
models::Batch collate_mlm(const std::vector<EncodedExample>& encoded, const std::vector<int64_t>& indices,
                          const MlmMasking& masking, int64_t epoch);

}  // namespace unif::framework
