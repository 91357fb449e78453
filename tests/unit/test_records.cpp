// Data file formats (framework/data/records): CSV (RFC 4180), CoNLL token files, the header check of
// TSV and CSV, the format chosen by the extension, and the records each gives to the task code.
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

#include "framework/data/dataset.h"
#include "framework/data/records.h"
#include "support/temp_dir.h"
#include "support/user_error.h"

using namespace unif::framework;
using nlohmann::json;
using unif::Task;
using unif::test::user_error_of;

namespace {

std::filesystem::path write(const unif::test::TempDir& dir, const std::string& name, const std::string& text) {
  const auto path = dir / name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

/// Every record `text` gives in `format` (blank lines skipped), as the stream reader returns them.
std::vector<Record> read_text(const std::string& text, RecordFormat format, RecordFields fields = {}) {
  std::istringstream in(text);
  RecordReader reader(in, "in", format, std::move(fields));
  std::vector<Record> out;
  for (Record r; reader.next(r);)
    if (!r.fields.is_null()) out.push_back(r);
  return out;
}

RecordFields classification_fields() {
  DataConfig d;  // text_fields [text], label_field label
  return record_fields(Task::Classification, d, true);
}

}  // namespace

TEST_CASE("CSV: header row, plain and quoted cells, escaped quotes", "[unit][data][csv]") {
  const auto recs =
      read_text("text,label\nhello,pos\n\"a, b\",neg\n\"say \"\"hi\"\"\",pos\n\"\",neg\n", RecordFormat::Csv);
  REQUIRE(recs.size() == 4);
  CHECK(recs[0].fields == json{{"text", "hello"}, {"label", "pos"}});
  CHECK(recs[0].line == 2);
  CHECK(recs[1].fields["text"] == "a, b");
  CHECK(recs[2].fields["text"] == "say \"hi\"");
  CHECK(recs[3].fields["text"] == "");
}

TEST_CASE("CSV: a line break inside quotes belongs to the cell; the record's line is its first", "[unit][data][csv]") {
  const auto recs = read_text("text,label\n\"one\ntwo\n\nfour\",pos\nnext,neg\n", RecordFormat::Csv);
  REQUIRE(recs.size() == 2);
  CHECK(recs[0].fields["text"] == "one\ntwo\n\nfour");
  CHECK(recs[0].line == 2);
  CHECK(recs[1].fields["text"] == "next");
  CHECK(recs[1].line == 6);
}

TEST_CASE("CSV: one pass over a record that spans many lines (a stray quote, long multi-line cells)",
          "[unit][data][csv]") {
  // Each line used to re-read the record from its first line: a stray quote in a 30,000-line file took
  // 50 s to report, so this 200,000-line one would take over ten minutes. Now linear: well under 20 s
  // on any load.
  std::string text = "text,label\n\"stray,pos\n";
  for (int i = 0; i < 200000; ++i) text += "line " + std::to_string(i) + ",neg\n";
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_THAT(user_error_of([&] { read_text(text, RecordFormat::Csv); }),
             Catch::StartsWith("in:2: a quoted cell opened in this record is not closed by the end of the file"));
  // A valid file whose cells span many lines: the same cost, the cells as written.
  std::string cell, valid = "text,label\n";
  for (int i = 0; i < 100000; ++i) cell += "row " + std::to_string(i) + (i + 1 < 100000 ? "\n" : "");
  for (int r = 0; r < 2; ++r) valid += "\"" + cell + "\",pos\n";
  const auto recs = read_text(valid, RecordFormat::Csv);
  REQUIRE(recs.size() == 2);
  CHECK(recs[0].fields["text"] == cell);
  CHECK(recs[1].line == 100002);
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 20.0);
}

TEST_CASE("CSV: CRLF line ends (inside quotes too), a UTF-8 BOM, a trailing empty cell", "[unit][data][csv]") {
  const auto recs = read_text("\xEF\xBB\xBFtext,label,note\r\nhi,pos,\r\n\"a\r\nb\",neg,x\r\n", RecordFormat::Csv);
  REQUIRE(recs.size() == 2);
  CHECK(recs[0].fields == json{{"text", "hi"}, {"label", "pos"}, {"note", ""}});
  CHECK(recs[1].fields["text"] == "a\nb");
}

TEST_CASE("CSV: each class of bad input is an error naming the line", "[unit][data][csv]") {
  // Ragged rows.
  CHECK_THAT(user_error_of([] { read_text("text,label\nhello,pos\nhello, world,pos\n", RecordFormat::Csv); }),
             Catch::StartsWith("in:3: expected 2 comma-separated cells (as the header), got 3"));
  CHECK_THAT(user_error_of([] { read_text("text,label\nhello\n", RecordFormat::Csv); }),
             Catch::StartsWith("in:2: expected 2 comma-separated cells (as the header), got 1"));
  // A quote never closed.
  CHECK_THAT(user_error_of([] { read_text("text,label\n\"open,pos\nmore,neg\n", RecordFormat::Csv); }),
             Catch::StartsWith("in:2: a quoted cell opened in this record is not closed by the end of the file"));
  // Text after a closing quote (an unescaped quote inside a quoted cell).
  CHECK_THAT(user_error_of([] { read_text("text,label\n\"say \"hi\"\",pos\n", RecordFormat::Csv); }),
             Catch::StartsWith("in:2: text after a closing quote (byte 7 of the line)"));
  // Invalid UTF-8, on the physical line where it is.
  CHECK_THAT(user_error_of([] { read_text("text,label\n\"a\n\xFF\",pos\n", RecordFormat::Csv); }),
             Catch::StartsWith("in:3: invalid UTF-8 at byte 1 of the line (0xFF)"));
  // A column named twice.
  CHECK_THAT(user_error_of([] { read_text("text,text\na,b\n", RecordFormat::Csv); }),
             Catch::StartsWith("in:1: the header names column 'text' twice (columns 1 and 2)"));
}

TEST_CASE("TSV and CSV: a header without the configured columns says which it has", "[unit][data][csv]") {
  // A headerless file: its first row is taken as the header, and the message says so.
  CHECK(user_error_of([] { read_text("hello world\tpos\nbye\tneg\n", RecordFormat::Tsv, classification_fields()); }) ==
        "in:1: the header has columns [hello world, pos] but the config asks for text_fields [text] and label_field "
        "label (data.text_fields, data.label_field); a file without a header row is not supported: add one");
  CHECK_THAT(
      user_error_of([] { read_text("sentence,label\nhi,pos\n", RecordFormat::Csv, classification_fields()); }),
      Catch::StartsWith("in:1: the header has columns [sentence, label] but the config asks for text_fields [text]"));
  // The label column is needed for training, not for prediction.
  CHECK_THAT(user_error_of([] { read_text("text,id\nhi,1\n", RecordFormat::Csv, classification_fields()); }),
             Catch::StartsWith("in:1: the header has columns [text, id] but"));
  auto predict = classification_fields();
  predict.label_required = false;
  CHECK(read_text("text,id\nhi,1\n", RecordFormat::Csv, predict).size() == 1);
  // Long first-row cells are cut in the message.
  const std::string long_cell(100, 'x');
  CHECK_THAT(user_error_of([&] { read_text(long_cell + "\tpos\n", RecordFormat::Tsv, classification_fields()); }),
             Catch::Contains("[" + std::string(40, 'x') + "..., pos]"));
}

TEST_CASE("CoNLL: token and tag columns, sentences, -DOCSTART-, trailing blank lines", "[unit][data][conll]") {
  const std::string text =
      "-DOCSTART- -X- -X- O\n"
      "\n"
      "EU NNP B-NP B-ORG\n"
      "rejects VBZ B-VP O\n"
      "\n"
      "\n"
      "Peter\tB-PER\r\n"
      "Blackburn\tI-PER\r\n"
      "-DOCSTART- O\n"
      "Paris LOC\n"
      "\n\n\n";
  const auto recs = read_text(text, RecordFormat::Conll);
  REQUIRE(recs.size() == 3);
  CHECK(recs[0].fields == json{{"tokens", {"EU", "rejects"}}, {"tags", {"B-ORG", "O"}}});
  CHECK(recs[0].line == 3);
  CHECK(recs[1].fields == json{{"tokens", {"Peter", "Blackburn"}}, {"tags", {"B-PER", "I-PER"}}});
  CHECK(recs[1].line == 7);
  CHECK(recs[2].fields == json{{"tokens", {"Paris"}}, {"tags", {"LOC"}}});
}

TEST_CASE("CoNLL: the configured field names; a tab-separated token may hold spaces", "[unit][data][conll]") {
  DataConfig d;
  d.text_fields = {"words"};
  d.label_field = "ner";
  const auto recs = read_text("\xEF\xBB\xBFNew York\tB-LOC\nis\tO\n", RecordFormat::Conll,
                              record_fields(Task::TokenClassification, d, true));
  REQUIRE(recs.size() == 1);
  CHECK(recs[0].fields == json{{"words", {"New York", "is"}}, {"ner", {"B-LOC", "O"}}});
}

TEST_CASE("CoNLL: prediction input may leave the tag column out; training may not", "[unit][data][conll]") {
  DataConfig d;
  d.text_fields = {"tokens"};
  d.label_field = "tags";
  const auto recs = read_text("a\nb\n\nc\n", RecordFormat::Conll, record_fields(Task::TokenClassification, d, false));
  REQUIRE(recs.size() == 2);
  CHECK(recs[0].fields == json{{"tokens", {"a", "b"}}});
  CHECK_THAT(user_error_of([&] {
               read_text("a O\nb\n", RecordFormat::Conll, record_fields(Task::TokenClassification, d, true));
             }),
             Catch::StartsWith(
                 "in:2: expected a token and its tag (the last column), separated by spaces or a tab, got only 'b'"));
  CHECK_THAT(user_error_of([&] {
               read_text("a O\nb\n", RecordFormat::Conll, record_fields(Task::TokenClassification, d, false));
             }),
             Catch::StartsWith(
                 "in:2: no tag here, but line 1 of the sentence has one; tag every token of a sentence or none"));
}

TEST_CASE("the extension chooses the format; any other is one sentence naming the supported ones", "[unit][data]") {
  CHECK(record_format_of("a/train.jsonl") == RecordFormat::Jsonl);
  CHECK(record_format_of("a/train.json") == RecordFormat::Jsonl);
  CHECK(record_format_of("/dev/stdin") == RecordFormat::Jsonl);
  CHECK(record_format_of("a/train.TSV") == RecordFormat::Tsv);
  CHECK(record_format_of("a/train.csv") == RecordFormat::Csv);
  CHECK(record_format_of("a/train.conll") == RecordFormat::Conll);
  CHECK(record_format_of("a/train.bio") == RecordFormat::Conll);
  CHECK(record_format_of("a/train.iob") == RecordFormat::Conll);
  CHECK(user_error_of([] { record_format_of("data/x.xlsx"); }) ==
        "data/x.xlsx: unsupported data file extension '.xlsx'; " + supported_formats());
  CHECK_THAT(supported_formats(), Catch::Contains(".jsonl") && Catch::Contains(".tsv") && Catch::Contains(".csv") &&
                                      Catch::Contains(".conll, .bio or .iob"));
}

TEST_CASE("read_records: CSV and CoNLL files; CoNLL only for token classification", "[unit][data]") {
  unif::test::TempDir dir;
  const auto csv = write(dir, "train.csv", "text,label\n\"a, b\",pos\nc,neg\n");
  DataConfig d;
  const auto recs = read_records(csv, record_fields(Task::Classification, d, true));
  REQUIRE(recs.size() == 2);
  CHECK(recs[0].fields["text"] == "a, b");

  const auto conll = write(dir, "train.conll", "a B-X\nb O\n\n");
  CHECK_THAT(user_error_of([&] { read_records(conll, record_fields(Task::Classification, d, true)); }),
             Catch::Contains("train.conll: a .conll file holds token classification data (a token and its tag a line); "
                             "task classification reads .jsonl, .tsv or .csv files"));
  DataConfig t;
  t.text_fields = {"tokens"};
  t.label_field = "tags";
  CHECK(read_records(conll, record_fields(Task::TokenClassification, t, true)).size() == 1);
  // The stream reader (unif predict) refuses CoNLL for another task the same way.
  std::istringstream in("a B-X\n");
  CHECK_THAT(
      user_error_of([&] { RecordReader(in, "x.bio", RecordFormat::Conll, record_fields(Task::Regression, d, false)); }),
      Catch::StartsWith("x.bio: a .bio file holds token classification data") &&
          Catch::EndsWith("task regression reads .jsonl, .tsv or .csv files"));

  const auto txt = write(dir, "train.txt", "hello\n");
  CHECK_THAT(user_error_of([&] { read_records(txt, record_fields(Task::Classification, d, true)); }),
             Catch::Contains("train.txt: unsupported data file extension '.txt'; data files are .jsonl"));
  // A CSV named .jsonl: the JSON error says the file does not look like JSONL.
  const auto wrong = write(dir, "train.jsonl", "text,label\nhi,pos\n");
  CHECK_THAT(user_error_of([&] { read_records(wrong); }),
             Catch::Contains("train.jsonl:1: invalid JSON") &&
                 Catch::Contains("the file does not look like JSONL: data files are"));
}

TEST_CASE("CSV and TSV cells feed every task: lists split on spaces, numbers parsed, span answers as JSON",
          "[unit][data]") {
  unif::test::TempDir dir;
  DataConfig tc;
  tc.text_fields = {"tokens"};
  tc.label_field = "tags";
  const auto tok = write(dir, "tok.csv", "tokens,tags\nEU rejects,B-ORG O\n");
  const auto tok_records = read_records(tok, record_fields(Task::TokenClassification, tc, true));
  const auto tok_labels = collect_labels(Task::TokenClassification, tc, tok, tok_records);
  const auto tok_ex = make_examples(Task::TokenClassification, tc, tok_labels, tok, tok_records, true);
  REQUIRE(tok_ex.size() == 1);
  CHECK(tok_ex[0].texts == std::vector<std::string>{"EU", "rejects"});
  CHECK(tok_ex[0].labels.size() == 2);

  DataConfig ml;
  const auto multi = write(dir, "multi.csv", "text,label\nhi,a b\nyo,b\n");
  const auto ml_records = read_records(multi, record_fields(Task::Multilabel, ml, true));
  const auto ml_labels = collect_labels(Task::Multilabel, ml, multi, ml_records);
  CHECK(make_examples(Task::Multilabel, ml, ml_labels, multi, ml_records, true)[0].labels.size() == 2);

  const auto reg = write(dir, "reg.csv", "text,label\nhi,0.5\n");
  CHECK(make_examples(Task::Regression, ml, {}, reg, read_records(reg), true)[0].value == Approx(0.5));

  DataConfig sp;
  sp.text_fields = {"question", "context"};
  sp.label_field = "answers";
  const auto span = write(dir, "span.csv",
                          "question,context,answers\n"
                          "Who?,Ann went home.,\"[{\"\"text\"\": \"\"Ann\"\", \"\"answer_start\"\": 0}]\"\n");
  const auto span_ex = make_examples(Task::SpanExtraction, sp, {}, span,
                                     read_records(span, record_fields(Task::SpanExtraction, sp, true)), true);
  REQUIRE(span_ex.size() == 1);
  REQUIRE(span_ex[0].answers.size() == 1);
  CHECK(span_ex[0].answers[0].text == "Ann");
  const auto bad_span = write(dir, "bad_span.csv", "question,context,answers\nWho?,Ann went home.,Ann\n");
  CHECK_THAT(
      user_error_of([&] { make_examples(Task::SpanExtraction, sp, {}, bad_span, read_records(bad_span), true); }),
      Catch::Contains("bad_span.csv:2: field 'answers': a TSV or CSV cell of answers holds JSON"));
}
