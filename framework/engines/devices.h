// DeviceSet: parallel.devices as typed values. The config keeps the strings the user wrote
// (config.yaml, resume checks, its own line-numbered validation); parse_devices reads them once,
// here, and everything after — the `auto` rule and a rank's share (auto_devices.h), the engines
// (make_engine.h), `unif eval` and `unif predict` — works on the DeviceSet.
//
// Example:
//   const DeviceSet set = parse_devices(cfg.parallel.devices);   // {"cpu", "cpu"}: two CPU replicas
//   check_present(set);                                          // cuda:N: a GPU this process sees
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

namespace unif::framework {

struct DeviceSet {
  /// The single entry `auto` (the config's default): the rule of auto_devices.h chooses.
  bool automatic = true;
  /// The explicit entries in order, one replica each; empty when automatic.
  std::vector<torch::Device> devices;
};

/// parallel.devices entries ("cpu", "cuda:N", or the single entry "auto") as a DeviceSet. UserError
/// naming the entry for a spelling that is not a device, or an empty list. Does not look at this
/// machine (a rank's entries are shifted first: auto_devices.h): check_present does.
DeviceSet parse_devices(const std::vector<std::string>& entries);

/// UserError naming the entry when an explicit CUDA device is not on this machine: a LibTorch
/// without CUDA or no visible GPU, or an index past the visible GPUs. Nothing for `auto` and CPUs.
void check_present(const DeviceSet& set);

/// Visible CUDA devices: 0 on a LibTorch without CUDA or a machine without GPUs.
int64_t visible_gpus();

/// The devices as parallel.devices spells them: "[cpu, cuda:1]".
std::string device_list(const std::vector<torch::Device>& devices);

}  // namespace unif::framework
