// The fuzz targets: one function per parser that reads user files. Each takes the raw
// bytes of one input and returns true when the parser accepted it, false when it refused it with
// a unif::UserError (the `error:` line the CLI prints). Anything else escapes: another exception,
// a crash, a sanitizer report, or a broken invariant (FUZZ_CHECK prints it and aborts).
//
// Two callers share them: tests/fuzz/fuzz_main.cpp (one libFuzzer binary per target, built by
// scripts/fuzz.sh into build-fuzz/) and tests/unit/test_fuzz_corpus.cpp, which replays every file
// of every target's corpus folders (tests/fuzz/corpus/<folder>/: seeds and each input a fuzzer
// found) in the normal unit tier.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace unif::fuzz {

struct Target {
  const char* name;  // fuzz_<name> is the libFuzzer binary
  bool (*run)(std::string_view input);
  std::vector<std::string> corpus;  // folders under tests/fuzz/corpus/ (seeds, regression inputs)
  const char* what;                 // one line for the docs and the fuzz script
};

/// Every target, in the order scripts/fuzz.sh runs them.
const std::vector<Target>& targets();

/// The target called `name`, or nullptr.
const Target* find_target(std::string_view name);

/// Removes this process's scratch folder (inputs are written there; it is removed at exit too,
/// but a child that leaves by _exit must call this).
void remove_scratch();

}  // namespace unif::fuzz
