// HfJson: typed reading of a HF config.json's keys for the families' config readers
// (models/<family>/config.cpp). Each reader sets a BertOptions field when its key is present and
// throws std::invalid_argument("key 'K': ...") when the value has the wrong type; the loader adds
// the file's name.
#pragma once
#include <cstdint>
#include <functional>
#include <set>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

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
