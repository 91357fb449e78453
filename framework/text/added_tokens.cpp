// split_added_tokens: see added_tokens.h.
#include "framework/text/added_tokens.h"

#include "framework/text/unicode.h"

namespace unif::framework {

void split_added_tokens(const std::u32string& text, const std::vector<AddedToken>& added,
                        const std::function<void(int64_t, int64_t)>& plain,
                        const std::function<void(size_t, int64_t, int64_t)>& token) {
  std::vector<std::u32string> contents;
  for (const auto& a : added) contents.push_back(unicode::decode_utf8(a.content));
  const auto n = static_cast<int64_t>(text.size());
  int64_t done = 0;  // text before this is handed on
  for (int64_t i = 0; i < n;) {
    int best = -1;
    size_t best_len = 0;
    for (size_t a = 0; a < contents.size(); ++a)
      if (contents[a].size() > best_len && text.compare(static_cast<size_t>(i), contents[a].size(), contents[a]) == 0)
        best = static_cast<int>(a), best_len = contents[a].size();
    if (best < 0) {
      ++i;
      continue;
    }
    const int64_t stop = i + static_cast<int64_t>(best_len);
    int64_t plain_end = i, next = stop;
    if (added[best].lstrip)
      while (plain_end > done && unicode::is_white_space(text[plain_end - 1])) --plain_end;
    if (added[best].rstrip)
      while (next < n && unicode::is_white_space(text[next])) ++next;
    if (done < plain_end) plain(done, plain_end);
    token(static_cast<size_t>(best), i, stop);
    done = i = next;
  }
  if (done < n) plain(done, n);
}

}  // namespace unif::framework
