// ProcessGroup: torchrun environment parsing, TCPStore rendezvous and the Gloo collectives behind
// a small blocking API. See process_group.h.
//
// USE_C10D_GLOO must be defined before ProcessGroupGloo.hpp (Debian's libtorch_cpu.so is built with
// Gloo and exports c10d::ProcessGroupGloo, but its headers hide the class without the macro); it
// is set for this file only in framework/parallel/CMakeLists.txt.
#include "framework/parallel/process_group.h"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef UNIF_WITH_NCCL
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "framework/common/error.h"

namespace unif::framework {

namespace {

// The variable's value, or nullopt when unset or empty.
std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

int64_t parse_int(const char* name, const std::string& v, int64_t lo, int64_t hi, const std::string& expected) {
  errno = 0;
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || end != v.c_str() + v.size() || errno != 0 || x < lo || x > hi)
    throw UserError(std::string(name) + "='" + v + "': expected " + expected);
  return x;
}

bool is_loopback(const std::string& addr) { return addr == "localhost" || addr == "::1" || addr.rfind("127.", 0) == 0; }

// Waits until a TCP connection to host:port succeeds (the store is listening), or the deadline.
// Clients poll here before constructing the TCPStore client, so that a rank started before rank 0
// listens waits with our own bounded retry and error message (while debugging, ranks that started
// early timed out inside the 1.13 client although rank 0 came up later; the cause was not pinned
// down, and this poll is harmless either way).
bool wait_for_listener(const std::string& host, uint16_t port, std::chrono::milliseconds timeout,
                       std::string& last_error) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  const std::string service = std::to_string(port);
  for (;;) {
    addrinfo* found = nullptr;
    const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
    if (rc != 0) {
      last_error = std::string("cannot resolve ") + host + ": " + ::gai_strerror(rc);
    } else {
      for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
        const int fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd < 0) continue;
        timeval tv{1, 0};  // one attempt never blocks longer than a second
        ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        const bool ok = ::connect(fd, a->ai_addr, a->ai_addrlen) == 0;
        if (!ok) last_error = std::strerror(errno);
        ::close(fd);
        if (ok) {
          ::freeaddrinfo(found);
          return true;
        }
      }
      ::freeaddrinfo(found);
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace

std::optional<DistEnv> read_dist_env() {
  const auto world = env("WORLD_SIZE");
  if (!world) return std::nullopt;
  DistEnv e;
  e.world_size = parse_int("WORLD_SIZE", *world, 1, 1 << 20, "the number of processes, an integer >= 1");
  if (const auto rank = env("RANK"))
    e.rank = parse_int("RANK", *rank, 0, e.world_size - 1,
                       "this process's rank, an integer in 0..WORLD_SIZE-1 = 0.." + std::to_string(e.world_size - 1));
  else if (e.world_size > 1)
    throw UserError("RANK: not set but WORLD_SIZE=" + *world +
                    "; set RANK (and MASTER_ADDR, MASTER_PORT) for "
                    "every process, or launch with torchrun");
  if (e.world_size == 1) return std::nullopt;
  e.local_rank = e.rank;
  if (const auto local = env("LOCAL_RANK"))
    e.local_rank = parse_int("LOCAL_RANK", *local, 0, e.world_size - 1, "an integer in 0..WORLD_SIZE-1");
  if (const auto addr = env("MASTER_ADDR")) e.master_addr = *addr;
  if (const auto port = env("MASTER_PORT"))
    e.master_port = static_cast<uint16_t>(parse_int("MASTER_PORT", *port, 1, 65535, "a TCP port, 1..65535"));
  const auto seconds_var = [&](const char* name, std::chrono::milliseconds& out) {
    const auto t = env(name);
    if (!t) return;
    char* end = nullptr;
    const double s = std::strtod(t->c_str(), &end);
    if (end != t->c_str() + t->size() || !(s > 0) || s > 1e7)
      throw UserError(std::string(name) + "='" + *t + "': expected a positive number of seconds");
    out = std::chrono::milliseconds(static_cast<int64_t>(s * 1000.0 + 0.5));
  };
  seconds_var("UNIF_DIST_TIMEOUT", e.timeout);
  seconds_var("UNIF_DIST_SAVE_TIMEOUT", e.save_timeout);
  e.agent_store = env("TORCHELASTIC_USE_AGENT_STORE").value_or("") == "True";
  if (const auto restarts = env("TORCHELASTIC_RESTART_COUNT"))
    e.restart_count = parse_int("TORCHELASTIC_RESTART_COUNT", *restarts, 0, 1 << 30, "an integer >= 0");
  return e;
}

struct ProcessGroup::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo;
#ifdef UNIF_WITH_NCCL
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> nccl;  // after use_nccl()
#endif
  /// Runs f(backend) with the backend for `t`: NCCL for a CUDA tensor once use_nccl() ran, else
  /// Gloo (a generic f: the two classes share no base across LibTorch 1.13 and 2.x).
  template <class F>
  void with_backend(const torch::Tensor& t, F&& f) {
#ifdef UNIF_WITH_NCCL
    if (nccl && t.is_cuda()) return f(*nccl);
#else
    (void)t;
#endif
    f(*gloo);
  }
};

namespace {

std::string seconds(std::chrono::milliseconds t) {
  const double s = static_cast<double>(t.count()) / 1000.0;
  std::string out = std::to_string(s);
  out.erase(out.find_last_not_of('0') + 1);
  if (!out.empty() && out.back() == '.') out.pop_back();
  return out + " s";
}

// Runs `op`, turning any failure into a DistributedError that names the rank and the operation.
template <class F>
void guarded(const DistEnv& e, const std::string& what, F&& op) {
  const std::string where =
      "distributed rank " + std::to_string(e.rank) + " of " + std::to_string(e.world_size) + ": " + what + " failed";
  const std::string hint =
      " (another rank exited, failed or did not answer within UNIF_DIST_TIMEOUT = " + seconds(e.timeout) +
      "; see its own error)";
  try {
    op();
  } catch (const DistributedError&) { throw; } catch (const c10::Error& x) {
    throw DistributedError(where + ": " + x.what_without_backtrace() + hint);
  } catch (const std::exception& x) { throw DistributedError(where + ": " + x.what() + hint); }
}

}  // namespace

std::shared_ptr<ProcessGroup> ProcessGroup::join(const DistEnv& e) {
  auto impl = std::make_unique<Impl>();
  const std::string where = "distributed rank " + std::to_string(e.rank) + " of " + std::to_string(e.world_size) + ": ";
  const auto t0 = std::chrono::steady_clock::now();
  std::string why;
  const bool serve = e.rank == 0 && !e.agent_store;
  if (!serve && !wait_for_listener(e.master_addr, e.master_port, e.timeout, why))
    throw DistributedError(where + "rendezvous at MASTER_ADDR:MASTER_PORT = " + e.master_addr + ":" +
                           std::to_string(e.master_port) +
                           " failed: " + (e.agent_store ? "the torchrun agent" : "rank 0") + " did not listen within " +
                           seconds(e.timeout) + " (" + why +
                           "; is rank 0 started, and are MASTER_ADDR / MASTER_PORT the same for every rank?)");
  try {
    c10d::TCPStoreOptions so;
    so.port = e.master_port;
    so.isServer = serve;
    so.numWorkers = static_cast<size_t>(e.world_size);
    // Every rank counts itself in (1.13 does it in waitForWorkers) and rank 0 waits for all; a
    // torchrun agent's store expects no such count.
    so.waitWorkers = !e.agent_store;
    so.timeout = std::max(
        std::chrono::milliseconds(1000),
        e.timeout - std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0));
    c10::intrusive_ptr<c10d::Store> tcp = c10::make_intrusive<c10d::TCPStore>(e.master_addr, so);
    impl->store = c10::make_intrusive<c10d::PrefixStore>("unif/" + std::to_string(e.restart_count), tcp);
  } catch (const std::exception& x) {
    const std::string msg = dynamic_cast<const c10::Error*>(&x)
                                ? static_cast<const c10::Error&>(x).what_without_backtrace()
                                : std::string(x.what());
    throw DistributedError(where + "rendezvous at MASTER_ADDR:MASTER_PORT = " + e.master_addr + ":" +
                           std::to_string(e.master_port) + " failed within " + seconds(e.timeout) + ": " + msg +
                           " (are all WORLD_SIZE processes started, and is the port free on rank 0's host?)");
  }
  guarded(e, "rendezvous (connecting Gloo to every rank)", [&] {
    auto options = c10d::ProcessGroupGloo::Options::create(e.timeout);
    if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname != nullptr && *ifname != '\0')
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
    else if (is_loopback(e.master_addr))
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    else
      options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    options->threads = 2;
    impl->gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(impl->store, static_cast<int>(e.rank),
                                                             static_cast<int>(e.world_size), options);
  });
  return std::shared_ptr<ProcessGroup>(new ProcessGroup(e, std::move(impl)));
}

ProcessGroup::ProcessGroup(DistEnv env, std::unique_ptr<Impl> impl) : env_(std::move(env)), impl_(std::move(impl)) {}

ProcessGroup::~ProcessGroup() = default;

void ProcessGroup::use_nccl(const torch::Device& device) {
  if (nccl_) return;
#ifdef UNIF_WITH_NCCL
  guarded(env_, "opening the NCCL process group on " + device.str(), [&] {
    c10::cuda::set_device(device.index());
    // Blocking waits honour the options' timeout and throw; without them NCCL's watchdog would
    // abort the process on a dead peer instead of letting it say so.
    ::setenv("TORCH_NCCL_BLOCKING_WAIT", "1", /*overwrite=*/0);
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = env_.timeout;
    impl_->nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(
        c10::make_intrusive<c10d::PrefixStore>("nccl", impl_->store), static_cast<int>(env_.rank),
        static_cast<int>(env_.world_size), options);
  });
  nccl_ = true;
#else
  throw UserError("parallel.devices: " + device.str() +
                  " in a multi-process job needs a LibTorch with NCCL; this one "
                  "has none (use cpu devices, which use Gloo)");
#endif
}

void ProcessGroup::all_reduce_sum(torch::Tensor& t) {
  guarded(env_, "all-reduce (sum) of " + std::to_string(t.numel()) + " values", [&] {
    std::vector<torch::Tensor> ts{t};
    impl_->with_backend(t, [&](auto& pg) { pg.allreduce(ts, c10d::AllreduceOptions{})->wait(); });
  });
}

void ProcessGroup::all_reduce_max(torch::Tensor& t) {
  guarded(env_, "all-reduce (max)", [&] {
    std::vector<torch::Tensor> ts{t};
    c10d::AllreduceOptions o;
    o.reduceOp = c10d::ReduceOp::MAX;
    impl_->with_backend(t, [&](auto& pg) { pg.allreduce(ts, o)->wait(); });
  });
}

std::vector<torch::Tensor> ProcessGroup::all_gather(const torch::Tensor& t) {
  std::vector<torch::Tensor> out;
  guarded(env_, "all-gather of " + std::to_string(t.numel()) + " values", [&] {
    std::vector<std::vector<torch::Tensor>> outputs(1);
    for (int64_t r = 0; r < env_.world_size; ++r) outputs[0].push_back(torch::empty_like(t));
    std::vector<torch::Tensor> inputs{t.contiguous()};
    impl_->with_backend(t, [&](auto& pg) { pg.allgather(outputs, inputs)->wait(); });
    out = std::move(outputs[0]);
  });
  return out;
}

void ProcessGroup::broadcast(std::vector<torch::Tensor>& tensors, int64_t root) {
  guarded(env_, "broadcast from rank " + std::to_string(root), [&] {
    for (auto& t : tensors) {  // one call per tensor: Gloo wants same-typed, same-shaped inputs per call
      std::vector<torch::Tensor> ts{t};
      c10d::BroadcastOptions o;
      o.rootRank = root;
      impl_->with_backend(t, [&](auto& pg) { pg.broadcast(ts, o)->wait(); });
    }
  });
}

void ProcessGroup::barrier() {
  guarded(env_, "barrier", [&] { impl_->gloo->barrier()->wait(); });
}

bool ProcessGroup::any(bool mine) {
  auto flag = torch::tensor({mine ? int64_t{1} : int64_t{0}}, torch::kInt64);
  all_reduce_max(flag);
  return flag[0].item<int64_t>() != 0;
}

void ProcessGroup::writer_done() {
  const std::string key = "writer-done/" + std::to_string(writes_++);
  if (env_.rank == 0) {
    guarded(env_, "posting that rank 0's save is done", [&] { impl_->store->set(key, std::vector<uint8_t>{1}); });
    // Every other rank confirms it has read the key before rank 0 goes on: rank 0 serves the store,
    // and a rank 0 that finished the run and exited would otherwise close it under a rank still
    // waiting ("Broken pipe" there, at the end of a run that succeeded).
    std::vector<std::string> acks;
    for (int64_t r = 1; r < env_.world_size; ++r) acks.push_back(key + "/read/" + std::to_string(r));
    guarded(env_, "waiting for the other ranks to read that rank 0's save is done",
            [&] { impl_->store->wait(acks, env_.timeout); });
    return;
  }
  const std::string where = "distributed rank " + std::to_string(env_.rank) + " of " + std::to_string(env_.world_size) +
                            ": waiting for rank 0's save failed";
  try {
    impl_->store->wait({key}, env_.save_timeout);
  } catch (const std::exception& x) {
    const std::string msg = dynamic_cast<const c10::Error*>(&x)
                                ? static_cast<const c10::Error&>(x).what_without_backtrace()
                                : std::string(x.what());
    throw DistributedError(where + ": " + msg +
                           " (rank 0 exited or failed, or its save took longer than "
                           "UNIF_DIST_SAVE_TIMEOUT = " +
                           seconds(env_.save_timeout) + "; see its own error)");
  }
  guarded(env_, "confirming rank 0's save",
          [&] { impl_->store->set(key + "/read/" + std::to_string(env_.rank), std::vector<uint8_t>{1}); });
}

void ProcessGroup::check_same(const std::vector<int64_t>& values, const std::string& what) {
  auto mine = torch::tensor(values, torch::kInt64);
  const auto all = all_gather(mine);
  bool same = true;
  for (const auto& t : all) same = same && torch::equal(t, all[0]);
  if (same) return;
  std::string msg = "the ranks disagree on " + what + ":";
  for (size_t r = 0; r < all.size(); ++r) {
    msg += std::string(r ? ";" : "") + " rank " + std::to_string(r) + " [";
    for (int64_t i = 0; i < all[r].numel(); ++i) msg += (i ? ", " : "") + std::to_string(all[r][i].item<int64_t>());
    msg += "]";
  }
  throw UserError(msg + " (every rank must run the same config on the same data and checkpoint)");
}

}  // namespace unif::framework
