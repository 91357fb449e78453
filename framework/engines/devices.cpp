#include "framework/engines/devices.h"

#include <algorithm>
#include <limits>

#include <torch/cuda.h>

#include "framework/common/error.h"

namespace unif::framework {

namespace {

std::string where(size_t k, const std::string& entry) {
  return "parallel.devices[" + std::to_string(k) + "]: '" + entry + "' ";
}

// Entry k (spelled `entry`) is CUDA device `index`: UserError unless this process sees it.
void require_gpu(size_t k, const std::string& entry, int64_t index) {
  if (!torch::cuda::is_available())
    throw UserError(where(k, entry) + "needs a CUDA build of LibTorch with a visible GPU; this one has none (use cpu)");
  const int64_t count = visible_gpus();
  if (index >= count) throw UserError(where(k, entry) + "does not exist: " + std::to_string(count) + " GPU(s) visible");
}

}  // namespace

DeviceSet parse_devices(const std::vector<std::string>& entries) {
  if (entries.empty()) throw UserError("parallel.devices: expected at least one device, e.g. [cpu]");
  DeviceSet set;
  if (entries.size() == 1 && entries[0] == "auto") return set;
  set.automatic = false;
  for (size_t k = 0; k < entries.size(); ++k) {
    const std::string& d = entries[k];
    if (d == "cpu") {
      set.devices.emplace_back(torch::kCPU);
    } else if (d.rfind("cuda:", 0) == 0 && d.size() > 5 &&
               std::all_of(d.begin() + 5, d.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      // Past what a device index holds, no GPU of this machine can be meant: say so as for any
      // missing GPU (an index that large would not fit torch::Device).
      const size_t first = d.find_first_not_of('0', 5);
      const std::string digits = first == std::string::npos ? "0" : d.substr(first);
      const int64_t most = std::numeric_limits<c10::DeviceIndex>::max();
      if (digits.size() > 6 || std::stoll(digits) > most) require_gpu(k, d, std::numeric_limits<int64_t>::max());
      set.devices.emplace_back(torch::kCUDA, static_cast<c10::DeviceIndex>(std::stoll(digits)));
    } else {
      throw UserError(where(k, d) + "is not a device (expected cpu, cuda:N, or the single entry auto)");
    }
  }
  return set;
}

void check_present(const DeviceSet& set) {
  for (size_t k = 0; k < set.devices.size(); ++k)
    if (set.devices[k].is_cuda()) require_gpu(k, set.devices[k].str(), set.devices[k].index());
}

int64_t visible_gpus() { return torch::cuda::is_available() ? static_cast<int64_t>(torch::cuda::device_count()) : 0; }

std::string device_list(const std::vector<torch::Device>& devices) {
  std::string out;
  for (const auto& d : devices) out += (out.empty() ? "" : ", ") + d.str();
  return "[" + out + "]";
}

}  // namespace unif::framework
