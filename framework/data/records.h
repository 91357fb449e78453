// Reading data files into records: JSONL (one JSON object per line) or TSV with a header row.
// A record is a JSON object either way, so the task code reads fields one way. A TSV cell is a
// string; list-valued fields (multilabel labels, token lists, tag lists) are split on spaces.
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

/// Reads records from a stream one line at a time (inputs too large to hold, standard input):
/// JSONL, or TSV whose first non-blank line is the header. `name` stands for the input in error
/// messages ("<name>:<line>: ..."). The checks and messages are read_records'.
class RecordReader {
 public:
  RecordReader(std::istream& in, std::string name, bool tsv);
  /// The next data line into `r`: false at the end of the input. A blank line (only spaces and
  /// tabs) gives a record whose `fields` is null. A TSV header line is consumed, not returned.
  /// UserError naming the input and line for bad JSON, a non-object line, invalid UTF-8, a ragged
  /// TSV row or a read error.
  bool next(Record& r);
  const std::string& name() const { return name_; }

 private:
  std::istream& in_;
  std::string name_;
  bool tsv_;
  std::vector<std::string> header_;
  int64_t line_ = 0;
};

/// Reads `file` (.jsonl/.json → JSONL, .tsv → TSV). Blank lines are skipped. Throws UserError
/// naming the file and line for unreadable files, bad JSON, non-object lines, ragged TSV rows.
std::vector<Record> read_records(const std::filesystem::path& file);

/// "<file>:<line>: " prefix for error messages about one record.
std::string where(const std::filesystem::path& file, const Record& r);

}  // namespace unif::framework
