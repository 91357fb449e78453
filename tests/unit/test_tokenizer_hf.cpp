// The tokenizers of other model families against HF's fast tokenizers: byte-level BPE (RoBERTa) and
// SentencePiece (XLM-R). tests/fixtures/tokenizers/make.py trained one of each on the bundled
// datasets and wrote HF's pieces, ids and offsets for edge cases and dev lines (in full) and a hash
// of them for every text of data/ (100% must match); bad tokenizer files, each class of them, give an
// error naming the file.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "framework/text/byte_level_bpe.h"
#include "framework/text/sentencepiece_tokenizer.h"

using namespace unif::framework;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kRoot = UNIF_SOURCE_DIR;
const fs::path kFixture = kRoot / "tests/fixtures/tokenizers";

std::vector<json> read_jsonl(const fs::path& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::vector<json> out;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(json::parse(line));
  return out;
}

std::string hash_of(const std::vector<int64_t>& ids, const std::vector<CharSpan>& offsets) {
  uint64_t h = 0xcbf29ce484222325ULL;
  auto add = [&](int64_t v) {
    for (int b = 0; b < 8; ++b) {
      h ^= static_cast<uint64_t>(v) >> (8 * b) & 0xFF;
      h *= 0x100000001b3ULL;
    }
  };
  for (auto id : ids) add(id);
  for (const auto& o : offsets) add(o.start), add(o.end);
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// The text of `field` in a data line, as make.py's texts_of reads it (tokens joined by spaces).
std::string text_of(const json& record, const std::string& field) {
  if (field != "tokens") return record.at(field).get<std::string>();
  std::string text;
  for (const auto& t : record.at("tokens")) text += (text.empty() ? "" : " ") + t.get<std::string>();
  return text;
}

template <class Tokenizer>
void check_references(const Tokenizer& bpe, const std::string& name) {
  const auto refs = read_jsonl(kFixture / (name + ".ref.jsonl"));
  REQUIRE(refs.size() > 50);
  for (const auto& r : refs) {
    const std::string text = r.at("text");
    INFO("text from " << r.at("from").get<std::string>() << ": '" << text << "'");
    const auto out = bpe.tokenize_with_offsets(text);
    CHECK(out.tokens == r.at("tokens").get<std::vector<std::string>>());
    CHECK(bpe.convert_tokens_to_ids(out.tokens) == r.at("ids").get<std::vector<int64_t>>());
    std::vector<std::vector<int64_t>> offsets;
    for (const auto& o : out.offsets) offsets.push_back({o.start, o.end});
    CHECK(offsets == r.at("offsets").get<std::vector<std::vector<int64_t>>>());
  }
}

fs::path temp_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("unif_bpe_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

std::string load_error(const fs::path& dir) {
  try {
    ByteLevelBpe::load(dir.string());
  } catch (const std::runtime_error& e) { return e.what(); }
  return "(no error)";
}

}  // namespace

TEST_CASE("byte-level BPE: HF's pieces, ids and offsets from tokenizer.json", "[unit][tokenizer][bpe]") {
  check_references(ByteLevelBpe::load((kFixture / "roberta-bpe").string()), "roberta-bpe");
}

TEST_CASE("byte-level BPE: vocab.json + merges.txt alone give the same (RoBERTa's special tokens)",
          "[unit][tokenizer][bpe]") {
  const fs::path dir = temp_dir("files");
  for (const char* f : {"vocab.json", "merges.txt"}) fs::copy_file(kFixture / "roberta-bpe" / f, dir / f);
  check_references(ByteLevelBpe::load(dir.string()), "roberta-bpe");
  fs::remove_all(dir);
}

// Every text of data/ through `tok`, against `name`.hash.jsonl.
template <class Tokenizer>
void check_all_texts(const Tokenizer& bpe, const std::string& name) {
  size_t texts = 0, mismatches = 0;
  for (const auto& file : read_jsonl(kFixture / (name + ".hash.jsonl"))) {
    const std::string name = file.at("file");
    std::ifstream in(kRoot / name);
    REQUIRE(in.good());
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    for (const auto& e : file.at("entries")) {
      const auto line = e.at(0).get<size_t>();
      const std::string field = e.at(1);
      REQUIRE(line <= lines.size());
      const std::string text = text_of(json::parse(lines[line - 1]), field);
      const auto out = bpe.tokenize_with_offsets(text);
      const auto hash = hash_of(bpe.convert_tokens_to_ids(out.tokens), out.offsets);
      ++texts;
      if (hash != e.at(3).get<std::string>() || out.tokens.size() != e.at(2).get<size_t>()) {
        if (++mismatches <= 5)
          UNSCOPED_INFO(name << " line " << line << " " << field << ": " << out.tokens.size() << " pieces, HF "
                             << e.at(2) << "; text '" << text.substr(0, 200) << "'");
      }
    }
  }
  INFO(texts << " texts compared");
  CHECK(texts > 20000);
  CHECK(mismatches == 0);
}

TEST_CASE("byte-level BPE: every text of the bundled datasets as HF tokenizes it", "[unit][tokenizer][bpe]") {
  check_all_texts(ByteLevelBpe::load((kFixture / "roberta-bpe").string()), "roberta-bpe");
}

TEST_CASE("SentencePiece (XLM-R): HF's pieces, ids and offsets", "[unit][tokenizer][spm]") {
  check_references(SentencePieceTokenizer::load((kFixture / "xlmr-spm").string()), "xlmr-spm");
}

TEST_CASE("SentencePiece (XLM-R): every text of the bundled datasets as HF tokenizes it", "[unit][tokenizer][spm]") {
  check_all_texts(SentencePieceTokenizer::load((kFixture / "xlmr-spm").string()), "xlmr-spm");
}

TEST_CASE("SentencePiece (XLM-R): fairseq ids and bad model files", "[unit][tokenizer][spm][bad-input]") {
  const auto sp = SentencePieceTokenizer::load((kFixture / "xlmr-spm").string());
  CHECK(sp.vocab_size() == 8002);
  // An unknown piece is <unk>'s id, as HF's convert_tokens_to_ids; find_id says it is absent.
  CHECK(sp.convert_tokens_to_ids({"<s>", "<pad>", "</s>", "<unk>", "<mask>", "no such piece"}) ==
        std::vector<int64_t>{0, 1, 2, 3, 8001, 3});
  CHECK(sp.find_id("no such piece") == -1);
  const fs::path dir = temp_dir("spm");
  CHECK_THROWS_WITH(SentencePieceTokenizer::load(dir.string()),
                    Catch::Contains("sentencepiece.bpe.model: cannot be read"));
  write(dir / "sentencepiece.bpe.model", "not a model");
  CHECK_THROWS_WITH(SentencePieceTokenizer::load(dir.string()),
                    Catch::Contains("sentencepiece.bpe.model: not a SentencePiece model"));
  fs::remove_all(dir);
}

TEST_CASE("byte-level BPE: GPT-2's byte symbols and merge order", "[unit][tokenizer][bpe]") {
  CHECK(ByteLevelBpe::byte_symbol(' ') == U'\u0120');
  CHECK(ByteLevelBpe::byte_symbol('\n') == U'\u010a');
  CHECK(ByteLevelBpe::byte_symbol('a') == U'a');
  CHECK(ByteLevelBpe::byte_symbol(0xAD) == U'\u0143');  // the soft hyphen is not printable
  // "aaa" with the one merge (a, a): the leftmost pair first, as HF.
  ByteLevelBpe bpe({{"a", 0}, {"aa", 1}, {"b", 2}, {"ab", 3}, {"aab", 4}}, {{"a", "a"}, {"a", "b"}, {"aa", "b"}}, {});
  CHECK(bpe.bpe("aaa") == std::vector<std::string>{"aa", "a"});
  CHECK(bpe.bpe("aab") == std::vector<std::string>{"aab"});
  // X has no id: dropped before merging, as HF's BPE without an unk token (a and b then merge).
  CHECK(bpe.bpe("aXb") == std::vector<std::string>{"ab"});
  // ignore_merges: a pre-token in the vocabulary is one piece.
  ByteLevelBpe whole({{"a", 0}, {"b", 1}, {"c", 2}, {"abc", 3}, {"ab", 4}}, {{"a", "b"}}, {}, false, true);
  CHECK(whole.bpe("abc") == std::vector<std::string>{"abc"});
}

TEST_CASE("byte-level BPE: bad tokenizer files name the file", "[unit][tokenizer][bpe][bad-input]") {
  const fs::path dir = temp_dir("bad");
  CHECK_THAT(load_error(dir), Catch::Contains("vocab.json: cannot be read"));
  write(dir / "vocab.json", "{\"a\": 0, \"b\": 1");
  write(dir / "merges.txt", "#version: 0.2\na b\n");
  CHECK_THAT(load_error(dir), Catch::Contains("vocab.json"));
  write(dir / "vocab.json", "{\"a\": 0, \"b\": \"x\"}");
  CHECK_THAT(load_error(dir), Catch::Contains("vocab.json"));
  write(dir / "vocab.json", "{\"a\": 0, \"b\": 2.2e102}");  // an id no integer type holds
  CHECK_THAT(load_error(dir), Catch::Contains("vocab.json: the id of 'b' is not a non-negative integer"));
  write(dir / "vocab.json", "{\"a\": 0, \"b\": 1, \"ab\": 2}");
  write(dir / "merges.txt", "#version: 0.2\na  b\n");
  CHECK_THAT(load_error(dir), Catch::Contains("merges.txt: a merge is two pieces separated by one space"));
  write(dir / "merges.txt", "#version: 0.2\na b\nb a\n");  // "ba" is not in the vocabulary (HF refuses it too)
  CHECK_THAT(load_error(dir), Catch::Contains("merges.txt") && Catch::Contains("merge 2 ('b a') needs 'ba'"));
  fs::remove(dir / "merges.txt");
  CHECK_THAT(load_error(dir), Catch::Contains("merges.txt: cannot be read"));
  write(dir / "tokenizer.json", "{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}");
  CHECK_THAT(load_error(dir), Catch::Contains("tokenizer.json: model.type is 'Unigram', expected BPE"));
  write(dir / "tokenizer.json",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, "
        "\"added_tokens\": [{\"id\": 1, \"content\": \"\"}], \"pre_tokenizer\": {\"type\": \"ByteLevel\"}}");
  CHECK_THAT(load_error(dir), Catch::Contains("tokenizer.json: byte-level BPE: an added token is empty"));
  write(dir / "tokenizer.json", "not json");
  CHECK_THAT(load_error(dir), Catch::Contains("tokenizer.json"));
  fs::remove_all(dir);
}

TEST_CASE("byte-level BPE: tokenizer.json features it does not implement are refused by name",
          "[unit][tokenizer][bpe][bad-input]") {
  const json good = json::parse(std::ifstream(kRoot / "tests/fixtures/families/roberta/tokenizer.json"));
  const fs::path dir = temp_dir("features");
  auto error_with = [&](const std::function<void(json&)>& change) {
    json j = good;
    change(j);
    write(dir / "tokenizer.json", j.dump());
    return load_error(dir);
  };
  CHECK(error_with([](json&) {}) == "(no error)");  // the file as HF wrote it loads
  CHECK_THAT(error_with([](json& j) {
               j["pre_tokenizer"] = {{"type", "Whitespace"}};
             }),
             Catch::Contains("tokenizer.json: pre_tokenizer 'Whitespace' is not supported for byte-level BPE"));
  CHECK_THAT(error_with([](json& j) {
               j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "_"}};
             }),
             Catch::Contains("pre_tokenizer 'Metaspace' is not supported"));
  CHECK_THAT(
      error_with([](json& j) {
        j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", {{{"type", "Digits"}}, {{"type", "ByteLevel"}}}}};
      }),
      Catch::Contains("pre_tokenizer: a Sequence of [Digits, ByteLevel] is not supported"));
  CHECK(error_with([&](json& j) {
          j["pre_tokenizer"] = json{{"type", "Sequence"}, {"pretokenizers", json::array({good.at("pre_tokenizer")})}};
        }) == "(no error)");
  CHECK_THAT(error_with([](json& j) { j["pre_tokenizer"]["use_regex"] = false; }),
             Catch::Contains("ByteLevel with use_regex false is not supported"));
  CHECK_THAT(error_with([](json& j) { j["pre_tokenizer"] = nullptr; }), Catch::Contains("pre_tokenizer is null"));
  CHECK_THAT(error_with([](json& j) { j["model"]["dropout"] = 0.1; }),
             Catch::Contains("model.dropout 0.1: BPE dropout") && Catch::Contains("is not supported"));
  CHECK_THAT(error_with([](json& j) { j["model"]["continuing_subword_prefix"] = "##"; }),
             Catch::Contains("model.continuing_subword_prefix \"##\" is not supported"));
  CHECK_THAT(error_with([](json& j) { j["model"]["end_of_word_suffix"] = "</w>"; }),
             Catch::Contains("model.end_of_word_suffix \"</w>\" is not supported"));
  CHECK_THAT(error_with([](json& j) { j["model"]["byte_fallback"] = true; }),
             Catch::Contains("model.byte_fallback is not supported"));
  // A template whose special token special_tokens lacks (HF refuses the file).
  const json modern = json::parse(std::ifstream(kRoot / "tests/fixtures/families/modernbert/tokenizer.json"));
  json broken = modern;
  broken["post_processor"]["special_tokens"].erase("[SEP]");
  write(dir / "tokenizer.json", broken.dump());
  CHECK_THAT(load_error(dir),
             Catch::Contains("post_processor: the single template's special token '[SEP]' is not defined"));
  fs::remove_all(dir);
}
