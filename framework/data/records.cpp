#include "framework/data/records.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "framework/common/error.h"
#include "framework/common/json_input.h"
#include "framework/text/unicode.h"

namespace unif::framework {

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  if (!s.empty() && s.back() == sep) out.emplace_back();
  return out;
}

}  // namespace

std::string where(const std::filesystem::path& file, const Record& r) {
  return file.string() + ":" + std::to_string(r.line) + ": ";
}

RecordReader::RecordReader(std::istream& in, std::string name, bool tsv)
    : in_(in), name_(std::move(name)), tsv_(tsv) {}

bool RecordReader::next(Record& r) {
  std::string line;
  while (std::getline(in_, line)) {
    const int64_t n = ++line_;
    const auto at = [&] { return name_ + ":" + std::to_string(n) + ": "; };
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (n == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // UTF-8 BOM
    if (line.find_first_not_of(" \t") == std::string::npos) {
      r = Record{nullptr, n};
      return true;
    }
    // Checked here for both formats: a TSV cell would otherwise reach the tokenizer with its bad
    // bytes dropped silently, and the JSON printed by `unif predict` could not hold it.
    if (const auto bad = unicode::invalid_utf8_at(line); bad != std::string::npos) {
      char byte[8];
      std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(line[bad]));
      throw UserError(at() + "invalid UTF-8 at byte " + std::to_string(bad + 1) + " of the line (" + byte +
                      "); data files must be UTF-8");
    }
    if (tsv_) {
      auto cells = split(line, '\t');
      if (header_.empty()) {
        header_ = cells;
        continue;
      }
      if (cells.size() != header_.size())
        throw UserError(at() + "expected " + std::to_string(header_.size()) +
                        " tab-separated cells (as the header), got " + std::to_string(cells.size()));
      r = Record{nlohmann::json::object(), n};
      for (size_t i = 0; i < cells.size(); ++i) r.fields[header_[i]] = cells[i];
      return true;
    }
    r = Record{{}, n};
    try {
      r.fields = parse_json(line);
    } catch (const JsonInputError& e) {
      throw UserError(at() + "invalid JSON (" + e.what() + ")");
    }
    if (!r.fields.is_object()) throw UserError(at() + "expected a JSON object per line");
    return true;
  }
  if (in_.bad()) throw UserError(name_ + ": read error");
  return false;
}

std::vector<Record> read_records(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    throw UserError(file.string() + ": data file not found");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw UserError(file.string() + ": cannot open data file");
  RecordReader reader(in, file.string(), file.extension() == ".tsv");
  std::vector<Record> out;
  for (Record r; reader.next(r);)
    if (!r.fields.is_null()) out.push_back(std::move(r));
  if (out.empty()) throw UserError(file.string() + ": no examples in data file");
  return out;
}

}  // namespace unif::framework
