// A family's config.json keys, declared once: a field list `struct XFields` in the family's folder
// with `static void defaults(EncoderConfig&)` (the family's defaults, set before a file is read)
// and `template <class V> static void visit(V& v)` calling, for each key in reading order,
//
//   v("key", UNIF_HF_FIELD(member), rule...);            // a field of EncoderConfig
//   v("key", UNIF_HF_FAMILY_FIELD(F, member), rule...);  // a field of the family's config type F
//   v.custom("key", read, write);                        // a key of another shape
//
// The visitors here read config.json through HfJson (read_hf_fields), write it (write_hf_fields)
// and list the keys (hf_field_keys). A field's value type says how it is read (integer, number,
// string, boolean) and written (as it is); the rules narrow that:
//   reading   kSize / kSizeOrZero (an integer in [1 or 0, kMaxSize]), IntegerAtMost{max},
//             kProbability / kNullableProbability (in [0, 1); null sets -1, "use another dropout"),
//             kPositive / kNonNegative (a finite number > 0 / >= 0), OneOf{...} (a string of a set),
//             kNullKeeps (a JSON null leaves the default: HF's null pad_token_id)
//   writing   kNullWhenNegative (null for a negative value), kAtLeastZero (max(0, value)), kErased
//             (removed from the written file: the family spells it otherwise), WriteBy{fn} (a
//             derived or conditional value)
// A custom entry's read gets the HfJson and the config (nullptr: the key is only known), its write
// the config and the JSON object (nullptr: not written); each looks up its own key alone.
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/architectures.h"
#include "models/encoder_config.h"
#include "models/hf_json.h"

/// The accessor of EncoderConfig's field `name` (a TORCH_ARG).
#define UNIF_HF_FIELD(name) \
  [](auto& c) -> auto& { return c.name(); }
/// The accessor of family config F's field `name`, through EncoderConfig::family<F>().
#define UNIF_HF_FAMILY_FIELD(F, name) \
  [](auto& c) -> auto& { return c.template family<F>().name(); }

namespace unif::models {

namespace hf_fields {

using ReadFn = void (*)(const HfJson& config, EncoderConfig& c);
using WriteFn = void (*)(const EncoderConfig& c, nlohmann::json& config);

/// What a key's rules say, gathered.
struct Spec {
  enum class Read { Plain, Size, IntegerAtMost, Probability, Positive, NonNegative } read = Read::Plain;
  int64_t min = 1, max = EncoderConfig::kMaxSize;
  bool nullable = false;    // Probability: null sets -1
  bool null_keeps = false;  // null leaves the field
  const std::vector<std::string>* one_of = nullptr;
  const char* expected = nullptr;
  enum class Write { Plain, NullWhenNegative, AtLeastZero, Erased, By } write = Write::Plain;
  WriteFn write_by = nullptr;
};

struct SizeRule {
  int64_t min;
  void operator()(Spec& s) const { s.read = Spec::Read::Size, s.min = min; }
};
struct IntegerAtMost {
  int64_t max;
  void operator()(Spec& s) const { s.read = Spec::Read::IntegerAtMost, s.max = max; }
};
struct ProbabilityRule {
  bool nullable;
  void operator()(Spec& s) const { s.read = Spec::Read::Probability, s.nullable = nullable; }
};
struct NumberRule {
  bool strictly;
  void operator()(Spec& s) const { s.read = strictly ? Spec::Read::Positive : Spec::Read::NonNegative; }
};
struct NullKeepsRule {
  void operator()(Spec& s) const { s.null_keeps = true; }
};
/// A string of `values`; otherwise "key 'K': <expected>, got "V"".
struct OneOf {
  std::vector<std::string> values;
  const char* expected;
  void operator()(Spec& s) const { s.one_of = &values, s.expected = expected; }
};
struct WriteRule {
  Spec::Write write;
  void operator()(Spec& s) const { s.write = write; }
};
/// The written value is computed by `write` (which sets the key itself).
struct WriteBy {
  WriteFn write;
  void operator()(Spec& s) const { s.write = Spec::Write::By, s.write_by = write; }
};

inline constexpr SizeRule kSize{1};
inline constexpr SizeRule kSizeOrZero{0};
inline constexpr ProbabilityRule kProbability{false};
inline constexpr ProbabilityRule kNullableProbability{true};
inline constexpr NumberRule kPositive{true};
inline constexpr NumberRule kNonNegative{false};
inline constexpr NullKeepsRule kNullKeeps{};
inline constexpr WriteRule kNullWhenNegative{Spec::Write::NullWhenNegative};
inline constexpr WriteRule kAtLeastZero{Spec::Write::AtLeastZero};
inline constexpr WriteRule kErased{Spec::Write::Erased};
/// The activations unif implements (models/layers/activations.h).
inline const OneOf kActivation{{"gelu", "gelu_new", "relu"}, "must be gelu, gelu_new or relu"};

template <class... Rules>
Spec spec_of(const Rules&... rules) {
  Spec s;
  (rules(s), ...);
  return s;
}

/// Reads each key present through HfJson (its range checks and messages).
class Reader {
 public:
  Reader(const HfJson& r, EncoderConfig& c) : r_(r), c_(c) {}
  template <class Field, class... Rules>
  void operator()(const char* key, Field field, const Rules&... rules) {
    const Spec s = spec_of(rules...);
    if (s.null_keeps)
      if (const auto* v = r_.find(key); v != nullptr && v->is_null()) return;
    auto& member = field(c_);
    using T = std::decay_t<decltype(member)>;
    if constexpr (std::is_same_v<T, int64_t>) {
      const auto set = [&](int64_t v) { member = v; };
      if (s.read == Spec::Read::Size)
        r_.size(key, set, s.min);
      else if (s.read == Spec::Read::IntegerAtMost)
        r_.integer_in(key, std::numeric_limits<int64_t>::min(), s.max, set);
      else
        r_.integer(key, set);
    } else if constexpr (std::is_same_v<T, double>) {
      const auto set = [&](double v) { member = v; };
      if (s.read == Spec::Read::Probability)
        r_.probability(key, set, s.nullable, -1.0);
      else if (s.read == Spec::Read::Positive)
        r_.positive_number(key, set);
      else if (s.read == Spec::Read::NonNegative)
        r_.non_negative_number(key, set);
      else
        r_.number(key, set);
    } else if constexpr (std::is_same_v<T, bool>) {
      r_.boolean(key, [&](bool v) { member = v; });
    } else {
      static_assert(std::is_same_v<T, std::string>, "a field of another type needs a custom entry");
      r_.string(key, [&](const std::string& v) {
        if (s.one_of && std::find(s.one_of->begin(), s.one_of->end(), v) == s.one_of->end())
          r_.fail(key, std::string(s.expected) + ", got \"" + v + "\"");
        member = v;
      });
    }
  }
  void custom(const char* key, ReadFn read, WriteFn /*write*/) {
    if (read != nullptr)
      read(r_, c_);
    else
      r_.find(key);
  }

 private:
  const HfJson& r_;
  EncoderConfig& c_;
};

/// Sets each key on a JSON object (over what the object holds).
class Writer {
 public:
  Writer(const EncoderConfig& c, nlohmann::json& j) : c_(c), j_(j) {}
  template <class Field, class... Rules>
  void operator()(const char* key, Field field, const Rules&... rules) {
    const Spec s = spec_of(rules...);
    const auto& value = field(c_);
    using T = std::decay_t<decltype(value)>;
    if (s.write == Spec::Write::Erased) {
      j_.erase(key);
    } else if (s.write == Spec::Write::By) {
      s.write_by(c_, j_);
    } else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>) {
      if (s.write == Spec::Write::NullWhenNegative)
        j_[key] = value < 0 ? nlohmann::json(nullptr) : nlohmann::json(value);
      else if (s.write == Spec::Write::AtLeastZero)
        j_[key] = std::max<T>(0, value);
      else
        j_[key] = value;
    } else {
      j_[key] = value;
    }
  }
  void custom(const char* /*key*/, ReadFn /*read*/, WriteFn write) {
    if (write != nullptr) write(c_, j_);
  }

 private:
  const EncoderConfig& c_;
  nlohmann::json& j_;
};

/// Collects the keys.
class Keys {
 public:
  template <class Field, class... Rules>
  void operator()(const char* key, Field /*field*/, const Rules&... /*rules*/) {
    keys.insert(key);
  }
  void custom(const char* key, ReadFn /*read*/, WriteFn /*write*/) { keys.insert(key); }
  std::set<std::string> keys;
};

}  // namespace hf_fields

/// config.json -> config: the family's defaults, then every key of Fields present, in order.
/// std::invalid_argument naming the key (HfJson).
template <class Fields>
void read_hf_fields(const HfJson& config, EncoderConfig& c) {
  Fields::defaults(c);
  hf_fields::Reader v(config, c);
  Fields::visit(v);
}

/// config -> config.json: sets (or erases) the keys of Fields on `config`.
template <class Fields>
void write_hf_fields(const EncoderConfig& c, nlohmann::json& config) {
  hf_fields::Writer v(c, config);
  Fields::visit(v);
}

/// The config.json keys of Fields (what model.config may set).
template <class Fields>
std::set<std::string> hf_field_keys() {
  hf_fields::Keys v;
  Fields::visit(v);
  return v.keys;
}

/// A family's row reads, writes and lists its config.json keys by Fields.
template <class Fields>
void use_hf_fields(Architecture& a) {
  a.read_config = read_hf_fields<Fields>;
  a.write_config = write_hf_fields<Fields>;
  a.config_keys = hf_field_keys<Fields>;
}

}  // namespace unif::models
