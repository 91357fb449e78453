// `unif predict` input and output (SPEC §4, §7; issues #13 point 1, #16 points 6 and 11, #15
// point 2): a plain HF pair-classification directory takes text_a/text_b lines (checked against
// HF's own logits), `-` and /dev/stdin are standard input and `-` standard output, output line N
// answers input line N (a blank line gets {"error": "blank line"}), a string where token
// classification needs a list of tokens is an error, error messages are valid UTF-8. Each case
// runs bin/unif on the tiny random checkpoint (tests/fixtures/tiny-bert-zh).
#include <sys/resource.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/temp_dir.h"

namespace fs = std::filesystem;
using nlohmann::json;
using Catch::Matchers::Contains;

namespace {

const fs::path kUnif = fs::path(UNIF_BINARY_DIR) / "bin" / "unif";
const fs::path kModel = fs::path(UNIF_TEST_FIXTURES) / "tiny-bert-zh";

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

// Runs a shell command line; the exit status.
int sh(const std::string& cmd) {
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> lines_of(const fs::path& p) {
  std::vector<std::string> out;
  std::ifstream in(p, std::ios::binary);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

void write(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}

bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80 ? 1 : (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3 : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += len;
  }
  return true;
}

// HF's inputs and logits on the fixture (reference/forward.json): single texts and pairs.
json reference_examples() {
  std::ifstream in(kModel / "reference" / "forward.json");
  return json::parse(in).at("examples");
}

// The reference examples as predict input lines (text_a, and text_b for pairs).
std::string reference_input() {
  std::string text;
  for (const auto& e : reference_examples()) text += e.at("example").dump() + "\n";
  return text;
}

}  // namespace

TEST_CASE("predict on a plain HF directory takes text_a and text_b pairs as HF encodes them", "[predict]") {
  // Before the fix: exit 2, "missing field 'text'".
  unif::test::TempDir tmp;
  write(tmp / "in.jsonl", reference_input());
  REQUIRE(sh(kUnif.string() + " predict --model " + q(kModel) + " --input " + q(tmp / "in.jsonl") + " --output " +
             q(tmp / "out.jsonl") + " 2> " + q(tmp / "err")) == 0);
  const auto out = lines_of(tmp / "out.jsonl");
  const auto ref = reference_examples();
  REQUIRE(out.size() == ref.size());
  int pairs = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const auto got = json::parse(out[i]);
    const auto& want = ref.at(i);
    pairs += want.at("example").contains("text_b");
    CHECK(got.at("label") == want.at("label"));
    CHECK(got.at("input") == want.at("example"));
    for (size_t k = 0; k < 2; ++k) {
      const double a = got.at("logits").at(k).get<double>(), b = want.at("logits").at(k).get<double>();
      INFO("line " << i + 1 << " logit " << k << ": " << a << " vs HF " << b);
      CHECK(std::abs(a - b) <= 1e-6 + 1e-5 * std::abs(b));
    }
  }
  CHECK(pairs >= 2);  // the comparison covers sentence pairs, not only single texts
}

TEST_CASE("predict reads standard input from - and /dev/stdin and writes standard output to -", "[predict]") {
  // Before the fix: "data file not found" for both inputs.
  unif::test::TempDir tmp;
  write(tmp / "in.jsonl", reference_input());
  const std::string base = kUnif.string() + " predict --model " + q(kModel);
  REQUIRE(sh(base + " --input " + q(tmp / "in.jsonl") + " --output " + q(tmp / "file.jsonl")) == 0);
  REQUIRE(sh(base + " --input - < " + q(tmp / "in.jsonl") + " > " + q(tmp / "dash.jsonl")) == 0);
  REQUIRE(sh("cat " + q(tmp / "in.jsonl") + " | " + base + " --input /dev/stdin --output - > " + q(tmp / "devstdin.jsonl")) == 0);
  const auto want = slurp(tmp / "file.jsonl");
  REQUIRE(!want.empty());
  CHECK(slurp(tmp / "dash.jsonl") == want);
  CHECK(slurp(tmp / "devstdin.jsonl") == want);
  CHECK_FALSE(fs::exists(tmp / "-"));  // `--output -` is not a file named "-"
}

TEST_CASE("predict answers input line N on output line N and a blank line gets an error object", "[predict]") {
  // Before the fix: blank lines were skipped and the output had fewer lines than the input.
  unif::test::TempDir tmp;
  write(tmp / "plain.jsonl", "{\"text\": \"好\"}\n{\"text\": \"这家餐厅的菜很好吃\"}\n{\"text\": \"再也不来了\"}\n");
  write(tmp / "blanks.jsonl", "\n{\"text\": \"好\"}\n   \n{\"text\": \"这家餐厅的菜很好吃\"}\n\t\n\n{\"text\": \"再也不来了\"}\n");
  const std::string base = kUnif.string() + " predict --model " + q(kModel);
  REQUIRE(sh(base + " --input " + q(tmp / "plain.jsonl") + " > " + q(tmp / "plain.out")) == 0);
  REQUIRE(sh(base + " --input " + q(tmp / "blanks.jsonl") + " > " + q(tmp / "blanks.out")) == 0);
  const auto plain = lines_of(tmp / "plain.out");
  const auto blanks = lines_of(tmp / "blanks.out");
  REQUIRE(plain.size() == 3);
  REQUIRE(blanks.size() == 7);
  const json blank_answer = {{"error", "blank line"}};
  for (size_t i : {0, 2, 4, 5}) CHECK(json::parse(blanks[i]) == blank_answer);
  CHECK(blanks[1] == plain[0]);
  CHECK(blanks[3] == plain[1]);
  CHECK(blanks[6] == plain[2]);
}

TEST_CASE("predict with token classification refuses a string where the tokens list belongs", "[predict]") {
  // A plain HF token-classification directory: the fixture with architectures changed (the
  // classifier has the same shape; the pooler is simply not used).
  unif::test::TempDir tmp;
  const auto dir = tmp / "ner";
  fs::create_directories(dir);
  for (const char* f : {"vocab.txt", "model.safetensors"}) fs::copy_file(kModel / f, dir / f);
  json config = json::parse(slurp(kModel / "config.json"));
  config["architectures"] = {"BertForTokenClassification"};
  config["id2label"] = {{"0", "O"}, {"1", "B-LOC"}};
  config["label2id"] = {{"O", 0}, {"B-LOC", 1}};
  write(dir / "config.json", config.dump(2));
  const std::string base = kUnif.string() + " predict --model " + q(dir);

  // A list of tokens: one tag per token.
  write(tmp / "ok.jsonl", "{\"tokens\": [\"我\", \"爱\", \"北\", \"京\"]}\n");
  REQUIRE(sh(base + " --input " + q(tmp / "ok.jsonl") + " > " + q(tmp / "ok.out")) == 0);
  const auto ok = lines_of(tmp / "ok.out");
  REQUIRE(ok.size() == 1);
  CHECK(json::parse(ok[0]).at("tags").size() == 4);

  // A string: before the fix one tag for "我爱北京" as a single token, exit 0.
  write(tmp / "str.jsonl", "{\"tokens\": [\"我\"]}\n{\"tokens\": \"我爱北京\"}\n");
  CHECK(sh(base + " --input " + q(tmp / "str.jsonl") + " --output " + q(tmp / "str.out") + " 2> " + q(tmp / "err")) == 2);
  const auto err = slurp(tmp / "err");
  CHECK_THAT(err, Contains("error: ") && Contains("str.jsonl:2") && Contains("'tokens'") && Contains("list of tokens"));
  CHECK_FALSE(fs::exists(tmp / "str.out"));
}

TEST_CASE("predict names a line that is not JSON in valid UTF-8", "[predict]") {
  // Before the fix the message quoted only the first byte of 你 ("last read: '\xE4'").
  unif::test::TempDir tmp;
  write(tmp / "in.jsonl", "{\"text\": \"好\"}\n你好\n");
  CHECK(sh(kUnif.string() + " predict --model " + q(kModel) + " --input " + q(tmp / "in.jsonl") + " > /dev/null 2> " +
           q(tmp / "err")) == 2);
  const auto err = slurp(tmp / "err");
  CHECK(valid_utf8(err));
  CHECK_THAT(err, Contains("in.jsonl:2: invalid JSON") && Contains("'你'"));
}

namespace {

// `n` short lines (1-16 characters of sib200_zh) with an "id", every 97th line blank.
void generate(const fs::path& file, size_t n) {
  std::vector<std::string> texts;
  {
    std::ifstream in(fs::path(UNIF_SOURCE_DIR) / "data" / "sib200_zh" / "train.jsonl");
    for (std::string l; std::getline(in, l);) texts.push_back(json::parse(l).at("text").get<std::string>());
  }
  std::ofstream out(file, std::ios::binary);
  uint64_t x = 88172645463325252ull;  // xorshift: the same input on every platform
  auto next = [&] { return x ^= x << 13, x ^= x >> 7, x ^= x << 17; };
  for (size_t i = 0; i < n; ++i) {
    if (i % 97 == 96) {
      out << "\n";
      continue;
    }
    const auto& t = texts[i % texts.size()];
    std::vector<size_t> at;  // where each character starts, and the end
    for (size_t b = 0; b < t.size(); ++b)
      if ((static_cast<unsigned char>(t[b]) & 0xC0) != 0x80) at.push_back(b);
    at.push_back(t.size());
    const size_t chars = at.size() - 1, len = std::min<size_t>(chars, 1 + next() % 16);
    const size_t start = chars > len ? next() % (chars - len) : 0;
    out << json{{"text", t.substr(at[start], at[start + len] - at[start])}, {"id", i}}.dump() << "\n";
  }
}

// Peak resident memory (KB) of the largest child process waited for so far.
long children_peak_kb() {
  rusage u{};
  getrusage(RUSAGE_CHILDREN, &u);
  return u.ru_maxrss;
}

}  // namespace

TEST_CASE("predict in length-sorted batches answers each line as one at a time would and in input order",
          "[predict]") {
  unif::test::TempDir tmp;
  generate(tmp / "in.jsonl", 300);
  const std::string base = kUnif.string() + " predict --model " + q(kModel) + " --input " + q(tmp / "in.jsonl");
  REQUIRE(sh(base + " --batch-size 64 > " + q(tmp / "sorted.out")) == 0);
  REQUIRE(sh(base + " --batch-size 1 > " + q(tmp / "single.out")) == 0);  // no padding, nothing to sort
  const auto sorted = lines_of(tmp / "sorted.out"), single = lines_of(tmp / "single.out"), in = lines_of(tmp / "in.jsonl");
  REQUIRE(sorted.size() == 300);
  REQUIRE(single.size() == 300);
  size_t told_apart = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    INFO("line " << i + 1 << ": " << sorted[i] << " vs " << single[i]);
    const auto a = json::parse(sorted[i]), b = json::parse(single[i]);
    if (in[i].empty()) {
      CHECK(a == json{{"error", "blank line"}});
      continue;
    }
    CHECK(a.at("input") == json::parse(in[i]));
    const auto& la = a.at("logits");
    const auto& lb = b.at("logits");
    for (size_t k = 0; k < 2; ++k)
      CHECK(std::abs(la[k].get<double>() - lb[k].get<double>()) <= 1e-6 + 1e-5 * std::abs(lb[k].get<double>()));
    // The tolerance tells lines apart (so a line answered with another's logits would fail).
    if (i > 0 && !in[i - 1].empty()) {
      const auto prev = json::parse(single[i - 1]).at("logits");
      told_apart += std::abs(la[0].get<double>() - prev[0].get<double>()) > 1e-6 + 1e-5 * std::abs(prev[0].get<double>());
    }
  }
  CHECK(told_apart > 250);
}

TEST_CASE("predict streams a large input from a pipe in bounded memory", "[predict]") {
  // 20000 lines (about 10 chunks) through standard input. Before streaming, the whole input, its
  // encodings and every output tensor were held at once: peak memory grew 22 MB from 2000 to
  // 20000 lines (measured: 186 -> 208 MB); streamed it grows by about 2 MB (183 -> 185 MB).
  unif::test::TempDir tmp;
  generate(tmp / "large.jsonl", 20000);
  generate(tmp / "small.jsonl", 2000);
  const std::string base = kUnif.string() + " predict --model " + q(kModel) + " --batch-size 64 --input - ";
  REQUIRE(sh("cat " + q(tmp / "small.jsonl") + " | " + base + " > " + q(tmp / "small.out")) == 0);
  const long small_kb = children_peak_kb();
  REQUIRE(sh("cat " + q(tmp / "large.jsonl") + " | " + base + " > " + q(tmp / "large.out") + " 2> " + q(tmp / "err")) == 0);
  const long large_kb = children_peak_kb();
  const auto in = lines_of(tmp / "large.jsonl"), out = lines_of(tmp / "large.out");
  REQUIRE(out.size() == in.size());
  // Every line in its place across the chunk boundaries.
  size_t checked = 0;
  for (size_t i = 0; i < in.size(); i += 1 + i % 7) {
    INFO("line " << i + 1);
    const auto a = json::parse(out[i]);
    if (in[i].empty()) CHECK(a == json{{"error", "blank line"}});
    else CHECK(a.at("input") == json::parse(in[i]));
    ++checked;
  }
  CHECK(checked > 4000);
  INFO("peak RSS: " << small_kb << " KB for 2000 lines, " << large_kb << " KB for 20000");
#if defined(__SANITIZE_ADDRESS__)
  // Under AddressSanitizer (scripts/sanitize.sh) freed memory waits in ASan's quarantine (up to
  // 256 MB) before reuse, so peak RSS grows with everything allocated: 50 MB here in session 9. The
  // bound is the normal builds' check; this build checks the memory accesses.
  WARN("peak RSS bound not checked under ASan: " << small_kb << " KB for 2000 lines, " << large_kb << " KB for 20000");
#else
  CHECK(large_kb - small_kb < 10 * 1024);
#endif
}
