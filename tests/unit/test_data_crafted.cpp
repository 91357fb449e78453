// Data readers on the crafted files of tests/fuzz/corpus: a JSONL
// line with an unused field nested 200k deep (copying the record overflowed the stack), invalid
// UTF-8 in TSV and JSONL lines, and an answer_start of 2^63-1 (signed overflow, then
// std::out_of_range). Each must end in a UserError naming the file and line.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "framework/data/dataset.h"
#include "framework/data/records.h"
#include "framework/data/span_dataset.h"
#include "support/child_process.h"
#include "support/fuzz_corpus.h"
#include "support/user_error.h"

namespace fs = std::filesystem;
using namespace unif::framework;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using unif::Task;
using unif::test::corpus_file;
using unif::test::user_error_of;

TEST_CASE("crafted JSONL: a field nested 200k deep is an error, not a stack overflow", "[unit][data]") {
  const auto file = corpus_file("jsonl_data", "deep_unused_field.jsonl");
  const auto r = unif::test::run_in_child([&] {
    DataConfig dc;  // text / label
    const auto examples =
        make_examples(Task::Classification, dc, LabelSet::from_names({"a", "b"}), file, read_records(file), true);
    return std::to_string(examples.size()) + " examples";
  });
  INFO(r.describe());
  CHECK(r.signal == 0);
  CHECK_THAT(r.result, StartsWith("error: ") && Contains("deep_unused_field.jsonl:1: invalid JSON") &&
                           Contains("nested deeper than 256 levels"));
}

TEST_CASE("crafted data: invalid UTF-8 is an error naming the file and line", "[unit][data]") {
  CHECK_THAT(user_error_of([] { read_records(corpus_file("tsv_data", "invalid_utf8.tsv")); }),
             Contains("invalid_utf8.tsv:3: invalid UTF-8 at byte 5 of the line (0xFF)"));
  CHECK_THAT(user_error_of([] { read_records(corpus_file("jsonl_data", "invalid_utf8.jsonl")); }),
             Contains("invalid_utf8.jsonl:2: invalid UTF-8 at byte 15 of the line (0xFF)"));
}

TEST_CASE("crafted span data: answer_start 2^63-1 runs past the context", "[unit][data]") {
  const auto file = corpus_file("span_data", "answer_start_overflow.jsonl");
  DataConfig dc;
  dc.text_fields = {"question", "context"};
  dc.label_field = "answers";
  CHECK_THAT(user_error_of([&] { make_span_examples(dc, file, read_records(file), true); }),
             Contains("answer_start_overflow.jsonl:1: field 'answers': answer 'b' at 9223372036854775807 runs past "
                      "the end of the context (3 characters)"));
}
