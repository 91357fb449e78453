// Models by Hub name through the Hugging Face cache on disk, laid out as huggingface_hub lays it out,
// so that Python and unif share one cache. `model.pretrained`, `distill.teacher` and `--model` take
// a directory, or a Hub id ("org/name", "name") that is not one: the id resolves to
//   <cache>/models--org--name/snapshots/<commit>/          (files: symbolic links into ../../blobs/)
// where <commit> is <cache>/models--org--name/refs/<revision>'s content, or the revision itself when
// it is a 40-hex commit hash. What the cache lacks is downloaded from the Hub (hub_download.h) unless
// HF_HUB_OFFLINE is set.
//
// Environment, as huggingface_hub reads it: the cache is $HF_HUB_CACHE, else $HUGGINGFACE_HUB_CACHE,
// else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub;
// HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) = 1/ON/YES/TRUE: no network; HF_ENDPOINT (default
// https://huggingface.co); HF_TOKEN (or HUGGING_FACE_HUB_TOKEN), else the file $HF_TOKEN_PATH or
// $HF_HOME/token.
//
// Example:
//   auto dir = unif::resolve_model("sentence-transformers/all-MiniLM-L6-v2", "main", "--model");
//   // ~/.cache/huggingface/hub/models--sentence-transformers--all-MiniLM-L6-v2/snapshots/<sha>
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace unif {

namespace hub {

/// The cache folder (see above); `~` and `$VAR` in the variables are expanded.
std::filesystem::path cache_dir();
/// HF_HUB_OFFLINE (else TRANSFORMERS_OFFLINE) is 1, ON, YES or TRUE (any case).
bool offline();
/// $HF_ENDPOINT without trailing slashes, else https://huggingface.co.
std::string endpoint();
/// The access token: $HF_TOKEN, $HUGGING_FACE_HUB_TOKEN, else the token file; nullopt when none.
std::optional<std::string> token();

/// huggingface_hub's repo id rule: "name" or "namespace/name", each 1 to 96 of [A-Za-z0-9_.-],
/// starting and ending with a letter, digit or '_', no "--" or "..", not ending in ".git".
bool is_repo_id(const std::string& s);
/// 40 lowercase hex digits: a commit, not a branch or tag.
bool is_commit_hash(const std::string& s);
/// A branch, tag or commit name the cache's refs/ folder can hold: not empty, no leading, trailing
/// or doubled '/', no "." or ".." part, no space, control character or backslash.
bool is_revision(const std::string& s);
/// "models--org--name": the repo's folder in the cache.
std::string repo_folder(const std::string& repo_id);

/// The snapshot folder of `repo_id` at `revision` in `cache` when it exists: refs/<revision>'s commit
/// (or `revision` itself when it is a commit hash). nullopt when the ref or the folder is missing.
std::optional<std::filesystem::path> cached_snapshot(const std::filesystem::path& cache, const std::string& repo_id,
                                                     const std::string& revision);

/// What a snapshot folder lacks for unif to load a model from it, relative names ("config.json",
/// "model.safetensors or pytorch_model.bin", "a tokenizer file (...)", "1_Pooling/config.json");
/// empty when it has all it needs.
std::vector<std::string> missing_model_files(const std::filesystem::path& snapshot);

}  // namespace hub

/// Whether `given` is taken as a Hub id: not a directory, not a path (a leading `/`, `./`, `../`,
/// `~`, `$UNIF_HOME`), and a valid repo id.
bool is_hub_model_name(const std::string& given);

/// The model directory `given` names: a path (with $UNIF_HOME and ~/ expanded, hf_dir.h) as is;
/// a Hub id through the cache, downloaded (the files unif needs) when the cache lacks them and
/// HF_HUB_OFFLINE is not set. UserError, a one-line message starting with `what` ("--model",
/// "model.pretrained"), when the model is not cached and cannot be downloaded.
std::string resolve_model(const std::string& given, const std::string& revision = "main",
                          const std::string& what = "--model");

}  // namespace unif
