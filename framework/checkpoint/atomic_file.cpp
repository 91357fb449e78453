// atomic_file: temporary file + fsync + rename + fsync of the directory. See atomic_file.h.
#include "framework/checkpoint/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <system_error>

#include "framework/common/error.h"

namespace unif::framework::detail {

namespace {

std::function<void(const std::filesystem::path&)>& sync_observer() {
  static std::function<void(const std::filesystem::path&)> observer;
  return observer;
}

}  // namespace

void set_sync_observer(std::function<void(const std::filesystem::path&)> observer) {
  sync_observer() = std::move(observer);
}

void sync_path(const std::filesystem::path& path) {
  if (sync_observer()) sync_observer()(path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw UserError("cannot sync " + path.string() + ": " + std::strerror(errno));
  int rc;
  do rc = ::fsync(fd);
  while (rc != 0 && errno == EINTR);
  const int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL && err != ENOTSUP)
    throw UserError("cannot sync " + path.string() + " to the disk: " + std::strerror(err));
}

void sync_dir_and_files(const std::filesystem::path& dir) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.is_regular_file(ec))
      sync_path(e.path());
    else if (e.is_directory(ec) && !e.is_symlink(ec))
      sync_dir_and_files(e.path());  // a save of several models: each in its folder
  }
  if (ec) throw UserError("cannot sync " + dir.string() + ": " + ec.message());
  sync_path(dir);
}

void write_file_atomic(const std::filesystem::path& file, const std::function<void(std::ostream&)>& write) {
  static std::atomic<unsigned> counter{0};
  std::filesystem::path tmp = file;
  tmp += ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  auto remove_tmp = [&] {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
  };
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      throw UserError("cannot write " + file.string() + ": cannot create " + tmp.string() + ": " +
                      std::strerror(errno));
    errno = 0;  // so that a failed write's errno names the cause below
    try {
      write(out);
    } catch (...) {
      out.close();
      remove_tmp();
      throw;
    }
    out.flush();
    out.close();
    if (!out) {
      const int err = errno;
      remove_tmp();
      throw UserError("cannot write " + file.string() + ": write failed" +
                      (err != 0 ? std::string(" (") + std::strerror(err) + ")" : std::string(" (disk full?)")));
    }
  }
  try {
    sync_path(tmp);
  } catch (...) {
    remove_tmp();
    throw;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, file, ec);
  if (ec) {
    remove_tmp();
    throw UserError("cannot write " + file.string() + ": rename failed: " + ec.message());
  }
  const auto parent = file.parent_path();
  sync_path(parent.empty() ? std::filesystem::path(".") : parent);
}

void write_text_file_atomic(const std::filesystem::path& file, const std::string& text) {
  write_file_atomic(file, [&](std::ostream& out) { out << text; });
}

}  // namespace unif::framework::detail
