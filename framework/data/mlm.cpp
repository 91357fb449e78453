// Masked-language-model data: see mlm.h.
#include "framework/data/mlm.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "framework/common/error.h"
#include "framework/text/unicode.h"

namespace unif::framework {

namespace {

// SplitMix64: the same stream on every platform and standard library.
struct Stream {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }  // [0, 1)
  uint64_t below(uint64_t n) { return next() % n; }
};

Stream stream_for(uint64_t seed, int64_t epoch, int64_t index) {
  Stream s{seed * 0x9E3779B97F4A7C15ULL ^ 0x4D4C4D61736B73ULL};  // "MLMasks"
  s.state ^= s.next() + static_cast<uint64_t>(epoch) * 0xD1B54A32D192ED03ULL;
  s.state ^= s.next() + static_cast<uint64_t>(index) * 0x8CB92BA72F3D8DD7ULL;
  s.next();
  return s;
}

}  // namespace

std::vector<Example> read_mlm_examples(const std::filesystem::path& file, const DataConfig& data) {
  std::vector<Example> out;
  if (file.extension() != ".txt") {
    const std::string field = data.text_fields.at(0);
    for (const auto& r : read_records(file)) {
      const auto it = r.fields.find(field);
      if (it == r.fields.end() || !it->is_string())
        throw UserError(where(file, r) + "expected a text field '" + field + "' (data.text_fields) holding a string");
      Example ex;
      ex.texts = {it->get<std::string>()};
      out.push_back(std::move(ex));
    }
    return out;
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) throw UserError(file.string() + ": data file not found");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw UserError(file.string() + ": cannot open data file");
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (n == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // UTF-8 BOM
    if (line.find_first_not_of(" \t") == std::string::npos) continue;    // HF run_mlm: blank lines dropped
    if (const auto bad = unicode::invalid_utf8_at(line); bad != std::string::npos) {
      char byte[8];
      std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(line[bad]));
      throw UserError(file.string() + ":" + std::to_string(n) + ": invalid UTF-8 at byte " + std::to_string(bad + 1) +
                      " of the line (" + byte + "); data files must be UTF-8");
    }
    Example ex;
    ex.texts = {line};
    ex.id = std::to_string(n);
    out.push_back(std::move(ex));
  }
  return out;
}

std::vector<EncodedExample> encode_mlm_examples(const std::vector<Example>& examples, const Tokenizer& tokenizer,
                                                int64_t max_seq_length) {
  const int64_t cls = tokenizer.token_to_id(tokenizer.specials().cls);
  const int64_t sep = tokenizer.token_to_id(tokenizer.specials().sep);
  std::vector<EncodedExample> out(examples.size());
  for (size_t i = 0; i < examples.size(); ++i) {
    auto pieces = tokenizer.tokenize(examples[i].texts.at(0));
    const auto keep = static_cast<size_t>(std::max<int64_t>(0, max_seq_length - 2));
    if (pieces.size() > keep) pieces.resize(keep);
    auto ids = tokenizer.convert_tokens_to_ids(pieces);
    auto& e = out[i];
    e.example = static_cast<int64_t>(i);
    e.input_ids.push_back(cls);
    e.word_start.push_back(-1);
    int64_t word = -1;
    for (size_t p = 0; p < pieces.size(); ++p) {
      if (word < 0 || !tokenizer.continues_word(pieces[p])) ++word;
      e.input_ids.push_back(ids[p]);
      e.word_start.push_back(word);
    }
    e.input_ids.push_back(sep);
    e.word_start.push_back(-1);
    e.token_type_ids.assign(e.input_ids.size(), 0);
  }
  return out;
}

size_t whole_word_budget(size_t n, double probability) {
  // std::nearbyint rounds half to even in the default rounding mode, as Python's round.
  const double rounded = std::nearbyint(static_cast<double>(n) * probability);
  return std::min<size_t>(512, std::max<size_t>(1, static_cast<size_t>(rounded)));
}

int64_t masked_tokens(const std::vector<EncodedExample>& encoded, const MlmMasking& masking) {
  int64_t count = 0;
  std::vector<int64_t> ids, labels;
  for (size_t i = 0; i < encoded.size(); ++i) {
    mlm_mask(encoded[i], masking, kEvalEpoch, static_cast<int64_t>(i), ids, labels);
    for (auto y : labels) count += y != -100;
  }
  return count;
}

void mlm_mask(const EncodedExample& e, const MlmMasking& m, int64_t epoch, int64_t index, std::vector<int64_t>& ids,
              std::vector<int64_t>& labels) {
  const size_t n = e.input_ids.size();
  ids = e.input_ids;
  labels.assign(n, -100);
  auto rng = stream_for(m.seed, epoch, index);
  std::vector<bool> selected(n, false);
  if (!m.whole_word) {
    for (size_t p = 0; p < n; ++p)
      if (e.word_start[p] >= 0 && rng.uniform() < m.probability) selected[p] = true;
  } else {
    // HF DataCollatorForWholeWordMask._whole_word_mask: words shuffled, taken while the piece count
    // stays within round(n·p) (n counts [CLS]/[SEP], as HF's input_tokens), at least 1.
    std::vector<std::vector<size_t>> words;
    for (size_t p = 0; p < n; ++p) {
      if (e.word_start[p] < 0) continue;
      if (words.empty() || static_cast<int64_t>(words.size()) - 1 < e.word_start[p]) words.emplace_back();
      words.back().push_back(p);
    }
    for (size_t i = words.size(); i > 1; --i) std::swap(words[i - 1], words[rng.below(i)]);
    const auto budget = whole_word_budget(n, m.probability);
    size_t taken = 0;
    for (const auto& w : words) {
      if (taken >= budget) break;
      if (taken + w.size() > budget) continue;
      for (size_t p : w) selected[p] = true;
      taken += w.size();
    }
  }
  for (size_t p = 0; p < n; ++p) {
    if (!selected[p]) continue;
    labels[p] = e.input_ids[p];
    if (rng.uniform() < 0.8)
      ids[p] = m.mask_id;  // 80% [MASK]
    else if (rng.uniform() < 0.5)
      ids[p] = static_cast<int64_t>(rng.below(static_cast<uint64_t>(m.vocab_size)));  // 10% random
    // else 10%: kept
  }
}

models::Batch collate_mlm(const std::vector<EncodedExample>& encoded, const std::vector<int64_t>& indices,
                          const MlmMasking& masking, int64_t epoch) {
  const auto B = static_cast<int64_t>(indices.size());
  int64_t L = 0;
  for (auto i : indices)
    L = std::max<int64_t>(L, static_cast<int64_t>(encoded[static_cast<size_t>(i)].input_ids.size()));
  auto i64 = torch::TensorOptions().dtype(torch::kInt64);
  auto ids = torch::zeros({B, L}, i64), types = torch::zeros({B, L}, i64), mask = torch::zeros({B, L}, i64);
  auto labels = torch::full({B, L}, -100, i64);
  auto ids_a = ids.accessor<int64_t, 2>(), mask_a = mask.accessor<int64_t, 2>(),
       labels_a = labels.accessor<int64_t, 2>();
  torch::Tensor uniforms;
  if (masking.uniforms) uniforms = torch::zeros({B, L}, torch::kFloat64);
  std::vector<int64_t> row_ids, row_labels;
  for (int64_t b = 0; b < B; ++b) {
    const auto index = indices[static_cast<size_t>(b)];
    mlm_mask(encoded[static_cast<size_t>(index)], masking, epoch, index, row_ids, row_labels);
    for (size_t l = 0; l < row_ids.size(); ++l) {
      ids_a[b][static_cast<int64_t>(l)] = row_ids[l];
      labels_a[b][static_cast<int64_t>(l)] = row_labels[l];
      mask_a[b][static_cast<int64_t>(l)] = 1;
    }
    if (masking.uniforms) {  // a stream of its own: the masks are those of masked_lm
      Stream rng = stream_for(masking.seed ^ 0x53616D706C6573ULL, epoch, index);  // "Samples"
      auto u = uniforms.accessor<double, 2>();
      for (size_t l = 0; l < row_ids.size(); ++l) u[b][static_cast<int64_t>(l)] = rng.uniform();
    }
  }
  models::Batch batch;
  batch.input_ids = ids;
  batch.token_type_ids = types;
  batch.attention_mask = mask;
  batch.labels = labels;
  batch.uniforms = uniforms;
  return batch;
}

}  // namespace unif::framework
