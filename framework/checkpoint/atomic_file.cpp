// atomic_file: temporary file + rename. See atomic_file.h.
#include "framework/checkpoint/atomic_file.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <system_error>

#include "framework/common/error.h"

namespace unif::framework::detail {

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
      remove_tmp();
      throw UserError("cannot write " + file.string() + ": write failed (disk full?)");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, file, ec);
  if (ec) {
    remove_tmp();
    throw UserError("cannot write " + file.string() + ": rename failed: " + ec.message());
  }
}

}  // namespace unif::framework::detail
