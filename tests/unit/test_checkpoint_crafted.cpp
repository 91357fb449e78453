// Checkpoint readers on the crafted files of tests/fuzz/corpus:
// each once crashed the process, took gigabytes or minutes, or ended in "error: internal". Crash
// and memory cases run in a forked child (support/child_process.h) under an address-space limit,
// so without the fix they fail with "killed by signal 11" or an out-of-memory message.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <string>

#include <torch/types.h>

#include "framework/checkpoint/hf_config.h"
#include "framework/checkpoint/pretrained.h"
#include "framework/checkpoint/safetensors.h"
#include "framework/checkpoint/torch_bin.h"
#include "support/child_process.h"
#include "support/fuzz_corpus.h"
#include "support/temp_dir.h"

namespace fs = std::filesystem;
using namespace unif::framework;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using unif::test::corpus_file;
using unif::test::run_in_child;

namespace {

constexpr size_t kMiB = size_t{1} << 20;

}  // namespace

TEST_CASE("crafted safetensors: a header nested 200k deep is an error, not a stack overflow", "[unit][checkpoint]") {
  const auto r = run_in_child([] {
    read_safetensors(corpus_file("safetensors", "deep_shape.safetensors"));
    return std::string("read");
  });
  INFO(r.describe());
  CHECK(r.signal == 0);
  CHECK_THAT(r.result, StartsWith("error: ") && Contains("deep_shape.safetensors: invalid safetensors file") &&
                           Contains("nested deeper than 256 levels"));
}

TEST_CASE("crafted config.json: deep values are an error, not a stack overflow", "[unit][checkpoint]") {
  SECTION("a key that is read (its value was printed in the error)") {
    const auto r = run_in_child([] {
      read_hf_config(corpus_file("hf_config", "deep_hidden_size.json"));
      return std::string("read");
    });
    INFO(r.describe());
    CHECK(r.signal == 0);
    CHECK_THAT(r.result, StartsWith("error: ") && Contains("deep_hidden_size.json: invalid JSON") &&
                             Contains("nested deeper than 256 levels"));
  }
  SECTION("model_type, printed by load_pretrained") {
    unif::test::TempDir dir;
    fs::copy_file(corpus_file("hf_config", "deep_model_type.json"), dir / "config.json");
    const auto r = run_in_child([&] {
      load_pretrained(dir.path);
      return std::string("loaded");
    });
    INFO(r.describe());
    CHECK(r.signal == 0);
    CHECK_THAT(r.result, StartsWith("error: ") && Contains("config.json: invalid JSON") &&
                             Contains("nested deeper than 256 levels"));
  }
}

TEST_CASE("crafted pytorch_model.bin: recorded zip sizes are checked before allocating", "[unit][checkpoint]") {
  SECTION("a 134-byte file whose data.pkl claims 3.3 GB") {
    const auto r = run_in_child(
        [] {
          read_torch_bin(corpus_file("torch_bin", "claimed_size_3gb.bin"));
          return std::string("read");
        },
        512 * kMiB);
    INFO(r.describe());
    CHECK_THAT(r.result, StartsWith("error: ") && Contains("claimed_size_3gb.bin") &&
                             Contains("'archive/data.pkl' claims 3300000000 bytes but stores 4"));
  }
  SECTION("a zip64 record of 2^63 - 8 bytes") {
    const auto r = run_in_child(
        [] {
          read_torch_bin(corpus_file("torch_bin", "zip64_claimed_size.bin"));
          return std::string("read");
        },
        512 * kMiB);
    INFO(r.describe());
    CHECK_THAT(r.result, StartsWith("error: ") && Contains("zip64_claimed_size.bin") &&
                             Contains("claims 9223372036854775800 bytes but stores 4"));
  }
}

TEST_CASE("crafted pytorch_model.bin: REDUCEs of one memoised tensor share its storage", "[unit][checkpoint]") {
  // 3000 keys rebuilt from one memoised _rebuild_tensor_v2 call over a 1 MB storage: a copy per
  // REDUCE needed 3 GB; views need the one storage.
  const auto r = run_in_child(
      [] {
        const auto t = read_torch_bin(corpus_file("torch_bin", "memo_reduce_copies.bin"));
        const bool shared = t.at("k0").data_ptr() == t.at("k2999").data_ptr();
        return std::to_string(t.size()) + " tensors of " + std::to_string(t.at("k1").numel()) +
               (shared ? ", shared" : ", copies");
      },
      256 * kMiB);
  INFO(r.describe());
  CHECK(r.result == "ok: 3000 tensors of 262144, shared");
}

TEST_CASE("crafted pytorch_model.bin: a dict of 80k keys loads in linear time", "[unit][checkpoint]") {
  const auto start = std::chrono::steady_clock::now();
  const auto t = read_torch_bin(corpus_file("torch_bin", "many_keys.bin"));
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  CHECK(t.size() == 80000);
  CHECK(t.at("k79999").item<float>() == 1.5f);
  CHECK(took.count() < 2.0);  // was 21 s: SETITEMS scanned the whole dict for every key
}
