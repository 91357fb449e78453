// `unif help keys`: every config key with its default and one line of meaning, from docs/spec.md's
// section 8 table, which the build embeds (spec_md.inc, apps/CMakeLists.txt): the table stays the one
// place that documents the keys, and tests/unit/test_docs.cpp keeps it equal to the parser's keys.
#include <iostream>

#include "apps/unif/commands.h"
#include "framework/config/key_docs.h"

namespace unif::app {

namespace {

const unsigned char kSpecMd[] = {
#include "spec_md.inc"
    0};

}  // namespace

int print_config_keys() {
  std::cout << "Every config key, its default and what it does (docs/spec.md section 8 has the full text).\n"
               "Set them in the YAML file (nested: training: {optimizer: {lr: 1e-4}}) or with --set "
               "training.optimizer.lr=1e-4.\n"
               "A starting config: unif init TASK [--model DIR] [--data FILE].\n\n";
  std::cout << framework::format_key_docs(framework::parse_key_docs(reinterpret_cast<const char*>(kSpecMd)));
  return 0;
}

}  // namespace unif::app
