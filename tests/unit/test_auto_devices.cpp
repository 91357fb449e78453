// parallel.devices: auto (SPEC §7): the rule of framework/engines/auto_devices.h as a pure
// function, hand-computed cases on each side of every branch; resolve_devices leaves explicit
// device lists alone. Devices are compared as parallel.devices spells them ("cpu", "cuda:1").
#include <catch2/catch.hpp>

#include "framework/config/run_config.h"
#include "framework/engines/auto_devices.h"

using namespace unif::framework;

namespace {

using Devices = std::vector<std::string>;

Devices names(const std::vector<torch::Device>& devices) {
  Devices out;
  for (const auto& d : devices) out.push_back(d.str());
  return out;
}

// The rule's choice, spelled.
struct Picked {
  Devices devices;
  std::string reason;
};

Picked pick(int64_t gpus, int64_t cores, int64_t hidden, int64_t batch = 32, int64_t procs = 1, int64_t rank = 0) {
  AutoDevicesInput in;
  in.gpus = gpus;
  in.physical_cores = cores;
  in.hidden_size = hidden;
  in.batch_size = batch;
  in.local_processes = procs;
  in.local_rank = rank;
  const auto choice = choose_devices(in);
  return {names(choice.devices), choice.reason};
}

// rank_devices on spelled devices.
Devices ranked(const Devices& devices, int64_t local_rank, int64_t local_world, int64_t visible) {
  return names(rank_devices(parse_devices(devices).devices, local_rank, local_world, visible));
}

}  // namespace

TEST_CASE("auto devices: GPUs when visible", "[unit][auto_devices]") {
  CHECK(pick(2, 16, 768).devices == Devices{"cuda:0", "cuda:1"});
  CHECK(pick(1, 2, 128).devices == Devices{"cuda:0"});
  // Several processes on the machine: each rank takes the GPU of its local rank.
  CHECK(pick(4, 16, 768, 32, 4, 2).devices == Devices{"cuda:2"});
  CHECK(pick(2, 16, 768, 32, 4, 3).devices == Devices{"cuda:1"});
  CHECK_THAT(pick(2, 16, 768).reason, Catch::Contains("2 GPUs visible"));
}

TEST_CASE("auto devices: one CPU replica per physical core up to the hidden-size limit", "[unit][auto_devices]") {
  CHECK(pick(0, 2, 128).devices == Devices{"cpu", "cpu"});
  CHECK(pick(0, 2, 384).devices == Devices{"cpu", "cpu"});
  CHECK(pick(0, 4, kAutoReplicaMaxHidden).devices == Devices(4, "cpu"));
  CHECK(pick(0, 2, kAutoReplicaMaxHidden + 1).devices == Devices{"cpu"});
  CHECK(pick(0, 2, 768).devices == Devices{"cpu", "cpu"});  // BERT-base: measured 1.24x (docs/performance.md)
  CHECK(pick(0, 2, 1024).devices == Devices{"cpu"});
  CHECK(pick(0, 1, 128).devices == Devices{"cpu"});
  CHECK_THAT(pick(0, 2, 384).reason, Catch::Contains("2 physical cores") && Catch::Contains("hidden 384 <= 768") &&
                                         Catch::Contains("BLAS 1 thread each"));
  CHECK_THAT(pick(0, 2, 1024).reason,
             Catch::Contains("hidden 1024 > 768") && Catch::Contains("one replica on every core"));
}

TEST_CASE("auto devices: never more CPU replicas than examples or cores per process", "[unit][auto_devices]") {
  CHECK(pick(0, 16, 256, 4).devices == Devices(4, "cpu"));
  CHECK_THAT(pick(0, 16, 256, 4).reason, Catch::Contains("capped at the batch of 4"));
  CHECK(pick(0, 16, 256, 1).devices == Devices{"cpu"});
  // 2 processes on 8 cores: 4 replicas each; 4 processes on 2 cores: 1 each.
  CHECK(pick(0, 8, 256, 32, 2).devices == Devices(4, "cpu"));
  CHECK(pick(0, 2, 256, 32, 4).devices == Devices{"cpu"});
  // Nonsense counts are read as one.
  CHECK(pick(0, 0, 256, 0, 0).devices == Devices{"cpu"});
}

TEST_CASE("resolve_devices: explicit lists are kept and not logged", "[unit][auto_devices]") {
  const auto set = parse_devices({"cpu", "cpu", "cpu"});
  const auto r = resolve_devices(set, /*group=*/nullptr, 128, 16);
  CHECK(names(r.devices) == Devices{"cpu", "cpu", "cpu"});
  CHECK(r.note.empty());
}

TEST_CASE("resolve_devices: auto becomes this machine's devices with a log line", "[unit][auto_devices]") {
  const DeviceSet set;  // the default is auto
  REQUIRE(set.automatic);
  REQUIRE(parse_devices(ParallelConfig{}.devices).automatic);
  const auto r = resolve_devices(set, /*group=*/nullptr, 128, 16);
  REQUIRE_FALSE(r.devices.empty());
  CHECK_THAT(r.note, Catch::StartsWith("parallel.devices auto -> ["));
  CHECK(physical_cores() >= 1);
}

TEST_CASE("rank_devices: an explicit list under torchrun, with every GPU or one share visible per rank",
          "[unit][auto_devices]") {
  using V = std::vector<std::string>;
  // Every rank sees both GPUs: [cuda:0] is GPU r for rank r.
  CHECK(ranked({"cuda:0"}, 0, 2, 2) == V{"cuda:0"});
  CHECK(ranked({"cuda:0"}, 1, 2, 2) == V{"cuda:1"});
  CHECK(ranked({"cuda:0", "cuda:1"}, 1, 2, 4) == V{"cuda:2", "cuda:3"});
  // One GPU visible per rank (CUDA_VISIBLE_DEVICES): the entry stays cuda:0 (it was shifted to cuda:1
  // and refused before).
  CHECK(ranked({"cuda:0"}, 1, 2, 1) == V{"cuda:0"});
  CHECK(ranked({"cuda:0", "cuda:1"}, 3, 4, 2) == V{"cuda:0", "cuda:1"});
  // CPU entries stay; CPU-only lists are untouched.
  CHECK(ranked({"cpu", "cpu"}, 1, 2, 0) == V{"cpu", "cpu"});
  // Past the visible GPUs: an error naming the rank.
  CHECK_THROWS_WITH(ranked({"cuda:1"}, 0, 2, 1), Catch::Contains("LOCAL_RANK=0 would take cuda:1"));
  CHECK_THROWS_WITH(ranked({"cuda:0"}, 2, 2, 2), Catch::Contains("LOCAL_RANK=2 would take cuda:2"));
}

TEST_CASE("auto under torchrun picks the local rank's GPU once (no second shift)", "[unit][auto_devices]") {
  AutoDevicesInput in;
  in.gpus = 2;
  in.local_processes = 2;
  in.local_rank = 1;
  const auto choice = choose_devices(in);
  REQUIRE(names(choice.devices) == Devices{"cuda:1"});
  // resolve_devices hands auto's choice to the engine as is; rank_devices is for explicit lists only.
  // Applied to auto's choice it would shift again (the old double shift: rank 1 asked for cuda:2).
  CHECK_THROWS(rank_devices(choice.devices, 1, 2, 2));
}
