// Names of enum values as configs, logs and checkpoints spell them: each enum E has one table of
// (value, name) pairs, declared next to it as `constexpr const auto& enum_names(E)` (found by
// argument-dependent lookup), and these helpers read it for parsing, writing and the messages that
// list the choices. Header-only, no Torch.
//
// Example:
//   enum class Color { Red, Green };
//   inline constexpr std::array<EnumName<Color>, 2> kColorNames{{{Color::Red, "red"}, {Color::Green, "green"}}};
//   constexpr const auto& enum_names(Color) { return kColorNames; }
//   name_of(Color::Green);             // "green"
//   enum_from_name<Color>("red");      // Color::Red (std::nullopt for an unknown name)
//   join_names<Color>(" | ");          // "red | green"
#pragma once
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace unif {

template <class E>
struct EnumName {
  E value;
  const char* name;
};

/// The name of `e` in its table ("" for a value the table lacks).
template <class E>
std::string name_of(E e) {
  for (const auto& entry : enum_names(e))
    if (entry.value == e) return entry.name;
  return "";
}

/// The value named `name`, or std::nullopt.
template <class E>
std::optional<E> enum_from_name(std::string_view name) {
  for (const auto& entry : enum_names(E{}))
    if (name == entry.name) return entry.value;
  return std::nullopt;
}

/// Every name, in table order.
template <class E>
std::vector<std::string> enum_name_list() {
  std::vector<std::string> out;
  for (const auto& entry : enum_names(E{})) out.emplace_back(entry.name);
  return out;
}

/// The names joined: join_names<E>(" | ") = "a | b | c"; join_names<E>(", ", " or ") = "a, b or c".
template <class E>
std::string join_names(const char* sep, const char* last_sep = nullptr) {
  const auto names = enum_name_list<E>();
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += (last_sep && i + 1 == names.size()) ? last_sep : sep;
    out += names[i];
  }
  return out;
}

/// As enum_from_name, throwing std::invalid_argument "<what>: expected a, b or c, got 'x'".
template <class E>
E parse_enum(std::string_view name, const std::string& what) {
  if (const auto v = enum_from_name<E>(name)) return *v;
  throw std::invalid_argument(what + ": expected " + join_names<E>(", ", " or ") + ", got '" + std::string(name) + "'");
}

}  // namespace unif
