// atomic_file: write a file through a temporary name in the same directory, renamed into place only
// when everything was written and synced to the disk (SPEC §4: a reader never sees a half-written
// file, not even after a power loss). Internal to unif::checkpoint and unif::train.
#pragma once
#include <filesystem>
#include <functional>
#include <ostream>
#include <string>

namespace unif::framework::detail {

/// Calls `write(out)` on a stream to `<file>.tmp-<pid>-<n>`, checks the stream, fsyncs the
/// temporary, renames it over `file`, fsyncs the directory. On any failure the temporary is removed
/// and unif::UserError (naming `file`) is thrown; exceptions thrown by `write` propagate after the
/// clean-up.
void write_file_atomic(const std::filesystem::path& file, const std::function<void(std::ostream&)>& write);

/// write_file_atomic writing `text`.
void write_text_file_atomic(const std::filesystem::path& file, const std::string& text);

/// fsync(2) of a file or a directory (for a directory: its entries, i.e. renames into it). UserError
/// naming `path` on failure; a file system that cannot sync (EINVAL, ENOTSUP) is not an error.
void sync_path(const std::filesystem::path& path);

/// sync_path on every regular file in `dir` and (the same way) in its folders, then on `dir` itself.
void sync_dir_and_files(const std::filesystem::path& dir);

/// Test hook: `observer` is called with every path sync_path syncs, in order; empty = none.
void set_sync_observer(std::function<void(const std::filesystem::path&)> observer);

}  // namespace unif::framework::detail
