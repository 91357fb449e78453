// Multi-process data parallelism (SPEC §6): the test starts `unif train` itself, once as one
// process and twice as ranks 0 and 1 of a c10d group on loopback (RANK, WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT as torchrun sets them), on the fixture's classification run (tiny-bert-zh, dropout 0,
// 8 examples). With an uneven global batch of 5 (slices 3 + 2, then 2 + 1) the final parameters
// of the two runs agree within |a-b| <= 1e-6 + 1e-5|b|, for sparse and dense word-embedding
// gradients, plain training and adversarial methods, and ranks that shard further on threads.
// Only rank 0 writes. A rank that dies makes the other fail with `error:` well within the
// timeout; ranks that disagree on the run, and malformed variables, are `error:` exit 2. The same
// across two network namespaces joined by a veth pair (two hosts; skipped where they cannot be
// made), and training.nonfinite decided on every rank together.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "framework/checkpoint/safetensors.h"
#include "framework/parallel/process_group.h"
#include "support/temp_dir.h"
#include "support/fixture_config.h"

namespace fs = std::filesystem;
using namespace unif;

using unif::test::TempDir;

namespace {

const fs::path kFixture = unif::test::kTinyBertZh;
const fs::path kUnif = fs::path(UNIF_BINARY_DIR) / "bin" / "unif";

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The fixture's one-step SGD config with output_dir `out`, written to dir/name.yaml.
fs::path write_config(const fs::path& dir, const std::string& name, const fs::path& out) {
  const std::string yaml = unif::test::fixture_config("cls_pair", "none", "unif_sgd.yaml", out);
  const auto file = dir / (name + ".yaml");
  std::ofstream(file) << yaml;
  return file;
}

// A TCP port that was free a moment ago on 127.0.0.1.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  ::close(fd);
  return ntohs(a.sin_port);
}

struct Proc {
  pid_t pid = -1;
  fs::path log;  // stdout + stderr
};

// Starts `program args...` (by default bin/unif) with `env` added to (or, with an empty value,
// removed from) the environment.
Proc spawn(const std::vector<std::string>& args, const std::map<std::string, std::string>& env, const fs::path& log,
           const fs::path& program = kUnif) {
  Proc p;
  p.log = log;
  p.pid = ::fork();
  REQUIRE(p.pid >= 0);
  if (p.pid == 0) {
    for (const char* v : {"WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "UNIF_DIST_TIMEOUT",
                          "UNIF_DIST_SAVE_TIMEOUT", "UNIF_TEST_SLOW_SAVE_MS"})
      ::unsetenv(v);
    ::setenv("OMP_NUM_THREADS", "1", 1);
    for (const auto& [k, v] : env) v.empty() ? ::unsetenv(k.c_str()) : ::setenv(k.c_str(), v.c_str(), 1);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> argv{const_cast<char*>(program.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(program.c_str(), argv.data());
    ::_exit(127);
  }
  return p;
}

// The exit code of `p`; kills it and fails the test after `limit_s` seconds.
int wait_for(const Proc& p, double limit_s) {
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(p.pid, &status, WNOHANG);
    if (r == p.pid) {
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      return 128 + WTERMSIG(status);
    }
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > limit_s) {
      ::kill(p.pid, SIGKILL);
      ::waitpid(p.pid, &status, 0);
      FAIL("unif did not finish within " << limit_s << " s; its output:\n" << read_file(p.log));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::map<std::string, std::string> rank_env(int rank, int port, const std::string& timeout = "60") {
  return {{"WORLD_SIZE", "2"},          {"RANK", std::to_string(rank)},        {"LOCAL_RANK", std::to_string(rank)},
          {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(port)}, {"UNIF_DIST_TIMEOUT", timeout}};
}

std::vector<std::string> train_args(const fs::path& config, const std::vector<std::string>& sets) {
  std::vector<std::string> a{"train", config.string()};
  for (const auto& s : sets) a.insert(a.end(), {"--set", s});
  return a;
}

double worst_excess(const torch::Tensor& a, const torch::Tensor& b) {
  REQUIRE(a.sizes() == b.sizes());
  auto ad = a.to(torch::kDouble), bd = b.to(torch::kDouble);
  return ((ad - bd).abs() - (1e-6 + 1e-5 * bd.abs())).max().item<double>();
}

size_t count_lines(const fs::path& p) {
  std::ifstream in(p);
  size_t n = 0;
  for (std::string line; std::getline(in, line);) n += !line.empty();
  return n;
}

// The final models of the runs in `one` and `two` agree within |a-b| <= 1e-6 + 1e-5|b|, and the
// runs really trained (more than 10 tensors moved from `start`'s: embeddings, encoder, head).
// `model`: the model directory under final/ ("" = final/ itself).
void same_final_model(const fs::path& one, const fs::path& two, const std::string& model = "",
                      const fs::path& start_dir = kFixture) {
  const auto a = framework::read_safetensors(one / "final" / model / "model.safetensors").tensors;
  const auto b = framework::read_safetensors(two / "final" / model / "model.safetensors").tensors;
  const auto start = framework::read_safetensors(start_dir / "model.safetensors").tensors;
  REQUIRE(a.size() == b.size());
  size_t moved = 0;
  for (const auto& [name, value] : a) {
    INFO(name);
    REQUIRE(b.count(name));
    CHECK(worst_excess(b.at(name), value) <= 0.0);
    // An embedding model's keys are saved without the family prefix.
    const std::string key = start.count(name) ? name : "bert." + name;
    if (start.count(key) && !torch::equal(start.at(key), value)) ++moved;
  }
  CHECK(moved > 10);
}

// Trains with `sets` as one process and as two ranks; the final models must agree. `agent`: as
// under torchrun's static rendezvous, this test serves the store (as torchrun's agent does) and
// both ranks connect to it as clients (TORCHELASTIC_USE_AGENT_STORE=True).
// task embedding with in-batch negatives on the fixture model (dropout 0): 9 (anchor, positive,
// negative) records of sib200_zh texts (lengths differ, so the ranks' slices pad differently).
fs::path write_embedding_config(const fs::path& dir, const std::string& name, const fs::path& out) {
  const fs::path data = dir / "triplets.jsonl";
  if (!fs::exists(data)) {
    std::ifstream in(fs::path(UNIF_SOURCE_DIR) / "data" / "sib200_zh" / "dev.jsonl");
    std::vector<std::string> texts;
    for (std::string line; texts.size() < 11 && std::getline(in, line);)
      texts.push_back(nlohmann::json::parse(line).at("text").get<std::string>());
    REQUIRE(texts.size() == 11);
    std::ofstream o(data);
    for (size_t i = 0; i < 9; ++i)
      o << nlohmann::json{{"anchor", texts[i]}, {"positive", texts[i + 1]}, {"negative", texts[i + 2]}}.dump() << "\n";
  }
  const std::string yaml =
      "task: embedding\noutput_dir: " + out.string() + "\nmodel: {pretrained: " + kFixture.string() +
      ", max_seq_length: 24, config: {hidden_dropout_prob: 0.0, attention_probs_dropout_prob: "
      "0.0}}\ndata: {train: " +
      data.string() +
      ", text_fields: [anchor, positive, negative]}\ntraining: {shuffle: false, log_every: 1, "
      "optimizer: {name: sgd, lr: 0.5, weight_decay: 0.0}, schedule: {name: constant, warmup_ratio: "
      "0.0}}\nparallel: {devices: [cpu]}\n";
  const auto file = dir / (name + ".yaml");
  std::ofstream(file) << yaml;
  return file;
}

using ConfigWriter = fs::path (*)(const fs::path&, const std::string&, const fs::path&);

void one_vs_two_processes(const std::vector<std::string>& sets, bool agent = false,
                          ConfigWriter make_config = write_config,
                          const std::vector<std::pair<std::string, fs::path>>& models = {{"", kFixture}}) {
  TempDir tmp;
  const auto one_cfg = make_config(tmp.path, "one", tmp.path / "one");
  const auto two_cfg = make_config(tmp.path, "two", tmp.path / "two");
  auto one = spawn(train_args(one_cfg, sets), {}, tmp.path / "one.log");
  const int one_rc = wait_for(one, 60);
  INFO("one process:\n" << read_file(one.log));
  REQUIRE(one_rc == 0);

  const int port = free_port();
  c10::intrusive_ptr<c10d::TCPStore> agent_store;
  auto env0 = rank_env(0, port), env1 = rank_env(1, port);
  if (agent) {
    c10d::TCPStoreOptions so;
    so.port = static_cast<uint16_t>(port);
    so.isServer = true;
    so.waitWorkers = false;
    agent_store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", so);
    for (auto* e : {&env0, &env1})
      (*e)["TORCHELASTIC_USE_AGENT_STORE"] = "True", (*e)["TORCHELASTIC_RESTART_COUNT"] = "0";
  }
  auto r0 = spawn(train_args(two_cfg, sets), env0, tmp.path / "rank0.log");
  auto r1 = spawn(train_args(two_cfg, sets), env1, tmp.path / "rank1.log");
  const int rc1 = wait_for(r1, 60), rc0 = wait_for(r0, 60);
  INFO("rank 0:\n" << read_file(r0.log) << "\nrank 1:\n" << read_file(r1.log));
  REQUIRE(rc0 == 0);
  REQUIRE(rc1 == 0);
  REQUIRE(fs::exists(tmp.path / "two" / "final" / "COMPLETE"));
  // Rank 0 alone writes: as many metrics lines as one process (rank 1 would double them), and
  // rank 1 logs nothing at info level.
  CHECK(count_lines(tmp.path / "two" / "metrics.jsonl") == count_lines(tmp.path / "one" / "metrics.jsonl"));
  CHECK(read_file(r1.log).find("training:") == std::string::npos);
  CHECK(read_file(r0.log).find("training:") != std::string::npos);
  // The log says the run is distributed: processes, backend, rank, the per-rank share of the batch.
  CHECK(read_file(r0.log).find("distributed: 2 processes, backend gloo, this is rank 0") != std::string::npos);

  for (const auto& [model, start] : models) same_final_model(tmp.path / "one", tmp.path / "two", model, start);
}

}  // namespace

// Runs `unif train config` as ranks 0 and 1 (fresh port); both must succeed.
void run_two(const fs::path& config, const std::vector<std::string>& sets, const fs::path& logs, const std::string& tag,
             const std::map<std::string, std::string>& extra_env = {}) {
  const int port = free_port();
  auto env0 = rank_env(0, port), env1 = rank_env(1, port);
  for (const auto& [k, v] : extra_env) env0[k] = v, env1[k] = v;
  auto r0 = spawn(train_args(config, sets), env0, logs / (tag + "-rank0.log"));
  auto r1 = spawn(train_args(config, sets), env1, logs / (tag + "-rank1.log"));
  const int rc1 = wait_for(r1, 60), rc0 = wait_for(r0, 60);
  INFO(tag << " rank 0:\n" << read_file(r0.log) << "\nrank 1:\n" << read_file(r1.log));
  REQUIRE(rc0 == 0);
  REQUIRE(rc1 == 0);
}

TEST_CASE("2 processes = 1 process: classification, sparse embeddings, uneven batch 5, 2 steps",
          "[parallel][distributed]") {
  one_vs_two_processes({"training.batch_size=5", "training.max_steps=2", "training.optimizer.lr=0.1"});
}

TEST_CASE("2 processes = 1 process: fgm, dense embeddings, adamw - the store served as torchrun's agent does",
          "[parallel][distributed][adversarial]") {
  one_vs_two_processes(
      {"training.batch_size=5", "training.max_steps=2", "adversarial.method=fgm", "model.sparse_embeddings=false",
       "training.optimizer.name=adamw", "training.optimizer.lr=0.001"},
      /*agent=*/true);
}

TEST_CASE("2 processes (x 2 replicas) = 1 process: in-batch negatives gathered from every rank, cached too",
          "[parallel][distributed][embedding]") {
  // mnrl with a hard negative over slices 3 + 2 (then 2 + 2), and cached_mnrl (one example per
  // forward of its gradient cache), symmetric, over 2 ranks x 2 replicas.
  one_vs_two_processes({"training.batch_size=5", "training.max_steps=2"}, false, write_embedding_config);
  one_vs_two_processes({"training.batch_size=5", "training.max_steps=2", "embedding.loss=cached_mnrl",
                        "embedding.mini_batch_size=3", "embedding.symmetric=true", "model.sparse_embeddings=false",
                        "parallel.devices=[cpu,cpu]", "parallel.threads_per_replica=1"},
                       false, write_embedding_config);
}

TEST_CASE("2 processes x 2 replicas = 1 process: pgd (delta-only passes), sparse embeddings",
          "[parallel][distributed][adversarial]") {
  one_vs_two_processes({"training.batch_size=5", "training.max_steps=2", "adversarial.method=pgd",
                        "training.optimizer.lr=0.1", "parallel.devices=[cpu,cpu]", "parallel.threads_per_replica=1"});
}

#ifdef UNIF_TORCHRUN
// The real launcher (found by CMake; scripts/test.sh installs Debian's python3-torch for it):
// `torchrun --no_python --nproc_per_node=2 unif train ...` with its static rendezvous (the agent
// serves the store) gives the one-process parameters. `--no_python` is the spelling torch 1.13
// knows (later versions accept `--no-python` too). `-r 1 -t 1 --log_dir`: torch 1.13's torchrun
// under Python 3.11 fails to parse its default `--redirects 0` / `--tee 0` (Std.from_str returns
// None for 0 because iterating an IntFlag skips the zero member), so the test passes values it parses.
TEST_CASE("torchrun --no_python --nproc_per_node=2 unif train = 1 process", "[parallel][distributed][torchrun]") {
  TempDir tmp;
  const std::vector<std::string> sets{"training.batch_size=5", "training.max_steps=2", "training.optimizer.lr=0.1"};
  const auto one_cfg = write_config(tmp.path, "one", tmp.path / "one");
  auto one = spawn(train_args(one_cfg, sets), {}, tmp.path / "one.log");
  const int one_rc = wait_for(one, 60);
  INFO("one process:\n" << read_file(one.log));
  REQUIRE(one_rc == 0);

  const auto two_cfg = write_config(tmp.path, "two", tmp.path / "two");
  std::vector<std::string> args{"--no_python",
                                "--nproc_per_node=2",
                                "--master_addr=127.0.0.1",
                                "--master_port=" + std::to_string(free_port()),
                                "-r",
                                "1",
                                "-t",
                                "1",
                                "--log_dir",
                                (tmp.path / "torchrun-logs").string(),
                                kUnif.string()};
  const auto unif_args = train_args(two_cfg, sets);
  args.insert(args.end(), unif_args.begin(), unif_args.end());
  auto launcher = spawn(args, {{"UNIF_DIST_TIMEOUT", "60"}}, tmp.path / "torchrun.log", UNIF_TORCHRUN);
  const int rc = wait_for(launcher, 120);
  INFO("torchrun:\n" << read_file(launcher.log));
  REQUIRE(rc == 0);
  REQUIRE(fs::exists(tmp.path / "two" / "final" / "COMPLETE"));
  CHECK(count_lines(tmp.path / "two" / "metrics.jsonl") == count_lines(tmp.path / "one" / "metrics.jsonl"));

  same_final_model(tmp.path / "one", tmp.path / "two");
}
#endif

TEST_CASE("2 processes x 2 replicas: stop after step 1, resume to step 2 = 1 process, 2 steps straight",
          "[parallel][distributed]") {
  TempDir tmp;
  const std::vector<std::string> common{"training.batch_size=5", "training.optimizer.lr=0.1"};
  auto with = [&](std::vector<std::string> extra) {
    auto v = common;
    v.insert(v.end(), extra.begin(), extra.end());
    return v;
  };
  const auto one_cfg = write_config(tmp.path, "one", tmp.path / "one");
  auto one = spawn(train_args(one_cfg, with({"training.max_steps=2"})), {}, tmp.path / "one.log");
  const int one_rc = wait_for(one, 60);
  INFO("one process:\n" << read_file(one.log));
  REQUIRE(one_rc == 0);

  const auto two_cfg = write_config(tmp.path, "two", tmp.path / "two");
  const std::string devices = "parallel.devices=[cpu,cpu]";
  run_two(two_cfg, with({"training.max_steps=1", devices, "parallel.threads_per_replica=1"}), tmp.path, "first");
  REQUIRE(fs::exists(tmp.path / "two" / "checkpoints" / "step-1" / "COMPLETE"));
  run_two(two_cfg, with({"training.max_steps=2", "training.resume=auto", devices, "parallel.threads_per_replica=1"}),
          tmp.path, "resumed");
  CHECK(read_file(tmp.path / "resumed-rank0.log").find("resumed from") != std::string::npos);

  same_final_model(tmp.path / "one", tmp.path / "two");
}

// The last batch of an epoch that is not a multiple of the batch: the fixture's 8 examples in
// batches of 7 leave a last batch of 1, so rank 1's slice is empty at step 2 (before the fix of the
// empty sparse gradient this crashed rank 1: "expected sparse layout, but got layout Strided").
// Every method, smart's momentum teacher (forward_with over the ranks) included.
TEST_CASE("2 processes = 1 process with a batch smaller than the ranks (8 examples, batch 7 then 1): every method",
          "[parallel][distributed][adversarial]") {
  const std::string method = GENERATE(as<std::string>{}, "none", "fgm", "pgd", "freelb", "freeat", "smart", "rdrop");
  INFO("adversarial.method=" << method);
  one_vs_two_processes(
      {"training.batch_size=7", "training.max_steps=2", "training.optimizer.lr=0.1", "adversarial.method=" + method});
}

// training.loss: Z = the sum of the targets' class weights over the global batch, on every rank.
TEST_CASE("2 processes = 1 process: smart and rdrop over 4 steps, padded and unpadded, an empty slice",
          "[parallel][distributed][adversarial]") {
  // 9 single-text examples in batches of 4: the third step's single example leaves rank 1 empty.
  // lr 0.01: at the fixture's SGD lr of 1.0 (or 0.1) SMART's ascent turns the rounding difference of
  // the first step (about 4e-9: one process adds each pass's replica gradients as the pass ends, the
  // ranks sum their own passes first) into 1e-4 by the fourth step, in one process as in two; its
  // direction is the gradient of the symmetric KL between two float32 distributions 1e-5 apart. At
  // lr 0.01 the runs agree to about 2e-9, so a wrong slice, offset or target would show.
  const std::string method = GENERATE(as<std::string>{}, "smart", "rdrop");
  const std::string unpadded = GENERATE(as<std::string>{}, "false", "true");
  INFO("adversarial.method=" << method << ", model.unpadded=" << unpadded);
  TempDir data;
  std::ifstream in(fs::path(UNIF_SOURCE_DIR) / "data/sib200_zh/train.jsonl");
  std::ofstream out(data.path / "train.jsonl");
  std::string line;
  for (int i = 0; i < 9 && std::getline(in, line); ++i) out << line << "\n";
  out.close();
  one_vs_two_processes({"data.train=" + (data.path / "train.jsonl").string(), "data.text_fields=[text]",
                        "data.dev=null", "data.labels=null", "training.batch_size=4", "training.max_steps=4",
                        "training.optimizer.lr=0.01", "adversarial.method=" + method, "model.unpadded=" + unpadded});
}

TEST_CASE("2 processes = 1 process: class weights balanced - label smoothing - focal loss", "[parallel][distributed]") {
  one_vs_two_processes({"training.batch_size=5", "training.max_steps=2", "training.optimizer.lr=0.1",
                        "training.loss.class_weights=balanced", "training.loss.label_smoothing=0.1",
                        "training.loss.focal_gamma=2.0"});
}

// masked_lm: masks are a function of (seed, epoch, example), so the ranks draw the same ones; the
// tied decoder makes the word-embedding gradient dense on every rank (sparse lookups on).
TEST_CASE("2 processes = 1 process: masked_lm with the tied decoder and sparse lookups",
          "[parallel][distributed][mlm]") {
  one_vs_two_processes({"task=masked_lm", "data.text_fields=[text_a]", "data.labels=null", "model.mlm_probability=0.3",
                        "training.batch_size=5", "training.max_steps=2", "training.optimizer.lr=0.1"});
}

// replaced_token_detection on tests/fixtures/electra_rtd's discriminator with a fresh generator
// (dropout 0): 10 BANKING77 queries. The masks and the generator's uniforms are functions of the
// example, and every rank scales its discriminator term by the global batch's M / T.
fs::path write_rtd_config(const fs::path& dir, const std::string& name, const fs::path& out) {
  const fs::path data = dir / "texts.jsonl";
  if (!fs::exists(data)) {
    std::ifstream in(fs::path(UNIF_SOURCE_DIR) / "data" / "banking77_en" / "dev.jsonl");
    std::ofstream o(data);
    std::string line;
    for (int i = 0; i < 10 && std::getline(in, line); ++i) o << line << "\n";
  }
  const std::string yaml =
      "task: replaced_token_detection\noutput_dir: " + out.string() +
      "\nmodel: {pretrained: " + (fs::path(UNIF_TEST_FIXTURES) / "electra_rtd" / "discriminator").string() +
      ", max_seq_length: 24, mlm_probability: 0.3, config: {hidden_dropout_prob: 0.0, attention_probs_dropout_prob: "
      "0.0}}\ndata: {train: " +
      data.string() +
      ", text_fields: [text]}\ntraining: {batch_size: 5, max_steps: 2, log_every: 1, optimizer: {name: sgd, lr: "
      "0.1, weight_decay: 0.0}, schedule: {name: constant, warmup_ratio: 0.0}}\nparallel: {devices: [cpu]}\n";
  const auto file = dir / (name + ".yaml");
  std::ofstream(file) << yaml;
  return file;
}

TEST_CASE("2 processes = 1 process: ELECTRA pretraining (samples keyed to the data, the global M / T)",
          "[parallel][distributed][electra]") {
  const fs::path fixture = fs::path(UNIF_TEST_FIXTURES) / "electra_rtd";
  one_vs_two_processes({}, false, write_rtd_config,
                       {{"discriminator", fixture / "discriminator"}, {"generator", fixture / "generator"}});
}

TEST_CASE("2 processes x 2 replicas = 1 process with batch 1: rank 1 never has an example (dense, sparse)",
          "[parallel][distributed]") {
  const std::string sparse = GENERATE(as<std::string>{}, "true", "false");
  INFO("model.sparse_embeddings=" << sparse);
  one_vs_two_processes({"training.batch_size=1", "training.max_steps=3", "training.optimizer.lr=0.1",
                        "model.sparse_embeddings=" + sparse, "parallel.devices=[cpu,cpu]",
                        "parallel.threads_per_replica=1"});
}

// Dropout on, so every pass draws from the global generator. A rank with an empty slice used to
// skip the draw, so the ranks' generators drifted apart, and a resume (which restores rank 0's
// generator on every rank) ended 3e-3 away from the straight run. Now bit for bit the same.
TEST_CASE("2 processes, dropout on, empty slices: stop at step 2 and resume to step 4 = 4 steps straight, bitwise",
          "[parallel][distributed]") {
  TempDir tmp;
  const std::vector<std::string> common{"training.batch_size=7", "training.optimizer.lr=0.1",
                                        "model.bert.hidden_dropout_prob=0.2",
                                        "model.bert.attention_probs_dropout_prob=0.2"};
  auto with = [&](std::vector<std::string> extra) {
    auto v = common;
    v.insert(v.end(), extra.begin(), extra.end());
    return v;
  };
  const auto straight_cfg = write_config(tmp.path, "straight", tmp.path / "straight");
  run_two(straight_cfg, with({"training.max_steps=4"}), tmp.path, "straight");
  // The schedule is constant: stopping at max_steps 2 and resuming to 4 is a stop and resume.
  const auto resumed_cfg = write_config(tmp.path, "resumed", tmp.path / "resumed");
  run_two(resumed_cfg, with({"training.max_steps=2"}), tmp.path, "first");
  REQUIRE(fs::exists(tmp.path / "resumed" / "checkpoints" / "step-2" / "COMPLETE"));
  run_two(resumed_cfg, with({"training.max_steps=4", "training.resume=auto"}), tmp.path, "second");
  CHECK(read_file(tmp.path / "second-rank0.log").find("resumed from") != std::string::npos);

  const auto a = framework::read_safetensors(tmp.path / "straight" / "final" / "model.safetensors").tensors;
  const auto b = framework::read_safetensors(tmp.path / "resumed" / "final" / "model.safetensors").tensors;
  REQUIRE(a.size() == b.size());
  for (const auto& [name, value] : a) {
    INFO(name << ": max |straight - resumed| = " << (value - b.at(name)).abs().max().item<double>());
    CHECK(torch::equal(value, b.at(name)));
  }
}

// A signal that reaches the ranks at different times (SIGTERM to rank 1, to rank 0 200 ms later)
// stops both at the same step: rank 0 saves the checkpoint, both exit 130, and the checkpoint
// resumes. Before the stop was agreed, rank 1 left alone, rank 0 failed in its next collective and
// no checkpoint was saved. Rank 0's save is slowed (test hook) so that its signal arrives while it
// saves, not after it has exited.
TEST_CASE("SIGTERM to one rank, then the other: both stop at the same step, rank 0 saves, exit 130",
          "[parallel][distributed]") {
  TempDir tmp;
  const auto cfg = write_config(tmp.path, "c", tmp.path / "out");
  const int port = free_port();
  const std::vector<std::string> sets{"training.batch_size=2", "training.max_steps=100000", "training.log_every=1",
                                      "data.dev=null", "training.save_every=0"};
  auto env0 = rank_env(0, port, "20"), env1 = rank_env(1, port, "20");
  env0["UNIF_TEST_SLOW_SAVE_MS"] = "1000";
  auto r0 = spawn(train_args(cfg, sets), env0, tmp.path / "rank0.log");
  auto r1 = spawn(train_args(cfg, sets), env1, tmp.path / "rank1.log");
  const auto t0 = std::chrono::steady_clock::now();
  while (read_file(r0.log).find("step 3/") == std::string::npos) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > 40) {
      ::kill(r0.pid, SIGKILL), ::kill(r1.pid, SIGKILL);
      FAIL("rank 0 did not train within 40 s: " << read_file(r0.log) << "\nrank 1: " << read_file(r1.log));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(r1.pid, SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ::kill(r0.pid, SIGTERM);
  const int rc1 = wait_for(r1, 30), rc0 = wait_for(r0, 30);
  const auto log0 = read_file(r0.log);
  INFO("rank 0:\n" << log0 << "\nrank 1:\n" << read_file(r1.log));
  CHECK(rc0 == 130);
  CHECK(rc1 == 130);
  CHECK(log0.find("error") == std::string::npos);
  const auto at = log0.find("interrupted: checkpoint saved at step ");
  REQUIRE(at != std::string::npos);
  const auto step = std::stoll(log0.substr(at + std::string("interrupted: checkpoint saved at step ").size()));
  CHECK(fs::exists(tmp.path / "out" / "checkpoints" / ("step-" + std::to_string(step)) / "COMPLETE"));
  // The checkpoint resumes on both ranks (one more step, then done).
  run_two(cfg,
          {"training.batch_size=2", "training.max_steps=" + std::to_string(step + 1), "data.dev=null",
           "training.resume=auto"},
          tmp.path, "resume");
  CHECK(read_file(tmp.path / "resume-rank0.log").find("resumed from") != std::string::npos);
}

// Rank 0 saves alone; the others used to wait for it in their next collective, bounded by
// UNIF_DIST_TIMEOUT, so a save slower than that (a large model, a network filesystem) killed the
// job. They now wait on the store under UNIF_DIST_SAVE_TIMEOUT.
TEST_CASE("a save slower than UNIF_DIST_TIMEOUT does not fail the other ranks", "[parallel][distributed]") {
  TempDir tmp;
  const auto cfg = write_config(tmp.path, "c", tmp.path / "out");
  // Saves at steps 2 and 3 take over twice the collectives' timeout (the hook slows rank 0's only:
  // the other ranks do not save).
  run_two(cfg, {"training.batch_size=4", "training.max_steps=3", "training.save_every=2", "training.eval_every=1"},
          tmp.path, "slow", {{"UNIF_DIST_TIMEOUT", "3"}, {"UNIF_TEST_SLOW_SAVE_MS", "7000"}});
  CHECK(fs::exists(tmp.path / "out" / "final" / "COMPLETE"));
}

// training.nonfinite (SPEC §7): the fixture's 8 examples with 3 of rank 0's slice weighted 3e38
// (their weighted losses overflow float32: rank 0's loss is inf, rank 1's finite), then the 8 as
// they are. `skip`: both ranks skip step 1 together and the result is one process's; `error`: both
// ranks stop with exit 3 and the error line. Before the skip was decided on every rank together, a
// rank that stepped while the other skipped would part from it.
TEST_CASE("2 processes = 1 process with a non-finite step: skipped on every rank or an error on every rank",
          "[parallel][distributed]") {
  TempDir tmp;
  std::vector<std::string> lines;
  {
    std::ifstream in(unif::test::fixture_case("cls_pair") / "train.jsonl");
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  REQUIRE(lines.size() == 8);
  {
    std::ofstream out(tmp.path / "planted.jsonl");
    for (size_t i = 0; i < 16; ++i) {
      auto l = lines[i % 8];
      if (i < 3) l.insert(l.size() - 1, ", \"weight\": 3e38");
      out << l << "\n";
    }
  }
  const std::vector<std::string> sets{"data.train=" + (tmp.path / "planted.jsonl").string(), "data.dev=null",
                                      "training.max_steps=2", "training.log_every=1", "training.nonfinite=skip"};
  const auto one_cfg = write_config(tmp.path, "one", tmp.path / "one");
  const auto two_cfg = write_config(tmp.path, "two", tmp.path / "two");
  auto one = spawn(train_args(one_cfg, sets), {}, tmp.path / "one.log");
  const int one_rc = wait_for(one, 60);
  INFO("one process:\n" << read_file(one.log));
  REQUIRE(one_rc == 0);
  run_two(two_cfg, sets, tmp.path, "skip");
  for (const auto* run : {"one", "two"}) {
    INFO(run);
    const auto metrics = read_file(tmp.path / run / "metrics.jsonl");
    CHECK(metrics.find("\"skipped_steps\":1,\"split\":\"train\",\"step\":1,\"train_s\"") != std::string::npos);
    CHECK(metrics.find("\"skipped_steps\":1,\"split\":\"train\",\"step\":2,\"train_s\"") != std::string::npos);
  }
  same_final_model(tmp.path / "one", tmp.path / "two");

  // nonfinite: error on both ranks.
  const auto err_cfg = write_config(tmp.path, "err", tmp.path / "err");
  std::vector<std::string> err_sets(sets.begin(), sets.end() - 1);
  const int port = free_port();
  auto r0 = spawn(train_args(err_cfg, err_sets), rank_env(0, port, "20"), tmp.path / "err0.log");
  auto r1 = spawn(train_args(err_cfg, err_sets), rank_env(1, port, "20"), tmp.path / "err1.log");
  const int rc1 = wait_for(r1, 60), rc0 = wait_for(r0, 60);
  const auto log0 = read_file(r0.log), log1 = read_file(r1.log);
  INFO("rank 0:\n" << log0 << "\nrank 1:\n" << log1);
  CHECK(rc0 == 3);
  CHECK(rc1 == 3);
  for (const auto& log : {log0, log1}) CHECK(log.find("error: training.nonfinite: step 1: ") != std::string::npos);
  CHECK_FALSE(fs::exists(tmp.path / "err" / "final"));
}

TEST_CASE("rank 0 leaves writer_done only once every rank has read it: it may then close the store it serves",
          "[parallel][distributed]") {
  // Rank 0 finishes its last save and its run ends, taking down the store it serves; rank 1 is the
  // slower one (here by 300 ms) and reaches the same writer_done after that. Rank 1 must still read
  // the key: rank 0's writer_done returns only after rank 1 has confirmed it.
  framework::DistEnv e0;
  e0.world_size = 2;
  e0.master_port = static_cast<uint16_t>(free_port());
  e0.timeout = std::chrono::seconds(60);
  framework::DistEnv e1 = e0;
  e1.rank = 1;
  std::string rank1_error = "(rank 1 did not finish)";
  std::thread rank1([&] {
    try {
      auto g = framework::ProcessGroup::join(e1);
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      g->writer_done();
      rank1_error.clear();
    } catch (const std::exception& x) { rank1_error = x.what(); }
  });
  auto g0 = framework::ProcessGroup::join(e0);
  g0->writer_done();
  g0.reset();  // rank 0's run is over
  rank1.join();
  CHECK(rank1_error.empty());
}

TEST_CASE("a rank that dies makes the other fail with error: within the timeout", "[parallel][distributed]") {
  TempDir tmp;
  const auto cfg = write_config(tmp.path, "c", tmp.path / "out");
  const int port = free_port();
  const std::vector<std::string> sets{"training.batch_size=2", "training.max_steps=100000", "training.log_every=1",
                                      "data.dev=null"};
  auto r0 = spawn(train_args(cfg, sets), rank_env(0, port, "20"), tmp.path / "rank0.log");
  auto r1 = spawn(train_args(cfg, sets), rank_env(1, port, "20"), tmp.path / "rank1.log");
  // Once rank 0 has logged a step, both are training: kill rank 1.
  const auto t0 = std::chrono::steady_clock::now();
  while (read_file(r0.log).find("step 1/") == std::string::npos) {
    int status = 0;
    if (::waitpid(r0.pid, &status, WNOHANG) == r0.pid)
      FAIL("rank 0 ended before training: " << read_file(r0.log) << "\nrank 1: " << read_file(r1.log));
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > 40) {
      ::kill(r0.pid, SIGKILL), ::kill(r1.pid, SIGKILL);
      FAIL("rank 0 did not start training within 40 s: " << read_file(r0.log));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(r1.pid, SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  const int rc1 = wait_for(r1, 10);
  const int rc0 = wait_for(r0, 30);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  const auto log0 = read_file(r0.log);
  INFO("rank 0:\n" << log0 << "\nrank 1:\n" << read_file(r1.log) << "\nrank 0 ended " << took << " s after the kill");
  CHECK(rc1 == 128 + SIGKILL);
  CHECK(rc0 == 1);
  CHECK(log0.find("error: distributed rank 0 of 2:") != std::string::npos);
  CHECK(log0.find("internal") == std::string::npos);
  CHECK(took < 25.0);  // the 20 s timeout at most, usually at once (the peer's socket closes)
  CHECK_FALSE(fs::exists(tmp.path / "out" / "final"));
}

TEST_CASE("ranks with different training settings stop with error: exit 2 before training", "[parallel][distributed]") {
  TempDir tmp;
  const auto cfg = write_config(tmp.path, "c", tmp.path / "out");
  const int port = free_port();
  auto r0 = spawn(train_args(cfg, {"training.max_steps=3"}), rank_env(0, port, "20"), tmp.path / "rank0.log");
  auto r1 = spawn(train_args(cfg, {"training.max_steps=2"}), rank_env(1, port, "20"), tmp.path / "rank1.log");
  const int rc1 = wait_for(r1, 30), rc0 = wait_for(r0, 30);
  const auto log0 = read_file(r0.log), log1 = read_file(r1.log);
  INFO("rank 0:\n" << log0 << "\nrank 1:\n" << log1);
  CHECK(rc0 == 2);
  CHECK(rc1 == 2);
  CHECK(log0.find("error: the ranks disagree on (step, epoch, batch in epoch, total steps") != std::string::npos);
  CHECK(log0.find("rank 0 [0, 0, 0, 3, 8, 8, 1]; rank 1 [0, 0, 0, 2, 8, 8, 1]") != std::string::npos);
  CHECK(log1.find("error: the ranks disagree") != std::string::npos);
  CHECK_FALSE(fs::exists(tmp.path / "out" / "final"));
}

TEST_CASE("a rank whose peers never come fails the rendezvous with error: after UNIF_DIST_TIMEOUT",
          "[parallel][distributed]") {
  TempDir tmp;
  const auto cfg = write_config(tmp.path, "c", tmp.path / "out");
  const auto t0 = std::chrono::steady_clock::now();
  auto r0 = spawn(train_args(cfg, {}), rank_env(0, free_port(), "2"), tmp.path / "rank0.log");
  const int rc0 = wait_for(r0, 30);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto log0 = read_file(r0.log);
  INFO(log0);
  CHECK(rc0 == 1);
  CHECK(log0.find("error: distributed rank 0 of 2: rendezvous") != std::string::npos);
  CHECK(took >= 1.5);
  CHECK(took < 20.0);
}

TEST_CASE("malformed torchrun variables are error: exit 2 naming the variable", "[parallel][distributed]") {
  TempDir tmp;
  const auto cfg = write_config(tmp.path, "c", tmp.path / "out");
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> cases{
      {{{"WORLD_SIZE", "abc"}, {"RANK", "0"}}, "error: WORLD_SIZE='abc'"},
      {{{"WORLD_SIZE", "0"}, {"RANK", "0"}}, "error: WORLD_SIZE='0'"},
      {{{"WORLD_SIZE", "2"}, {"RANK", "2"}},
       "error: RANK='2': expected this process's rank, an integer in 0..WORLD_SIZE-1 = 0..1"},
      {{{"WORLD_SIZE", "2"}, {"RANK", "-1"}}, "error: RANK='-1'"},
      {{{"WORLD_SIZE", "2"}}, "error: RANK: not set"},
      {{{"WORLD_SIZE", "2"}, {"RANK", "0"}, {"MASTER_PORT", "70000"}}, "error: MASTER_PORT='70000'"},
      {{{"WORLD_SIZE", "2"}, {"RANK", "1"}, {"UNIF_DIST_TIMEOUT", "soon"}}, "error: UNIF_DIST_TIMEOUT='soon'"},
      {{{"WORLD_SIZE", "2"}, {"RANK", "1"}, {"UNIF_DIST_SAVE_TIMEOUT", "0"}}, "error: UNIF_DIST_SAVE_TIMEOUT='0'"},
  };
  int k = 0;
  for (const auto& [env, expected] : cases) {
    auto p = spawn(train_args(cfg, {}), env, tmp.path / ("bad" + std::to_string(k++) + ".log"));
    const int rc = wait_for(p, 30);
    const auto log = read_file(p.log);
    INFO(expected << "\n" << log);
    CHECK(rc == 2);
    CHECK(log.find(expected) != std::string::npos);
  }
  CHECK_FALSE(fs::exists(tmp.path / "out"));  // nothing ran
}

// ---------------------------------------------------------------------------------------------
// Two hosts: ranks 0 and 1 in two network namespaces joined by a veth pair,
// each with its own address (10.231.N.1 and .2), MASTER_ADDR = rank 0's, GLOO_SOCKET_IFNAME the
// veth end. Needs root (CAP_NET_ADMIN) and `ip`; prints SKIP and passes where namespaces cannot
// be created.

namespace {

// Two network namespaces and a veth pair between them; removed (with the pair) on destruction.
struct TwoHosts {
  std::string ns[2], ifname[2], addr[2];
  bool ok = false;
  TwoHosts() {
    const auto id = std::to_string(::getpid() % 100000);
    const auto subnet = std::to_string(::getpid() % 250 + 1);
    for (int i = 0; i < 2; ++i) {
      ns[i] = "unif-h" + std::to_string(i) + "-" + id;
      ifname[i] = "uv" + std::to_string(i) + "x" + id;  // at most 15 characters
      addr[i] = "10.231." + subnet + "." + std::to_string(i + 1);
    }
    ok = sh("ip netns add " + ns[0]) && sh("ip netns add " + ns[1]) &&
         sh("ip link add " + ifname[0] + " type veth peer name " + ifname[1]);
    for (int i = 0; ok && i < 2; ++i)
      ok = sh("ip link set " + ifname[i] + " netns " + ns[i]) &&
           sh("ip -n " + ns[i] + " addr add " + addr[i] + "/24 dev " + ifname[i]) &&
           sh("ip -n " + ns[i] + " link set " + ifname[i] + " up") && sh("ip -n " + ns[i] + " link set lo up");
  }
  ~TwoHosts() {
    for (const auto& n : ns) sh("ip netns del " + n);
  }
  static bool sh(const std::string& cmd) { return std::system((cmd + " > /dev/null 2>&1").c_str()) == 0; }
  // `unif args...` as rank `rank` on host `rank`.
  Proc start(int rank, const std::vector<std::string>& args, const fs::path& log, const std::string& timeout) const {
    std::vector<std::string> a{"netns", "exec", ns[rank], kUnif.string()};
    a.insert(a.end(), args.begin(), args.end());
    return spawn(a,
                 {{"WORLD_SIZE", "2"},
                  {"RANK", std::to_string(rank)},
                  {"LOCAL_RANK", "0"},
                  {"MASTER_ADDR", addr[0]},
                  {"MASTER_PORT", "29517"},
                  {"GLOO_SOCKET_IFNAME", ifname[rank]},
                  {"UNIF_DIST_TIMEOUT", timeout}},
                 log, "/usr/sbin/ip");
  }
};

}  // namespace

TEST_CASE("2 hosts (network namespaces on a veth pair) = 1 process", "[parallel][distributed][multihost]") {
  TwoHosts hosts;
  if (!hosts.ok) {
    WARN("SKIP: cannot create network namespaces joined by a veth pair here (needs root and iproute2)");
    return;
  }
  TempDir tmp;
  const std::vector<std::string> sets{"training.batch_size=5", "training.max_steps=2", "training.optimizer.lr=0.1"};
  const auto one_cfg = write_config(tmp.path, "one", tmp.path / "one");
  const auto two_cfg = write_config(tmp.path, "two", tmp.path / "two");
  auto one = spawn(train_args(one_cfg, sets), {}, tmp.path / "one.log");
  REQUIRE(wait_for(one, 60) == 0);
  auto r0 = hosts.start(0, train_args(two_cfg, sets), tmp.path / "rank0.log", "30");
  auto r1 = hosts.start(1, train_args(two_cfg, sets), tmp.path / "rank1.log", "30");
  const int rc1 = wait_for(r1, 90), rc0 = wait_for(r0, 90);
  INFO("rank 0:\n" << read_file(r0.log) << "\nrank 1:\n" << read_file(r1.log));
  REQUIRE(rc0 == 0);
  REQUIRE(rc1 == 0);
  CHECK(read_file(r0.log).find("distributed: 2 processes, backend gloo, this is rank 0") != std::string::npos);
  same_final_model(tmp.path / "one", tmp.path / "two");
}

TEST_CASE("2 hosts: a cut link or a killed rank ends the ranks with error: within UNIF_DIST_TIMEOUT",
          "[parallel][distributed][multihost]") {
  TwoHosts hosts;
  if (!hosts.ok) {
    WARN("SKIP: cannot create network namespaces joined by a veth pair here (needs root and iproute2)");
    return;
  }
  const std::vector<std::string> sets{"training.batch_size=2", "training.max_steps=100000", "training.log_every=1",
                                      "data.dev=null"};
  for (const std::string fault : {"cut link", "killed rank"}) {
    INFO(fault);
    TempDir tmp;
    const auto cfg = write_config(tmp.path, "c", tmp.path / "out");
    auto r0 = hosts.start(0, train_args(cfg, sets), tmp.path / "rank0.log", "10");
    auto r1 = hosts.start(1, train_args(cfg, sets), tmp.path / "rank1.log", "10");
    const auto t0 = std::chrono::steady_clock::now();
    while (read_file(r0.log).find("step 1/") == std::string::npos) {
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > 60) {
        ::kill(r0.pid, SIGKILL), ::kill(r1.pid, SIGKILL);
        FAIL("rank 0 did not start training within 60 s: " << read_file(r0.log) << "\nrank 1: " << read_file(r1.log));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (fault == "cut link") {
      // `ip -n` changes the namespace's link without entering it (a kill of `ip netns exec` would
      // reach unif itself: exec replaces it).
      REQUIRE(TwoHosts::sh("ip -n " + hosts.ns[1] + " link set " + hosts.ifname[1] + " down"));
    } else {
      ::kill(r1.pid, SIGKILL);
    }
    const auto cut = std::chrono::steady_clock::now();
    const int rc0 = wait_for(r0, 40);
    const int rc1 = wait_for(r1, 40);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - cut).count();
    const auto log0 = read_file(r0.log), log1 = read_file(r1.log);
    INFO("rank 0:\n" << log0 << "\nrank 1:\n" << log1 << "\nended " << took << " s after the fault");
    CHECK(rc0 == 1);
    CHECK(log0.find("error: distributed rank 0 of 2:") != std::string::npos);
    if (fault == "cut link") {
      CHECK(rc1 == 1);
      CHECK(log1.find("error: distributed rank 1 of 2:") != std::string::npos);
    } else {
      CHECK(rc1 == 128 + SIGKILL);
    }
    CHECK(took < 10 + 10);  // UNIF_DIST_TIMEOUT (10 s) and the time to notice it
    CHECK_FALSE(fs::exists(tmp.path / "out" / "final"));
    if (fault == "cut link") REQUIRE(TwoHosts::sh("ip -n " + hosts.ns[1] + " link set " + hosts.ifname[1] + " up"));
  }
}
