// Reading data files into records: JSONL (one JSON object per line) or TSV with a header row.
// A record is a JSON object either way, so the task code reads fields one way. A TSV cell is a
// string; list-valued fields (multilabel labels, token lists, tag lists) are split on spaces.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace unif::framework {

struct Record {
  nlohmann::json fields;  // a JSON object
  int64_t line = 0;       // 1-based line number in the file, for error messages
};

/// Reads `file` (.jsonl/.json → JSONL, .tsv → TSV). Blank lines are skipped. Throws UserError
/// naming the file and line for unreadable files, bad JSON, non-object lines, ragged TSV rows.
std::vector<Record> read_records(const std::filesystem::path& file);

/// "<file>:<line>: " prefix for error messages about one record.
std::string where(const std::filesystem::path& file, const Record& r);

}  // namespace unif::framework
