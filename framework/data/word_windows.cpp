// Token-classification windows: see word_windows.h.
#include "framework/data/word_windows.h"

#include <algorithm>
#include <limits>

namespace unif::framework {

namespace {

EncodedExample from_encoding(WordEncoding enc, int64_t example, size_t first_word) {
  EncodedExample e;
  e.example = example;
  e.input_ids = std::move(enc.input_ids);
  e.token_type_ids = std::move(enc.token_type_ids);
  e.word_start = std::move(enc.word_start);
  for (auto& w : e.word_start)
    if (w >= 0) w += static_cast<int64_t>(first_word);
  e.token_labels.assign(e.input_ids.size(), -100);  // predict: no labels
  return e;
}

}  // namespace

std::vector<EncodedExample> encode_word_windows(const Tokenizer& tokenizer, const std::vector<Example>& examples,
                                                int max_seq_length, TruncateMethod method) {
  std::vector<EncodedExample> out;
  const size_t budget = static_cast<size_t>(std::max(max_seq_length, 3)) - 2;
  for (size_t x = 0; x < examples.size(); ++x) {
    const auto& words = examples[x].texts;
    std::vector<size_t> pieces(words.size());
    size_t total = 0;
    for (size_t w = 0; w < words.size(); ++w)
      total += pieces[w] = tokenizer.tokenize_with_offsets(words[w]).tokens.size();
    if (total <= budget) {
      out.push_back(
          from_encoding(encode_words(tokenizer, words, max_seq_length, method, false), static_cast<int64_t>(x), 0));
      continue;
    }
    const size_t stride = std::max<size_t>(1, budget / 2);
    for (size_t start = 0;;) {
      size_t end = start, used = 0;
      while (end < words.size() && (end == start || used + pieces[end] <= budget)) used += pieces[end++];
      // LIFO: a lone word longer than the window keeps its first piece.
      out.push_back(
          from_encoding(encode_words(tokenizer,
                                     std::vector<std::string>(words.begin() + static_cast<std::ptrdiff_t>(start),
                                                              words.begin() + static_cast<std::ptrdiff_t>(end)),
                                     max_seq_length, TruncateMethod::LIFO, false),
                        static_cast<int64_t>(x), start));
      if (end == words.size()) break;
      // The next window starts at least `stride` pieces later, and late enough to reach word `end`.
      size_t next = start, dropped = 0, kept = used;
      while (next < end && (dropped < stride || kept + pieces[end] > budget)) {
        dropped += pieces[next];
        kept -= pieces[next++];
      }
      start = next;
    }
  }
  return out;
}

torch::Tensor decode_word_starts(const torch::Tensor& logits, const std::vector<int64_t>& word_start,
                                 const TagDecoder& decode, torch::Tensor* probs) {
  const int64_t l = logits.size(0);
  std::vector<int64_t> rows;
  for (int64_t p = 0; p < l && p < static_cast<int64_t>(word_start.size()); ++p)
    if (word_start[static_cast<size_t>(p)] >= 0) rows.push_back(p);
  auto tags = torch::full({l}, -1, torch::kLong);
  if (probs) *probs = torch::full({l}, std::numeric_limits<double>::quiet_NaN(), torch::kDouble);
  if (rows.empty()) return tags;
  const auto index = torch::tensor(rows, torch::kLong);
  const auto emissions = logits.index_select(0, index);
  torch::Tensor chosen, p;
  if (decode) {
    chosen = decode(emissions, probs ? &p : nullptr);
  } else {
    chosen = emissions.argmax(-1);
    if (probs) p = emissions.to(torch::kDouble).softmax(-1).gather(1, chosen.unsqueeze(1)).squeeze(1);
  }
  tags.index_copy_(0, index, chosen.to(torch::kLong).cpu());
  if (probs) probs->index_copy_(0, index, p.to(torch::kDouble).cpu());
  return tags;
}

std::vector<std::optional<int64_t>> word_window_predictions(const Example& example,
                                                            const std::vector<const EncodedExample*>& windows,
                                                            const std::vector<torch::Tensor>& logits,
                                                            std::vector<double>* scores, const TagDecoder& decode) {
  std::vector<std::optional<int64_t>> out(example.texts.size());
  if (scores) scores->assign(example.texts.size(), std::numeric_limits<double>::quiet_NaN());
  std::vector<int64_t> best(example.texts.size(), -1);  // the context of the window each tag came from
  for (size_t k = 0; k < windows.size(); ++k) {
    const auto& starts = windows[k]->word_start;
    torch::Tensor probs;
    const auto arg = decode_word_starts(logits[k], starts, decode, scores ? &probs : nullptr);
    const auto a = arg.accessor<int64_t, 1>();
    const auto pieces = static_cast<int64_t>(starts.size()) - 2;  // without [CLS] and [SEP]
    for (size_t p = 0; p < starts.size() && static_cast<int64_t>(p) < arg.size(0); ++p) {
      if (starts[p] < 0) continue;
      const auto w = static_cast<size_t>(starts[p]);
      const int64_t before = static_cast<int64_t>(p) - 1, context = std::min(before, pieces - 1 - before);
      if (context > best[w]) {
        best[w] = context;
        out[w] = a[static_cast<int64_t>(p)];
        if (scores) (*scores)[w] = probs[static_cast<int64_t>(p)].item<double>();
      }
    }
  }
  return out;
}

}  // namespace unif::framework
