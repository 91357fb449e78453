// HfJson: typed reading of a HF config.json's keys for the families' config readers
// (models/<family>/family.cpp). Each reader sets an EncoderConfig field when its key is present and
// throws std::invalid_argument("key 'K': ...") when the value has the wrong type or is out of its
// range (the ranged readers: sizes, counts, probabilities, positive numbers); the loader adds the
// file's name.
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "models/encoder_config.h"

namespace unif::models {

class HfJson {
 public:
  /// `asked`, when given, collects every key a reader looks up (present or not): the fields the
  /// family knows (model.config's overrides are checked against them).
  explicit HfJson(const nlohmann::json& j, std::set<std::string>* asked = nullptr) : j_(j), asked_(asked) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw std::invalid_argument("key '" + key + "': " + what);
  }
  /// The value of `key`, or nullptr when absent.
  const nlohmann::json* find(const std::string& key) const {
    if (asked_ != nullptr) asked_->insert(key);
    if (!j_.is_object()) return nullptr;
    auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }
  void integer(const std::string& key, const std::function<void(int64_t)>& set) const {
    if (const auto* v = find(key)) {
      if (!v->is_number_integer()) fail(key, "expected an integer, got " + excerpt(*v));
      set(v->get<int64_t>());
    }
  }
  /// null_value: what a JSON null sets when `nullable`.
  void number(const std::string& key, const std::function<void(double)>& set, bool nullable = false,
              double null_value = 0) const {
    if (const auto* v = find(key)) {
      if (nullable && v->is_null()) return set(null_value);
      if (!v->is_number()) fail(key, "expected a number, got " + excerpt(*v));
      set(v->get<double>());
    }
  }
  /// An integer in [min, max] (min INT64_MIN: no lower bound).
  void integer_in(const std::string& key, int64_t min, int64_t max, const std::function<void(int64_t)>& set) const {
    integer(key, [&](int64_t v) {
      if (v < min || v > max)
        fail(key, "must be an integer " +
                      (min == std::numeric_limits<int64_t>::min()
                           ? "<= " + std::to_string(max)
                           : "in [" + std::to_string(min) + ", " + std::to_string(max) + "]") +
                      ", got " + std::to_string(v));
      set(v);
    });
  }
  /// A size or a count (vocab_size, hidden_size, layers, heads, positions): in [min, EncoderConfig::kMaxSize].
  void size(const std::string& key, const std::function<void(int64_t)>& set, int64_t min = 1) const {
    integer_in(key, min, EncoderConfig::kMaxSize, set);
  }
  /// A dropout probability in [0, 1); null sets `null_value` where `nullable` (HF's null: "use
  /// another dropout").
  void probability(const std::string& key, const std::function<void(double)>& set, bool nullable = false,
                   double null_value = -1.0) const {
    if (const auto* v = find(key)) {
      if (nullable && v->is_null()) return set(null_value);
      if (!v->is_number()) fail(key, "expected a number, got " + excerpt(*v));
      const double p = v->get<double>();
      if (!(p >= 0.0 && p < 1.0))
        fail(key, "must be a probability in [0, 1)" + std::string(nullable ? " or null" : "") + ", got " + excerpt(*v));
      set(p);
    }
  }
  /// A finite number > 0 (`strictly`) or >= 0.
  void positive_number(const std::string& key, const std::function<void(double)>& set, bool strictly = true) const {
    number(key, [&](double x) {
      if (!std::isfinite(x) || (strictly ? !(x > 0.0) : !(x >= 0.0)))
        fail(key,
             std::string("must be a finite number ") + (strictly ? "> 0" : ">= 0") + ", got " + excerpt(*find(key)));
      set(x);
    });
  }
  void non_negative_number(const std::string& key, const std::function<void(double)>& set) const {
    positive_number(key, set, /*strictly=*/false);
  }
  /// A token id the model uses as an embedding index: in [0, vocab_size), `vocab_key` naming the size.
  void check_id(const std::string& key, int64_t id, const std::string& vocab_key, int64_t vocab_size) const {
    if (id < 0 || id >= vocab_size)
      fail(key, "must be in [0, " + vocab_key + " " + std::to_string(vocab_size) + "), got " + std::to_string(id));
  }
  /// `heads` divides `width` (the attention heads split the hidden state).
  void check_divides(const std::string& heads_key, int64_t heads, const std::string& width_key, int64_t width) const {
    if (heads > 0 && width % heads != 0)
      fail(heads_key, width_key + " (" + std::to_string(width) + ") must be a multiple of " + heads_key + " (" +
                          std::to_string(heads) + "): each head takes an equal share of the features");
  }
  void string(const std::string& key, const std::function<void(const std::string&)>& set, bool nullable = false) const {
    if (const auto* v = find(key)) {
      if (nullable && v->is_null()) return set(std::string());
      if (!v->is_string()) fail(key, "expected a string, got " + excerpt(*v));
      set(v->get<std::string>());
    }
  }
  void boolean(const std::string& key, const std::function<void(bool)>& set) const {
    if (const auto* v = find(key)) {
      if (!v->is_boolean()) fail(key, "expected true or false, got " + excerpt(*v));
      set(v->get<bool>());
    }
  }

  /// `v` as JSON, cut to 80 bytes (not inside a UTF-8 sequence) + "...".
  static std::string excerpt(const nlohmann::json& v) {
    std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (s.size() > 80) {
      size_t cut = 80;
      while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
      s = s.substr(0, cut) + "...";
    }
    return s;
  }

 private:
  const nlohmann::json& j_;
  std::set<std::string>* asked_;
};

}  // namespace unif::models
