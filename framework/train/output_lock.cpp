// output_lock: flock on <output_dir>/.lock. See output_lock.h.
#include "framework/train/output_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "framework/common/error.h"

namespace unif::framework {

OutputDirLock::OutputDirLock(const std::filesystem::path& dir) {
  const auto file = dir / ".lock";
  fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw UserError("output_dir: cannot create " + file.string() + ": " + std::strerror(errno));
  int rc;
  do rc = ::flock(fd_, LOCK_EX | LOCK_NB);
  while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int err = errno;
    char buf[32] = {};
    const auto n = ::pread(fd_, buf, sizeof buf - 1, 0);
    ::close(fd_);
    fd_ = -1;
    if (err != EWOULDBLOCK) throw UserError("output_dir: cannot lock " + file.string() + ": " + std::strerror(err));
    std::string pid = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
    pid = pid.substr(0, pid.find_first_not_of("0123456789"));
    throw UserError("output_dir '" + dir.string() + "' is in use by another unif run" +
                    (pid.empty() ? std::string() : " (pid " + pid + ")"));
  }
  const auto text = std::to_string(::getpid()) + "\n";
  // The pid is information for the message above only; failing to write it is not an error.
  if (::ftruncate(fd_, 0) == 0) [[maybe_unused]]
    const auto written = ::pwrite(fd_, text.data(), text.size(), 0);
}

OutputDirLock::~OutputDirLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace unif::framework
