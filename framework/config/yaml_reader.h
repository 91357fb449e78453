// Internal to framework/config: typed, problem-collecting access to a parsed YAML tree. A Section
// wraps one mapping; each accessor names a key, converts and range-checks its value, and records a
// problem ("<file>: <key.path>: expected ..., got '...' (line N)") instead of throwing, so that one
// pass reports every mistake. The keys a Section was asked for are its schema: when it goes out of
// scope, any other key present is reported as unknown, with a "did you mean" among the asked ones.
// Problems under a `--set` override say so instead of giving a line.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "framework/common/enum_names.h"

namespace unif::framework::detail {

/// Where problems go, and where each value came from (the file, or a --set override).
class Context {
 public:
  explicit Context(std::string source) : source_(std::move(source)) {}

  /// Remembers every key path present in the file, before overrides are applied to `root`.
  void record_file_paths(const YAML::Node& root);
  /// Declares that the subtree at `path` was (re)written by the override `text` ("a.b=v").
  void record_override(const std::string& path, const std::string& text);

  /// "<source>: <path>: <message>" plus " (line N)" or " (from --set a.b=v)"; path may be "".
  void report(const std::string& path, const YAML::Node& node, const std::string& message);
  /// As report, with no YAML node (cross-field checks on values already read; no line given).
  void report(const std::string& path, const std::string& message);

  const std::string& source() const { return source_; }
  std::vector<std::string>& problems() { return problems_; }

  /// Every key path a Section was asked for (the schema), in the order asked.
  void record_asked(const std::string& path) { asked_.push_back(path); }
  const std::vector<std::string>& asked() const { return asked_; }
  /// An unknown key reported as problems()[index]; `suggested`: it already has a "did you mean".
  struct Unknown {
    std::size_t index;
    std::string path, key;
    bool suggested;
  };
  void record_unknown(Unknown u) { unknown_.push_back(std::move(u)); }
  const std::vector<Unknown>& unknown() const { return unknown_; }

 private:
  std::string suffix(const std::string& path, const YAML::Node* node) const;

  std::string source_;
  std::vector<std::string> problems_;
  std::set<std::string> file_paths_;
  std::vector<std::pair<std::string, std::string>> overrides_;  // (path, "a.b=v")
  std::vector<std::string> asked_;
  std::vector<Unknown> unknown_;
};

/// A value rule: what is expected (for messages, "a positive integer") and the check.
template <class T>
struct Rule {
  const char* expected;
  std::function<bool(T)> ok;
};
using IntRule = Rule<int64_t>;
using NumberRule = Rule<double>;

extern const IntRule kAnyInt, kPositiveInt, kNonNegativeInt;
extern const NumberRule kAnyNumber, kPositiveNumber, kNonNegativeNumber, kUnitClosed, kUnitHalfOpen, kUnitLeftOpen;

/// "null", "'abc'", "a list", "a mapping", "nothing".
std::string describe(const YAML::Node& node);

/// "" when `text` is valid UTF-8, else where it is not: "line 3, byte 7: invalid UTF-8 (0xFF)".
/// YAML files must be UTF-8; yaml-cpp would read the bad bytes and its emitter write them back
/// as U+FFFD, so a config.yaml would not say what was run.
std::string invalid_utf8(std::string_view text);

/// "" when valid UTF-8 `text` holds only characters YAML allows in a stream (tab, line feed,
/// carriage return and printable characters), else where the first other one is: "line 2, byte 5:
/// control character 0x01 (YAML allows tab, line feed, carriage return and printable characters
/// only)". yaml-cpp reads raw control characters (NUL included) that its emitter does not write
/// back the same, so a config.yaml or unif.yaml would not say what was read (found by fuzzing).
std::string unprintable_yaml(std::string_view text);

/// Strict scalar conversions (plain scalars only for numbers and booleans: a quoted "32" is a
/// string). std::nullopt when the node does not hold such a value.
std::optional<int64_t> to_int(const YAML::Node& node);
std::optional<double> to_number(const YAML::Node& node);
std::optional<bool> to_bool(const YAML::Node& node);

class Section {
 public:
  /// `node` may be a mapping, null or undefined (both = empty); anything else is reported.
  Section(Context& ctx, std::string path, const YAML::Node& node);
  ~Section();  // reports the keys present that no accessor asked for
  Section(const Section&) = delete;
  Section& operator=(const Section&) = delete;
  Section(Section&&) = default;  // a moved-from Section has no entries left to report

  /// Full key path of `key` in this section, e.g. "training.batch_size".
  std::string path(const std::string& key) const;
  /// Marks `key` as known and returns its value node (undefined when absent).
  YAML::Node raw(const std::string& key);
  bool has(const std::string& key) const;

  // Each accessor leaves `out` unchanged when the key is absent or its value is rejected, and
  // returns the value node (for cross-field checks to point at).
  YAML::Node integer(const std::string& key, int64_t& out, const IntRule& rule);
  YAML::Node number(const std::string& key, double& out, const NumberRule& rule);
  YAML::Node boolean(const std::string& key, bool& out);
  /// A string; null gives "" when `nullable`, else a problem; "" is rejected unless `nullable`.
  YAML::Node string(const std::string& key, std::string& out, bool nullable);
  /// A string from `allowed` (with a "did you mean" when the value is close to one).
  YAML::Node choice(const std::string& key, std::string& out, const std::vector<std::string>& allowed);
  /// A list of non-empty strings; a single scalar is taken as a one-entry list when `scalar_ok`.
  YAML::Node strings(const std::string& key, std::vector<std::string>& out, bool scalar_ok);
  // Optional forms for override blocks: absent (or null when `nullable`) leaves `out` empty.
  YAML::Node integer(const std::string& key, std::optional<int64_t>& out, const IntRule& rule);
  YAML::Node number(const std::string& key, std::optional<double>& out, const NumberRule& rule, bool nullable = false);
  YAML::Node choice(const std::string& key, std::optional<std::string>& out, const std::vector<std::string>& allowed);
  /// A value of enum E, by the names in E's table (enum_names.h).
  template <class E>
  YAML::Node choice(const std::string& key, E& out) {
    std::string name = name_of(out);
    YAML::Node node = choice(key, name, enum_name_list<E>());
    if (const auto v = enum_from_name<E>(name)) out = *v;
    return node;
  }
  /// A nested section.
  Section section(const std::string& key);

  Context& context() { return *ctx_; }

 private:
  struct Entry {
    std::string key;
    YAML::Node key_node, value;
  };
  const Entry* find(const std::string& key) const;

  Context* ctx_;
  std::string path_;
  std::vector<Entry> entries_;
  std::vector<std::string> known_;
};

}  // namespace unif::framework::detail
