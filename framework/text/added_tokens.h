// Added tokens (HF's AddedVocabulary): special tokens such as <s> or <mask> are cut out of raw text
// before any other step of a tokenizer, wherever they occur.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace unif::framework {

/// A token matched in raw text before anything else (HF's AddedToken).
struct AddedToken {
  std::string content;
  bool lstrip = false;  // the match takes the white space before it
  bool rstrip = false;  // the match takes the white space after it
};

/// Cuts `text` at every added token, leftmost first and the longest at a position: `plain(begin,
/// end)` gets each stretch between them (possibly none), `token(index, start, end)` each match with
/// its code point span (the white space lstrip / rstrip take is in neither).
void split_added_tokens(const std::u32string& text, const std::vector<AddedToken>& added,
                        const std::function<void(int64_t begin, int64_t end)>& plain,
                        const std::function<void(size_t index, int64_t start, int64_t end)>& token);

}  // namespace unif::framework
