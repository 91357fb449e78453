// Internal to framework/config: writing strings to YAML so that any YAML reader gives back the same
// string. yaml-cpp writes some strings plain that a reader takes for something else: a number or a
// boolean (a label named 1 or yes), null, or a string that ends in a carriage return (the reader
// joins it with the line feed that follows into one line break and drops it).
#pragma once
#include <string>
#include <vector>

#include <yaml-cpp/emitter.h>

namespace unif::framework::detail {

/// A string value, double-quoted where the plain form would read back as something else.
void emit_string(YAML::Emitter& out, const std::string& value);
/// A string, or null for "".
void emit_text(YAML::Emitter& out, const std::string& value);
/// A list of strings in flow style, each as emit_string writes it.
void emit_list(YAML::Emitter& out, const std::vector<std::string>& values);

}  // namespace unif::framework::detail
