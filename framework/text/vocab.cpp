// Vocab loading with HF `load_vocab` semantics (see vocab.h).
#include "framework/text/vocab.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "framework/common/error.h"
#include "framework/text/unicode.h"

namespace unif::framework {

Vocab Vocab::load(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    throw UserError("vocab file " + file.string() +
                    ": not found (expected a vocab.txt with one "
                    "WordPiece token per line)");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw UserError("vocab file " + file.string() + ": cannot be opened for reading");
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) throw UserError("vocab file " + file.string() + ": read error");
  return parse(buf.str(), file.string());
}

Vocab Vocab::parse(std::string_view text, const std::string& source) {
  Vocab v;
  v.source_ = source;
  if (text.empty()) throw UserError("vocab file " + source + ": is empty (expected one WordPiece token per line)");
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find_first_of("\r\n", pos);
    size_t next;
    if (end == std::string_view::npos) {
      end = next = text.size();
    } else if (text[end] == '\r' && end + 1 < text.size() && text[end + 1] == '\n') {
      next = end + 2;
    } else {
      next = end + 1;
    }
    std::string_view line = text.substr(pos, end - pos);
    const auto id = static_cast<int64_t>(v.lines_.size());
    if (!unicode::is_valid_utf8(line))
      throw UserError("vocab file " + source + " line " + std::to_string(id + 1) + ": not valid UTF-8");
    v.lines_.emplace_back(line);
    v.ids_[std::string(line)] = id;  // a later duplicate wins, as in HF
    v.max_token_chars_ = std::max(v.max_token_chars_, static_cast<int>(unicode::decode_utf8(line).size()));
    pos = next;
  }
  auto unk = v.ids_.find(std::string(kUnkToken));
  if (unk == v.ids_.end())
    throw UserError("vocab file " + source +
                    ": has no \"[UNK]\" line (every BERT vocabulary needs "
                    "the unknown-word token)");
  v.unk_id_ = unk->second;
  return v;
}

std::optional<int64_t> Vocab::find(const std::string& token) const {
  auto it = ids_.find(token);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

int64_t Vocab::id(std::string_view token) const {
  auto found = find(std::string(token));
  return found ? *found : unk_id_;
}

const std::string& Vocab::token(int64_t id) const {
  if (id < 0 || id >= size()) return lines_[static_cast<size_t>(unk_id_)];
  const std::string& t = lines_[static_cast<size_t>(id)];
  auto it = ids_.find(t);
  if (it->second != id) return lines_[static_cast<size_t>(unk_id_)];  // shadowed duplicate
  return t;
}

}  // namespace unif::framework
