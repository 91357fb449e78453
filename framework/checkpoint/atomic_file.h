// atomic_file: write a file through a temporary name in the same directory, renamed into place only
// when everything was written (SPEC §4: a reader never sees a half-written file). Internal to
// unif::checkpoint.
#pragma once
#include <filesystem>
#include <functional>
#include <ostream>

namespace unif::framework::detail {

/// Calls `write(out)` on a stream to `<file>.tmp-<pid>-<n>`, checks the stream, renames the
/// temporary over `file`. On any failure the temporary is removed and unif::UserError (naming
/// `file`) is thrown; exceptions thrown by `write` propagate after the clean-up.
void write_file_atomic(const std::filesystem::path& file, const std::function<void(std::ostream&)>& write);

}  // namespace unif::framework::detail
