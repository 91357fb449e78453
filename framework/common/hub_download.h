// Downloading a model from the Hugging Face Hub into its cache (hub_cache.h), by huggingface_hub's
// routes and layout:
//   GET  {endpoint}/api/models/{repo_id}/revision/{revision}   -> {"sha": commit, "siblings": [...]}
//   HEAD {endpoint}/{repo_id}/resolve/{commit}/{file}          -> X-Repo-Commit, X-Linked-Etag or ETag,
//                                                                  X-Linked-Size or Content-Length
//   GET  the same URL (or the HEAD's redirect)                 -> the bytes; `Range:` resumes
// Each file goes to blobs/{etag} through blobs/{etag}.incomplete (kept when a transfer breaks off, and
// resumed by the next run), under huggingface_hub's lock .locks/{repo folder}/{etag}.lock; an LFS
// file (its etag a sha256) is checked against it. snapshots/{commit}/{file} is then a relative
// symbolic link to ../../blobs/{etag} and refs/{revision} holds the commit. Only what unif reads is
// fetched: config.json, the weights (model.safetensors, else pytorch_model.bin), the tokenizer files,
// a sentence-transformers repo's modules.json and module settings, unif.yaml and COMPLETE.
#pragma once
#include <filesystem>
#include <string>

#include "framework/common/error.h"

namespace unif::hub {

/// The Hub has no such model for us (404, or 401: private, gated or absent).
struct HubMissingError : UserError {
  using UserError::UserError;
};

/// Downloads what `cache` lacks of `repo_id` at `revision` (a branch, tag or commit) from
/// endpoint() with token(); returns the snapshot folder. Progress goes to stderr. UserError, one
/// line, on an unreachable endpoint, 401/403 (private or gated: set HF_TOKEN), 404 (no such model
/// or revision; a missing model as HubMissingError), a sharded checkpoint (unif reads one weights file), or a corrupt
/// download (no blob is kept).
std::filesystem::path download_model(const std::filesystem::path& cache, const std::string& repo_id,
                                     const std::string& revision);

/// The SHA-256 of a file's bytes as 64 lowercase hex digits (an LFS file's etag).
std::string sha256_file(const std::filesystem::path& file);

/// The SHA-256 of `bytes` as 64 lowercase hex digits.
std::string sha256_hex(const std::string& bytes);

}  // namespace unif::hub
