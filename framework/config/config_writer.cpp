// RunConfig -> YAML (every key of config_fields.h, in its order, defaults filled), and the keys that
// differ between a written config and another (config_changes: "changed on resume" lines).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <type_traits>

#include <yaml-cpp/yaml.h>

#include "framework/config/config_fields.h"
#include "framework/config/yaml_writer.h"

namespace unif::framework {

namespace {

using detail::emit_list;
using detail::emit_string;
using detail::emit_text;
using detail::Fields;
using detail::Null;
using detail::OneOrList;

/// The shortest decimal that reads back as exactly `v`, always with a '.' or an exponent.
std::string format_number(double v) {
  char buf[40];
  // A whole number as one: 20.0, not the shorter round trip 2e+01.
  if (v == std::floor(v) && std::abs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.1f", v);
    return buf;
  }
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

/// A JSON value (model.config) as YAML: mappings in block style ({} when empty), lists in flow style.
void emit_json(YAML::Emitter& out, const nlohmann::json& v) {
  if (v.is_object()) {
    if (v.empty()) {
      out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
      return;
    }
    out << YAML::BeginMap;
    for (const auto& [k, x] : v.items()) {
      out << YAML::Key;
      emit_string(out, k);
      out << YAML::Value;
      emit_json(out, x);
    }
    out << YAML::EndMap;
  } else if (v.is_array()) {
    out << YAML::Flow << YAML::BeginSeq;
    for (const auto& x : v) emit_json(out, x);
    out << YAML::EndSeq;
  } else if (v.is_null()) {
    out << YAML::Null;
  } else if (v.is_boolean()) {
    out << v.get<bool>();
  } else if (v.is_number_integer()) {
    out << v.get<int64_t>();
  } else if (v.is_number()) {
    out << format_number(v.get<double>());
  } else {
    emit_string(out, v.get<std::string>());
  }
}

/// Whether a section is written at all: distill only when on (absent = off, SPEC §7).
template <class S>
bool written(const S&) {
  return true;
}
bool written(const DistillConfig& d) { return !d.teacher.empty(); }
bool written(const IntermediateConfig& i) { return i.on(); }

template <class S>
void emit_section(YAML::Emitter& out, const S& section);

/// Writes each key of section S from `s`, with the value's YAML form chosen by its type.
template <class S>
struct WriteVisitor {
  YAML::Emitter& out;
  const S& s;

  YAML::Emitter& key(const char* k) { return out << YAML::Key << k << YAML::Value; }

  void operator()(const char* k, int64_t S::*m, const detail::IntRule&) { key(k) << s.*m; }
  void operator()(const char* k, double S::*m, const detail::NumberRule&) { key(k) << format_number(s.*m); }
  void operator()(const char* k, bool S::*m) { key(k) << s.*m; }
  void operator()(const char* k, Task S::*m) { key(k) << to_string(s.*m); }
  void operator()(const char* k, std::string S::*m, Null) { emit_text(key(k), s.*m); }
  void operator()(const char* k, std::string S::*m, const std::vector<std::string>&) { key(k) << s.*m; }
  void operator()(const char* k, std::vector<std::string> S::*m, OneOrList) { emit_list(key(k), s.*m); }
  void operator()(const char* k, nlohmann::json S::*m) { emit_json(key(k), s.*m); }
  template <class E, class = std::enable_if_t<std::is_enum_v<E>>>
  void operator()(const char* k, E S::*m) {
    key(k) << name_of(s.*m);
  }
  // An unset optional (a key not overridden) is left out.
  void operator()(const char* k, std::optional<int64_t> S::*m, const detail::IntRule&) {
    if (s.*m) key(k) << *(s.*m);
  }
  void operator()(const char* k, std::optional<double> S::*m, const detail::NumberRule&, Null = Null::Rejected) {
    if (s.*m) key(k) << format_number(*(s.*m));
  }
  void operator()(const char* k, std::optional<std::string> S::*m, const std::vector<std::string>&) {
    if (s.*m) key(k) << *(s.*m);
  }
  void operator()(const char* k, std::optional<bool> S::*m) {
    if (s.*m) key(k) << *(s.*m);
  }
  void operator()(const char* k, std::vector<int64_t> S::*m, const detail::IntRule&) {
    key(k) << YAML::Flow << YAML::BeginSeq;
    for (auto v : s.*m) out << v;
    out << YAML::EndSeq;
  }
  void operator()(const char* k, std::vector<double> S::*m, const detail::NumberRule&) {
    key(k) << YAML::Flow << YAML::BeginSeq;
    for (auto v : s.*m) out << format_number(v);
    out << YAML::EndSeq;
  }
  // Keys of two members.
  void operator()(const char* k, std::vector<std::string> S::*labels, bool S::*given) {
    if (s.*given)
      emit_list(key(k), s.*labels);
    else
      key(k) << YAML::Null;
  }
  void operator()(const char* k, double S::*first, double S::*second, const detail::NumberRule&) {
    key(k) << YAML::Flow << YAML::BeginSeq << format_number(s.*first) << format_number(s.*second) << YAML::EndSeq;
  }
  void operator()(const char* k, ClassWeights S::*mode, std::vector<double> S::*weights) {
    key(k);
    if (s.*mode == ClassWeights::Balanced) {
      out << name_of(s.*mode);
    } else if (s.*mode == ClassWeights::List) {
      out << YAML::Flow << YAML::BeginSeq;
      for (double w : s.*weights) out << format_number(w);
      out << YAML::EndSeq;
    } else {
      out << YAML::Null;
    }
  }
  void operator()(const char* k, LayerMap S::*mode, std::vector<int64_t> S::*pairs) {
    key(k);
    if (s.*mode == LayerMap::Uniform) {
      out << name_of(s.*mode);
    } else if (s.*mode == LayerMap::Pairs) {
      out << YAML::Flow << YAML::BeginSeq;
      for (size_t i = 0; i + 1 < (s.*pairs).size(); i += 2)
        out << YAML::BeginSeq << (s.*pairs)[i] << (s.*pairs)[i + 1] << YAML::EndSeq;
      out << YAML::EndSeq;
    } else {
      out << YAML::Null;
    }
  }
  void operator()(const char* k, Resume S::*mode, std::string S::*path) {
    emit_text(key(k), s.*mode == Resume::Path ? s.*path : name_of(s.*mode));
  }
  // A nested section.
  template <class Sub, class = std::enable_if_t<detail::is_section<Sub>::value>>
  void operator()(const char* k, Sub S::*m, int = 0) {
    if (!written(s.*m)) return;
    key(k);
    emit_section(out, s.*m);
  }
};

template <class S>
void emit_section(YAML::Emitter& out, const S& section) {
  if constexpr (std::is_same_v<S, BertOverrides>) {
    if (section.empty()) {  // nothing overridden
      out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
      return;
    }
  }
  out << YAML::BeginMap;
  WriteVisitor<S> v{out, section};
  Fields<S>::visit(v);
  out << YAML::EndMap;
}

// Leaf key paths of a YAML mapping, in document order, each with its value as flow YAML text.
void flatten(const YAML::Node& node, const std::string& prefix, std::vector<std::pair<std::string, std::string>>& out) {
  if (node.IsMap()) {
    for (const auto& kv : node)
      flatten(kv.second, prefix.empty() ? kv.first.Scalar() : prefix + "." + kv.first.Scalar(), out);
    return;
  }
  YAML::Emitter e;
  e << YAML::Flow << node;
  out.emplace_back(prefix, e.c_str());
}

}  // namespace

std::string to_yaml(const RunConfig& c) {
  YAML::Emitter out;
  emit_section(out, c);
  return std::string(out.c_str()) + "\n";
}

std::vector<std::string> config_changes(const std::string& before, const RunConfig& now) {
  std::vector<std::pair<std::string, std::string>> old_keys, new_keys;
  try {
    const YAML::Node old = YAML::Load(before);
    if (!old.IsMap()) return {};
    flatten(old, "", old_keys);
  } catch (const YAML::Exception&) { return {}; }
  flatten(YAML::Load(to_yaml(now)), "", new_keys);
  std::map<std::string, std::string> old_map(old_keys.begin(), old_keys.end()),
      new_map(new_keys.begin(), new_keys.end());
  std::vector<std::string> out;
  for (const auto& [key, value] : new_keys) {
    const auto it = old_map.find(key);
    if (it == old_map.end())
      out.push_back(key + " (absent) -> " + value);
    else if (it->second != value)
      out.push_back(key + " " + it->second + " -> " + value);
  }
  for (const auto& [key, value] : old_keys)
    if (!new_map.count(key)) out.push_back(key + " " + value + " -> (absent)");
  return out;
}

}  // namespace unif::framework
