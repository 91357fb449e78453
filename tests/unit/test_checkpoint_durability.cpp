// Checkpoint durability and integrity: a saved model directory is synced to
// the disk before it is declared COMPLETE and published; a failed write of COMPLETE is an error, not
// a complete-looking directory; the start-up clean-up restores a directory a kill left between the
// two renames of a replace; one run per output_dir; a resume refuses weights or optimizer state that
// do not fit the model.
#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <string>
#include <vector>

#include "framework/checkpoint/atomic_file.h"
#include "framework/checkpoint/hf_config.h"
#include "framework/checkpoint/safetensors.h"
#include "framework/model/model_dir.h"
#include "framework/train/build.h"
#include "framework/train/optimizer.h"
#include "framework/train/output_lock.h"
#include "models/architectures.h"
#include "models/heads/factory.h"
#include "support/temp_dir.h"
#include "support/user_error.h"
#include "support/files.h"

using namespace unif::framework;
using unif::Task;
using unif::test::TempDir;
using unif::test::user_error_of;
namespace fs = std::filesystem;
namespace fd = unif::framework::detail;

using unif::test::write_text;

namespace {

std::shared_ptr<unif::models::EncoderTaskModel> tiny_model(int64_t layers = 2) {
  unif::models::EncoderConfig opt;
  opt.vocab_size(50).hidden_size(8).num_hidden_layers(layers).num_attention_heads(2).intermediate_size(16);
  opt.max_position_embeddings(16).hidden_dropout_prob(0.0).attention_probs_dropout_prob(0.0);
  return unif::models::make_encoder_task_model(unif::Task::Classification, opt, 3);
}

// Saves tiny_model() as a model directory `dir` (vocab written next to it), `extra` as in save_model_dir.
void save_tiny(const fs::path& dir, const unif::models::EncoderTaskModel& model,
               const std::function<void(const fs::path&)>& extra = {}) {
  const auto vocab = dir.parent_path() / "vocab.txt";
  {
    std::ofstream v(vocab);
    for (const char* t : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"}) v << t << "\n";
  }
  ModelMeta meta;
  meta.labels = {"x", "y", "z"};
  save_model_dir(dir, model, describe_model(model, meta.labels, HfConfig{}),
                 load_tokenizer(dir.parent_path(), unif::models::architecture("bert"), true), meta, extra);
}

// Sets RLIMIT_FSIZE (writes past `bytes` fail with EFBIG, SIGXFSZ ignored) until destroyed.
struct FileSizeLimit {
  rlimit old{};
  void (*old_handler)(int);
  explicit FileSizeLimit(rlim_t bytes) {
    old_handler = std::signal(SIGXFSZ, SIG_IGN);
    ::getrlimit(RLIMIT_FSIZE, &old);
    rlimit now = old;
    now.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &now);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, old_handler);
  }
};

}  // namespace

TEST_CASE("save_model_dir syncs every file and the directory before COMPLETE, the parent after publishing",
          "[unit][checkpoint]") {
  TempDir tmp;
  const auto model = tiny_model();
  const auto dir = tmp / "best";
  std::vector<fs::path> synced;
  fd::set_sync_observer([&](const fs::path& p) { synced.push_back(p); });
  struct Reset {
    ~Reset() { fd::set_sync_observer({}); }
  } reset;
  for (int round = 0; round < 2; ++round) {  // a first save, then a replace
    synced.clear();
    // A file `extra` writes with a plain stream (as a trainer may) is synced too.
    save_tiny(dir, *model, [](const fs::path& t) { write_text(t / "extra.txt", "x\n"); });
    REQUIRE(is_complete(dir));
    // Where each file of the published directory was last synced under the temporary name.
    const auto position = [&](const std::function<bool(const fs::path&)>& match) {
      auto it = std::find_if(synced.rbegin(), synced.rend(), match);
      return it == synced.rend() ? -1 : static_cast<int>(synced.rend() - it) - 1;
    };
    const auto complete =
        position([](const fs::path& p) { return p.filename().string().rfind("COMPLETE.tmp-", 0) == 0; });
    REQUIRE(complete >= 0);
    const fs::path tmp_dir = synced[static_cast<size_t>(complete)].parent_path();
    CHECK(tmp_dir.filename().string().rfind("best.tmp-", 0) == 0);
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().filename() == "COMPLETE") continue;
      INFO(e.path().filename().string());
      const auto at = position([&](const fs::path& p) { return p == tmp_dir / e.path().filename(); });
      CHECK(at >= 0);
      CHECK(at < complete);
    }
    const auto dir_synced = position([&](const fs::path& p) { return p == tmp_dir; });
    CHECK(dir_synced > complete);  // the rename of COMPLETE into the directory is durable
    // Published, then the parent synced: the last sync of all.
    CHECK(synced.back() == tmp.path);
  }
  CHECK(std::distance(fs::directory_iterator(tmp.path), fs::directory_iterator()) == 2);  // best, vocab.txt
}

TEST_CASE("a failed write of COMPLETE is an error, and nothing is published", "[unit][checkpoint]") {
  TempDir tmp;
  const auto model = tiny_model();
  std::unique_ptr<FileSizeLimit> limit;
  // Every file is written; then the disk is "full" for what comes next: COMPLETE.
  const auto msg = user_error_of(
      [&] { save_tiny(tmp / "final", *model, [&](const fs::path&) { limit = std::make_unique<FileSizeLimit>(0); }); });
  limit.reset();
  CHECK_THAT(msg, Catch::Contains("COMPLETE") && Catch::Contains("write failed"));
  CHECK_FALSE(fs::exists(tmp / "final"));
  for (const auto& e : fs::directory_iterator(tmp.path)) CHECK(e.path().filename() == "vocab.txt");
}

TEST_CASE("write_file_atomic reports a stream that fails (disk full) naming the file", "[unit][checkpoint]") {
  TempDir tmp;
  std::string msg;
  {
    FileSizeLimit limit(4);
    msg = user_error_of([&] { fd::write_text_file_atomic(tmp / "trainer_state.json", "{\"step\": 12}\n"); });
  }
  CHECK_THAT(msg, Catch::Contains("trainer_state.json") && Catch::Contains("File too large"));
  CHECK(fs::is_empty(tmp.path));
}

TEST_CASE("a replace swaps the directories in one step: best/ is there at every moment", "[unit][checkpoint]") {
  TempDir tmp;
  const auto first = tiny_model(), second = tiny_model(1);
  save_tiny(tmp / "best", *first);
  // At the sync of the parent (right after the publish, before the old copy is removed): best/ is
  // the new model and the old one sits under the temporary name; there never was a moment without
  // best/ (no best.old-PID: the two-rename fallback was not needed).
  bool seen = false;
  fd::set_sync_observer([&](const fs::path& p) {
    if (p != tmp.path) return;
    seen = true;
    CHECK(read_hf_config(tmp / "best" / "config.json").bert.num_hidden_layers() == 1);
    fs::path swapped = tmp / "best";
    swapped += ".tmp-" + std::to_string(::getpid());
    CHECK(read_hf_config(swapped / "config.json").bert.num_hidden_layers() == 2);
    fs::path old = tmp / "best";
    old += ".old-" + std::to_string(::getpid());
    CHECK_FALSE(fs::exists(old));
  });
  struct Reset {
    ~Reset() { fd::set_sync_observer({}); }
  } reset;
  save_tiny(tmp / "best", *second);
  CHECK(seen);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(tmp.path)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"best", "vocab.txt"});
}

TEST_CASE("recover_interrupted_saves restores a directory killed between two renames", "[unit][checkpoint]") {
  TempDir tmp;
  const auto complete = [&](const std::string& name, const std::string& mark) {
    fs::create_directories(tmp / name);
    write_text(tmp / name / "which", mark);
    write_text(tmp / name / "COMPLETE", "ok\n");
  };
  complete("best.old-123", "old best");  // best/ moved aside, the new one never renamed in
  complete("final.old-7", "old final");  // both there: the new (tmp) one wins
  complete("final.tmp-7", "new final");
  fs::create_directories(tmp / "step-3.tmp-9");  // killed while writing: not complete
  complete("step-4", "kept");                    // there: its leftover is removed
  complete("step-4.tmp-9", "replaced copy");
  write_text(tmp / "metrics.jsonl.tmp-5-0", "torn");  // a temporary file of write_file_atomic
  const auto notes = recover_interrupted_saves(tmp.path);
  REQUIRE(notes.size() == 2);
  CHECK_THAT(notes[0], Catch::Contains("best") && Catch::Contains("best.old-123"));
  CHECK_THAT(notes[1], Catch::Contains("final.tmp-7"));
  const auto text = [](const fs::path& f) {
    std::ifstream in(f);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  CHECK(text(tmp / "best" / "which") == "old best");
  CHECK(text(tmp / "final" / "which") == "new final");
  CHECK(text(tmp / "step-4" / "which") == "kept");
  CHECK_FALSE(fs::exists(tmp / "step-3"));
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(tmp.path)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"best", "final", "step-4"});
}

TEST_CASE("one run per output_dir: a second lock fails naming the owner's pid", "[unit][train]") {
  TempDir tmp;
  {
    OutputDirLock first(tmp.path);
    CHECK_THAT(user_error_of([&] { OutputDirLock second(tmp.path); }),
               Catch::Contains("output_dir '" + tmp.path.string() + "' is in use by another unif run (pid " +
                               std::to_string(::getpid()) + ")"));
  }
  CHECK(user_error_of([&] { OutputDirLock again(tmp.path); }).empty());  // released with its owner
}

TEST_CASE("resume: a checkpoint whose weights do not fit the model is a UserError naming dir and keys",
          "[unit][checkpoint]") {
  TempDir tmp;
  const auto model = tiny_model();
  const auto dir = tmp / "step-10";
  save_tiny(dir, *model);
  CHECK(user_error_of([&] { load_checkpoint_weights(*model, dir); }).empty());
  auto weights = read_safetensors(dir / "model.safetensors").tensors;
  const auto dropped = std::string("bert.encoder.layer.1.output.dense.bias");
  REQUIRE(weights.erase(dropped) == 1);
  write_safetensors(dir / "model.safetensors", weights);
  CHECK_THAT(user_error_of([&] { load_checkpoint_weights(*model, dir); }),
             Catch::Contains(dir.string()) && Catch::Contains("1 model weight(s) missing: " + dropped));
  weights[dropped] = torch::zeros({8});
  weights["bert.encoder.layer.2.output.dense.bias"] = torch::zeros({8});
  write_safetensors(dir / "model.safetensors", weights);
  CHECK_THAT(user_error_of([&] { load_checkpoint_weights(*model, dir); }),
             Catch::Contains("1 weight(s) the model does not have: bert.encoder.layer.2.output.dense.bias"));
}

TEST_CASE("resume: optimizer state that does not fit the parameters is a UserError naming the file", "[unit][train]") {
  auto w = torch::tensor({1.0f, -2.0f}).requires_grad_(true);
  auto b = torch::tensor({0.5f}).requires_grad_(true);
  auto opt =
      make_optimizer({{"w", w, 1.0, 0.0}, {"b", b, 1.0, 0.0}}, {OptimizerKind::AdamW, 0.0, 0.9, 0.999, 1e-8, 0.0});
  w.mutable_grad() = torch::tensor({0.5f, -0.25f});
  b.mutable_grad() = torch::tensor({1.0f});
  opt->step(0.01);
  const auto good = opt->state();
  const auto load = [&](std::map<std::string, torch::Tensor> state) {
    auto w2 = w.detach().clone().requires_grad_(true), b2 = b.detach().clone().requires_grad_(true);
    auto fresh =
        make_optimizer({{"w", w2, 1.0, 0.0}, {"b", b2, 1.0, 0.0}}, {OptimizerKind::AdamW, 0.0, 0.9, 0.999, 1e-8, 0.0});
    return user_error_of([&] { fresh->load_state(state, "ck/optimizer.safetensors"); });
  };
  CHECK(load(good).empty());
  auto s = good;
  s["w.exp_avg"] = torch::zeros({3});
  CHECK_THAT(load(s), Catch::Contains("ck/optimizer.safetensors") && Catch::Contains("w.exp_avg is Float [3]"));
  s = good;
  s["w.exp_avg"] = s["w.exp_avg"].to(torch::kDouble);
  CHECK_THAT(load(s), Catch::Contains("w.exp_avg is Double"));
  s = good;
  s["gone.exp_avg"] = torch::zeros({2});
  CHECK_THAT(load(s), Catch::Contains("gone.exp_avg names no parameter"));
  s = good;
  s["w.momentum_buffer"] = torch::zeros({2});
  CHECK_THAT(load(s), Catch::Contains("'momentum_buffer' is not a state of this optimizer"));
  s = good;
  s.erase("b.exp_avg_sq");
  CHECK_THAT(load(s), Catch::Contains("b.exp_avg_sq is missing"));
  s = good;
  s.erase("__step__");
  CHECK_THAT(load(s), Catch::Contains("__step__ missing"));
}
