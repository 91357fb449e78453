// docs/spec.md's key table -> rows and aligned text (see key_docs.h).
#include "framework/config/key_docs.h"

#include <algorithm>
#include <sstream>

#include "framework/common/strings.h"

namespace unif::framework {

namespace {

/// A markdown cell as plain text: backticks dropped, "\|" read as "|".
std::string plain(const std::string& cell) {
  std::string out;
  for (std::size_t i = 0; i < cell.size(); ++i) {
    if (cell[i] == '`') continue;
    if (cell[i] == '\\' && i + 1 < cell.size() && cell[i + 1] == '|') continue;
    out += cell[i];
  }
  return trim(out);
}

/// The cells of a table row "| a | b \| c | d |" -> {a, b \| c, d} (escaped bars kept for plain()).
std::vector<std::string> cells(const std::string& row) {
  std::vector<std::string> out;
  std::string cur;
  for (std::size_t i = 1; i < row.size(); ++i) {  // row[0] is the leading '|'
    if (row[i] == '|' && row[i - 1] != '\\') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += row[i];
    }
  }
  return out;
}

/// `text` up to its first "; " or ". " outside brackets ("e.g. " and "i.e. " do not end it).
std::string first_clause(const std::string& text) {
  int depth = 0;
  for (std::size_t i = 0; i + 1 < text.size(); ++i) {
    const char c = text[i];
    if (c == '(' || c == '[') ++depth;  // brackets of either kind: intervals read "(0, 1]"
    if ((c == ')' || c == ']') && depth > 0) --depth;
    if (depth == 0 && (c == ';' || c == '.') && text[i + 1] == ' ') {
      if (c == '.' && i >= 3 && (text.compare(i - 3, 3, "e.g") == 0 || text.compare(i - 3, 3, "i.e") == 0)) continue;
      return text.substr(0, i);
    }
  }
  return text;
}

}  // namespace

std::vector<KeyDoc> parse_key_docs(std::string_view spec_md) {
  const std::string spec(spec_md);
  const auto start = spec.find("\n## 8. ");
  if (start == std::string::npos) return {};
  const auto end = spec.find("\n## ", start + 1);
  std::istringstream lines(spec.substr(start, end == std::string::npos ? std::string::npos : end - start));
  std::vector<KeyDoc> out;
  bool in_table = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("|", 0) != 0) {
      if (in_table) break;  // the first table of the section ends
      continue;
    }
    in_table = true;
    if (line.rfind("| `", 0) != 0) continue;  // the heading and rule rows
    const auto c = cells(line);
    if (c.size() < 2) continue;
    out.push_back({plain(c[0]), plain(c[1]), c.size() > 2 ? plain(c[2]) : ""});
  }
  return out;
}

std::string format_key_docs(const std::vector<KeyDoc>& rows) {
  std::size_t key_width = 0;
  for (const auto& r : rows) key_width = std::max(key_width, r.key.size());
  const std::size_t default_width = 16;
  std::string out, section;
  for (const auto& r : rows) {
    // Top-level keys (task, output_dir, seed) form one group; a.b.c belongs to a.
    const std::string top = r.key.find('.') == std::string::npos ? "" : r.key.substr(0, r.key.find('.'));
    if (!out.empty() && top != section) out += "\n";
    section = top;
    std::string line = r.key + std::string(key_width + 2 - r.key.size(), ' ') + r.default_value;
    const std::string meaning = first_clause(r.meaning);
    if (!meaning.empty()) {
      const std::size_t used = r.default_value.size();
      line += std::string(used < default_width ? default_width - used + 2 : 2, ' ') + meaning;
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace unif::framework
