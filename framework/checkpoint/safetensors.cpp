// safetensors reader/writer over nlohmann-json. See safetensors.h for the format. Layout choices
// follow the reference (Rust) implementation so that a re-written file is byte-identical: tensors
// ordered by dtype (widest first, the Rust `Dtype` enum order) then by name — which also keeps
// every tensor aligned to its item size — header keys in that same order after "__metadata__",
// the header padded with spaces to a multiple of 8. Reading checks every field and every bound and
// requires the tensors to tile the data buffer exactly, as the reference does.
#include "framework/checkpoint/safetensors.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/checkpoint/atomic_file.h"
#include "framework/common/error.h"
#include "framework/common/strings.h"
#include "framework/common/json_input.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "unif checkpoint IO assumes a little-endian host (safetensors and torch.save data are little-endian)"
#endif

namespace unif::framework {
namespace {

// The reference implementation refuses headers above 100 MB.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct DtypeInfo {
  const char* name;
  torch::ScalarType type;
  int64_t itemsize;
  int rank;  // position in the Rust `Dtype` enum: the writer orders tensors by it, widest first
};

constexpr std::array<DtypeInfo, 10> kDtypes{{
    {"BOOL", torch::kBool, 1, 0},
    {"U8", torch::kUInt8, 1, 1},
    {"I8", torch::kInt8, 1, 2},
    {"I16", torch::kInt16, 2, 3},
    {"F16", torch::kFloat16, 2, 5},
    {"BF16", torch::kBFloat16, 2, 6},
    {"I32", torch::kInt32, 4, 7},
    {"F32", torch::kFloat32, 4, 9},
    {"F64", torch::kFloat64, 8, 10},
    {"I64", torch::kInt64, 8, 11},
}};

const DtypeInfo* dtype_by_name(const std::string& name) {
  for (const auto& d : kDtypes)
    if (name == d.name) return &d;
  return nullptr;
}

const DtypeInfo* dtype_by_type(torch::ScalarType type) {
  for (const auto& d : kDtypes)
    if (type == d.type) return &d;
  return nullptr;
}

std::string supported_dtypes() {
  std::string s;
  for (const auto& d : kDtypes) s += (s.empty() ? "" : " ") + std::string(d.name);
  return s;
}

// One header entry, validated.
struct Entry {
  std::string name;
  const DtypeInfo* dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;
};

class Reader {
 public:
  explicit Reader(std::filesystem::path file) : file_(std::move(file)) {}

  SafetensorsFile read() {
    SafetensorsFile out;
    for (const auto& e : entries(&out.metadata)) out.tensors.emplace(e.name, load(e));
    return out;
  }

  TensorShapes shapes() {
    TensorShapes out;
    for (auto& e : entries(nullptr)) out.emplace(e.name, std::move(e.shape));
    return out;
  }

 private:
  // The header's entries, every field and bound checked (nothing of the data is read).
  std::vector<Entry> entries(std::map<std::string, std::string>* metadata) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file_, ec)) fail("no such file (expected a safetensors file)");
    const uint64_t size = std::filesystem::file_size(file_, ec);
    if (ec) fail("cannot stat: " + ec.message());
    in_.open(file_, std::ios::binary);
    if (!in_) fail(std::string("cannot open: ") + std::strerror(errno));
    if (size < 8)
      fail("file is " + std::to_string(size) + " bytes, shorter than the 8-byte header length (truncated?)");

    unsigned char len_bytes[8];
    read_exact(0, reinterpret_cast<char*>(len_bytes), 8, "header length");
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | len_bytes[i];
    if (n > kMaxHeaderBytes)
      fail("header length " + std::to_string(n) + " is absurd (limit " + std::to_string(kMaxHeaderBytes) +
           "): not a safetensors file");
    if (n > size - 8)
      fail("header length " + std::to_string(n) + " exceeds the " + std::to_string(size - 8) +
           " bytes after it (truncated?)");
    data_start_ = 8 + n;
    buffer_size_ = size - data_start_;

    std::string header_text(n, '\0');
    read_exact(8, header_text.data(), n, "header");
    nlohmann::json header;
    try {
      header = parse_json(header_text);
    } catch (const JsonInputError& e) { fail(std::string("header is not valid JSON: ") + e.what()); }
    if (!header.is_object()) fail("header is not a JSON object");

    std::vector<Entry> entries;
    for (const auto& [key, value] : header.items()) {
      if (key == "__metadata__") {
        const auto parsed = parse_metadata(value);
        if (metadata != nullptr) *metadata = parsed;
      } else {
        entries.push_back(parse_entry(key, value));
      }
    }
    check_layout(entries);
    return entries;
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw UserError(file_.string() + ": invalid safetensors file: " + what);
  }
  [[noreturn]] void fail(const std::string& tensor, const std::string& what) const {
    fail("tensor '" + tensor + "': " + what);
  }

  void read_exact(uint64_t offset, char* dst, uint64_t bytes, const std::string& what) {
    in_.clear();
    in_.seekg(static_cast<std::streamoff>(offset));
    in_.read(dst, static_cast<std::streamsize>(bytes));
    if (!in_ || static_cast<uint64_t>(in_.gcount()) != bytes)
      fail("cannot read " + what + " (" + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) + ")");
  }

  std::map<std::string, std::string> parse_metadata(const nlohmann::json& value) const {
    std::map<std::string, std::string> metadata;
    if (value.is_null()) return metadata;
    if (!value.is_object()) fail("\"__metadata__\" must be an object of strings");
    for (const auto& [k, v] : value.items()) {
      if (!v.is_string()) fail("\"__metadata__\" value of '" + k + "' must be a string, got " + v.type_name());
      metadata.emplace(k, v.get<std::string>());
    }
    return metadata;
  }

  Entry parse_entry(const std::string& name, const nlohmann::json& value) const {
    if (!value.is_object()) fail(name, std::string("entry must be an object, got ") + value.type_name());
    for (const char* field : {"dtype", "shape", "data_offsets"})
      if (!value.contains(field)) fail(name, std::string("missing field '") + field + "'");
    Entry e;
    e.name = name;
    const auto& dtype = value["dtype"];
    if (!dtype.is_string()) fail(name, "'dtype' must be a string");
    e.dtype = dtype_by_name(dtype.get<std::string>());
    if (e.dtype == nullptr)
      fail(name, "unsupported dtype '" + dtype.get<std::string>() + "' (supported: " + supported_dtypes() + ")");

    const auto& shape = value["shape"];
    if (!shape.is_array()) fail(name, "'shape' must be an array of non-negative integers");
    uint64_t numel = 1;
    bool overflow = false;
    for (const auto& d : shape) {
      if (!d.is_number_integer())
        fail(name, "'shape' must be an array of non-negative integers, got " + json_excerpt(shape));
      if (!d.is_number_unsigned()) fail(name, "negative dimension in shape " + json_excerpt(shape));
      const uint64_t dim = d.get<uint64_t>();
      if (dim > static_cast<uint64_t>(INT64_MAX)) fail(name, "dimension too large in shape " + json_excerpt(shape));
      overflow = overflow || __builtin_mul_overflow(numel, dim, &numel);
      e.shape.push_back(static_cast<int64_t>(dim));
    }

    const auto& offsets = value["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned())
      fail(name, "'data_offsets' must be [begin, end] with non-negative integers, got " + json_excerpt(offsets));
    e.begin = offsets[0].get<uint64_t>();
    e.end = offsets[1].get<uint64_t>();
    if (e.begin > e.end) fail(name, "data_offsets " + json_excerpt(offsets) + " has begin > end");
    if (e.end > buffer_size_)
      fail(name, "data_offsets " + json_excerpt(offsets) + " beyond the data buffer of " +
                     std::to_string(buffer_size_) + " bytes (truncated?)");
    uint64_t bytes = 0;
    overflow = overflow || __builtin_mul_overflow(numel, static_cast<uint64_t>(e.dtype->itemsize), &bytes);
    if (overflow || bytes != e.end - e.begin)
      fail(name, "byte size " + std::to_string(e.end - e.begin) + " of data_offsets " + json_excerpt(offsets) +
                     " does not match shape " + shape_string(e.shape) + " of " + e.dtype->name + " (" +
                     (overflow ? std::string("overflow") : std::to_string(bytes)) + " bytes)");
    return e;
  }

  // The tensors must tile [0, buffer_size_) without overlaps or gaps, as the reference requires.
  void check_layout(std::vector<Entry>& entries) const {
    std::sort(entries.begin(), entries.end(),
              [](const Entry& a, const Entry& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
    uint64_t pos = 0;
    const Entry* prev = nullptr;
    for (const auto& e : entries) {
      if (e.begin < pos)
        fail(e.name, "data [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + ") overlaps tensor '" +
                         prev->name + "' [" + std::to_string(prev->begin) + ", " + std::to_string(prev->end) + ")");
      if (e.begin > pos)
        fail(e.name, "gap of " + std::to_string(e.begin - pos) + " unused bytes before its data at offset " +
                         std::to_string(e.begin));
      pos = e.end;
      prev = &e;
    }
    if (pos != buffer_size_)
      fail(std::to_string(buffer_size_ - pos) + " bytes at the end of the data buffer belong to no tensor");
  }

  torch::Tensor load(const Entry& e) {
    auto t = torch::empty(e.shape, torch::TensorOptions().dtype(e.dtype->type));
    const uint64_t bytes = e.end - e.begin;
    if (bytes > 0)
      read_exact(data_start_ + e.begin, static_cast<char*>(t.data_ptr()), bytes, "data of '" + e.name + "'");
    return t;
  }

  std::filesystem::path file_;
  std::ifstream in_;
  uint64_t data_start_ = 0;
  uint64_t buffer_size_ = 0;
};

}  // namespace

SafetensorsFile read_safetensors(const std::filesystem::path& file) { return Reader(file).read(); }

TensorShapes read_safetensors_shapes(const std::filesystem::path& file) { return Reader(file).shapes(); }

void write_safetensors(const std::filesystem::path& file, const TensorMap& tensors,
                       const std::map<std::string, std::string>& metadata) {
  struct Item {
    const std::string* name;
    torch::Tensor data;  // CPU, contiguous
    const DtypeInfo* dtype;
  };
  auto fail = [&](const std::string& what) -> void { throw UserError("cannot write " + file.string() + ": " + what); };
  std::vector<Item> items;
  for (const auto& [name, t] : tensors) {
    if (name == "__metadata__") fail("'__metadata__' is reserved and cannot name a tensor");
    if (!t.defined()) fail("tensor '" + name + "' is undefined");
    if (t.layout() != torch::kStrided) fail("tensor '" + name + "' is not dense (densify it first)");
    const DtypeInfo* d = dtype_by_type(t.scalar_type());
    if (d == nullptr)
      fail("tensor '" + name + "' has dtype " + std::string(c10::toString(t.scalar_type())) +
           ", not supported (supported: " + supported_dtypes() + ")");
    items.push_back({&name, t.detach().to(torch::kCPU).contiguous(), d});
  }
  // Widest dtype first, then by name (std::map order already sorts by name; the sort is stable).
  std::stable_sort(items.begin(), items.end(),
                   [](const Item& a, const Item& b) { return a.dtype->rank > b.dtype->rank; });

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  auto& meta = header["__metadata__"] = nlohmann::ordered_json::object();
  if (metadata.empty()) meta["format"] = "pt";
  for (const auto& [k, v] : metadata) meta[k] = v;
  uint64_t offset = 0;
  for (const auto& item : items) {
    const uint64_t bytes = item.data.numel() * item.dtype->itemsize;
    header[*item.name] = {
        {"dtype", item.dtype->name}, {"shape", item.data.sizes().vec()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string header_text;
  try {
    header_text = header.dump();
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("tensor name or metadata is not valid UTF-8: ") + e.what());
  }
  header_text.append((8 - header_text.size() % 8) % 8, ' ');

  detail::write_file_atomic(file, [&](std::ostream& out) {
    unsigned char len_bytes[8];
    uint64_t n = header_text.size();
    for (int i = 0; i < 8; ++i) len_bytes[i] = static_cast<unsigned char>(n >> (8 * i));
    out.write(reinterpret_cast<const char*>(len_bytes), 8);
    out.write(header_text.data(), static_cast<std::streamsize>(header_text.size()));
    for (const auto& item : items)
      out.write(static_cast<const char*>(item.data.data_ptr()),
                static_cast<std::streamsize>(item.data.numel() * item.dtype->itemsize));
  });
}

}  // namespace unif::framework
