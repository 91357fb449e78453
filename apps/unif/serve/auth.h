// `unif serve --api-key` (or UNIF_API_KEY), apart from the HTTP library (as request.h): which
// requests must carry the key, whether one does, and whether an address reaches beyond this machine.
// Every route but GET /health takes `Authorization: Bearer KEY` (the scheme in any case, as HTTP's
// is); the key is compared in constant time and never written to a log.
#pragma once
#include <string>
#include <string_view>

namespace unif::app::serve {

/// Whether a request to `path` needs the key when the server has one (all but /health).
bool needs_api_key(std::string_view path);

/// Whether an Authorization header value is "Bearer <key>" for `key`. The comparison takes a time
/// that depends on the key's length only, not on where the given token first differs from it.
bool bearer_matches(std::string_view authorization, std::string_view key);

/// Whether --host is this machine only (127.0.0.0/8, ::1, localhost): a server bound anywhere else
/// without a key answers whoever reaches it.
bool is_loopback_host(const std::string& host);

}  // namespace unif::app::serve
