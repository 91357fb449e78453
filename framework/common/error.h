// UserError: bad input from the user (file, config key, data line, checkpoint). The `unif` binary
// prints it as one `error: <what>` line on stderr and exits with code 2 (SPEC §2). The message
// names the file / key / line and what was expected.
#pragma once
#include <stdexcept>
#include <string>

namespace unif {

struct UserError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace unif
