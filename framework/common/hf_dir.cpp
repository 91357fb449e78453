// HF files of a model directory (plain or sentence-transformers): see hf_dir.h.
#include "framework/common/hf_dir.h"

#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "framework/common/error.h"

namespace unif {

namespace fs = std::filesystem;

namespace {

nlohmann::json read_json(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw UserError(file.string() + ": cannot read");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) { throw UserError(file.string() + ": invalid JSON (" + e.what() + ")"); }
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

fs::path unif_home() {
  const char* home = std::getenv("UNIF_HOME");
  if (home != nullptr && *home != '\0') return home;
  const char* user = std::getenv("HOME");
  return fs::path(user != nullptr && *user != '\0' ? user : "/root") / ".cache" / "unif";
}

std::string expand_model_path(const std::string& path) {
  for (const std::string var : {"${UNIF_HOME}", "$UNIF_HOME"})
    if (path.compare(0, var.size(), var) == 0 && (path.size() == var.size() || path[var.size()] == '/'))
      return unif_home().string() + path.substr(var.size());
  const char* user = std::getenv("HOME");
  if (path.compare(0, 2, "~/") == 0 && user != nullptr && *user != '\0') return std::string(user) + path.substr(1);
  return path;
}

fs::path resolve_hf_dir(const fs::path& dir) {
  std::error_code ec;
  const fs::path modules_file = dir / "modules.json";
  if (!fs::is_regular_file(modules_file, ec)) return dir;
  const nlohmann::json modules = read_json(modules_file);
  if (!modules.is_array())
    throw UserError(modules_file.string() + ": expected a list of sentence-transformers modules");
  for (const auto& m : modules) {
    if (!m.is_object() || !m.contains("type") || !m["type"].is_string()) continue;
    if (!ends_with(m["type"].get<std::string>(), "models.Transformer")) continue;
    const std::string path = m.value("path", std::string());
    const fs::path rel = fs::path(path).lexically_normal();
    if (rel.is_absolute() || (!rel.empty() && *rel.begin() == ".."))
      throw UserError(modules_file.string() + ": the Transformer module's path '" + path +
                      "' leaves the model directory");
    const fs::path hf = path.empty() ? dir : dir / rel;
    if (!fs::is_directory(hf, ec))
      throw UserError(modules_file.string() + ": the Transformer module's folder '" + hf.string() + "' does not exist");
    return hf;
  }
  throw UserError(modules_file.string() +
                  ": no sentence_transformers.models.Transformer module (expected the BERT's folder there)");
}

std::optional<bool> read_do_lower_case(const fs::path& hf_dir) {
  std::error_code ec;
  const fs::path file = hf_dir / "tokenizer_config.json";
  if (!fs::is_regular_file(file, ec)) return std::nullopt;
  const nlohmann::json j = read_json(file);
  if (!j.is_object() || !j.contains("do_lower_case")) return std::nullopt;
  if (!j["do_lower_case"].is_boolean())
    throw UserError(file.string() + ": do_lower_case: expected true or false, got " + j["do_lower_case"].dump());
  return j["do_lower_case"].get<bool>();
}

}  // namespace unif
