// The tokenizer kinds' table (framework/text/tokenizer_kinds.h): each row loads its family's
// fixture directory and names the files it read; a directory is recognized by any kind's files; a
// missing file and an unknown kind are refused by name.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "framework/common/error.h"
#include "framework/text/tokenizer_kinds.h"
#include "support/fixture_config.h"

using namespace unif::framework;
namespace fs = std::filesystem;

using unif::test::kFamilies;

namespace {

std::vector<std::string> names(const std::vector<fs::path>& files) {
  std::vector<std::string> out;
  for (const auto& f : files) out.push_back(f.filename().string());
  return out;
}

}  // namespace

TEST_CASE("tokenizer kinds: each row reads its family's directory and names the files it read",
          "[unit][tokenizer][kinds]") {
  struct Case {
    const char* kind;
    fs::path dir;
    std::vector<std::string> files;
  };
  const std::vector<Case> cases{
      {"WordPiece", kFamilies / "electra", {"vocab.txt"}},
      {"ByteLevelBPE", kFamilies / "roberta", {"tokenizer.json", "vocab.json", "merges.txt"}},
      {"ByteLevelBPE", kFamilies / "modernbert", {"tokenizer.json"}},
      {"SentencePieceFairseq", kFamilies / "xlm-roberta", {"sentencepiece.bpe.model"}},
      {"SentencePiece", kFamilies / "albert", {"spiece.model"}},
      {"SentencePieceDeberta", kFamilies / "deberta-v2", {"spm.model"}},
      {"WordPieceMPNet", kFamilies / "mpnet", {"vocab.txt", "tokenizer.json"}},  // its added tokens
  };
  for (const auto& c : cases) {
    INFO(c.kind << " on " << c.dir.string());
    const LoadedTokenizer t = tokenizer_kind(c.kind).load(c.dir, {}, false, "Test");
    REQUIRE(t.tokenizer != nullptr);
    CHECK(t.tokenizer->vocab_size() > 0);
    CHECK(names(t.files) == c.files);
    CHECK(has_tokenizer_files(c.dir));
  }
  // WordPiece (BERT's and MPNet's) alone takes a vocabulary from elsewhere (model.vocab).
  CHECK(tokenizer_kind("WordPiece").vocab_file);
  CHECK(tokenizer_kind("WordPieceMPNet").vocab_file);
  for (const auto& k : tokenizer_kinds())
    if (std::string(k.name) != "WordPiece" && std::string(k.name) != "WordPieceMPNet") CHECK_FALSE(k.vocab_file);
  const fs::path vocab = fs::path(UNIF_TEST_FIXTURES) / "tiny-bert-zh" / "vocab.txt";
  const LoadedTokenizer w = tokenizer_kind("WordPiece").load(kFamilies / "roberta", vocab, true, "Test");
  CHECK(names(w.files) == std::vector<std::string>{"vocab.txt"});
  CHECK(w.files.front() == vocab);
  const fs::path mpnet_vocab = kFamilies / "mpnet" / "vocab.txt";
  // No model directory (from scratch, model.vocab): MPNetTokenizer's special tokens.
  const LoadedTokenizer m = tokenizer_kind("WordPieceMPNet").load(fs::path(), mpnet_vocab, true, "Test");
  CHECK(names(m.files) == std::vector<std::string>{"vocab.txt"});
  CHECK(m.files.front() == mpnet_vocab);
  CHECK(m.tokenizer->specials().cls == "<s>");
  CHECK(m.tokenizer->tokenize("a <mask>") == std::vector<std::string>{"a", "<mask>"});
  // A model directory's added tokens name ids of its own vocabulary: another one is refused by name.
  CHECK_THROWS_WITH(tokenizer_kind("WordPieceMPNet").load(kFamilies / "roberta", mpnet_vocab, true, "Test"),
                    Catch::Contains("roberta/tokenizer.json: the added token '<mask>' has id 4, but ") &&
                        Catch::Contains("mpnet/vocab.txt gives it id 4004"));
}

TEST_CASE("tokenizer kinds: a missing file, an empty directory and an unknown kind are refused by name",
          "[unit][tokenizer][kinds]") {
  const fs::path empty = fs::temp_directory_path() / "unif_tokenizer_kinds_empty";
  fs::create_directories(empty);
  CHECK_FALSE(has_tokenizer_files(empty));
  CHECK_THROWS_WITH(tokenizer_kind("SentencePiece").load(empty, {}, false, "Albert"),
                    Catch::Contains("has no spiece.model (the Albert tokenizer's file)"));
  CHECK_THROWS_WITH(tokenizer_kind("SentencePieceDeberta").load(kFamilies / "albert", {}, false, "DebertaV2"),
                    Catch::Contains("has no spm.model (the DebertaV2 tokenizer's file)"));
  CHECK_THROWS_WITH(tokenizer_kind("WordPieceMPNet").load(empty, {}, true, "MPNet"),
                    Catch::Contains("vocab.txt: not found"));
  CHECK_THROWS_WITH(tokenizer_kind("Unigram"), Catch::Contains("unknown tokenizer kind \"Unigram\""));
  CHECK(tokenizer_files_text() ==
        "vocab.txt, vocab.json + merges.txt or tokenizer.json, sentencepiece.bpe.model, spiece.model, spm.model");
  fs::remove_all(empty);
}
