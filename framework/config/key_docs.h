// The config key reference for `unif help keys`: docs/spec.md's section 8 table ("| `key` | default
// | meaning |"), read from the text of docs/spec.md (the build embeds it in the unif binary), so
// the table stays the one place that says what each key does; tests/unit/test_docs.cpp keeps it
// equal to the keys the parser accepts.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace unif::framework {

struct KeyDoc {
  std::string key;            // "training.optimizer.lr"
  std::string default_value;  // "5.0e-5", markdown removed
  std::string meaning;        // markdown removed; may be ""
};

/// The rows of the first table in the "## 8." section of `spec_md`, in the table's order, with backticks
/// removed and "\|" read as "|". Empty when the section or table is absent.
std::vector<KeyDoc> parse_key_docs(std::string_view spec_md);

/// One line per key, "key  default  meaning" in aligned columns (the meaning cut to its first
/// sentence), a blank line between top-level sections.
std::string format_key_docs(const std::vector<KeyDoc>& rows);

}  // namespace unif::framework
