// Vocab: a WordPiece vocabulary file read exactly as HF's `load_vocab` reads it — one token per
// line, the line number is the id. See Vocab::parse for the rules (line endings, blank lines,
// duplicates). Not a tokenizer: see bert_tokenizer.h.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace unif::framework {

class Vocab {
 public:
  /// The token every vocabulary must contain; unknown words map to it.
  static constexpr std::string_view kUnkToken = "[UNK]";

  /// Reads `file` (UTF-8 text). Throws unif::UserError naming the file when it is missing or
  /// unreadable, is not valid UTF-8 (with the line number), is empty, or has no "[UNK]" line.
  static Vocab load(const std::filesystem::path& file);

  /// Parses vocabulary text as HF `load_vocab` does with Python's universal newlines:
  /// lines end at "\n", "\r\n" or "\r" (a final line needs no terminator); a line's text is the
  /// token verbatim (no other stripping; a blank line is the token ""); the id of a token is its
  /// 0-based line number. A token on several lines maps to its LAST line's id, and the earlier
  /// ids have no token of their own (token() answers "[UNK]" for them), yet still count in size().
  /// `source` names the input in error messages.
  static Vocab parse(std::string_view text, const std::string& source);

  /// Number of ids = number of lines (HF's len(vocab) counts distinct tokens instead; the two
  /// differ only when the file has duplicate lines).
  int64_t size() const { return static_cast<int64_t>(lines_.size()); }
  /// Number of distinct tokens (HF `vocab_size`).
  int64_t distinct_size() const { return static_cast<int64_t>(ids_.size()); }

  /// Id of `token`, or nullopt.
  std::optional<int64_t> find(const std::string& token) const;
  /// Id of `token`, or the "[UNK]" id (HF `_convert_token_to_id`).
  int64_t id(std::string_view token) const;
  bool contains(std::string_view token) const { return find(std::string(token)).has_value(); }
  /// Token of `id`; "[UNK]" for ids out of range or shadowed by a later duplicate (HF
  /// `_convert_id_to_token`).
  const std::string& token(int64_t id) const;

  int64_t unk_id() const { return unk_id_; }
  /// Longest token, in code points (bounds the WordPiece search).
  int max_token_chars() const { return max_token_chars_; }
  /// The file (or `source`) this vocabulary came from.
  const std::string& source() const { return source_; }

 private:
  Vocab() = default;

  std::vector<std::string> lines_;                // id -> the line's text
  std::unordered_map<std::string, int64_t> ids_;  // token -> id of its last line
  int64_t unk_id_ = -1;
  int max_token_chars_ = 0;
  std::string source_;
};

}  // namespace unif::framework
