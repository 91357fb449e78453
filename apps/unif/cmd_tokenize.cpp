// `unif tokenize` (SPEC §2) — placeholder until the tokenizer lands.
#include "apps/unif/commands.h"
#include "framework/common/error.h"

namespace unif::app {

Command add_tokenize(CLI::App& app) {
  auto* cmd = app.add_subcommand("tokenize", "Tokenize stdin lines with a WordPiece vocabulary");
  return [cmd] { (void)cmd; throw UserError("tokenize: not built yet"); return 2; };
}

}  // namespace unif::app
