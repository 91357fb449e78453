// The sentence-transformers files of a model directory: modules.json (Transformer, Pooling,
// Normalize), 1_Pooling/config.json, sentence_bert_config.json and config_sentence_transformers.json.
// An embedding model is saved with them beside its HF files (the Transformer module's path is the
// directory itself), so that SentenceTransformer(dir) loads it with its pooling and normalization and
// AutoModel.from_pretrained(dir) still reads it as a plain HF model; a pretrained directory's pooling
// and normalization are read back from them (model.pooling / model.normalize null).
//
// Example:
//   if (auto st = read_sentence_transformers(dir)) pooling = st->pooling.value_or("mean");
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace unif::framework {

struct SentenceTransformersModules {
  std::optional<std::string> pooling;     // mean | cls | max | lasttoken; nullopt without a Pooling module
  bool normalize = false;                 // a Normalize module follows the pooling
  std::optional<int64_t> max_seq_length;  // sentence_bert_config.json
  std::string similarity;                 // config_sentence_transformers.json similarity_fn_name ("" = absent)
};

/// The modules of the save in `dir` (modules.json at its root); nullopt when there is no modules.json.
/// UserError naming the file on invalid JSON or a pooling mode unif does not have (mean_sqrt_len,
/// weightedmean, or several modes at once).
std::optional<SentenceTransformersModules> read_sentence_transformers(const std::filesystem::path& dir);

/// Writes the sentence-transformers files of an embedding model into `dir`, whose HF files lie at its
/// root: `pooling` of `dimension`-wide token embeddings, a Normalize module when `normalize`.
void write_sentence_transformers(const std::filesystem::path& dir, const SentenceTransformersModules& modules,
                                 int64_t dimension);

}  // namespace unif::framework
