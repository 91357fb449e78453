// torch_bin: reader for torch.save's zip format. The archive is opened with libzip (CRC and
// consistency checked); `<top>/data.pkl` runs on a small pickle VM that understands only what a
// saved state dict needs: containers, numbers, strings, collections.OrderedDict,
// torch._utils._rebuild_tensor_v2 / _rebuild_parameter and persistent ids
// ('storage', torch.<T>Storage, key, location, numel) that name `<top>/data/<key>` entries. Every
// other global or opcode is refused (a pickle can run arbitrary code; we never do), every read is
// bounds-checked, every zip entry's recorded size is checked against the bytes it occupies before
// it is allocated, tensors are views of their storages (memory never exceeds what the archive
// holds), dict keys are indexed (SETITEMS is linear), and objects live in an arena (no recursive
// destruction of deep nesting).
#include "framework/checkpoint/torch_bin.h"

#include <zip.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "framework/common/error.h"

namespace unif::framework {
namespace {

// Thrown inside the reader; read_torch_bin turns it into a UserError naming the file.
struct BinError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------------------------------------
// Zip access (libzip).

struct ZipCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
using ZipPtr = std::unique_ptr<zip_t, ZipCloser>;

// Deflate expands at most 1032-fold (258-byte matches coded in 2 bits).
constexpr uint64_t kMaxDeflateRatio = 1032;

class Archive {
 public:
  explicit Archive(const std::filesystem::path& file) {
    int code = 0;
    zip_.reset(zip_open(file.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code));
    if (!zip_) {
      zip_error_t err;
      zip_error_init_with_code(&err, code);
      std::string why = zip_error_strerror(&err);
      zip_error_fini(&err);
      throw BinError("cannot open as a zip archive (" + why +
                     "): truncated, or not torch.save's zip format (the legacy pre-1.6 format is not supported)");
    }
    // The one `<top>/data.pkl`; the top folder's name varies (archive/, pytorch_model/, ...).
    const zip_int64_t n = zip_get_num_entries(zip_.get(), 0);
    for (zip_int64_t i = 0; i < n; ++i) {
      const char* name = zip_get_name(zip_.get(), static_cast<zip_uint64_t>(i), 0);
      if (name == nullptr) continue;
      std::string s = name;
      const auto slash = s.find('/');
      if (slash != std::string::npos && s.substr(slash) == "/data.pkl") {
        if (!prefix_.empty()) throw BinError("more than one data.pkl in the archive");
        prefix_ = s.substr(0, slash + 1);
      }
    }
    if (prefix_.empty()) throw BinError("no <folder>/data.pkl in the zip archive: not a torch.save file");
    std::error_code ec;
    file_size_ = std::filesystem::file_size(file, ec);
    if (ec) throw BinError("cannot stat: " + ec.message());
  }

  const std::string& prefix() const { return prefix_; }

  bool has(const std::string& name) const { return zip_name_locate(zip_.get(), (prefix_ + name).c_str(), 0) >= 0; }

  /// Size in bytes of entry `prefix + name`, checked against the bytes the archive holds for it
  /// before anyone allocates it: the size a zip records is only a claim (a 138-byte file can claim
  /// gigabytes). torch.save stores entries uncompressed, so there the two sizes must agree.
  uint64_t size(const std::string& name) const {
    const std::string full = prefix_ + name;
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat(zip_.get(), full.c_str(), 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE))
      throw BinError("missing archive entry '" + full + "'");
    if (!(st.valid & ZIP_STAT_COMP_SIZE) || !(st.valid & ZIP_STAT_COMP_METHOD))
      throw BinError("archive entry '" + full + "' has no recorded compressed size or method");
    const std::string claim = "archive entry '" + full + "' claims " + std::to_string(st.size) + " bytes";
    if (st.comp_size > file_size_)
      throw BinError(claim + " in " + std::to_string(st.comp_size) + " compressed bytes, more than the file's " +
                     std::to_string(file_size_) + " (truncated or corrupt)");
    if (st.comp_method == ZIP_CM_STORE) {
      if (st.size != st.comp_size)
        throw BinError(claim + " but stores " + std::to_string(st.comp_size) + " (corrupt zip sizes)");
    } else if (st.comp_method == ZIP_CM_DEFLATE) {
      if (st.size / kMaxDeflateRatio > st.comp_size)
        throw BinError(claim + " from " + std::to_string(st.comp_size) +
                       " deflated bytes, more than deflate can expand to (corrupt zip sizes)");
    } else {
      throw BinError("archive entry '" + full + "' uses zip compression method " + std::to_string(st.comp_method) +
                     " (torch.save stores entries uncompressed; deflate is also read)");
    }
    return st.size;
  }

  /// Reads the whole entry (exactly `bytes` bytes, checked, CRC verified) into `dst`.
  void read(const std::string& name, void* dst, uint64_t bytes) const {
    const std::string full = prefix_ + name;
    zip_file_t* f = zip_fopen(zip_.get(), full.c_str(), 0);
    if (f == nullptr) throw BinError("cannot open archive entry '" + full + "': " + zip_strerror(zip_.get()));
    uint64_t got = 0;
    std::string error;
    while (got < bytes) {
      const zip_int64_t r = zip_fread(f, static_cast<char*>(dst) + got, bytes - got);
      if (r <= 0) {
        error = r < 0 ? zip_file_strerror(f) : "unexpected end of data";
        break;
      }
      got += static_cast<uint64_t>(r);
    }
    if (error.empty()) {  // reach the end, which makes libzip check the CRC
      char extra;
      const zip_int64_t r = zip_fread(f, &extra, 1);
      if (r != 0) error = r < 0 ? zip_file_strerror(f) : "entry longer than its recorded size";
    }
    zip_fclose(f);
    if (!error.empty()) throw BinError("cannot read archive entry '" + full + "': " + error);
  }

  std::string read_string(const std::string& name) const {
    std::string s(size(name), '\0');
    read(name, s.data(), s.size());
    return s;
  }

 private:
  ZipPtr zip_;
  std::string prefix_;
  uint64_t file_size_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Pickle VM subset.

struct Value {
  enum class Kind { None, Bool, Int, Float, String, Tuple, List, Dict, Global, Storage, Tensor };
  Kind kind = Kind::None;
  int64_t i = 0;                                  // Bool, Int
  double f = 0;                                   // Float
  std::string s;                                  // String; Global: "module.name"
  std::vector<Value*> items;                      // Tuple, List
  std::vector<std::pair<Value*, Value*>> dict;    // Dict, insertion order (OrderedDict)
  std::unordered_map<std::string, size_t> index;  // Dict: position in `dict` of each str key
  torch::Tensor tensor;                           // Storage (1-D typed), Tensor
};

const char* kind_name(Value::Kind k) {
  switch (k) {
    case Value::Kind::None: return "None";
    case Value::Kind::Bool: return "bool";
    case Value::Kind::Int: return "int";
    case Value::Kind::Float: return "float";
    case Value::Kind::String: return "str";
    case Value::Kind::Tuple: return "tuple";
    case Value::Kind::List: return "list";
    case Value::Kind::Dict: return "dict";
    case Value::Kind::Global: return "global";
    case Value::Kind::Storage: return "storage";
    case Value::Kind::Tensor: return "tensor";
  }
  return "?";
}

// torch.<T>Storage -> dtype.
const std::unordered_map<std::string, torch::ScalarType>& storage_types() {
  static const std::unordered_map<std::string, torch::ScalarType> types{
      {"torch.FloatStorage", torch::kFloat32}, {"torch.DoubleStorage", torch::kFloat64},
      {"torch.HalfStorage", torch::kFloat16},  {"torch.BFloat16Storage", torch::kBFloat16},
      {"torch.LongStorage", torch::kInt64},    {"torch.IntStorage", torch::kInt32},
      {"torch.ShortStorage", torch::kInt16},   {"torch.CharStorage", torch::kInt8},
      {"torch.ByteStorage", torch::kUInt8},    {"torch.BoolStorage", torch::kBool},
  };
  return types;
}

bool is_callable_global(const std::string& g) {
  return g == "collections.OrderedDict" || g == "torch._utils._rebuild_tensor_v2" ||
         g == "torch._utils._rebuild_tensor" || g == "torch._utils._rebuild_parameter";
}

class Unpickler {
 public:
  using PersistentLoad = std::function<torch::Tensor(const std::string& key, torch::ScalarType dtype, int64_t numel)>;

  Unpickler(const std::string& data, PersistentLoad load) : data_(data), load_(std::move(load)) {}

  Value* run() {
    while (pos_ < data_.size()) {
      op_pos_ = pos_;
      const auto op = static_cast<unsigned char>(data_[pos_++]);
      switch (op) {
        case 0x80: {  // PROTO
          const int proto = u8();
          if (proto > 5) fail("unsupported pickle protocol " + std::to_string(proto));
          break;
        }
        case 0x95: take(8); break;  // FRAME (protocol 4): only a read-ahead hint
        case 'c': {                 // GLOBAL
          std::string module = line();
          std::string name = line();
          push(global(module + "." + name));
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          Value* name = pop();
          Value* module = pop();
          if (name->kind != Value::Kind::String || module->kind != Value::Kind::String)
            fail("STACK_GLOBAL expects two strings");
          push(global(module->s + "." + name->s));
          break;
        }
        case 'q': memo_[u8()] = top(); break;                                  // BINPUT
        case 'r': memo_[u32()] = top(); break;                                 // LONG_BINPUT
        case 0x94: memo_[static_cast<uint32_t>(memo_.size())] = top(); break;  // MEMOIZE
        case 'h': push(memo(u8())); break;                                     // BINGET
        case 'j': push(memo(u32())); break;                                    // LONG_BINGET
        case '}': push(make(Value::Kind::Dict)); break;                        // EMPTY_DICT
        case ')': push(make(Value::Kind::Tuple)); break;                       // EMPTY_TUPLE
        case ']': push(make(Value::Kind::List)); break;                        // EMPTY_LIST
        case '(': marks_.push_back(stack_.size()); break;                      // MARK
        case 't': push(sequence(Value::Kind::Tuple, pop_mark())); break;       // TUPLE
        case 'l': push(sequence(Value::Kind::List, pop_mark())); break;        // LIST
        case 0x85:
        case 0x86:
        case 0x87: {  // TUPLE1..3
          const size_t n = op - 0x84u;
          if (stack_.size() < n) fail("stack underflow");
          std::vector<Value*> items(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
          stack_.resize(stack_.size() - n);
          check_marks();
          push(sequence(Value::Kind::Tuple, std::move(items)));
          break;
        }
        case 'd': {  // DICT
          Value* d = make(Value::Kind::Dict);
          set_items(d, pop_mark());
          push(d);
          break;
        }
        case 'J': push(integer(static_cast<int32_t>(u32()))); break;  // BININT
        case 'K': push(integer(u8())); break;                         // BININT1
        case 'M': push(integer(u16())); break;                        // BININT2
        case 0x8a: {                                                  // LONG1
          const size_t n = u8();
          if (n > 8) fail("integer of " + std::to_string(n) + " bytes is too large");
          const char* p = take(n);
          uint64_t v = 0;
          for (size_t k = 0; k < n; ++k) v |= static_cast<uint64_t>(static_cast<unsigned char>(p[k])) << (8 * k);
          if (n > 0 && n < 8 && (static_cast<unsigned char>(p[n - 1]) & 0x80)) v |= ~uint64_t{0} << (8 * n);
          push(integer(static_cast<int64_t>(v)));
          break;
        }
        case 'X': push(string(u32())); break;  // BINUNICODE
        case 0x8c: push(string(u8())); break;  // SHORT_BINUNICODE
        case 'U': push(string(u8())); break;   // SHORT_BINSTRING
        case 'T': {                            // BINSTRING
          const auto n = static_cast<int32_t>(u32());
          if (n < 0) fail("negative string length");
          push(string(static_cast<uint32_t>(n)));
          break;
        }
        case 0x88:
        case 0x89: {  // NEWTRUE, NEWFALSE
          Value* v = make(Value::Kind::Bool);
          v->i = op == 0x88;
          push(v);
          break;
        }
        case 'N': push(make(Value::Kind::None)); break;  // NONE
        case 'G': {                                      // BINFLOAT (big-endian double)
          const char* p = take(8);
          uint64_t bits = 0;
          for (int k = 0; k < 8; ++k) bits = (bits << 8) | static_cast<unsigned char>(p[k]);
          Value* v = make(Value::Kind::Float);
          std::memcpy(&v->f, &bits, sizeof bits);
          push(v);
          break;
        }
        case 'R': {  // REDUCE
          Value* args = pop();
          Value* callable = pop();
          push(call(callable, args));
          break;
        }
        case 'b': {  // BUILD: only the `_metadata` attribute torch.save puts on an OrderedDict
          pop();
          if (top()->kind != Value::Kind::Dict)
            fail(std::string("BUILD on a ") + kind_name(top()->kind) + " is not supported");
          break;
        }
        case 's': {  // SETITEM
          Value* value = pop();
          Value* key = pop();
          set_items(top(), {key, value});
          break;
        }
        case 'u': {  // SETITEMS
          auto items = pop_mark();
          set_items(top(), std::move(items));
          break;
        }
        case 'a': {  // APPEND
          Value* value = pop();
          append(top(), {value});
          break;
        }
        case 'e': {  // APPENDS
          auto items = pop_mark();
          append(top(), std::move(items));
          break;
        }
        case 'Q': push(persistent(pop())); break;  // BINPERSID
        case '0': pop(); break;                    // POP
        case '1': pop_mark(); break;               // POP_MARK
        case '2': push(top()); break;              // DUP
        case '.': {                                // STOP
          Value* result = pop();
          if (!stack_.empty() || !marks_.empty()) fail("STOP with objects left on the stack");
          return result;
        }
        default: {
          char hex[8];
          std::snprintf(hex, sizeof hex, "0x%02x", op);
          fail(std::string("unsupported pickle opcode ") + hex);
        }
      }
    }
    fail("data.pkl ends without STOP (truncated)");
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw BinError("data.pkl byte " + std::to_string(op_pos_) + ": " + what);
  }

  const char* take(size_t n) {
    if (n > data_.size() - pos_) fail("unexpected end of data.pkl (truncated)");
    const char* p = data_.data() + pos_;
    pos_ += n;
    return p;
  }
  uint32_t u8() { return static_cast<unsigned char>(*take(1)); }
  uint32_t u16() {
    const char* p = take(2);
    return static_cast<unsigned char>(p[0]) | static_cast<uint32_t>(static_cast<unsigned char>(p[1])) << 8;
  }
  uint32_t u32() {
    const char* p = take(4);
    uint32_t v = 0;
    for (int k = 3; k >= 0; --k) v = (v << 8) | static_cast<unsigned char>(p[k]);
    return v;
  }
  std::string line() {
    const auto end = data_.find('\n', pos_);
    if (end == std::string::npos) fail("unterminated GLOBAL name");
    std::string s = data_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return s;
  }

  Value* make(Value::Kind kind) {
    arena_.emplace_back();
    arena_.back().kind = kind;
    return &arena_.back();
  }
  Value* integer(int64_t v) {
    Value* x = make(Value::Kind::Int);
    x->i = v;
    return x;
  }
  Value* string(uint32_t n) {
    Value* x = make(Value::Kind::String);
    x->s.assign(take(n), n);
    return x;
  }
  Value* sequence(Value::Kind kind, std::vector<Value*> items) {
    Value* x = make(kind);
    x->items = std::move(items);
    return x;
  }
  Value* global(const std::string& name) {
    if (!is_callable_global(name) && storage_types().count(name) == 0)
      fail("unsupported global '" + name + "' (only tensors in a state dict can be read)");
    Value* x = make(Value::Kind::Global);
    x->s = name;
    return x;
  }
  Value* memo(uint32_t key) {
    auto it = memo_.find(key);
    if (it == memo_.end()) fail("memo key " + std::to_string(key) + " not defined");
    return it->second;
  }

  void push(Value* v) { stack_.push_back(v); }
  Value* top() {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) fail("stack underflow");
    return stack_.back();
  }
  Value* pop() {
    Value* v = top();
    stack_.pop_back();
    return v;
  }
  void check_marks() {
    if (!marks_.empty() && marks_.back() > stack_.size()) fail("stack underflow across a MARK");
  }
  std::vector<Value*> pop_mark() {
    if (marks_.empty()) fail("no MARK on the stack");
    const size_t m = marks_.back();
    marks_.pop_back();
    std::vector<Value*> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }

  void set_items(Value* d, std::vector<Value*> kv) {
    if (d->kind != Value::Kind::Dict) fail(std::string("SETITEM on a ") + kind_name(d->kind));
    if (kv.size() % 2 != 0) fail("odd number of items for a dict");
    for (size_t k = 0; k < kv.size(); k += 2) {
      if (kv[k]->kind == Value::Kind::String) {
        const auto [it, added] = d->index.emplace(kv[k]->s, d->dict.size());
        if (!added) {  // a repeated key replaces the value in place, as in Python
          d->dict[it->second].second = kv[k + 1];
          continue;
        }
      }
      d->dict.emplace_back(kv[k], kv[k + 1]);
    }
  }
  void append(Value* list, std::vector<Value*> items) {
    if (list->kind != Value::Kind::List) fail(std::string("APPEND on a ") + kind_name(list->kind));
    list->items.insert(list->items.end(), items.begin(), items.end());
  }

  int64_t as_int(const Value* v, const char* what) const {
    if (v->kind != Value::Kind::Int) fail(std::string(what) + " must be an int, got " + kind_name(v->kind));
    return v->i;
  }
  std::vector<int64_t> as_ints(const Value* v, const char* what) const {
    if (v->kind != Value::Kind::Tuple) fail(std::string(what) + " must be a tuple, got " + kind_name(v->kind));
    std::vector<int64_t> out;
    for (const Value* x : v->items) {
      out.push_back(as_int(x, what));
      if (out.back() < 0) fail(std::string(what) + " has a negative entry");
    }
    return out;
  }

  Value* call(Value* callable, Value* args) {
    if (callable->kind != Value::Kind::Global || !is_callable_global(callable->s))
      fail(std::string("REDUCE on a ") + kind_name(callable->kind) +
           (callable->kind == Value::Kind::Global ? " '" + callable->s + "'" : ""));
    if (args->kind != Value::Kind::Tuple) fail("REDUCE arguments must be a tuple");
    const auto& a = args->items;
    const std::string& f = callable->s;
    if (f == "collections.OrderedDict") {
      if (!a.empty()) fail("OrderedDict(...) with arguments is not supported");
      return make(Value::Kind::Dict);
    }
    if (f == "torch._utils._rebuild_parameter") {
      if (a.size() < 1 || a[0]->kind != Value::Kind::Tensor) fail("_rebuild_parameter expects a tensor");
      return a[0];
    }
    // _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
    // _rebuild_tensor(storage, storage_offset, size, stride)
    if (a.size() < 4) fail(f + " expects at least 4 arguments, got " + std::to_string(a.size()));
    if (a[0]->kind != Value::Kind::Storage) fail(f + ": first argument must be a storage");
    const torch::Tensor& storage = a[0]->tensor;  // (numel,)
    const int64_t offset = as_int(a[1], "storage_offset");
    const auto size = as_ints(a[2], "size");
    const auto stride = as_ints(a[3], "stride");
    if (size.size() != stride.size()) fail("size and stride of a tensor differ in length");
    if (offset < 0) fail("negative storage_offset");
    int64_t numel = 1, last = offset;
    bool overflow = false;
    for (size_t d = 0; d < size.size(); ++d) {
      int64_t span = 0;
      overflow = overflow || __builtin_mul_overflow(numel, size[d], &numel);
      if (size[d] > 0)
        overflow = overflow || __builtin_mul_overflow(size[d] - 1, stride[d], &span) ||
                   __builtin_add_overflow(last, span, &last);
    }
    if (overflow) fail("tensor size/stride overflow");
    if (numel > 0) {  // checked before allocating: sizes come from the file
      if (last >= storage.numel())
        fail("tensor view (offset " + std::to_string(offset) + ", last element " + std::to_string(last) +
             ") is beyond its storage of " + std::to_string(storage.numel()) + " elements");
      if (numel > storage.numel()) fail("tensor with more elements than its storage (broadcast view) is not supported");
    }
    // A view, as torch.load returns: no copy, so REDUCEs of one memoised call cost no memory and
    // tensors saved over one storage (tied weights) share it as they did when saved.
    // Reading shapes only, the storages are meta tensors (no data): a meta tensor of the view's shape.
    Value* t = make(Value::Kind::Tensor);
    t->tensor = storage.is_meta() ? torch::empty(size, storage.options())
                : numel > 0       ? storage.as_strided(size, stride, offset)
                                  : torch::empty(size, torch::TensorOptions().dtype(storage.scalar_type()));
    return t;
  }

  Value* persistent(Value* pid) {
    // ('storage', torch.<T>Storage, key, location, numel)
    if (pid->kind != Value::Kind::Tuple || pid->items.size() != 5 || pid->items[0]->kind != Value::Kind::String ||
        pid->items[0]->s != "storage")
      fail("persistent id is not ('storage', type, key, location, numel)");
    const Value* type = pid->items[1];
    const Value* key = pid->items[2];
    if (type->kind != Value::Kind::Global || storage_types().count(type->s) == 0)
      fail("persistent id: unknown storage type");
    if (key->kind != Value::Kind::String || key->s.empty()) fail("persistent id: storage key must be a string");
    const int64_t numel = as_int(pid->items[4], "storage numel");
    if (numel < 0) fail("negative storage numel");
    Value* s = make(Value::Kind::Storage);
    s->tensor = load_(key->s, storage_types().at(type->s), numel);
    return s;
  }

  const std::string& data_;
  PersistentLoad load_;
  size_t pos_ = 0, op_pos_ = 0;
  std::deque<Value> arena_;  // owns every object; pointers stay valid
  std::vector<Value*> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint32_t, Value*> memo_;
};

// with_data false: every check is made, but no storage's data is read (the storages are meta tensors).
TensorMap read(const std::filesystem::path& file, bool with_data) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    throw BinError("no such file (expected torch.save's pytorch_model.bin)");
  Archive zip(file);
  if (zip.has("byteorder")) {
    const std::string order = zip.read_string("byteorder");
    if (order != "little") throw BinError("byteorder '" + order + "' is not supported (only little)");
  }
  const std::string pickle = zip.read_string("data.pkl");

  std::unordered_map<std::string, torch::Tensor> storages;  // key -> (numel,), shared by views
  auto load = [&](const std::string& key, torch::ScalarType dtype, int64_t numel) {
    auto it = storages.find(key);
    if (it != storages.end()) {
      if (it->second.scalar_type() != dtype || it->second.numel() != numel)
        throw BinError("storage '" + key + "' used with two different types or sizes");
      return it->second;
    }
    const std::string entry = "data/" + key;
    const uint64_t bytes = zip.size(entry);
    uint64_t expected = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(numel), c10::elementSize(dtype), &expected) || bytes != expected)
      throw BinError("storage '" + key + "' has " + std::to_string(bytes) + " bytes, expected " +
                     std::to_string(expected) + " (" + std::to_string(numel) + " x " + c10::toString(dtype) + ")");
    if (!with_data) {
      auto meta = torch::empty({numel}, torch::TensorOptions().dtype(dtype).device(torch::kMeta));
      storages.emplace(key, meta);
      return meta;
    }
    auto storage = torch::empty({numel}, torch::TensorOptions().dtype(dtype));
    zip.read(entry, storage.data_ptr(), bytes);
    storages.emplace(key, storage);
    return storage;
  };
  Unpickler unpickler(pickle, load);
  const Value* root = unpickler.run();
  if (root->kind != Value::Kind::Dict)
    throw BinError(std::string("data.pkl holds a ") + kind_name(root->kind) +
                   ", expected a state dict (dict of tensors)");
  TensorMap out;
  for (const auto& [key, value] : root->dict) {
    if (key->kind != Value::Kind::String)
      throw BinError("state dict key is a " + std::string(kind_name(key->kind)) + ", expected str");
    if (value->kind != Value::Kind::Tensor)
      throw BinError("state dict entry '" + key->s + "' is a " + kind_name(value->kind) + ", expected a tensor");
    out[key->s] = value->tensor;
  }
  return out;
}

// UserError naming the file for what reading `file` throws.
template <class F>
auto reading(const std::filesystem::path& file, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const BinError& e) {
    throw UserError(file.string() + ": cannot read pytorch_model.bin: " + e.what());
  } catch (const std::bad_alloc&) {
    throw UserError(file.string() + ": cannot read pytorch_model.bin: out of memory (corrupt sizes?)");
  } catch (const c10::Error& e) {
    throw UserError(file.string() + ": cannot read pytorch_model.bin: " + e.what_without_backtrace());
  }
}

}  // namespace

TensorMap read_torch_bin(const std::filesystem::path& file) {
  return reading(file, [&] { return read(file, /*with_data=*/true); });
}

TensorShapes read_torch_bin_shapes(const std::filesystem::path& file) {
  return reading(file, [&] {
    TensorShapes shapes;
    for (const auto& [key, tensor] : read(file, /*with_data=*/false)) shapes.emplace(key, tensor.sizes().vec());
    return shapes;
  });
}

}  // namespace unif::framework
