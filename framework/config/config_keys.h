// The config schema as a list: every key path the parser accepts (leaves only, e.g.
// "training.optimizer.lr", "model.bert.hidden_size"), in the order the parser reads them. Used to
// keep docs/spec.md's key table in step with the parser (tests/unit/test_docs.cpp) and for
// "did you mean" across sections (training.lr -> training.optimizer.lr).
#pragma once
#include <string>
#include <vector>

namespace unif::framework {

std::vector<std::string> config_keys();

}  // namespace unif::framework
