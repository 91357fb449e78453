// Problem-collecting YAML access for the config parser (see yaml_reader.h).
#include "framework/config/yaml_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "framework/config/did_you_mean.h"
#include "framework/text/unicode.h"

namespace unif::framework::detail {

namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

/// `path` lies in the subtree at `root` ("a.b", "a.b.c", "a.b[0]" are all in "a.b").
bool within(const std::string& path, const std::string& root) {
  return path == root || starts_with(path, root + ".") || starts_with(path, root + "[");
}

/// A scalar that may be a number or a boolean: plain (not quoted), not null.
bool plain_scalar(const YAML::Node& node) { return node.IsDefined() && node.IsScalar() && node.Tag() != "!"; }

void collect_paths(const YAML::Node& node, const std::string& path, std::set<std::string>& out) {
  if (!node.IsMap()) return;
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) continue;
    const std::string child = path.empty() ? kv.first.Scalar() : path + "." + kv.first.Scalar();
    out.insert(child);
    collect_paths(kv.second, child, out);
  }
}

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

}  // namespace

const IntRule kAnyInt{"an integer", [](int64_t) { return true; }};
const IntRule kPositiveInt{"a positive integer", [](int64_t v) { return v > 0; }};
const IntRule kNonNegativeInt{"a non-negative integer", [](int64_t v) { return v >= 0; }};
const NumberRule kAnyNumber{"a number", [](double) { return true; }};
const NumberRule kPositiveNumber{"a number > 0", [](double v) { return v > 0; }};
const NumberRule kNonNegativeNumber{"a number >= 0", [](double v) { return v >= 0; }};
const NumberRule kUnitClosed{"a number in [0, 1]", [](double v) { return v >= 0 && v <= 1; }};
const NumberRule kUnitHalfOpen{"a number in [0, 1)", [](double v) { return v >= 0 && v < 1; }};
const NumberRule kUnitLeftOpen{"a number in (0, 1]", [](double v) { return v > 0 && v <= 1; }};

// ---- Context ----------------------------------------------------------------------------------

void Context::record_file_paths(const YAML::Node& root) { collect_paths(root, "", file_paths_); }

void Context::record_override(const std::string& path, const std::string& text) { overrides_.emplace_back(path, text); }

std::string Context::suffix(const std::string& path, const YAML::Node* node) const {
  // The latest override whose subtree holds `path` wrote it; an override below `path` created it
  // when the file does not have it.
  for (auto it = overrides_.rbegin(); it != overrides_.rend(); ++it)
    if (!path.empty() && within(path, it->first)) return " (from --set " + it->second + ")";
  const bool in_file = path.empty() || file_paths_.count(path.substr(0, path.find('['))) > 0;
  if (!in_file) {
    for (auto it = overrides_.rbegin(); it != overrides_.rend(); ++it)
      if (within(it->first, path)) return " (from --set " + it->second + ")";
  }
  if (node && node->IsDefined() && node->Mark().line >= 0)
    return " (line " + std::to_string(node->Mark().line + 1) + ")";
  return "";
}

void Context::report(const std::string& path, const YAML::Node& node, const std::string& message) {
  problems_.push_back(source_ + ": " + (path.empty() ? "" : path + ": ") + message + suffix(path, &node));
}

void Context::report(const std::string& path, const std::string& message) {
  problems_.push_back(source_ + ": " + (path.empty() ? "" : path + ": ") + message + suffix(path, nullptr));
}

// ---- conversions ------------------------------------------------------------------------------

namespace {

// "line L, byte B" of byte offset `pos` in `text` (both counted from 1).
std::string line_and_byte(std::string_view text, size_t pos) {
  const auto before = text.substr(0, pos);
  const auto line = 1 + std::count(before.begin(), before.end(), '\n');
  const auto last_newline = before.rfind('\n');
  const auto byte = pos + 1 - (last_newline == std::string_view::npos ? 0 : last_newline + 1);
  return "line " + std::to_string(line) + ", byte " + std::to_string(byte);
}

}  // namespace

std::string invalid_utf8(std::string_view text) {
  const auto bad = unicode::invalid_utf8_at(text);
  if (bad == std::string_view::npos) return "";
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(text[bad]));
  return line_and_byte(text, bad) + ": invalid UTF-8 (" + hex + ")";
}

std::string unprintable_yaml(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    size_t width = 0;  // bytes of a disallowed character starting at i
    unsigned code = c;
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F) {
      width = 1;
    } else if (c == 0xC2 && i + 1 < text.size()) {  // C1 controls U+0080-U+009F, except NEL U+0085
      const auto next = static_cast<unsigned char>(text[i + 1]);
      if (next >= 0x80 && next <= 0x9F && next != 0x85) {
        width = 2;
        code = next;
      }
    }
    if (width == 0) continue;
    char hex[16];
    std::snprintf(hex, sizeof hex, width == 1 ? "0x%02X" : "U+%04X", code);
    return line_and_byte(text, i) + ": control character " + hex +
           " (YAML allows tab, line feed, carriage return and printable characters only)";
  }
  return "";
}

std::string describe(const YAML::Node& node) {
  if (!node.IsDefined()) return "nothing";
  if (node.IsNull()) return "null";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  return "'" + node.Scalar() + "'";
}

std::optional<int64_t> to_int(const YAML::Node& node) {
  if (!plain_scalar(node)) return std::nullopt;
  std::string s = node.Scalar();
  if (!s.empty() && s[0] == '+') s.erase(0, 1);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<double> to_number(const YAML::Node& node) {
  if (!plain_scalar(node)) return std::nullopt;
  std::string s = node.Scalar();
  if (!s.empty() && s[0] == '+') s.erase(0, 1);
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<bool> to_bool(const YAML::Node& node) {
  if (!plain_scalar(node) || node.IsNull()) return std::nullopt;
  bool v = false;
  if (!YAML::convert<bool>::decode(node, v)) return std::nullopt;  // true/false, yes/no, on/off
  return v;
}

// ---- Section ----------------------------------------------------------------------------------

Section::Section(Context& ctx, std::string path, const YAML::Node& node) : ctx_(&ctx), path_(std::move(path)) {
  if (!node.IsDefined() || node.IsNull()) return;
  if (!node.IsMap()) {
    ctx.report(path_, node,
               std::string("expected a mapping of keys") + (path_.empty() ? " at the top level" : "") + ", got " +
                   describe(node));
    return;
  }
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) {
      ctx.report(path_, kv.first, "expected a key name, got " + describe(kv.first));
      continue;
    }
    const std::string key = kv.first.Scalar();
    if (find(key)) {
      ctx.report(this->path(key), kv.first, "duplicate key '" + key + "'");
      continue;
    }
    entries_.push_back({key, kv.first, kv.second});
  }
}

Section::~Section() {
  for (const auto& e : entries_) {
    bool known = false;
    for (const auto& k : known_) known = known || k == e.key;
    if (!known) {
      const std::string suggestion = did_you_mean(e.key, known_);
      ctx_->record_unknown({ctx_->problems().size(), path(e.key), e.key, !suggestion.empty()});
      ctx_->report(path(e.key), e.key_node,
                   "unknown key '" + e.key + "'" + suggestion +
                       (known_.empty() ? "" : "; known keys here: " + join(known_, ", ")));
    }
  }
}

std::string Section::path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

const Section::Entry* Section::find(const std::string& key) const {
  for (const auto& e : entries_)
    if (e.key == key) return &e;
  return nullptr;
}

bool Section::has(const std::string& key) const { return find(key) != nullptr; }

YAML::Node Section::raw(const std::string& key) {
  bool seen = false;
  for (const auto& k : known_) seen = seen || k == key;
  if (!seen) {
    known_.push_back(key);
    ctx_->record_asked(path(key));
  }
  const Entry* e = find(key);
  return e ? e->value : YAML::Node(YAML::NodeType::Undefined);
}

YAML::Node Section::integer(const std::string& key, int64_t& out, const IntRule& rule) {
  YAML::Node node = raw(key);
  if (!node.IsDefined()) return node;
  const auto v = to_int(node);
  if (!v || !rule.ok(*v))
    ctx_->report(path(key), node, std::string("expected ") + rule.expected + ", got " + describe(node));
  else
    out = *v;
  return node;
}

YAML::Node Section::integer(const std::string& key, std::optional<int64_t>& out, const IntRule& rule) {
  int64_t v = 0;
  YAML::Node node = raw(key);
  const size_t before = ctx_->problems().size();
  integer(key, v, rule);
  if (node.IsDefined() && ctx_->problems().size() == before) out = v;
  return node;
}

YAML::Node Section::number(const std::string& key, double& out, const NumberRule& rule) {
  YAML::Node node = raw(key);
  if (!node.IsDefined()) return node;
  const auto v = to_number(node);
  if (!v || !rule.ok(*v))
    ctx_->report(path(key), node, std::string("expected ") + rule.expected + ", got " + describe(node));
  else
    out = *v;
  return node;
}

YAML::Node Section::number(const std::string& key, std::optional<double>& out, const NumberRule& rule, bool nullable) {
  YAML::Node node = raw(key);
  if (!node.IsDefined() || (nullable && node.IsNull())) return node;
  double v = 0;
  const size_t before = ctx_->problems().size();
  number(key, v, rule);
  if (ctx_->problems().size() == before) out = v;
  return node;
}

YAML::Node Section::boolean(const std::string& key, bool& out) {
  YAML::Node node = raw(key);
  if (!node.IsDefined()) return node;
  if (const auto v = to_bool(node))
    out = *v;
  else
    ctx_->report(path(key), node, "expected true or false, got " + describe(node));
  return node;
}

YAML::Node Section::string(const std::string& key, std::string& out, bool nullable) {
  YAML::Node node = raw(key);
  if (!node.IsDefined()) return node;
  if (node.IsNull() && nullable) {
    out.clear();
  } else if (!node.IsScalar() || (node.Scalar().empty() && !nullable)) {
    ctx_->report(path(key), node,
                 std::string("expected a non-empty string") + (nullable ? " or null" : "") + ", got " + describe(node));
  } else {
    out = node.Scalar();
  }
  return node;
}

YAML::Node Section::choice(const std::string& key, std::string& out, const std::vector<std::string>& allowed) {
  YAML::Node node = raw(key);
  if (!node.IsDefined()) return node;
  bool ok = false;
  if (node.IsScalar())
    for (const auto& a : allowed) ok = ok || node.Scalar() == a;
  if (ok) {
    out = node.Scalar();
  } else {
    ctx_->report(path(key), node,
                 "expected one of " + join(allowed, " | ") + ", got " + describe(node) +
                     (node.IsScalar() ? did_you_mean(node.Scalar(), allowed) : ""));
  }
  return node;
}

YAML::Node Section::choice(const std::string& key, std::optional<std::string>& out,
                           const std::vector<std::string>& allowed) {
  YAML::Node node = raw(key);
  if (!node.IsDefined()) return node;
  std::string v;
  const size_t before = ctx_->problems().size();
  choice(key, v, allowed);
  if (ctx_->problems().size() == before) out = v;
  return node;
}

YAML::Node Section::strings(const std::string& key, std::vector<std::string>& out, bool scalar_ok) {
  YAML::Node node = raw(key);
  if (!node.IsDefined()) return node;
  if (scalar_ok && node.IsScalar() && !node.Scalar().empty()) {
    out = {node.Scalar()};
    return node;
  }
  if (!node.IsSequence()) {
    ctx_->report(
        path(key), node,
        std::string("expected a list of strings") + (scalar_ok ? " (or one string)" : "") + ", got " + describe(node));
    return node;
  }
  std::vector<std::string> values;
  bool ok = true;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const YAML::Node item = node[i];
    if (!item.IsScalar() || item.Scalar().empty()) {
      ctx_->report(path(key) + "[" + std::to_string(i) + "]", item,
                   "expected a non-empty string, got " + describe(item));
      ok = false;
    } else {
      values.push_back(item.Scalar());
    }
  }
  if (ok) out = std::move(values);
  return node;
}

Section Section::section(const std::string& key) { return Section(*ctx_, path(key), raw(key)); }

}  // namespace unif::framework::detail
