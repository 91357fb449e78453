// Model directories (SPEC §4): HF-compatible `config.json`, `vocab.txt`, `model.safetensors`, plus
// `unif.yaml`; complete only when the `COMPLETE` marker exists. Saving writes a temporary sibling
// directory and renames it into place. Loading also accepts a plain HF directory without unif.yaml
// (task from `architectures` + `problem_type`, labels from `id2label`, lower-casing from
// tokenizer_config.json, max_seq_length min(128, max_position_embeddings)).
#pragma once
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "framework/checkpoint/hf_config.h"
#include "framework/config/model_meta.h"
#include "framework/model/tokenizer_files.h"
#include "framework/text/tokenizer.h"
#include "models/heads/encoder_task_model.h"

namespace unif::framework {

struct LoadedModel {
  std::shared_ptr<models::EncoderTaskModel> model;
  HfConfig hf;
  ModelMeta meta;
  std::shared_ptr<const Tokenizer> tokenizer;
  TokenizerFiles tokenizer_files;  // the tokenizer and the files it was read from
};

/// The task of a plain HF model directory (no unif.yaml) whose config.json `file` holds `hf`:
/// models::task_from_hf, the rule load_pretrained also uses. UserError for a class that is no task
/// head (BertModel, ...): there is nothing to evaluate.
Task plain_hf_task(const HfConfig& hf, const std::filesystem::path& file);

/// The token types (segments) `task` with `text_fields` feeds a model: 2 for a sentence pair (two
/// text fields) and for span_extraction (question, context), else 1.
int64_t segment_count(Task task, const std::vector<std::string>& text_fields);

/// UserError unless a model with `type_vocab_size` token types takes the segments of `task` with
/// `text_fields` (a pair needs token types 0 and 1 in BERT-style models; pass
/// models::usable_token_types(options), which is unlimited for families whose pairs are all type 0). The message
/// names the fields as `fields_key` (e.g. "data.text_fields") and the model as `model_name` (e.g.
/// "the model (model.pretrained/config.json)").
void check_segments(Task task, const std::vector<std::string>& text_fields, const std::string& fields_key,
                    int64_t type_vocab_size, const std::string& model_name);

/// The HfConfig describing `model` (architecture, problem_type, labels, EncoderConfig), keeping the
/// other fields of `base` (e.g. a pretrained config's extra keys).
HfConfig describe_model(const models::EncoderTaskModel& model, const std::vector<std::string>& labels,
                        const HfConfig& base);

/// The files of one model directory (weights, config.json, tokenizer files, unif.yaml, a
/// sentence-transformers embedder's modules) into `dir` (created), without COMPLETE: what
/// save_model_dir writes, for a caller that saves several models in one directory.
void write_model_files(const std::filesystem::path& dir, const models::EncoderTaskModel& model, const HfConfig& hf,
                       const TokenizerFiles& tokenizer, const ModelMeta& meta);

/// Makes `dir` by write(tmp) into a temporary directory, then COMPLETE and an atomic replace, as
/// save_model_dir says below. UserError naming `dir` on a failed write.
void save_dir_atomically(const std::filesystem::path& dir,
                         const std::function<void(const std::filesystem::path&)>& write);

/// Writes the model files into `dir` (created); `extra` may add more files before COMPLETE is
/// written. Everything goes to `<dir>.tmp-<pid>` first and is fsynced (files, then the directory)
/// before COMPLETE is written; then `dir` is replaced atomically (renameat2 RENAME_EXCHANGE, else
/// two renames through `<dir>.old-<pid>`) and the parent directory is fsynced. When this returns,
/// `dir` is complete on the disk. UserError naming the file on any failed write (e.g. disk full).
void save_model_dir(const std::filesystem::path& dir, const models::EncoderTaskModel& model, const HfConfig& hf,
                    const TokenizerFiles& tokenizer, const ModelMeta& meta,
                    const std::function<void(const std::filesystem::path&)>& extra = {});

/// Loads a model directory (ours or plain HF) for evaluation or prediction. UserError on a
/// directory that is missing, incomplete (no COMPLETE marker while unif.yaml exists) or corrupt.
/// unpad_inputs: EncoderConfig::unpad_inputs of the built model (model.unpadded).
LoadedModel load_model_dir(const std::filesystem::path& dir, bool unpad_inputs = true);

/// Start-up clean-up of saves a kill interrupted, in `parent` (output_dir, checkpoints/): where a
/// directory X is missing but a complete `X.tmp-<pid>` or `X.old-<pid>` is there (killed between
/// the two renames of a replace), the newest complete one is renamed back to X; every other
/// `*.tmp-*` / `*.old-*` leftover is removed. Returns one line per restored directory. Only the run
/// that owns `parent` (see OutputDirLock) may call it.
std::vector<std::string> recover_interrupted_saves(const std::filesystem::path& parent);

/// Whether `dir` holds a COMPLETE marker.
bool is_complete(const std::filesystem::path& dir);

}  // namespace unif::framework
