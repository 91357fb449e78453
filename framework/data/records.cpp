#include "framework/data/records.h"

#include <algorithm>
#include <cctype>
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

bool is_blank(const std::string& line) { return line.find_first_not_of(" \t") == std::string::npos; }

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// "[a, b, c]", each name cut to 40 bytes and at most 12 names (a headerless file's first row can
/// be long text).
std::string bracket_list(const std::vector<std::string>& names) {
  std::string out = "[";
  for (std::size_t i = 0; i < names.size() && i < 12; ++i) {
    std::string n = names[i];
    if (n.size() > 40) {
      std::size_t cut = 40;
      while (cut > 0 && (static_cast<unsigned char>(n[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
      n = n.substr(0, cut) + "...";
    }
    out += (i ? ", " : "") + n;
  }
  if (names.size() > 12) out += ", ... (" + std::to_string(names.size()) + " in all)";
  return out + "]";
}

/// One CSV record (RFC 4180) read a physical line at a time, in one pass: feed() each line of the
/// record; Open: a quoted cell is still open at the end of the line (the record goes on on the next
/// line, joined with '\n'); Error: `error_at` is the offset in the line of a character after a
/// closing quote other than a comma.
enum class CsvStatus { Done, Open, Error };
class CsvRecord {
 public:
  explicit CsvRecord(std::vector<std::string>& cells) : cells_(cells) { cells_.clear(); }
  CsvStatus feed(const std::string& line, std::size_t& error_at) {
    if (state_ == State::Quoted) cur_ += '\n';  // the line break inside the quoted cell
    for (std::size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      switch (state_) {
        case State::CellStart:
          if (c == '"')
            state_ = State::Quoted;
          else if (c == ',')
            end_cell();
          else
            cur_ += c, state_ = State::Unquoted;
          break;
        case State::Unquoted:  // runs to the next comma; a quote inside it is kept as written
          if (c == ',')
            end_cell();
          else
            cur_ += c;
          break;
        case State::Quoted:
          if (c == '"')
            state_ = State::QuoteInQuoted;
          else
            cur_ += c;
          break;
        case State::QuoteInQuoted:  // "" is one quote; else the cell ended at the quote
          if (c == '"') {
            cur_ += '"', state_ = State::Quoted;
          } else if (c == ',') {
            end_cell();
          } else {
            error_at = i;
            return CsvStatus::Error;
          }
          break;
      }
    }
    if (state_ == State::Quoted) return CsvStatus::Open;
    end_cell();  // the last cell (empty after a comma at the end)
    return CsvStatus::Done;
  }

 private:
  enum class State { CellStart, Unquoted, Quoted, QuoteInQuoted };
  void end_cell() {
    cells_.push_back(std::move(cur_));
    cur_.clear();
    state_ = State::CellStart;
  }
  std::vector<std::string>& cells_;
  std::string cur_;
  State state_ = State::CellStart;
};

/// A CoNLL line's columns: tab-separated when the line has a tab (a token may then hold spaces),
/// else separated by runs of spaces. Empty columns are dropped.
std::vector<std::string> conll_columns(const std::string& line) {
  std::vector<std::string> out;
  const bool tabs = line.find('\t') != std::string::npos;
  std::string cur;
  auto flush = [&] {
    const auto b = cur.find_first_not_of(' ');
    if (b != std::string::npos) out.push_back(cur.substr(b, cur.find_last_not_of(' ') - b + 1));
    cur.clear();
  };
  for (char c : line) {
    if (c == '\t' || (!tabs && c == ' '))
      flush();
    else
      cur += c;
  }
  flush();
  return out;
}

}  // namespace

std::string to_string(RecordFormat format) {
  switch (format) {
    case RecordFormat::Jsonl: return "JSONL";
    case RecordFormat::Tsv: return "TSV";
    case RecordFormat::Csv: return "CSV";
    case RecordFormat::Conll: return "CoNLL";
  }
  return "JSONL";
}

std::string supported_formats() {
  return "data files are .jsonl (one JSON object a line), .tsv or .csv (a header row naming the columns), or, "
         "for token_classification, .conll, .bio or .iob (a token and its tag a line, a blank line between "
         "sentences); masked_lm also reads .txt (one text a line)";
}

RecordFormat record_format_of(const std::filesystem::path& file) {
  const std::string ext = lower(file.extension().string());
  if (ext.empty() || ext == ".jsonl" || ext == ".json") return RecordFormat::Jsonl;
  if (ext == ".tsv") return RecordFormat::Tsv;
  if (ext == ".csv") return RecordFormat::Csv;
  if (ext == ".conll" || ext == ".bio" || ext == ".iob") return RecordFormat::Conll;
  throw UserError(file.string() + ": unsupported data file extension '" + file.extension().string() + "'; " +
                  supported_formats());
}

bool string_cells(const std::filesystem::path& file) {
  const std::string ext = lower(file.extension().string());
  return ext == ".tsv" || ext == ".csv";
}

std::string where(const std::filesystem::path& file, const Record& r) {
  return file.string() + ":" + std::to_string(r.line) + ": ";
}

RecordReader::RecordReader(std::istream& in, std::string name, bool tsv)
    : RecordReader(in, std::move(name), tsv ? RecordFormat::Tsv : RecordFormat::Jsonl) {}

RecordReader::RecordReader(std::istream& in, std::string name, RecordFormat format, RecordFields fields)
    : in_(in), name_(std::move(name)), format_(format), fields_(std::move(fields)) {
  if (format_ == RecordFormat::Conll && !fields_.conll_ok) {
    const std::string ext = std::filesystem::path(name_).extension().string();
    throw UserError(
        name_ + ": a " + (ext.empty() ? std::string("CoNLL") : ext) +
        " file holds token classification data (a token and its tag a line)" +
        (fields_.task.empty() ? std::string() : "; task " + fields_.task + " reads .jsonl, .tsv or .csv files"));
  }
}

void RecordReader::check_utf8(const std::string& text, int64_t line) const {
  // Checked for every format: a TSV cell would otherwise reach the tokenizer with its bad bytes
  // dropped silently, and the JSON printed by `unif predict` could not hold it.
  if (const auto bad = unicode::invalid_utf8_at(text); bad != std::string::npos) {
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(text[bad]));
    throw UserError(name_ + ":" + std::to_string(line) + ": invalid UTF-8 at byte " + std::to_string(bad + 1) +
                    " of the line (" + byte + "); data files must be UTF-8");
  }
}

void RecordReader::check_header(int64_t line) const {
  const std::string at = name_ + ":" + std::to_string(line) + ": ";
  for (std::size_t i = 0; i < header_.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (header_[i] == header_[j])
        throw UserError(at + "the header names column '" + header_[i] + "' twice (columns " + std::to_string(j + 1) +
                        " and " + std::to_string(i + 1) + ")");
  if (fields_.text_fields.empty()) return;
  const auto has = [&](const std::string& f) { return std::find(header_.begin(), header_.end(), f) != header_.end(); };
  bool missing = false;
  for (const auto& f : fields_.text_fields) missing = missing || !has(f);
  // Inputs to predict may name their text columns by the standard names (text, text_pair).
  if (missing && fields_.bare_values && has("text") && (fields_.text_fields.size() < 2 || has("text_pair")))
    missing = false;
  if (fields_.label_required && !fields_.label_field.empty()) missing = missing || !has(fields_.label_field);
  if (!missing) return;
  std::string asks = "text_fields " + bracket_list(fields_.text_fields);
  if (fields_.label_required && !fields_.label_field.empty()) asks += " and label_field " + fields_.label_field;
  throw UserError(at + "the header has columns " + bracket_list(header_) + " but the config asks for " + asks +
                  " (data.text_fields, data.label_field); a file without a header row is not supported: add one");
}

bool RecordReader::next_csv_cells(std::vector<std::string>& cells, int64_t& first_line, bool& blank) {
  std::string line;
  CsvRecord record(cells);
  bool started = false;
  blank = false;
  while (std::getline(in_, line)) {
    ++line_;
    if (!line.empty() && line.back() == '\r') line.pop_back();               // CRLF (inside quotes too: read as \n)
    if (line_ == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // UTF-8 BOM
    check_utf8(line, line_);
    if (!started) {
      first_line = line_;
      if (is_blank(line)) {
        blank = true;
        return true;
      }
      started = true;
    }
    std::size_t error_at = 0;
    const CsvStatus status = record.feed(line, error_at);
    if (status == CsvStatus::Done) return true;
    if (status == CsvStatus::Error) {
      throw UserError(name_ + ":" + std::to_string(line_) + ": text after a closing quote (byte " +
                      std::to_string(error_at + 1) +
                      " of the line); in CSV a quoted cell ends at its closing quote, "
                      "and a quote inside it is written twice (\"\")");
    }
  }
  if (in_.bad()) throw UserError(name_ + ": read error");
  if (started)
    throw UserError(name_ + ":" + std::to_string(first_line) +
                    ": a quoted cell opened in this record is not closed "
                    "by the end of the file (in CSV a quote inside a quoted cell is written twice: \"\")");
  return false;
}

bool RecordReader::next_conll(Record& r) {
  const std::string token_field = fields_.text_fields.empty() ? "tokens" : fields_.text_fields[0];
  const std::string tag_field = fields_.label_field.empty() ? "tags" : fields_.label_field;
  std::vector<std::string> tokens, tags;
  int64_t first = 0;
  bool tagged = false;
  const auto emit = [&] {
    r = Record{nlohmann::json::object(), first};
    r.fields[token_field] = tokens;
    if (tagged) r.fields[tag_field] = tags;
    return true;
  };
  std::string line;
  while (std::getline(in_, line)) {
    const int64_t n = ++line_;
    const auto at = [&] { return name_ + ":" + std::to_string(n) + ": "; };
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (n == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // UTF-8 BOM
    check_utf8(line, n);
    const auto cols = conll_columns(line);
    if (cols.empty() || cols[0] == "-DOCSTART-") {  // a sentence ends at a blank line or a new document
      if (!tokens.empty()) return emit();
      continue;
    }
    const bool has_tag = cols.size() >= 2;
    if (tokens.empty()) {
      first = n;
      tagged = has_tag;
    }
    if (!has_tag && fields_.label_required)
      throw UserError(at() +
                      "expected a token and its tag (the last column), separated by spaces or a tab, got "
                      "only '" +
                      cols[0] + "'");
    if (has_tag != tagged)
      throw UserError(at() +
                      (has_tag ? "a tag here, but line " + std::to_string(first) + " of the sentence has none"
                               : "no tag here, but line " + std::to_string(first) + " of the sentence has one") +
                      "; tag every token of a sentence or none");
    tokens.push_back(cols.front());
    if (has_tag) tags.push_back(cols.back());
  }
  if (in_.bad()) throw UserError(name_ + ": read error");
  if (!tokens.empty()) return emit();
  return false;
}

bool RecordReader::next(Record& r) {
  if (format_ == RecordFormat::Conll) return next_conll(r);
  if (format_ == RecordFormat::Csv) {
    std::vector<std::string> cells;
    int64_t n = 0;
    bool blank = false;
    while (next_csv_cells(cells, n, blank)) {
      if (blank) {
        r = Record{nullptr, n};
        return true;
      }
      if (!have_header_) {
        header_ = std::move(cells);
        have_header_ = true;
        check_header(n);
        continue;
      }
      if (cells.size() != header_.size())
        throw UserError(name_ + ":" + std::to_string(n) + ": expected " + std::to_string(header_.size()) +
                        " comma-separated cells (as the header), got " + std::to_string(cells.size()) +
                        " (a cell holding a comma is quoted: \"a, b\")");
      r = Record{nlohmann::json::object(), n};
      for (size_t i = 0; i < cells.size(); ++i) r.fields[header_[i]] = cells[i];
      return true;
    }
    return false;
  }
  std::string line;
  while (std::getline(in_, line)) {
    const int64_t n = ++line_;
    const auto at = [&] { return name_ + ":" + std::to_string(n) + ": "; };
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (n == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // UTF-8 BOM
    if (is_blank(line)) {
      r = Record{nullptr, n};
      return true;
    }
    check_utf8(line, n);
    if (format_ == RecordFormat::Tsv) {
      auto cells = split(line, '\t');
      if (!have_header_) {
        header_ = cells;
        have_header_ = true;
        check_header(n);
        continue;
      }
      if (cells.size() != header_.size())
        throw UserError(at() + "expected " + std::to_string(header_.size()) +
                        " tab-separated cells (as the header), got " + std::to_string(cells.size()));
      r = Record{nlohmann::json::object(), n};
      for (size_t i = 0; i < cells.size(); ++i) r.fields[header_[i]] = cells[i];
      return true;
    }
    const bool first_record = !have_header_;  // JSONL has no header: the flag marks the first record
    have_header_ = true;
    r = Record{{}, n};
    try {
      r.fields = parse_json(line);
    } catch (const JsonInputError& e) {
      // A first line that is no JSON object at all is most likely another format named .jsonl.
      const auto c = line[line.find_first_not_of(" \t")];
      throw UserError(
          at() + "invalid JSON (" + e.what() + ")" +
          (first_record && c != '{' && c != '[' ? "; the file does not look like JSONL: " + supported_formats() : ""));
    }
    if (!r.fields.is_object() && !(fields_.bare_values && (r.fields.is_string() || r.fields.is_array())))
      throw UserError(at() + (fields_.bare_values ? "expected a JSON object, a string or a list per line"
                                                  : "expected a JSON object per line"));
    return true;
  }
  if (in_.bad()) throw UserError(name_ + ": read error");
  return false;
}

std::vector<Record> read_records(const std::filesystem::path& file, const RecordFields& fields) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) throw UserError(file.string() + ": data file not found");
  const RecordFormat format = record_format_of(file);
  std::ifstream in(file, std::ios::binary);
  if (!in) throw UserError(file.string() + ": cannot open data file");
  RecordReader reader(in, file.string(), format, fields);  // CoNLL for another task: UserError
  std::vector<Record> out;
  for (Record r; reader.next(r);)
    if (!r.fields.is_null()) out.push_back(std::move(r));
  if (out.empty()) throw UserError(file.string() + ": no examples in data file");
  return out;
}

std::vector<Record> read_records(const std::filesystem::path& file) { return read_records(file, RecordFields{}); }

}  // namespace unif::framework
