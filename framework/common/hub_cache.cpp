// Models by Hub name through the Hugging Face cache: see hub_cache.h.
#include "framework/common/hub_cache.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "framework/common/error.h"
#include "framework/common/hf_dir.h"
#include "framework/common/hub_download.h"

namespace unif {

namespace fs = std::filesystem;

namespace {

std::optional<std::string> hub_env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

std::string user_home() {
  const char* home = std::getenv("HOME");
  return home != nullptr && *home != '\0' ? home : "/root";
}

/// os.path.expandvars(os.path.expanduser(s)), as huggingface_hub reads its path variables: a
/// leading `~` is $HOME, `$NAME` and `${NAME}` are the variable's value (left as written when unset).
std::string expand_hub_path(const std::string& s) {
  std::string in = s;
  if (!in.empty() && in[0] == '~' && (in.size() == 1 || in[1] == '/')) in = user_home() + in.substr(1);
  std::string out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '$') {
      out += in[i];
      continue;
    }
    std::size_t begin = i + 1, end = begin;
    const bool braced = begin < in.size() && in[begin] == '{';
    if (braced) {
      end = in.find('}', begin + 1);
      if (end == std::string::npos) {
        out += in.substr(i);
        break;
      }
      ++begin;
    } else {
      while (end < in.size() && (std::isalnum(static_cast<unsigned char>(in[end])) || in[end] == '_')) ++end;
    }
    const std::string name = in.substr(begin, end - begin);
    const char* value = name.empty() ? nullptr : std::getenv(name.c_str());
    const std::size_t next = braced ? end + 1 : end;
    out += value != nullptr ? std::string(value) : in.substr(i, next - i);
    i = next - 1;
  }
  return out;
}

bool hub_true(const std::string& v) {
  std::string u;
  for (unsigned char c : v) u += static_cast<char>(std::toupper(c));
  return u == "1" || u == "ON" || u == "YES" || u == "TRUE";
}

bool repo_part_ok(const std::string& part) {
  if (part.empty() || part.size() > 96) return false;
  auto word = [](unsigned char c) { return std::isalnum(c) || c == '_'; };
  for (unsigned char c : part)
    if (!(word(c) || c == '-' || c == '.') || c >= 0x80) return false;
  return word(static_cast<unsigned char>(part.front())) && word(static_cast<unsigned char>(part.back()));
}

std::string first_line_of(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  return line;
}

bool starts_with_text(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

/// The files that make a tokenizer for one of unif's families (the family's loader says which one
/// it needs when more than one fits).
const char* const kHubTokenizerFiles[] = {"vocab.txt",    "tokenizer.json", "vocab.json", "sentencepiece.bpe.model",
                                          "spiece.model", "spm.model"};

}  // namespace

namespace hub {

fs::path cache_dir() {
  if (auto v = hub_env("HF_HUB_CACHE")) return expand_hub_path(*v);
  if (auto v = hub_env("HUGGINGFACE_HUB_CACHE")) return expand_hub_path(*v);
  if (auto v = hub_env("HF_HOME")) return fs::path(expand_hub_path(*v)) / "hub";
  const fs::path cache =
      hub_env("XDG_CACHE_HOME") ? fs::path(*hub_env("XDG_CACHE_HOME")) : fs::path(user_home()) / ".cache";
  return fs::path(expand_hub_path(cache.string())) / "huggingface" / "hub";
}

bool offline() {
  // huggingface_hub: os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE").
  if (auto v = hub_env("HF_HUB_OFFLINE")) return hub_true(*v);
  if (auto v = hub_env("TRANSFORMERS_OFFLINE")) return hub_true(*v);
  return false;
}

std::string endpoint() {
  std::string e = hub_env("HF_ENDPOINT").value_or("https://huggingface.co");
  while (!e.empty() && e.back() == '/') e.pop_back();
  return e;
}

std::optional<std::string> token() {
  auto clean = [](std::string t) -> std::optional<std::string> {
    const auto b = t.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return std::nullopt;
    return t.substr(b, t.find_last_not_of(" \t\r\n") - b + 1);
  };
  if (auto v = hub_env("HF_TOKEN")) return clean(*v);
  if (auto v = hub_env("HUGGING_FACE_HUB_TOKEN")) return clean(*v);
  fs::path file;
  if (auto v = hub_env("HF_TOKEN_PATH")) {
    file = expand_hub_path(*v);
  } else if (auto home = hub_env("HF_HOME")) {
    file = fs::path(expand_hub_path(*home)) / "token";
  } else {
    const fs::path cache =
        hub_env("XDG_CACHE_HOME") ? fs::path(*hub_env("XDG_CACHE_HOME")) : fs::path(user_home()) / ".cache";
    file = fs::path(expand_hub_path(cache.string())) / "huggingface" / "token";
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return clean(text.str());
}

bool is_repo_id(const std::string& s) {
  if (std::count(s.begin(), s.end(), '/') > 1) return false;
  if (s.find("--") != std::string::npos || s.find("..") != std::string::npos) return false;
  if (s.size() >= 4 && s.compare(s.size() - 4, 4, ".git") == 0) return false;
  const auto slash = s.find('/');
  if (slash == std::string::npos) return repo_part_ok(s);
  return repo_part_ok(s.substr(0, slash)) && repo_part_ok(s.substr(slash + 1));
}

bool is_commit_hash(const std::string& s) {
  return s.size() == 40 &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool is_revision(const std::string& s) {
  if (s.empty() || s[0] == '/' || s.back() == '/' || s.find("//") != std::string::npos) return false;
  for (const auto& part : fs::path(s))
    if (part == "." || part == "..") return false;
  return std::none_of(s.begin(), s.end(), [](unsigned char c) { return c <= ' ' || c == '\\' || c == 0x7f; });
}

std::string repo_folder(const std::string& repo_id) {
  std::string out = "models";
  std::size_t start = 0;
  while (true) {
    const auto slash = repo_id.find('/', start);
    out += "--" + repo_id.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return out;
}

std::optional<fs::path> cached_snapshot(const fs::path& cache, const std::string& repo_id,
                                        const std::string& revision) {
  const fs::path storage = cache / repo_folder(repo_id);
  std::error_code ec;
  std::string commit = revision;
  if (!is_commit_hash(revision)) {
    const fs::path ref = storage / "refs" / revision;
    if (!fs::is_regular_file(ref, ec)) return std::nullopt;
    commit = first_line_of(ref);
    if (!is_commit_hash(commit)) return std::nullopt;
  }
  const fs::path snapshot = storage / "snapshots" / commit;
  if (!fs::is_directory(snapshot, ec)) return std::nullopt;
  return snapshot;
}

std::vector<std::string> missing_model_files(const fs::path& snapshot) {
  std::vector<std::string> missing;
  std::error_code ec;
  fs::path hf = snapshot;
  if (fs::is_regular_file(snapshot / "modules.json", ec)) {
    try {
      hf = resolve_hf_dir(snapshot);
    } catch (const UserError&) { return {"the folder of modules.json's Transformer module"}; }
    // The Pooling module's settings (sentence_transformers.cpp reads them).
    try {
      std::ifstream in(snapshot / "modules.json");
      const auto modules = nlohmann::json::parse(in);
      for (const auto& m : modules) {
        if (!m.is_object() || !m.contains("type") || !m["type"].is_string()) continue;
        const std::string type = m["type"].get<std::string>();
        const std::string suffix = "models.Pooling";
        if (type.size() < suffix.size() || type.compare(type.size() - suffix.size(), suffix.size(), suffix) != 0)
          continue;
        const std::string path = m.value("path", std::string());
        const fs::path rel = fs::path(path) / "config.json";
        if (!fs::is_regular_file(snapshot / rel, ec)) missing.push_back(rel.lexically_normal().string());
      }
    } catch (const nlohmann::json::exception&) { return {"a readable modules.json"}; }
  }
  const fs::path rel = hf.lexically_relative(snapshot);
  auto name = [&](const std::string& file) { return rel.empty() || rel == "." ? file : (rel / file).string(); };
  if (!fs::is_regular_file(hf / "config.json", ec)) missing.push_back(name("config.json"));
  if (!fs::is_regular_file(hf / "model.safetensors", ec) && !fs::is_regular_file(hf / "pytorch_model.bin", ec))
    missing.push_back(name("model.safetensors") + " or " + name("pytorch_model.bin"));
  bool tokenizer = false;
  for (const char* f : kHubTokenizerFiles) tokenizer = tokenizer || fs::is_regular_file(hf / f, ec);
  if (!tokenizer) missing.push_back("a tokenizer file (" + name("vocab.txt") + ", tokenizer.json, ...)");
  return missing;
}

}  // namespace hub

bool is_hub_model_name(const std::string& given) {
  if (given.empty()) return false;
  for (const char* prefix : {"/", "./", "../", "~", "$UNIF_HOME", "${UNIF_HOME}"})
    if (starts_with_text(given, prefix)) return false;
  if (given == "." || given == "..") return false;
  std::error_code ec;
  if (fs::is_directory(given, ec)) return false;
  return hub::is_repo_id(given);
}

std::string resolve_model(const std::string& given, const std::string& revision, const std::string& what) {
  if (!is_hub_model_name(given)) return expand_model_path(given);
  const std::string prefix = what.empty() ? std::string() : what + ": ";
  const std::string rev = revision.empty() ? std::string("main") : revision;
  if (!hub::is_revision(rev))
    throw UserError(prefix + "'" + rev + "' is not a Hub revision (a branch, tag or commit, e.g. main)");
  const fs::path cache = hub::cache_dir();
  const std::string shown = "'" + given + "'" + (rev == "main" ? std::string() : " at revision '" + rev + "'");
  std::vector<std::string> missing;
  if (const auto snapshot = hub::cached_snapshot(cache, given, rev)) {
    missing = hub::missing_model_files(*snapshot);
    if (missing.empty()) return snapshot->string();
  }
  if (hub::offline()) {
    std::string lacks;
    for (const auto& m : missing) lacks += (lacks.empty() ? "" : ", ") + m;
    throw UserError(prefix + shown +
                    (missing.empty() ? " is not in the Hugging Face cache"
                                     : " is only partly in the Hugging Face cache (no " + lacks + ")") +
                    " (HF_HUB_CACHE=" + cache.string() + ") and HF_HUB_OFFLINE is set: run `huggingface-cli download " +
                    given + (rev == "main" ? std::string() : " --revision " + rev) + "` or unset HF_HUB_OFFLINE");
  }
  try {
    return hub::download_model(cache, given, rev).string();
  } catch (const hub::HubMissingError& e) {
    // Perhaps a mistyped directory: say where a relative path was looked for.
    std::error_code ec;
    const auto cwd = fs::current_path(ec);
    throw UserError(prefix + e.what() + "; nor is '" + given + "' a directory" +
                    (ec ? std::string() : " in " + cwd.string()));
  } catch (const UserError& e) { throw UserError(prefix + e.what()); }
}

}  // namespace unif
