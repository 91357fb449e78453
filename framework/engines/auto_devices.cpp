#include "framework/engines/auto_devices.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <utility>

#include "framework/common/error.h"
#include "framework/common/runtime.h"
#include "framework/parallel/process_group.h"

namespace unif::framework {

namespace {

std::string plural(int64_t n, const std::string& word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

// One integer from a sysfs file; -1 when it cannot be read.
int64_t read_int(const std::string& path) {
  std::ifstream in(path);
  int64_t v = -1;
  if (!(in >> v)) return -1;
  return v;
}

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  return end != nullptr && *end == '\0' && n > 0 ? static_cast<int64_t>(n) : fallback;
}

// Processes of this job on this machine: torchrun's LOCAL_WORLD_SIZE; launched by hand without
// it, all ranks when the master is on loopback, else one.
int64_t local_world_size(int64_t world) {
  const char* addr = std::getenv("MASTER_ADDR");
  const std::string a = addr == nullptr ? "127.0.0.1" : addr;
  const bool loopback = a == "localhost" || a.rfind("127.", 0) == 0 || a == "::1";
  return env_int("LOCAL_WORLD_SIZE", loopback ? world : 1);
}

}  // namespace

AutoDevices choose_devices(const AutoDevicesInput& in) {
  AutoDevices out;
  const int64_t procs = std::max<int64_t>(1, in.local_processes);
  if (in.gpus > 0) {
    if (procs > 1) {
      const int64_t gpu = std::max<int64_t>(0, in.local_rank) % in.gpus;
      out.devices = {torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(gpu))};
      out.reason = plural(in.gpus, "GPU") + " visible, " + std::to_string(procs) +
                   " processes on this machine: local rank " + std::to_string(in.local_rank) +
                   " takes cuda:" + std::to_string(gpu);
    } else {
      for (int64_t i = 0; i < in.gpus; ++i) out.devices.emplace_back(torch::kCUDA, static_cast<c10::DeviceIndex>(i));
      out.reason = plural(in.gpus, "GPU") + " visible: one replica per GPU";
    }
    return out;
  }
  const int64_t cores = std::max<int64_t>(1, std::max<int64_t>(1, in.physical_cores) / procs);
  std::string where = plural(std::max<int64_t>(1, in.physical_cores), "physical core");
  if (procs > 1) where += " / " + std::to_string(procs) + " processes = " + std::to_string(cores) + " each";
  const std::string size = "hidden " + std::to_string(in.hidden_size);
  const std::string limit = std::to_string(kAutoReplicaMaxHidden);
  if (in.hidden_size <= kAutoReplicaMaxHidden && cores > 1) {
    const int64_t replicas = std::max<int64_t>(1, std::min(cores, in.batch_size));
    out.devices.assign(static_cast<size_t>(replicas), torch::Device(torch::kCPU));
    out.reason = "no GPU, " + where + ", " + size + " <= " + limit + ": one replica per core";
    if (replicas < cores) out.reason += " (capped at the batch of " + std::to_string(in.batch_size) + ")";
    out.reason += replicas > 1 ? ", BLAS 1 thread each" : ", BLAS on every core";
    return out;
  }
  out.devices = {torch::Device(torch::kCPU)};
  out.reason = "no GPU, " + where + ", " + size +
               (in.hidden_size > kAutoReplicaMaxHidden ? " > " + limit : " <= " + limit) +
               ": one replica on every core (threads and BLAS)";
  return out;
}

int64_t cpu_eval_workers(const DeviceSet& devices, int64_t hidden_size) {
  if (!devices.automatic)
    return std::max<int64_t>(1, std::count_if(devices.devices.begin(), devices.devices.end(),
                                              [](const torch::Device& d) { return d.is_cpu(); }));
  AutoDevicesInput in;
  in.physical_cores = physical_cores();
  in.hidden_size = hidden_size;
  in.batch_size = in.physical_cores;  // never the cap here
  return static_cast<int64_t>(choose_devices(in).devices.size());
}

torch::Device eval_device(const DeviceSet& devices) {
  if (devices.automatic) return visible_gpus() > 0 ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
  check_present(devices);
  return devices.devices.front();
}

int64_t physical_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return available_cores();
  std::set<std::pair<int64_t, int64_t>> cores;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    const int64_t package = read_int(dir + "physical_package_id"), core = read_int(dir + "core_id");
    if (package < 0 || core < 0) return available_cores();  // no topology: count what we may use
    cores.emplace(package, core);
  }
  return cores.empty() ? available_cores() : static_cast<int64_t>(cores.size());
}

std::vector<torch::Device> rank_devices(std::vector<torch::Device> devices, int64_t local_rank, int64_t local_world,
                                        int64_t visible_gpus) {
  const int64_t n = std::count_if(devices.begin(), devices.end(), [](const torch::Device& d) { return d.is_cuda(); });
  if (n == 0) return devices;
  const bool shift = visible_gpus >= std::max<int64_t>(1, local_world) * n;
  for (auto& d : devices) {
    if (!d.is_cuda()) continue;
    const int64_t index = d.index() + (shift ? local_rank * n : 0);
    if (index >= visible_gpus)
      throw UserError("parallel.devices: the process with LOCAL_RANK=" + std::to_string(local_rank) +
                      " would take cuda:" + std::to_string(index) +
                      (shift ? " (its entries shifted by LOCAL_RANK x " + std::to_string(n) + ")" : "") + ", but " +
                      std::to_string(visible_gpus) +
                      " GPU(s) are visible; list each process's share from cuda:0 "
                      "(devices: [cuda:0] for one GPU per process) or use auto");
    d = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
  }
  return devices;
}

ResolvedDevices resolve_devices(const DeviceSet& set, const ProcessGroup* group, int64_t hidden_size,
                                int64_t batch_size) {
  if (!set.automatic) {
    DeviceSet mine = set;
    if (group)
      mine.devices =
          rank_devices(set.devices, env_int("LOCAL_RANK", 0), local_world_size(group->size()), visible_gpus());
    check_present(mine);
    return {mine.devices, ""};
  }
  AutoDevicesInput in;
  in.gpus = visible_gpus();
  in.physical_cores = physical_cores();
  in.hidden_size = hidden_size;
  in.batch_size = batch_size;
  if (group) {
    // The share of the batch this rank computes; torchrun says how many ranks share this machine.
    // Launched by hand without LOCAL_WORLD_SIZE: all ranks here when the master is on loopback.
    in.batch_size = std::max<int64_t>(1, batch_size / group->size());
    in.local_processes = local_world_size(group->size());
    in.local_rank = env_int("LOCAL_RANK", 0);
  }
  auto choice = choose_devices(in);
  ResolvedDevices r{std::move(choice.devices), ""};
  r.note = "parallel.devices auto -> " + device_list(r.devices) + " (" + choice.reason + ")";
  return r;
}

}  // namespace unif::framework
