// Test helper: runs a function in a forked child, optionally under an address-space limit, and
// reports how it ended. Tests of crash and memory defects use it so that, before the fix, they fail
// with a message ("killed by signal 11", an out-of-memory error) instead of killing the test
// binary or taking the machine's memory.
#pragma once
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <functional>
#include <string>

#include "framework/common/error.h"

namespace unif::test {

struct ChildOutcome {
  int signal = 0;      // the signal that killed the child, 0 if it exited
  std::string result;  // "ok: <what fn returned>", "error: <UserError>" or "exception: <what>"
  std::string describe() const {
    return signal ? "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")" : result;
  }
};

/// Bytes of address space this process has mapped now (/proc/self/statm).
inline size_t mapped_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0;
  statm >> pages;
  return pages * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

/// Runs `fn` in a child process. With `extra_bytes` > 0 the child may map at most that much more
/// address space than the parent has now (RLIMIT_AS), so an allocation beyond it fails there.
inline ChildOutcome run_in_child(const std::function<std::string()>& fn, size_t extra_bytes = 0) {
  int fds[2];
  if (pipe(fds) != 0) return {0, "exception: pipe failed"};
  const size_t limit = extra_bytes ? mapped_bytes() + extra_bytes : 0;
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return {0, "exception: fork failed"};
  }
  if (pid == 0) {
    close(fds[0]);
    // Die of the signal itself: Catch2's handler would allocate, and a stack overflow inside
    // malloc leaves its lock held (the child would hang instead of being reported).
    for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE}) signal(sig, SIG_DFL);
    if (limit) {
      rlimit rl{limit, limit};
      setrlimit(RLIMIT_AS, &rl);
    }
    std::string out;
    try {
      out = "ok: " + fn();
    } catch (const unif::UserError& e) { out = std::string("error: ") + e.what(); } catch (const std::exception& e) {
      out = std::string("exception: ") + e.what();
    }
    for (size_t done = 0; done < out.size();) {
      const ssize_t w = write(fds[1], out.data() + done, out.size() - done);
      if (w <= 0) break;
      done += static_cast<size_t>(w);
    }
    _exit(0);
  }
  close(fds[1]);
  ChildOutcome outcome;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) outcome.result.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) outcome.signal = WTERMSIG(status);
  return outcome;
}

}  // namespace unif::test
