#include "framework/config/yaml_writer.h"

#include <yaml-cpp/yaml.h>

#include "framework/config/yaml_reader.h"

namespace unif::framework::detail {

void emit_string(YAML::Emitter& out, const std::string& value) {
  const YAML::Node plain(value);
  if (to_number(plain) || to_bool(plain) || value.empty() || value == "~" || value == "null" || value == "Null" ||
      value == "NULL" || value.find('\r') != std::string::npos)
    out << YAML::DoubleQuoted << value;
  else
    out << value;
}

void emit_text(YAML::Emitter& out, const std::string& value) {
  if (value.empty())
    out << YAML::Null;
  else
    emit_string(out, value);
}

void emit_list(YAML::Emitter& out, const std::vector<std::string>& values) {
  out << YAML::Flow << YAML::BeginSeq;
  for (const auto& v : values) emit_string(out, v);
  out << YAML::EndSeq;
}

}  // namespace unif::framework::detail
