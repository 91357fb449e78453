// data.long_text: a text longer than max_seq_length as windows (framework/data/dataset.h
// TextWindows): each window `[CLS] pieces [SEP]` within max_seq_length, starts `stride` pieces apart,
// together every piece of the text, the last window reaching its end; a short text is one window
// equal to the truncated encoding; truncate mode marks the entries it cut; pool_windows' mean and
// max; evaluation pools each text's windows (metrics per text, not per window).
#include <catch2/catch.hpp>

#include <filesystem>

#include <torch/types.h>

#include "framework/data/batching.h"
#include "framework/data/dataset.h"
#include "framework/text/bert_tokenizer.h"

namespace {

namespace lt = unif::framework;

std::shared_ptr<lt::BertTokenizer> long_text_tokenizer() {
  static auto vocab = std::make_shared<const lt::Vocab>(
      lt::Vocab::load((std::filesystem::path(UNIF_SOURCE_DIR) / "tests/fixtures/tiny-bert-zh/vocab.txt").string()));
  return std::make_shared<lt::BertTokenizer>(vocab, true);
}

lt::Example text_example(const std::string& text) {
  lt::Example e;
  e.texts = {text};
  e.labels = {0};
  e.has_label = true;
  return e;
}

}  // namespace

TEST_CASE("long_text windows cover a long text; a short one is its truncated encoding", "[unit][long_text]") {
  const auto tok = long_text_tokenizer();
  const std::string long_text = "今天天气很好我们去公园散步然后去图书馆看书晚上回家吃饭";  // 27 pieces
  const std::string short_text = "今天天气很好";
  const std::vector<lt::Example> examples{text_example(long_text), text_example(short_text)};
  const auto whole = lt::encode(*tok, long_text, std::nullopt, 1 << 20, lt::TruncateMethod::LIFO, false).input_ids;
  REQUIRE(whole.size() == 29);
  for (int64_t stride : {0, 5, 10}) {
    INFO("stride " << stride);
    lt::TextWindows w{true, stride, false};
    const auto enc =
        lt::encode_examples(unif::Task::Classification, examples, *tok, 12, lt::TruncateMethod::LIFO, {}, w);
    const int64_t step = stride > 0 ? stride : 5;  // half of the 10 pieces a window holds
    std::vector<const lt::EncodedExample*> first;
    for (const auto& e : enc)
      if (e.example == 0) first.push_back(&e);
    REQUIRE(enc.back().example == 1);
    CHECK(enc.size() == first.size() + 1);
    // Windows start every `step` pieces until one reaches the end: ceil((27 - 10) / step) + 1.
    CHECK(static_cast<int64_t>(first.size()) == (27 - 10 + step - 1) / step + 1);
    for (size_t k = 0; k < first.size(); ++k) {
      const auto& ids = first[k]->input_ids;
      CHECK(ids.size() <= 12);
      CHECK(ids.front() == whole.front());
      CHECK(ids.back() == whole.back());
      const size_t s = k * static_cast<size_t>(step);
      for (size_t p = 1; p + 1 < ids.size(); ++p) CHECK(ids[p] == whole[s + p]);
      CHECK(std::all_of(first[k]->token_type_ids.begin(), first[k]->token_type_ids.end(),
                        [](int64_t t) { return t == 0; }));
    }
    const auto& last = first.back()->input_ids;
    CHECK(last[last.size() - 2] == whole[whole.size() - 2]);  // the text's last piece
    const auto cut = lt::encode(*tok, short_text, std::nullopt, 12, lt::TruncateMethod::LIFO, false);
    CHECK(enc.back().input_ids == cut.input_ids);
  }
  // Truncate mode: one entry per text, the long one marked as cut.
  const auto cut = lt::encode_examples(unif::Task::Classification, examples, *tok, 12, lt::TruncateMethod::LIFO);
  REQUIRE(cut.size() == 2);
  CHECK(cut[0].truncated);
  CHECK_FALSE(cut[1].truncated);
  // A pair cannot be cut into windows.
  auto pair = text_example("今天");
  pair.texts.push_back("天气");
  CHECK_THROWS_WITH(lt::encode_examples(unif::Task::Classification, {pair}, *tok, 12, lt::TruncateMethod::LIFO, {},
                                        lt::TextWindows{true, 0, false}),
                    Catch::Contains("windows cut one text"));
}

TEST_CASE("pool_windows: each text's windows' mean or elementwise max", "[unit][long_text]") {
  std::vector<lt::EncodedExample> enc(4);
  enc[0].example = 0, enc[1].example = 0, enc[2].example = 1, enc[3].example = 0;
  const std::vector<torch::Tensor> logits{torch::tensor({1.0f, 4.0f}), torch::tensor({3.0f, 0.0f}),
                                          torch::tensor({5.0f, 6.0f}), torch::tensor({2.0f, 2.0f})};
  const auto mean = lt::pool_windows(enc, logits, 2, false);
  CHECK(torch::allclose(mean[0], torch::tensor({2.0f, 2.0f})));
  CHECK(torch::equal(mean[1], torch::tensor({5.0f, 6.0f})));
  const auto max = lt::pool_windows(enc, logits, 2, true);
  CHECK(torch::equal(max[0], torch::tensor({3.0f, 4.0f})));
  CHECK(torch::equal(max[1], torch::tensor({5.0f, 6.0f})));
}
