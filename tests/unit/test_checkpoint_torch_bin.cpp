// Unit tests of read_torch_bin on archives built here: a hand-written protocol-2 pickle (the
// opcodes torch.save emits for an OrderedDict state dict, including views that share a storage)
// zipped with libzip, then one test per class of damage (missing, not a zip, truncated, bad CRC,
// garbage / truncated pickle, forbidden global, missing or short storage, out-of-bounds view).
#include <catch2/catch.hpp>

#include <unistd.h>
#include <zip.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

#include "framework/checkpoint/torch_bin.h"
#include "framework/common/error.h"
#include "support/temp_dir.h"
#include "support/files.h"

namespace fs = std::filesystem;
using namespace unif::framework;
using Catch::Matchers::Contains;

using unif::test::TempDir;

using unif::test::slurp;
using unif::test::spit;

namespace {

// Builds pickle bytes opcode by opcode.
struct Pickle {
  std::string b = "\x80\x02";  // PROTO 2
  Pickle& op(const std::string& s) { return b += s, *this; }
  Pickle& global(const std::string& module, const std::string& name) { return op("c" + module + "\n" + name + "\n"); }
  Pickle& str(const std::string& s) {
    b += 'X';
    for (int i = 0; i < 4; ++i) b += static_cast<char>(s.size() >> (8 * i));
    return op(s);
  }
  Pickle& int4(int32_t v) {
    b += 'J';
    for (int i = 0; i < 4; ++i) b += static_cast<char>(static_cast<uint32_t>(v) >> (8 * i));
    return *this;
  }
  Pickle& ints(const std::vector<int32_t>& v) {
    op("(");
    for (int32_t x : v) int4(x);
    return op("t");
  }
};

struct TensorSpec {
  std::string name, storage_type, key;
  int32_t storage_numel, offset;
  std::vector<int32_t> size, stride;
};

// torch.save(OrderedDict) as torch 1.13 writes it, with the `_metadata` attribute set by BUILD.
std::string state_dict_pickle(const std::vector<TensorSpec>& tensors) {
  Pickle p;
  p.global("collections", "OrderedDict").op(")R(");
  for (const auto& t : tensors) {
    p.str(t.name).global("torch._utils", "_rebuild_tensor_v2").op("((");
    p.str("storage").global("torch", t.storage_type).str(t.key).str("cpu").int4(t.storage_numel).op("tQ");
    p.int4(t.offset).ints(t.size).ints(t.stride).op("\x89").global("collections", "OrderedDict").op(")Rt").op("R");
  }
  p.op("u}").str("_metadata").global("collections", "OrderedDict").op(")R(").str("").op("}").op("u").op("sb.");
  return p.b;
}

std::string floats(const std::vector<float>& v) { return {reinterpret_cast<const char*>(v.data()), v.size() * 4}; }

// A zip of stored (uncompressed) entries, as torch.save writes.
void write_zip(const fs::path& file, const std::vector<std::pair<std::string, std::string>>& entries) {
  int err = 0;
  zip_t* z = zip_open(file.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  REQUIRE(z != nullptr);
  for (const auto& [name, data] : entries) {
    zip_source_t* src = zip_source_buffer(z, data.data(), data.size(), 0);
    const zip_int64_t idx = zip_file_add(z, name.c_str(), src, ZIP_FL_OVERWRITE);
    REQUIRE(idx >= 0);
    REQUIRE(zip_set_file_compression(z, static_cast<zip_uint64_t>(idx), ZIP_CM_STORE, 0) == 0);
  }
  REQUIRE(zip_close(z) == 0);
}

// A small valid checkpoint: a (2, 3) float tensor, its transpose and a tail view over the same
// storage, and a (1, 3) int64 buffer.
std::vector<std::pair<std::string, std::string>> good_entries() {
  const std::vector<TensorSpec> specs{
      {"w", "FloatStorage", "0", 6, 0, {2, 3}, {3, 1}},
      {"w_t", "FloatStorage", "0", 6, 0, {3, 2}, {1, 3}},
      {"tail", "FloatStorage", "0", 6, 4, {2}, {1}},
      {"ids", "LongStorage", "1", 3, 0, {1, 3}, {3, 1}},
  };
  const int64_t ids[3] = {7, -1, 1LL << 40};
  return {{"archive/data.pkl", state_dict_pickle(specs)},
          {"archive/data/0", floats({0, 1, 2, 3, 4, 5})},
          {"archive/data/1", std::string(reinterpret_cast<const char*>(ids), sizeof ids)},
          {"archive/version", "3\n"}};
}

std::string bin_error(const fs::path& file) {
  try {
    read_torch_bin(file);
  } catch (const unif::UserError& e) { return e.what(); }
  FAIL("read_torch_bin did not throw UserError for " << file);
  return {};
}

// good_entries() with data.pkl (or another entry) replaced.
fs::path bin_with(const TempDir& dir, const std::string& entry, const std::string& data) {
  auto entries = good_entries();
  bool found = false;
  for (auto& [name, bytes] : entries)
    if (name == entry) bytes = data, found = true;
  if (!found) entries.emplace_back(entry, data);
  write_zip(dir / "pytorch_model.bin", entries);
  return dir / "pytorch_model.bin";
}

}  // namespace

TEST_CASE("read_torch_bin reads an OrderedDict of tensors and views", "[unit][checkpoint]") {
  TempDir dir;
  write_zip(dir / "pytorch_model.bin", good_entries());
  auto t = read_torch_bin(dir / "pytorch_model.bin");
  REQUIRE(t.size() == 4);
  const auto w = torch::arange(6, torch::kFloat32).reshape({2, 3});
  CHECK(torch::equal(t.at("w"), w));
  CHECK(torch::equal(t.at("w_t"), w.t()));
  CHECK(torch::equal(t.at("tail"), torch::tensor({4.0f, 5.0f})));
  // Views of one storage share its memory, as torch.load's do.
  CHECK(t.at("w_t").data_ptr() == t.at("w").data_ptr());
  CHECK(t.at("tail").data_ptr() == static_cast<float*>(t.at("w").data_ptr()) + 4);
  CHECK(torch::equal(t.at("ids"), torch::tensor({int64_t{7}, int64_t{-1}, int64_t{1} << 40}).reshape({1, 3})));
  CHECK(t.at("ids").scalar_type() == torch::kInt64);
}

TEST_CASE("read_torch_bin: damaged files are UserErrors naming the file", "[unit][checkpoint]") {
  TempDir dir;
  const auto bin = dir / "pytorch_model.bin";
  const auto name = Contains("pytorch_model.bin");

  SECTION("missing file") {
    CHECK_THAT(bin_error(dir / "absent.bin"), Contains("absent.bin") && Contains("no such file"));
  }
  SECTION("not a zip") {
    spit(bin, "\x80\x02}q\x00.");  // a legacy (non-zip) pickle
    CHECK_THAT(bin_error(bin), name && Contains("cannot open as a zip archive") && Contains("legacy"));
  }
  SECTION("truncated") {
    write_zip(bin, good_entries());
    const auto bytes = slurp(bin);
    spit(bin, bytes.substr(0, bytes.size() / 2));
    CHECK_THAT(bin_error(bin), name && Contains("truncated"));
  }
  SECTION("corrupted storage bytes (CRC)") {
    write_zip(bin, good_entries());
    auto bytes = slurp(bin);
    const auto at = bytes.find(floats({0, 1, 2, 3, 4, 5}));
    REQUIRE(at != std::string::npos);
    bytes[at + 5] ^= 0x40;
    spit(bin, bytes);
    CHECK_THAT(bin_error(bin), name && Contains("archive/data/0") && Contains("CRC"));
  }
  SECTION("zip without data.pkl") {
    write_zip(bin, {{"archive/data/0", floats({1})}});
    CHECK_THAT(bin_error(bin), name && Contains("data.pkl"));
  }
  SECTION("garbage pickle") {
    CHECK_THAT(bin_error(bin_with(dir, "archive/data.pkl", "\x80\x02\xfe garbage")),
               name && Contains("data.pkl byte 2") && Contains("unsupported pickle opcode 0xfe"));
  }
  SECTION("truncated pickle") {
    const auto pkl = state_dict_pickle({{"w", "FloatStorage", "0", 6, 0, {2, 3}, {3, 1}}});
    CHECK_THAT(bin_error(bin_with(dir, "archive/data.pkl", pkl.substr(0, pkl.size() - 40))),
               name && Contains("truncated"));
  }
  SECTION("forbidden global") {
    Pickle p;
    p.global("os", "system").str("echo hi").op("\x85R.");
    CHECK_THAT(bin_error(bin_with(dir, "archive/data.pkl", p.b)), name && Contains("unsupported global 'os.system'"));
  }
  SECTION("undefined memo key") {
    Pickle p;
    p.op("h\x05.");
    CHECK_THAT(bin_error(bin_with(dir, "archive/data.pkl", p.b)), Contains("memo key 5 not defined"));
  }
  SECTION("missing storage entry") {
    const auto pkl = state_dict_pickle({{"w", "FloatStorage", "9", 6, 0, {2, 3}, {3, 1}}});
    CHECK_THAT(bin_error(bin_with(dir, "archive/data.pkl", pkl)),
               name && Contains("missing archive entry 'archive/data/9'"));
  }
  SECTION("storage shorter than its numel") {
    CHECK_THAT(bin_error(bin_with(dir, "archive/data/0", floats({1, 2}))),
               name && Contains("storage '0' has 8 bytes, expected 24"));
  }
  SECTION("view beyond its storage") {
    const auto pkl = state_dict_pickle({{"w", "FloatStorage", "0", 6, 5, {2}, {1}}});
    CHECK_THAT(bin_error(bin_with(dir, "archive/data.pkl", pkl)), name && Contains("beyond its storage of 6 elements"));
  }
  SECTION("huge broadcast view is refused before allocating") {
    const auto pkl = state_dict_pickle({{"w", "FloatStorage", "0", 6, 0, {1 << 30, 1 << 30}, {0, 0}}});
    CHECK_THAT(bin_error(bin_with(dir, "archive/data.pkl", pkl)), name && Contains("more elements than its storage"));
  }
  SECTION("unknown storage type") {
    const auto pkl = state_dict_pickle({{"w", "ComplexFloatStorage", "0", 6, 0, {2}, {1}}});
    CHECK_THAT(bin_error(bin_with(dir, "archive/data.pkl", pkl)),
               Contains("unsupported global 'torch.ComplexFloatStorage'"));
  }
  SECTION("a value that is not a tensor") {
    Pickle p;
    p.global("collections", "OrderedDict").op(")R").str("step").int4(3).op("s.");
    CHECK_THAT(bin_error(bin_with(dir, "archive/data.pkl", p.b)),
               name && Contains("state dict entry 'step' is a int, expected a tensor"));
  }
}
