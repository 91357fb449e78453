// output_lock: one run per output_dir. The run that writes output_dir (rank 0 of a multi-process
// run) holds an exclusive flock(2) on `<output_dir>/.lock` from Trainer construction to its end, so
// that a second `unif train` on the same directory fails before it touches anything (it would
// otherwise remove the live run's temporary saves as leftovers). The kernel drops the lock when the
// process ends, however it ends; the file itself stays and holds the owner's pid.
#pragma once
#include <filesystem>

namespace unif::framework {

class OutputDirLock {
 public:
  /// Takes the lock on `dir` (which exists). UserError "output_dir '<dir>' is in use by another unif
  /// run (pid N)" when another process holds it; UserError naming the lock file when it cannot be
  /// created.
  explicit OutputDirLock(const std::filesystem::path& dir);
  ~OutputDirLock();
  OutputDirLock(const OutputDirLock&) = delete;
  OutputDirLock& operator=(const OutputDirLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace unif::framework
