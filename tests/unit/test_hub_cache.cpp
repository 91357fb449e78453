// Models by Hub name (framework/common/hub_cache.h): the cache folder huggingface_hub's variables
// give, names that are paths vs Hub ids vs neither, and resolution in a cache built by hand
// (refs/main -> snapshot, a commit revision, a missing ref, a partial snapshot) with HF_HUB_OFFLINE
// set, so that nothing here reaches the network. SHA-256 (the LFS check) on FIPS 180-4's vectors.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "framework/common/error.h"
#include "framework/common/hub_cache.h"
#include "framework/common/hub_download.h"
#include "tests/support/temp_dir.h"

namespace {

namespace fs = std::filesystem;

const char* const kHubVars[] = {"HF_HUB_CACHE",   "HUGGINGFACE_HUB_CACHE", "HF_HOME",  "XDG_CACHE_HOME",
                                "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE",  "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN",
                                "HF_TOKEN_PATH",  "HF_ENDPOINT",           "HOME",     "UNIF_HOME"};

using Vars = std::map<std::string, std::string>;

/// Sets the given Hub variables (and clears the other ones) for one test; restores them after.
class HubEnv {
 public:
  explicit HubEnv(const Vars& set) {
    for (const char* name : kHubVars) {
      if (const char* v = std::getenv(name)) saved_[name] = v;
      if (std::string(name) != "HOME") ::unsetenv(name);
    }
    for (const auto& [k, v] : set) ::setenv(k.c_str(), v.c_str(), 1);
  }
  ~HubEnv() {
    for (const char* name : kHubVars) {
      const auto it = saved_.find(name);
      if (it == saved_.end())
        ::unsetenv(name);
      else
        ::setenv(name, it->second.c_str(), 1);
    }
  }
  HubEnv(const HubEnv&) = delete;
  HubEnv& operator=(const HubEnv&) = delete;

 private:
  std::map<std::string, std::string> saved_;
};

void write_text(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << text;
}

const std::string kCommit = "0123456789abcdef0123456789abcdef01234567";
const std::string kOther = "89abcdef0123456789abcdef0123456789abcdef";

/// A snapshot as huggingface_hub writes one: blobs/<etag>, snapshots/<commit>/<file> -> ../../blobs/<etag>.
void add_file(const fs::path& storage, const std::string& commit, const std::string& file, const std::string& text) {
  const std::string etag = unif::hub::sha256_hex(text);
  write_text(storage / "blobs" / etag, text);
  const fs::path pointer = storage / "snapshots" / commit / file;
  fs::create_directories(pointer.parent_path());
  fs::create_symlink((storage / "blobs" / etag).lexically_relative(pointer.parent_path()), pointer);
}

void add_model(const fs::path& storage, const std::string& commit) {
  add_file(storage, commit, "config.json", "{\"model_type\": \"bert\"}");
  add_file(storage, commit, "vocab.txt", "[PAD]\n[UNK]\n");
  add_file(storage, commit, "model.safetensors", "weights");
}

std::string user_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const unif::UserError& e) { return e.what(); }
  return "(no error)";
}

/// Runs in `dir` for the scope, back to the previous directory after.
struct InDirectory {
  fs::path before = fs::current_path();
  explicit InDirectory(const fs::path& dir) { fs::current_path(dir); }
  ~InDirectory() { fs::current_path(before); }
};

}  // namespace

TEST_CASE("hub: the cache folder in huggingface_hub's order", "[unit][hub]") {
  {
    HubEnv env(Vars{{"HF_HUB_CACHE", "/a/hub"}, {"HUGGINGFACE_HUB_CACHE", "/b"}, {"HF_HOME", "/c"}});
    CHECK(unif::hub::cache_dir() == "/a/hub");
  }
  {
    HubEnv env(Vars{{"HUGGINGFACE_HUB_CACHE", "/b"}, {"HF_HOME", "/c"}});
    CHECK(unif::hub::cache_dir() == "/b");  // the legacy variable still wins over HF_HOME
  }
  {
    HubEnv env(Vars{{"HF_HOME", "/c"}, {"XDG_CACHE_HOME", "/d"}});
    CHECK(unif::hub::cache_dir() == "/c/hub");
  }
  {
    HubEnv env(Vars{{"XDG_CACHE_HOME", "/d"}});
    CHECK(unif::hub::cache_dir() == "/d/huggingface/hub");
  }
  {
    HubEnv env(Vars{{"HOME", "/home/u"}});
    CHECK(unif::hub::cache_dir() == "/home/u/.cache/huggingface/hub");
  }
  {
    HubEnv env(Vars{{"HOME", "/home/u"}, {"HF_HUB_CACHE", "~/hf"}, {"HF_HOME", "/c"}});
    CHECK(unif::hub::cache_dir() == "/home/u/hf");
    ::unsetenv("HF_HUB_CACHE");
    ::setenv("HF_HOME", "${HOME}/x", 1);
    CHECK(unif::hub::cache_dir() == "/home/u/x/hub");
  }
}

TEST_CASE("hub: offline, endpoint and token as huggingface_hub reads them", "[unit][hub]") {
  for (const char* yes : {"1", "true", "ON", "yes"}) {
    HubEnv env(Vars{{"HF_HUB_OFFLINE", yes}});
    CHECK(unif::hub::offline());
  }
  {
    HubEnv env(Vars{{"HF_HUB_OFFLINE", "0"}, {"TRANSFORMERS_OFFLINE", "1"}});
    CHECK_FALSE(unif::hub::offline());  // HF_HUB_OFFLINE, when set, decides
  }
  {
    HubEnv env(Vars{{"TRANSFORMERS_OFFLINE", "1"}});
    CHECK(unif::hub::offline());
  }
  {
    HubEnv env(Vars{});
    CHECK_FALSE(unif::hub::offline());
    CHECK(unif::hub::endpoint() == "https://huggingface.co");
    ::setenv("HF_ENDPOINT", "http://127.0.0.1:8000//", 1);
    CHECK(unif::hub::endpoint() == "http://127.0.0.1:8000");
  }
  unif::test::TempDir tmp;
  {
    HubEnv env(Vars{{"HF_HOME", tmp.path.string()}});
    CHECK(!unif::hub::token());
    write_text(tmp / "token", "hf_file\n");
    CHECK(unif::hub::token() == std::optional<std::string>("hf_file"));
    ::setenv("HF_TOKEN", " hf_env ", 1);
    CHECK(unif::hub::token() == std::optional<std::string>("hf_env"));
    ::unsetenv("HF_TOKEN");
    write_text(tmp / "elsewhere", "hf_path");
    ::setenv("HF_TOKEN_PATH", (tmp / "elsewhere").c_str(), 1);
    CHECK(unif::hub::token() == std::optional<std::string>("hf_path"));
  }
}

TEST_CASE("hub: repo ids by huggingface_hub's rule", "[unit][hub]") {
  using unif::hub::is_repo_id;
  for (const char* ok :
       {"bert-base-uncased", "org/name", "FacebookAI/roberta-base", "a", "Foo-BAR_foo.bar123", "123", "_x/y_"})
    CHECK(is_repo_id(ok));
  for (const char* bad : {"", "a/b/c", "/name", "org/", "a--b", "a..b", ".name", "name.", "-x", "org/x.git", "a b",
                          "caf\xc3\xa9", "org/na:me"})
    CHECK_FALSE(is_repo_id(bad));
  CHECK(is_repo_id(std::string(96, 'a')));
  CHECK_FALSE(is_repo_id(std::string(97, 'a')));
  CHECK(is_repo_id(std::string(96, 'a') + "/" + std::string(96, 'b')));
  CHECK(unif::hub::repo_folder("org/name") == "models--org--name");
  CHECK(unif::hub::repo_folder("gpt2") == "models--gpt2");
  CHECK(unif::hub::is_commit_hash(kCommit));
  CHECK_FALSE(unif::hub::is_commit_hash("main"));
  CHECK_FALSE(unif::hub::is_commit_hash("0123456789ABCDEF0123456789abcdef01234567"));
}

TEST_CASE("hub: names that are paths, Hub ids, or neither", "[unit][hub]") {
  unif::test::TempDir tmp;
  HubEnv env(Vars{{"HF_HUB_CACHE", (tmp / "hub").string()}, {"HF_HUB_OFFLINE", "1"}, {"UNIF_HOME", "/opt/u"}});
  fs::create_directories(tmp / "work" / "org" / "name");
  InDirectory in(tmp / "work");
  CHECK_FALSE(unif::is_hub_model_name("org/name"));  // a directory here: a path
  CHECK(unif::resolve_model("org/name") == "org/name");
  CHECK(unif::is_hub_model_name("org/other"));
  for (const char* path :
       {"/abs/name", "./name", "../name", "~/name", "$UNIF_HOME/models/name", "${UNIF_HOME}/m", ".", ".."})
    CHECK_FALSE(unif::is_hub_model_name(path));
  CHECK(unif::resolve_model("$UNIF_HOME/models/m") == "/opt/u/models/m");  // expanded as before
  // Neither a directory nor an id: a path as before (the loader says it is no directory).
  for (const char* neither : {"runs/x/final", "a--b", "no such"}) {
    CHECK_FALSE(unif::is_hub_model_name(neither));
    CHECK(unif::resolve_model(neither) == neither);
  }
  CHECK(unif::resolve_model("") == "");
}

TEST_CASE("hub: resolution in a cache built by hand", "[unit][hub]") {
  unif::test::TempDir tmp;
  const fs::path cache = tmp / "hub";
  const fs::path storage = cache / "models--org--tiny";
  add_model(storage, kCommit);
  write_text(storage / "refs" / "main", kCommit);
  HubEnv env(Vars{{"HF_HUB_CACHE", cache.string()}, {"HF_HUB_OFFLINE", "1"}, {"HF_HOME", (tmp / "home").string()}});

  SECTION("refs/main names the snapshot") {
    CHECK(unif::hub::cached_snapshot(cache, "org/tiny", "main") == storage / "snapshots" / kCommit);
    CHECK(unif::resolve_model("org/tiny") == (storage / "snapshots" / kCommit).string());
    CHECK(unif::hub::missing_model_files(storage / "snapshots" / kCommit).empty());
  }
  SECTION("a commit revision is its snapshot folder") {
    add_model(storage, kOther);
    CHECK(unif::resolve_model("org/tiny", kOther) == (storage / "snapshots" / kOther).string());
    CHECK(unif::resolve_model("org/tiny", kCommit) == (storage / "snapshots" / kCommit).string());
  }
  SECTION("another branch: its own ref") {
    add_model(storage, kOther);
    write_text(storage / "refs" / "v2", kOther + "\n");
    CHECK(unif::resolve_model("org/tiny", "v2") == (storage / "snapshots" / kOther).string());
  }
  SECTION("HF_HOME's cache when HF_HUB_CACHE is not set") {
    ::unsetenv("HF_HUB_CACHE");
    add_model(tmp / "home" / "hub" / "models--org--tiny", kOther);
    write_text(tmp / "home" / "hub" / "models--org--tiny" / "refs" / "main", kOther);
    CHECK(unif::resolve_model("org/tiny") ==
          (tmp / "home" / "hub" / "models--org--tiny" / "snapshots" / kOther).string());
  }
  SECTION("a missing ref, snapshot or model, offline: one line naming the cache and how to fill it") {
    const std::string missing_ref = user_error_of([] { unif::resolve_model("org/tiny", "v9", "--model"); });
    CHECK(missing_ref ==
          "--model: 'org/tiny' at revision 'v9' is not in the Hugging Face cache (HF_HUB_CACHE=" + cache.string() +
              ") and HF_HUB_OFFLINE is set: run `huggingface-cli download org/tiny --revision v9` or "
              "unset HF_HUB_OFFLINE");
    CHECK(user_error_of([] { unif::resolve_model("org/absent"); }) ==
          "--model: 'org/absent' is not in the Hugging Face cache (HF_HUB_CACHE=" + cache.string() +
              ") and HF_HUB_OFFLINE is set: run `huggingface-cli download org/absent` or unset HF_HUB_OFFLINE");
    write_text(storage / "refs" / "gone", kOther);  // a ref whose snapshot folder is not there
    CHECK_THAT(user_error_of([] { unif::resolve_model("org/tiny", "gone"); }),
               Catch::Contains("is not in the Hugging Face cache"));
  }
  SECTION("a revision that is no branch, tag or commit") {
    for (const char* bad : {"../x", "/abs", "a//b", "a b", "x/"})
      CHECK_THAT(user_error_of([&] { unif::resolve_model("org/tiny", bad); }),
                 Catch::EndsWith("is not a Hub revision (a branch, tag or commit, e.g. main)"));
  }
  SECTION("a partial snapshot: what it lacks") {
    fs::remove(storage / "snapshots" / kCommit / "model.safetensors");
    CHECK(unif::hub::missing_model_files(storage / "snapshots" / kCommit) ==
          std::vector<std::string>{"model.safetensors or pytorch_model.bin"});
    CHECK_THAT(user_error_of([] { unif::resolve_model("org/tiny", "main", "model.pretrained"); }),
               Catch::StartsWith("model.pretrained: 'org/tiny' is only partly in the Hugging Face cache (no "
                                 "model.safetensors or pytorch_model.bin) (HF_HUB_CACHE="));
  }
  SECTION("a sentence-transformers snapshot needs its Transformer folder and its Pooling settings") {
    const fs::path st = cache / "models--org--st";
    add_file(st, kCommit, "modules.json",
             R"([{"idx": 0, "name": "0", "path": "0_Transformer", "type": "sentence_transformers.models.Transformer"},)"
             R"( {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])");
    add_file(st, kCommit, "0_Transformer/config.json", "{}");
    add_file(st, kCommit, "0_Transformer/pytorch_model.bin", "w");
    CHECK(unif::hub::missing_model_files(st / "snapshots" / kCommit) ==
          std::vector<std::string>{"1_Pooling/config.json",
                                   "a tokenizer file (0_Transformer/vocab.txt, tokenizer.json, ...)"});
    add_file(st, kCommit, "1_Pooling/config.json", "{}");
    add_file(st, kCommit, "0_Transformer/tokenizer.json", "{}");
    CHECK(unif::hub::missing_model_files(st / "snapshots" / kCommit).empty());
    CHECK(unif::resolve_model("org/st", kCommit) == (st / "snapshots" / kCommit).string());
  }
}

TEST_CASE("hub: SHA-256 of FIPS 180-4's vectors and the block boundaries", "[unit][hub]") {
  using unif::hub::sha256_hex;
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(sha256_hex(std::string(55, 'a')) == "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  CHECK(sha256_hex(std::string(56, 'a')) == "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  CHECK(sha256_hex(std::string(64, 'a')) == "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
  unif::test::TempDir tmp;
  write_text(tmp / "f", std::string(1000, 'a'));
  CHECK(unif::hub::sha256_file(tmp / "f") == "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
}
