// masked_lm data edges: the whole-word budget rounds as HF (Python's round, half to even) and the
// evaluation draw's selected-token count (a dev set whose draw selects nothing is reported at load).
#include <catch2/catch.hpp>

#include "framework/data/mlm.h"

using namespace unif::framework;

TEST_CASE("whole-word masking budget: Python's round (half to even), at least 1, at most 512", "[unit][mlm]") {
  // round(30 * 0.15) = round(4.5) = 4 in Python; half away from zero gave 5.
  CHECK(whole_word_budget(30, 0.15) == 4);
  CHECK(whole_word_budget(10, 0.25) == 2);  // round(2.5) = 2
  CHECK(whole_word_budget(14, 0.25) == 4);  // round(3.5) = 4
  CHECK(whole_word_budget(7, 0.15) == 1);   // round(1.05) = 1
  CHECK(whole_word_budget(2, 0.15) == 1);   // round(0.3) = 0 -> at least 1
  CHECK(whole_word_budget(10000, 0.15) == 512);
}

TEST_CASE("masked_tokens counts the evaluation draw's selected tokens", "[unit][mlm]") {
  EncodedExample e;
  e.input_ids = {101, 5, 6, 102};
  e.word_start = {-1, 0, 1, -1};  // [CLS] w0 w1 [SEP]
  MlmMasking m;
  m.mask_id = 103;
  m.vocab_size = 200;
  m.probability = 1.0;  // every non-special token
  CHECK(masked_tokens({e, e}, m) == 4);
  m.probability = 1e-9;  // none
  CHECK(masked_tokens({e, e}, m) == 0);
  e.word_start = {-1, -1};
  e.input_ids = {101, 102};
  m.probability = 1.0;
  CHECK(masked_tokens({e}, m) == 0);  // only [CLS] [SEP]: nothing to predict
}
