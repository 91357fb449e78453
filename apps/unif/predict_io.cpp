// `unif predict`'s input and output ends: see predict_io.h.
#include "apps/unif/predict_io.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <stdexcept>

#include "framework/common/error.h"

namespace unif::app {

namespace fs = std::filesystem;

// A read buffer over a file descriptor: whether a line is waiting is a question about it.
class PredictInput::Buffer : public std::streambuf {
 public:
  explicit Buffer(int fd) : fd_(fd), data_(1 << 16) { setg(data_.data(), data_.data(), data_.data()); }

  bool line_ready() {
    if (gptr() < egptr() && std::memchr(gptr(), '\n', static_cast<size_t>(egptr() - gptr())) != nullptr) return true;
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0;  // data, or the end (POLLHUP): either way reading does not wait
  }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    ssize_t n;
    do n = ::read(fd_, data_.data(), data_.size());
    while (n < 0 && errno == EINTR);
    if (n < 0) throw std::runtime_error(std::strerror(errno));  // the stream turns it into badbit
    if (n == 0) return traits_type::eof();
    setg(data_.data(), data_.data(), data_.data() + n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  int fd_;
  std::vector<char> data_;
};

PredictInput::PredictInput(const std::string& input) : stream_(nullptr) {
  if (input == "-") {
    fd_ = 0;
    name_ = "stdin";
  } else {
    std::error_code ec;
    if (!fs::exists(input, ec)) throw UserError(input + ": data file not found");
    if (fs::is_directory(input, ec)) throw UserError("--input: '" + input + "' is a directory, not a file");
    fd_ = ::open(input.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw UserError(input + ": cannot open data file (" + std::strerror(errno) + ")");
    owns_fd_ = true;
    name_ = input;
    // The formats data files come in (.tsv, .csv, .conll/.bio/.iob); anything else is read as JSONL,
    // as predict always has (a pipe, /dev/stdin, a file named .txt).
    try {
      format_ = framework::record_format_of(input);
    } catch (const UserError&) { format_ = framework::RecordFormat::Jsonl; }
  }
  struct stat st {};
  interactive_ = ::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode);
  buffer_ = std::make_unique<Buffer>(fd_);
  stream_.rdbuf(buffer_.get());
}

PredictInput::~PredictInput() {
  if (owns_fd_) ::close(fd_);
}

bool PredictInput::line_ready() { return buffer_->line_ready(); }

namespace {

// A path that names one of this process's descriptors (/dev/stdout leads to /proc/self/fd/1).
bool names_a_descriptor(const fs::path& p) {
  const auto s = p.lexically_normal().string();
  return s.rfind("/proc/", 0) == 0 || s.rfind("/dev/fd/", 0) == 0;
}

// PATH.tmp while it exists, for a Ctrl-C (or SIGTERM) that ends the process before the destructor
// runs: the handler removes it, then hands the signal to the handler it replaced (main's note and
// exit) or to the default action.
char g_tmp[4096];
using SignalHandler = void (*)(int);
SignalHandler g_previous_int = SIG_DFL, g_previous_term = SIG_DFL;

extern "C" void remove_tmp_on_signal(int sig) {
  if (g_tmp[0] != '\0') ::unlink(g_tmp);
  const SignalHandler previous = sig == SIGINT ? g_previous_int : g_previous_term;
  if (previous == SIG_IGN) return;
  if (previous != SIG_DFL && previous != SIG_ERR) {
    previous(sig);
    return;
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void watch_tmp(const fs::path& tmp) {
  const auto s = tmp.string();
  if (s.size() >= sizeof g_tmp) return;
  std::memcpy(g_tmp, s.c_str(), s.size() + 1);
  g_previous_int = std::signal(SIGINT, remove_tmp_on_signal);
  g_previous_term = std::signal(SIGTERM, remove_tmp_on_signal);
}

void unwatch_tmp() {
  if (g_tmp[0] == '\0') return;
  std::signal(SIGINT, g_previous_int);
  std::signal(SIGTERM, g_previous_term);
  g_tmp[0] = '\0';
}

bool is_standard_output(const fs::path& p) {
  const auto s = p.lexically_normal().string();
  return s == "/proc/self/fd/1" || s == "/dev/fd/1" || s == "/proc/" + std::to_string(::getpid()) + "/fd/1";
}

}  // namespace

PredictOutput::PredictOutput(const std::string& output) {
  if (output.empty() || output == "-") {
    shown_ = "standard output";
    out_ = &std::cout;
    return;
  }
  shown_ = output;
  // Follow symlinks one by one: the file written is the one they lead to.
  fs::path p = output;
  bool in_place = false;
  for (int hops = 0;; ++hops) {
    if (names_a_descriptor(p)) {
      in_place = true;
      break;
    }
    std::error_code ec;
    if (fs::symlink_status(p, ec).type() != fs::file_type::symlink) break;
    if (hops == 40) throw UserError("--output: '" + output + "': too many levels of symbolic links");
    const fs::path to = fs::read_symlink(p, ec);
    if (ec) throw UserError("--output: cannot read the link '" + p.string() + "': " + ec.message());
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
  if (in_place && is_standard_output(p)) {
    out_ = &std::cout;
    return;
  }
  std::error_code ec;
  const auto st = fs::status(p, ec);
  if (!in_place) {
    if (st.type() == fs::file_type::directory) throw UserError("--output: '" + output + "' is a directory");
    in_place = fs::exists(st) && st.type() != fs::file_type::regular;  // a FIFO, a device, a socket
  }
  if (in_place) {
    file_.open(p, std::ios::binary | std::ios::app);  // O_APPEND: nothing truncated
    if (!file_) throw UserError("--output: cannot write '" + output + "'");
    out_ = &file_;
    return;
  }
  target_ = p;
  tmp_ = p.string() + ".tmp";
  watch_tmp(tmp_);
  file_.open(tmp_, std::ios::binary | std::ios::trunc);
  if (!file_) {
    fs::remove(tmp_, ec);
    tmp_.clear();
    unwatch_tmp();
    throw UserError("--output: cannot write '" + output + "'" +
                    (target_.string() != output ? " (a link to '" + target_.string() + "')" : ""));
  }
  if (fs::is_regular_file(st)) fs::permissions(tmp_, st.permissions(), ec);  // the file replaced keeps its mode
  out_ = &file_;
}

PredictOutput::~PredictOutput() {
  if (tmp_.empty()) return;
  file_.close();
  std::error_code ec;
  fs::remove(tmp_, ec);
  unwatch_tmp();
}

void PredictOutput::flush() {
  out_->flush();
  if (!*out_) throw UserError("--output: write to '" + shown_ + "' failed");
}

void PredictOutput::commit() {
  flush();
  if (tmp_.empty()) return;
  file_.close();
  if (!file_) throw UserError("--output: write to '" + shown_ + "' failed");
  std::error_code ec;
  fs::rename(tmp_, target_, ec);
  if (ec) throw UserError("--output: cannot move the finished output to '" + target_.string() + "': " + ec.message());
  tmp_.clear();
  unwatch_tmp();
}

}  // namespace unif::app
