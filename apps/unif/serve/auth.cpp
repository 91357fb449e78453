#include "apps/unif/serve/auth.h"

#include <cctype>
#include <cstddef>

namespace unif::app::serve {

bool needs_api_key(std::string_view path) { return path != "/health"; }

bool bearer_matches(std::string_view authorization, std::string_view key) {
  // RFC 7235: the scheme is case-insensitive, then one or more spaces, then the credentials.
  constexpr std::string_view scheme = "bearer";
  if (key.empty() || authorization.size() <= scheme.size()) return false;
  for (size_t i = 0; i < scheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != scheme[i]) return false;
  std::string_view token = authorization.substr(scheme.size());
  if (token.front() != ' ') return false;
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
  // Every byte of the key is looked at whatever the token holds: no early exit on a mismatch.
  volatile unsigned char diff = token.size() == key.size() ? 0 : 1;
  for (size_t i = 0; i < key.size(); ++i) {
    const unsigned char t = i < token.size() ? static_cast<unsigned char>(token[i]) : 0;
    diff = static_cast<unsigned char>(diff | (t ^ static_cast<unsigned char>(key[i])));
  }
  return diff == 0;
}

bool is_loopback_host(const std::string& host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  // 127.0.0.0/8, written as a dotted quad.
  if (host.rfind("127.", 0) != 0) return false;
  int dots = 0;
  for (char c : host) {
    if (c == '.')
      ++dots;
    else if (!std::isdigit(static_cast<unsigned char>(c)))
      return false;
  }
  return dots == 3;
}

}  // namespace unif::app::serve
