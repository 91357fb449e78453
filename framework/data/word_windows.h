// Token classification over inputs longer than max_seq_length (`unif predict`): the words are
// covered by overlapping windows of whole words, each encoded as encode_words() encodes a short
// input, and every word takes its tag from the window where it has the most context on both sides
// (as span extraction picks a context piece's window). Training and evaluation keep the single
// truncated encoding of encode_examples().
//
//   auto enc = encode_word_windows(tok, examples, 128, TruncateMethod::LIFO);  // >= 1 entry per example
//   ... evaluate(), then per example its entries and their logits:
//   auto tags = word_window_predictions(examples[x], windows, logits);  // nullopt: a word with no piece
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include <torch/types.h>

#include "framework/data/dataset.h"

namespace unif::framework {

/// How a token model turns the logits of the positions that carry a tag (T, C) into tags (T) and,
/// with a non-null second argument, each tag's probability (T): TaskModel::decode_tags (argmax, or
/// a CRF's Viterbi path). Empty = argmax and softmax.
using TagDecoder = std::function<torch::Tensor(const torch::Tensor&, torch::Tensor*)>;

/// The tag of each position of one entry's logits (L, C) that starts a word (word_start >= 0), -1
/// elsewhere: `decode` on those rows together, in order. With `probs`, their probabilities (L),
/// NaN elsewhere.
torch::Tensor decode_word_starts(const torch::Tensor& logits, const std::vector<int64_t>& word_start,
                                 const TagDecoder& decode, torch::Tensor* probs = nullptr);

/// One entry per window, in example order (EncodedExample::example says whose); word_start holds
/// the example's own word indices. An input that fits max_seq_length is one window, encoded with
/// `method` exactly as encode_examples() does. Longer inputs: windows of at most max_seq_length - 2
/// pieces ending on word boundaries, each next one starting about half a window later; a single
/// word longer than a window has a window of its own (cut after its first piece).
std::vector<EncodedExample> encode_word_windows(const Tokenizer& tokenizer, const std::vector<Example>& examples,
                                                int max_seq_length, TruncateMethod method);

/// Per word, its first piece's tag (decode_word_starts of each window) in the window where that
/// piece has the most pieces on its shorter side (the first such window on ties); nullopt for a
/// word that yields no piece. `windows` and `logits` (L, C) are the example's entries in order.
/// With `scores`, also each word's probability of that tag (NaN for a word without a piece).
std::vector<std::optional<int64_t>> word_window_predictions(const Example& example,
                                                            const std::vector<const EncodedExample*>& windows,
                                                            const std::vector<torch::Tensor>& logits,
                                                            std::vector<double>* scores = nullptr,
                                                            const TagDecoder& decode = {});

}  // namespace unif::framework
