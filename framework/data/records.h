// Reading data files into records: JSONL (one JSON object per line), TSV or CSV with a header row,
// and CoNLL-style token files (.conll / .bio / .iob) for token classification. A record is a JSON
// object whatever the format, so the task code reads fields one way. A TSV or CSV cell is a string;
// list-valued fields (multilabel labels, token lists, tag lists) are split on spaces. A CoNLL
// sentence is {<tokens field>: [...], <tags field>: [...]}.
#pragma once
#include <filesystem>
#include <istream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace unif::framework {

struct Record {
  nlohmann::json fields;  // a JSON object
  int64_t line = 0;       // 1-based line number in the file, for error messages
};

/// The data file formats. The file name's extension chooses (record_format_of).
enum class RecordFormat {
  Jsonl,  // .jsonl, .json (one JSON object per line); also a name without extension (a pipe)
  Tsv,    // .tsv: header row, tab-separated cells, no quoting
  Csv,    // .csv: RFC 4180 (header row, "quoted" cells with "" for a quote, commas and line
          // breaks inside quotes, CRLF or LF)
  Conll,  // .conll, .bio, .iob: a token per line, its tag in the last column, blank line between
          // sentences, -DOCSTART- lines skipped
};

/// "JSONL", "TSV", "CSV", "CoNLL".
std::string to_string(RecordFormat format);

/// The one sentence that names the supported formats, for error messages.
std::string supported_formats();

/// The format `file`'s extension names (letter case ignored). UserError "<file>: unsupported data
/// file extension '.x'; ..." (supported_formats()) for any other extension.
RecordFormat record_format_of(const std::filesystem::path& file);

/// Whether `file`'s cells are plain strings (TSV, CSV), so a list field is a space-separated
/// string there. Never throws.
bool string_cells(const std::filesystem::path& file);

/// What the caller expects of the records: the header check of TSV and CSV, and the field names a
/// CoNLL sentence gets. Default: no header check, CoNLL fields "tokens" and "tags".
struct RecordFields {
  std::vector<std::string> text_fields;  // data.text_fields ({} = no header check)
  std::string label_field;               // data.label_field
  bool label_required = false;           // the header must hold label_field; CoNLL lines need a tag
  std::string task;                      // the task's name, for messages ("" = not known)
  bool conll_ok = true;                  // whether the task takes CoNLL files (token classification)
  // Inputs to predict: a JSONL line may be a string or a list, and a TSV / CSV header may name the
  // text columns `text` (and `text_pair`) instead of text_fields.
  bool bare_values = false;
};

/// Reads records from a stream one at a time (inputs too large to hold, standard input). `name`
/// stands for the input in error messages ("<name>:<line>: ..."). The checks and messages are
/// read_records'.
class RecordReader {
 public:
  /// JSONL, or TSV (`tsv`) whose first non-blank line is the header.
  RecordReader(std::istream& in, std::string name, bool tsv);
  /// `format` as record_format_of(name) gives it for a file (JSONL for standard input). UserError
  /// when `format` is CoNLL and `fields.conll_ok` is false (a task other than token classification).
  RecordReader(std::istream& in, std::string name, RecordFormat format, RecordFields fields = {});
  /// The next record into `r`: false at the end of the input. A blank line (only spaces and tabs)
  /// of JSONL, TSV or CSV gives a record whose `fields` is null; in CoNLL blank lines separate
  /// sentences and are not returned. A TSV or CSV header line is consumed, not returned. A record's
  /// line is its first line (a CSV record with quoted line breaks, a CoNLL sentence).
  /// UserError naming the input and line for bad JSON, a non-object line, invalid UTF-8, a ragged
  /// TSV or CSV row, a header without the expected columns, an unclosed CSV quote, a CoNLL line
  /// without a tag, or a read error.
  bool next(Record& r);
  const std::string& name() const { return name_; }
  RecordFormat format() const { return format_; }

 private:
  bool next_conll(Record& r);
  bool next_csv_cells(std::vector<std::string>& cells, int64_t& first_line, bool& blank);
  void check_header(int64_t line) const;
  void check_utf8(const std::string& text, int64_t line) const;

  std::istream& in_;
  std::string name_;
  RecordFormat format_;
  RecordFields fields_;
  std::vector<std::string> header_;
  bool have_header_ = false;
  int64_t line_ = 0;
};

/// Reads `file` in the format its extension names (record_format_of). Blank lines are skipped.
/// Throws UserError naming the file and line for unreadable files, an unsupported extension, bad
/// JSON, non-object lines, ragged TSV / CSV rows, a header without `fields`' columns, CoNLL for a
/// task other than token classification.
std::vector<Record> read_records(const std::filesystem::path& file, const RecordFields& fields);
std::vector<Record> read_records(const std::filesystem::path& file);

/// "<file>:<line>: " prefix for error messages about one record.
std::string where(const std::filesystem::path& file, const Record& r);

}  // namespace unif::framework
