// Downloading a model from the Hugging Face Hub into its cache: see hub_download.h.
#include "framework/common/hub_download.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "framework/common/error.h"
#include "framework/common/hub_cache.h"

namespace unif::hub {

namespace fs = std::filesystem;

namespace {

// ---- SHA-256 (FIPS 180-4), for the LFS files whose etag is their sha256 ----

class Sha256 {
 public:
  void update(const unsigned char* data, std::size_t n) {
    bits_ += static_cast<uint64_t>(n) * 8;
    while (n > 0) {
      const std::size_t take = std::min(n, buffer_.size() - used_);
      std::copy(data, data + take, buffer_.begin() + static_cast<std::ptrdiff_t>(used_));
      used_ += take, data += take, n -= take;
      if (used_ == buffer_.size()) {
        block(buffer_.data());
        used_ = 0;
      }
    }
  }

  std::string hex() {
    const uint64_t bits = bits_;
    const unsigned char one = 0x80, zero = 0;
    update(&one, 1);
    while (used_ != 56) update(&zero, 1);
    unsigned char length[8];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(bits >> (56 - 8 * i));
    update(length, 8);
    std::string out;
    char digits[9];
    for (uint32_t v : h_) {
      std::snprintf(digits, sizeof digits, "%08" PRIx32, v);
      out += digits;
    }
    return out;
  }

 private:
  static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

  void block(const unsigned char* p) {
    static constexpr std::array<uint32_t, 64> k{
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
    uint32_t w[64];
    for (int i = 0; i < 16; ++i)
      w[i] = static_cast<uint32_t>(p[4 * i]) << 24 | static_cast<uint32_t>(p[4 * i + 1]) << 16 |
             static_cast<uint32_t>(p[4 * i + 2]) << 8 | static_cast<uint32_t>(p[4 * i + 3]);
    for (int i = 16; i < 64; ++i) {
      const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
    for (int i = 0; i < 64; ++i) {
      const uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
      const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    h_[0] += a, h_[1] += b, h_[2] += c, h_[3] += d, h_[4] += e, h_[5] += f, h_[6] += g, h_[7] += h;
  }

  std::array<uint32_t, 8> h_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                             0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::array<unsigned char, 64> buffer_{};
  std::size_t used_ = 0;
  uint64_t bits_ = 0;
};

bool is_sha256_hex(const std::string& s) {
  return s.size() == 64 &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// ---- URLs ----

struct HubUrl {
  std::string scheme, host;  // host: an IPv6 address keeps its brackets
  int port = 0;
  std::string target;  // path and query, "/" at least
  std::string origin() const { return scheme + "://" + host + ":" + std::to_string(port); }
};

std::optional<HubUrl> parse_hub_url(const std::string& url) {
  const auto sep = url.find("://");
  if (sep == std::string::npos) return std::nullopt;
  HubUrl u;
  for (char c : url.substr(0, sep)) u.scheme += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (u.scheme != "http" && u.scheme != "https") return std::nullopt;
  const std::string rest = url.substr(sep + 3);
  const auto path = rest.find_first_of("/?");
  std::string authority = rest.substr(0, path);
  u.target = path == std::string::npos ? "/" : rest.substr(path);
  if (u.target[0] == '?') u.target = "/" + u.target;
  if (const auto at = authority.rfind('@'); at != std::string::npos) authority = authority.substr(at + 1);
  std::string port;
  if (!authority.empty() && authority[0] == '[') {
    const auto close = authority.find(']');
    if (close == std::string::npos) return std::nullopt;
    u.host = authority.substr(0, close + 1);
    if (close + 1 < authority.size() && authority[close + 1] == ':') port = authority.substr(close + 2);
  } else {
    const auto colon = authority.find(':');
    u.host = authority.substr(0, colon);
    if (colon != std::string::npos) port = authority.substr(colon + 1);
  }
  if (u.host.empty()) return std::nullopt;
  for (auto& c : u.host) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (port.empty()) {
    u.port = u.scheme == "https" ? 443 : 80;
  } else {
    if (port.size() > 5 || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::nullopt;
    u.port = std::stoi(port);
  }
  return u;
}

/// A Location header against the URL it answered.
std::string join_location(const HubUrl& base, const std::string& location) {
  if (location.find("://") != std::string::npos) return location;
  if (location.compare(0, 2, "//") == 0) return base.scheme + ":" + location;
  if (!location.empty() && location[0] == '/') return base.origin() + location;
  const std::string path = base.target.substr(0, base.target.find('?'));
  return base.origin() + path.substr(0, path.rfind('/') + 1) + location;
}

/// urllib.parse.quote(s, safe): unreserved characters and `safe` as they are, the rest %XX.
std::string quote_url(const std::string& s, const std::string& safe) {
  std::string out;
  char hex[4];
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
        safe.find(static_cast<char>(c)) != std::string::npos) {
      out += static_cast<char>(c);
    } else {
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

std::string header_of(const httplib::Headers& headers, const std::string& name) {
  for (const auto& [k, v] : headers)
    if (k.size() == name.size() &&
        std::equal(k.begin(), k.end(), name.begin(), [](char a, char b) { return std::tolower(a) == std::tolower(b); }))
      return v;
  return "";
}

/// HTTPS_PROXY / HTTP_PROXY (either case) for the URL's scheme, unless NO_PROXY names its host.
void use_proxy(httplib::Client& client, const HubUrl& u) {
  auto env = [](const char* a, const char* b) -> std::string {
    for (const char* n : {a, b})
      if (const char* v = std::getenv(n); v != nullptr && *v != '\0') return v;
    return "";
  };
  const std::string proxy = u.scheme == "https" ? env("https_proxy", "HTTPS_PROXY") : env("http_proxy", "HTTP_PROXY");
  if (proxy.empty()) return;
  const std::string no_proxy = env("no_proxy", "NO_PROXY");
  std::size_t start = 0;
  while (start <= no_proxy.size()) {
    const auto comma = no_proxy.find(',', start);
    std::string entry = no_proxy.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    entry.erase(0, entry.find_first_not_of(" \t"));
    entry.erase(entry.find_last_not_of(" \t") + 1);
    if (!entry.empty() && entry[0] == '.') entry.erase(0, 1);
    if (entry == "*") return;
    if (!entry.empty() && (u.host == entry || (u.host.size() > entry.size() &&
                                               u.host.compare(u.host.size() - entry.size(), entry.size(), entry) == 0 &&
                                               u.host[u.host.size() - entry.size() - 1] == '.')))
      return;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  const auto p = parse_hub_url(proxy.find("://") == std::string::npos ? "http://" + proxy : proxy);
  if (!p) return;
  std::string host = p->host;
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  client.set_proxy(host, p->port);
}

std::unique_ptr<httplib::Client> hub_client(const HubUrl& u) {
  auto client = std::make_unique<httplib::Client>(u.origin());
  if (!client->is_valid())
    throw UserError("cannot open a connection to " + u.origin() + " (this build of unif cannot reach " + u.scheme +
                    " URLs)");
  client->set_connection_timeout(10, 0);
  client->set_read_timeout(60, 0);
  client->set_write_timeout(30, 0);
  client->set_follow_location(false);
  use_proxy(*client, u);
  return client;
}

// ---- what the Hub answers ----

/// A transfer that did not reach the server, or broke off: the network, not the Hub.
struct HubNetworkError : UserError {
  using UserError::UserError;
};

struct HubReply {
  int status = 0;
  httplib::Headers headers;
  std::string body;
  std::string url;       // the URL that answered
  std::string location;  // a redirect's target (absolute), "" otherwise
};

std::string network_message(const std::string& url, httplib::Error error) {
  std::string why;
  switch (error) {
    case httplib::Error::Connection: why = "no connection"; break;
    case httplib::Error::ConnectionTimeout: why = "the connection timed out"; break;
    case httplib::Error::Read: why = "the connection broke off while reading"; break;
    case httplib::Error::Write: why = "the connection broke off while writing"; break;
    case httplib::Error::SSLConnection: why = "the TLS connection failed"; break;
    case httplib::Error::SSLServerVerification: why = "the server's TLS certificate could not be verified"; break;
    case httplib::Error::SSLLoadingCerts: why = "the system's CA certificates could not be loaded"; break;
    default: why = httplib::to_string(error); break;
  }
  return "cannot reach " + url + " (" + why +
         "): check the network connection (and HTTPS_PROXY), or set HF_HUB_OFFLINE=1 to use only the Hugging Face "
         "cache";
}

class HubSession {
 public:
  HubSession(std::string endpoint, std::optional<std::string> token)
      : endpoint_(std::move(endpoint)), token_(std::move(token)) {
    const auto e = parse_hub_url(endpoint_);
    if (!e) throw UserError("HF_ENDPOINT '" + endpoint_ + "' is not an http:// or https:// URL");
    endpoint_url_ = *e;
  }

  const std::string& endpoint() const { return endpoint_; }
  bool has_token() const { return token_.has_value(); }

  /// Headers for `u`: the token only to the endpoint itself (not to a CDN a file redirects to).
  httplib::Headers headers_for(const HubUrl& u) const {
    httplib::Headers h{{"User-Agent", "unif; hf_hub-compatible"}, {"Accept-Encoding", "identity"}};
    if (token_ && u.origin() == endpoint_url_.origin()) h.emplace("Authorization", "Bearer " + *token_);
    return h;
  }

  /// HEAD or GET (whole body) of `url`, following redirects on the endpoint's host; one to another
  /// host is followed only when `follow_off_host` (a HEAD stops there: its headers describe the file).
  HubReply fetch(const std::string& method, std::string url, bool follow_off_host) const {
    for (int hop = 0; hop < 10; ++hop) {
      const auto u = parse_hub_url(url);
      if (!u) throw UserError("cannot download from '" + url + "': not an http:// or https:// URL");
      auto client = hub_client(*u);
      const auto headers = headers_for(*u);
      auto result =
          method == "HEAD" ? client->Head(u->target.c_str(), headers) : client->Get(u->target.c_str(), headers);
      if (!result) throw HubNetworkError(network_message(url, result.error()));
      HubReply reply{result->status, result->headers, result->body, url, ""};
      const std::string location = header_of(reply.headers, "Location");
      if (reply.status / 100 != 3 || location.empty()) return reply;
      reply.location = join_location(*u, location);
      const auto next = parse_hub_url(reply.location);
      if (!next) return reply;
      if (next->origin() != u->origin() && !follow_off_host) return reply;
      url = reply.location;
    }
    throw UserError("cannot download from '" + url + "': more than 10 redirects");
  }

 private:
  std::string endpoint_;
  HubUrl endpoint_url_;
  std::optional<std::string> token_;
};

/// The one-line message of a Hub answer that is not a success.
std::string status_message(const HubSession& session, const HubReply& r, const std::string& repo_id,
                           const std::string& revision, const std::string& file) {
  const std::string code = header_of(r.headers, "X-Error-Code");
  std::string detail = header_of(r.headers, "X-Error-Message");
  const std::string status = std::to_string(r.status);
  const std::string where = " on " + session.endpoint();
  if (r.status == 401)
    return "the Hub refused '" + repo_id + "' (401 Unauthorized" + (detail.empty() ? "" : ": " + detail) +
           "): it is private or gated, or does not exist" +
           (session.has_token() ? "; the token given (HF_TOKEN, or the token file) has no access to it"
                                : "; set HF_TOKEN to an access token of an account that can read it");
  if (r.status == 403 || code == "GatedRepo")
    return "access to '" + repo_id + "' is restricted (" + status + " Forbidden" +
           (detail.empty() ? "" : ": " + detail) + "): a gated model needs its conditions accepted at " +
           session.endpoint() + "/" + repo_id + " and HF_TOKEN set to a token of that account";
  if (r.status == 404) {
    if (code == "RevisionNotFound")
      return "'" + repo_id + "' has no revision '" + revision + "'" + where + " (404 Not Found)";
    if (code == "EntryNotFound" && !file.empty())
      return "'" + repo_id + "' has no file '" + file + "' at revision '" + revision + "'" + where + " (404 Not Found)";
    return "no model '" + repo_id + "'" + (revision == "main" ? "" : " at revision '" + revision + "'") + where +
           " (404 Not Found)";
  }
  if (detail.empty() && r.body.size() < 200) detail = r.body;
  detail.erase(std::remove_if(detail.begin(), detail.end(), [](char c) { return c == '\n' || c == '\r'; }),
               detail.end());
  return session.endpoint() + " answered " + status + (detail.empty() ? "" : " (" + detail + ")") + " for " + r.url +
         (r.status == 429 || r.status >= 500 ? ": try again later" : "");
}

// ---- progress on stderr ----

std::string size_text(uint64_t bytes) {
  char out[32];
  if (bytes >= 1000ull * 1000 * 1000)
    std::snprintf(out, sizeof out, "%.2f GB", static_cast<double>(bytes) / 1e9);
  else if (bytes >= 1000ull * 1000)
    std::snprintf(out, sizeof out, "%.1f MB", static_cast<double>(bytes) / 1e6);
  else
    std::snprintf(out, sizeof out, "%.1f kB", static_cast<double>(bytes) / 1e3);
  return out;
}

/// One file's bytes: on a terminal one line redrawn (at most 10 times a second); otherwise a line
/// every 5 seconds and one at the end. Files under 1 MB say nothing.
class HubProgress {
 public:
  HubProgress(std::string name, uint64_t total, uint64_t done)
      : name_(std::move(name)),
        total_(total),
        done_(done),
        tty_(::isatty(STDERR_FILENO) == 1),
        quiet_(total > 0 && total < 1000 * 1000),
        last_(std::chrono::steady_clock::now()) {}

  void add(std::size_t n) {
    done_ += n;
    if (quiet_) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < (tty_ ? std::chrono::milliseconds(100) : std::chrono::milliseconds(5000))) return;
    last_ = now;
    show(false);
  }

  void finish() {
    if (!quiet_) show(true);
  }

 private:
  void show(bool end) {
    std::string line = "  " + name_ + ": " + size_text(done_);
    if (total_ > 0) {
      line += " of " + size_text(total_);
      line += " (" + std::to_string(std::min<uint64_t>(100, done_ * 100 / total_)) + "%)";
    }
    if (tty_)
      std::fprintf(stderr, "\r%s\033[K%s", line.c_str(), end ? "\n" : "");
    else
      std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
  }

  std::string name_;
  uint64_t total_, done_;
  bool tty_, quiet_;
  std::chrono::steady_clock::time_point last_;
};

// ---- the cache ----

/// huggingface_hub's lock of one blob (filelock: flock on .locks/<repo folder>/<etag>.lock).
class BlobLock {
 public:
  explicit BlobLock(const fs::path& file) {
    std::error_code ec;
    fs::create_directories(file.parent_path(), ec);
    fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0664);
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);  // a cache that takes no lock is written without one
  }
  ~BlobLock() {
    if (fd_ >= 0) {
      ::flock(fd_, LOCK_UN);
      ::close(fd_);
    }
  }
  BlobLock(const BlobLock&) = delete;
  BlobLock& operator=(const BlobLock&) = delete;

 private:
  int fd_ = -1;
};

uint64_t file_size_or_zero(const fs::path& p) {
  std::error_code ec;
  const auto n = fs::file_size(p, ec);
  return ec ? 0 : static_cast<uint64_t>(n);
}

std::optional<uint64_t> number_header(const httplib::Headers& h, const std::string& name) {
  const std::string v = header_of(h, name);
  if (v.empty() || v.size() > 19 || !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::stoull(v);
}

/// A file name the cache can hold: [A-Za-z0-9._-]+, not "." or "..".
bool safe_blob_name(const std::string& s) {
  if (s.empty() || s == "." || s == ".." || s.size() > 200) return false;
  return std::all_of(s.begin(), s.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '.' || c == '_' || c == '-'; });
}

/// A path inside the repository: relative, no "." or ".." parts.
bool safe_repo_path(const std::string& s) {
  if (s.empty() || s[0] == '/' || s.find('\\') != std::string::npos) return false;
  for (const auto& part : fs::path(s))
    if (part == "." || part == ".." || part.empty()) return false;
  return true;
}

void write_ref(const fs::path& storage, const std::string& revision, const std::string& commit) {
  if (revision == commit) return;
  const fs::path ref = storage / "refs" / revision;
  std::error_code ec;
  {
    std::ifstream in(ref);
    std::string now;
    if (in && std::getline(in, now) && now == commit) return;
  }
  fs::create_directories(ref.parent_path(), ec);
  const fs::path tmp = ref.string() + "." + std::to_string(::getpid()) + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << commit;
    if (!out) throw UserError(ref.string() + ": cannot write the revision's commit");
  }
  fs::rename(tmp, ref, ec);
  if (ec) throw UserError(ref.string() + ": cannot write the revision's commit: " + ec.message());
}

void write_cachedir_tag(const fs::path& cache) {
  std::error_code ec;
  const fs::path tag = cache / "CACHEDIR.TAG";
  if (fs::exists(tag, ec)) return;
  std::ofstream out(tag, std::ios::binary);
  out << "Signature: 8a477f597d28d172789f06886806bc55\n"
         "# This file is a cache directory tag created by huggingface_hub.\n"
         "# For information about cache directory tags, see:\n"
         "#\thttps://bford.info/cachedir/\n";
}

/// The files of one model repository unif reads, fetched into the cache.
class RepoFetch {
 public:
  RepoFetch(const HubSession& session, const fs::path& cache, std::string repo_id, std::string revision,
            std::string commit)
      : session_(session),
        cache_(cache),
        storage_(cache / repo_folder(repo_id)),
        repo_id_(std::move(repo_id)),
        revision_(std::move(revision)),
        commit_(std::move(commit)) {}

  fs::path snapshot() const { return storage_ / "snapshots" / commit_; }

  /// snapshots/<commit>/<file>, downloaded unless it is there.
  void fetch(const std::string& file) {
    const fs::path pointer = snapshot() / file;
    std::error_code ec;
    if (fs::exists(pointer, ec)) return;
    const std::string url = session_.endpoint() + "/" + repo_id_ + "/resolve/" + commit_ + "/" + quote_url(file, "/");
    const HubReply head = session_.fetch("HEAD", url, false);
    if (head.status / 100 != 2 && head.location.empty())
      throw UserError(status_message(session_, head, repo_id_, revision_, file));
    if (header_of(head.headers, "X-Repo-Commit").empty())
      throw UserError(url + " answered without an X-Repo-Commit header: HF_ENDPOINT (" + session_.endpoint() +
                      ") does not look like a Hugging Face Hub");
    std::string etag = header_of(head.headers, "X-Linked-Etag");
    if (etag.empty()) etag = header_of(head.headers, "ETag");
    if (etag.compare(0, 2, "W/") == 0) etag.erase(0, 2);
    etag.erase(std::remove(etag.begin(), etag.end(), '"'), etag.end());
    if (!safe_blob_name(etag))
      throw UserError(url + " answered " + (etag.empty() ? "without an ETag" : "the ETag '" + etag + "'") +
                      ": cannot name the file in the cache");
    std::optional<uint64_t> size = number_header(head.headers, "X-Linked-Size");
    if (!size && head.location.empty()) size = number_header(head.headers, "Content-Length");
    const std::string download_url = head.location.empty() ? url : head.location;

    const fs::path blob = storage_ / "blobs" / etag;
    fs::create_directories(blob.parent_path(), ec);
    fs::create_directories(pointer.parent_path(), ec);
    BlobLock lock(cache_ / ".locks" / repo_folder(repo_id_) / (etag + ".lock"));
    if (!fs::exists(blob, ec)) download_blob(download_url, file, blob, etag, size);
    if (!fs::exists(pointer, ec)) {
      fs::remove(pointer, ec);  // a dangling link
      fs::create_symlink(blob.lexically_relative(pointer.parent_path()), pointer, ec);
      if (ec) throw UserError(pointer.string() + ": cannot link it to " + blob.string() + ": " + ec.message());
    }
  }

 private:
  /// blobs/<etag>.incomplete, resumed where a partial one ends, checked, renamed to blobs/<etag>.
  void download_blob(const std::string& url, const std::string& file, const fs::path& blob, const std::string& etag,
                     std::optional<uint64_t> size) {
    const fs::path part = blob.string() + ".incomplete";
    std::error_code ec;
    std::string last_problem;
    for (int attempt = 0; attempt < 4; ++attempt) {
      if (attempt > 0) std::this_thread::sleep_for(std::chrono::seconds(1));
      uint64_t have = file_size_or_zero(part);
      if (size && have > *size) {
        fs::remove(part, ec);
        have = 0;
      }
      if (!size || have < *size) {
        try {
          if (!transfer(url, file, part, have, size)) continue;  // the server did not resume: again from 0
        } catch (const HubNetworkError& e) {
          last_problem = e.what();
          continue;
        }
      }
      const uint64_t got = file_size_or_zero(part);
      if (size && got < *size) {
        last_problem = "the transfer broke off at " + std::to_string(got) + " of " + std::to_string(*size) + " bytes";
        continue;
      }
      if (size && got > *size) {
        fs::remove(part, ec);
        throw UserError("the download of " + file + " from " + repo_id_ + " is corrupt (" + std::to_string(got) +
                        " bytes, expected " + std::to_string(*size) + "); nothing was kept: run again");
      }
      if (is_sha256_hex(etag)) {
        const std::string sum = sha256_file(part);
        if (sum != etag) {
          fs::remove(part, ec);
          throw UserError("the download of " + file + " from " + repo_id_ + " is corrupt (sha256 " + sum +
                          ", expected " + etag + "); nothing was kept: run again");
        }
      }
      fs::rename(part, blob, ec);
      if (ec) throw UserError(blob.string() + ": cannot move the download into place: " + ec.message());
      return;
    }
    throw UserError("cannot download " + file + " of " + repo_id_ + ": " + last_problem + "; " +
                    std::to_string(file_size_or_zero(part)) + " bytes are kept in " + part.string() +
                    ": run again to resume");
  }

  /// One GET of `url` into `part` from byte `have` (Range). false: the server answered with the
  /// whole file where a resume was asked and the part file was restarted, or it refused the range.
  bool transfer(const std::string& first_url, const std::string& file, const fs::path& part, uint64_t have,
                std::optional<uint64_t> size) {
    std::string url = first_url;
    for (int hop = 0; hop < 10; ++hop) {
      const auto u = parse_hub_url(url);
      if (!u) throw UserError("cannot download " + file + " from '" + url + "': not an http:// or https:// URL");
      auto client = hub_client(*u);
      auto headers = session_.headers_for(*u);
      if (have > 0) headers.emplace("Range", "bytes=" + std::to_string(have) + "-");
      int status = 0;
      std::string location, error_body;
      httplib::Headers answer_headers;
      std::FILE* out = nullptr;
      std::unique_ptr<HubProgress> progress;
      bool write_failed = false;
      auto result = client->Get(
          u->target.c_str(), headers,
          [&](const httplib::Response& r) {
            status = r.status;
            answer_headers = r.headers;
            if (status == 206 && have > 0) {
              // Content-Range: bytes <first>-<last>/<total>: it must start where the part file ends.
              const std::string range = header_of(r.headers, "Content-Range");
              const auto space = range.find(' '), dash = range.find('-');
              if (space == std::string::npos || dash == std::string::npos ||
                  range.substr(space + 1, dash - space - 1) != std::to_string(have)) {
                status = -1;  // restart from 0
                return false;
              }
              out = std::fopen(part.c_str(), "ab");
            } else if (status == 200) {
              out = std::fopen(part.c_str(), "wb");
              have = 0;
            } else {
              return true;  // an error or a redirect: its body for the message
            }
            if (out == nullptr) {
              write_failed = true;
              return false;
            }
            progress = std::make_unique<HubProgress>(file, size.value_or(0), have);
            return true;
          },
          [&](const char* data, std::size_t n) {
            if (out == nullptr) {
              if (error_body.size() < 4096) error_body.append(data, std::min<std::size_t>(n, 4096));
              return true;
            }
            if (std::fwrite(data, 1, n, out) != n) {
              write_failed = true;
              return false;
            }
            progress->add(n);
            return true;
          });
      if (out != nullptr && std::fclose(out) != 0) write_failed = true;
      if (write_failed) throw UserError(part.string() + ": cannot write the download (disk full?)");
      if (progress && result) progress->finish();
      if (status == -1) {
        std::error_code ec;
        fs::remove(part, ec);
        return false;
      }
      if (!result) {
        if (progress) std::fprintf(stderr, "\n");
        throw HubNetworkError(network_message(url, result.error()));
      }
      if (status == 200 || status == 206) return true;
      if (status == 416) {  // the range starts past the file: start over
        std::error_code ec;
        fs::remove(part, ec);
        return false;
      }
      const std::string loc = header_of(answer_headers, "Location");
      if (status / 100 == 3 && !loc.empty()) {
        url = join_location(*u, loc);
        continue;
      }
      throw UserError(
          status_message(session_, HubReply{status, answer_headers, error_body, url, ""}, repo_id_, revision_, file));
    }
    throw UserError("cannot download " + file + " from '" + first_url + "': more than 10 redirects");
  }

  const HubSession& session_;
  fs::path cache_, storage_;
  std::string repo_id_, revision_, commit_;
};

// What unif reads besides the weights, in the repository's root and in its sentence-transformers
// module folders.
const std::set<std::string> kHubModelFiles{"config.json",
                                           "tokenizer.json",
                                           "tokenizer_config.json",
                                           "special_tokens_map.json",
                                           "added_tokens.json",
                                           "vocab.txt",
                                           "vocab.json",
                                           "merges.txt",
                                           "sentencepiece.bpe.model",
                                           "spiece.model",
                                           "spm.model",
                                           "modules.json",
                                           "sentence_bert_config.json",
                                           "config_sentence_transformers.json",
                                           "unif.yaml",
                                           "COMPLETE"};

}  // namespace

std::string sha256_hex(const std::string& bytes) {
  Sha256 h;
  h.update(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  return h.hex();
}

std::string sha256_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw UserError(file.string() + ": cannot be read");
  Sha256 h;
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto n = in.gcount();
    if (n > 0) h.update(reinterpret_cast<const unsigned char*>(buffer.data()), static_cast<std::size_t>(n));
  }
  if (in.bad()) throw UserError(file.string() + ": read error");
  return h.hex();
}

fs::path download_model(const fs::path& given_cache, const std::string& repo_id, const std::string& revision) {
  std::error_code ec;
  const fs::path cache = fs::absolute(given_cache, ec).lexically_normal();
  const HubSession session(endpoint(), token());
  const std::string api = session.endpoint() + "/api/models/" + repo_id + "/revision/" + quote_url(revision, "");
  const HubReply info_reply = session.fetch("GET", api, true);
  if (info_reply.status == 401 ||
      (info_reply.status == 404 && header_of(info_reply.headers, "X-Error-Code") != "RevisionNotFound"))
    throw HubMissingError(status_message(session, info_reply, repo_id, revision, ""));
  if (info_reply.status != 200) throw UserError(status_message(session, info_reply, repo_id, revision, ""));
  nlohmann::json info;
  try {
    info = nlohmann::json::parse(info_reply.body);
  } catch (const nlohmann::json::exception&) {
    throw UserError(api + " answered something other than JSON: HF_ENDPOINT (" + session.endpoint() +
                    ") does not look like a Hugging Face Hub");
  }
  if (!info.is_object() || !info.contains("sha") || !info["sha"].is_string() ||
      !is_commit_hash(info["sha"].get<std::string>()))
    throw UserError(api + " answered without the revision's commit (\"sha\")");
  const std::string commit = info["sha"].get<std::string>();
  std::set<std::string> siblings;
  if (info.contains("siblings") && info["siblings"].is_array())
    for (const auto& s : info["siblings"])
      if (s.is_object() && s.contains("rfilename") && s["rfilename"].is_string() &&
          safe_repo_path(s["rfilename"].get<std::string>()))
        siblings.insert(s["rfilename"].get<std::string>());

  const fs::path storage = cache / repo_folder(repo_id);
  RepoFetch repo(session, cache, repo_id, revision, commit);
  if (fs::is_directory(repo.snapshot(), ec) && missing_model_files(repo.snapshot()).empty()) {
    write_ref(storage, revision, commit);
    return repo.snapshot();
  }
  if (!siblings.count("config.json") && !siblings.count("modules.json"))
    throw UserError("'" + repo_id + "' has no config.json at revision '" + revision +
                    "': not a transformers model unif can load");

  fs::create_directories(storage, ec);
  if (ec) throw UserError(storage.string() + ": cannot create the cache folder: " + ec.message());
  write_cachedir_tag(cache);
  std::fprintf(stderr, "downloading %s (revision %s, commit %s) into %s\n", repo_id.c_str(), revision.c_str(),
               commit.substr(0, 10).c_str(), storage.string().c_str());
  std::fflush(stderr);

  // A sentence-transformers repository: its module folders, and the Transformer's (the weights').
  std::set<std::string> folders{""};
  std::string transformer;
  if (siblings.count("modules.json")) {
    repo.fetch("modules.json");
    nlohmann::json modules;
    try {
      std::ifstream in(repo.snapshot() / "modules.json");
      modules = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      throw UserError("'" + repo_id + "': modules.json is not JSON (" + e.what() + ")");
    }
    if (modules.is_array())
      for (const auto& m : modules) {
        if (!m.is_object() || !m.contains("path") || !m["path"].is_string()) continue;
        std::string path = m["path"].get<std::string>();
        while (!path.empty() && path.back() == '/') path.pop_back();
        if (!path.empty() && !safe_repo_path(path)) continue;
        folders.insert(path);
        const std::string type = m.value("type", std::string());
        const std::string suffix = "models.Transformer";
        if (type.size() >= suffix.size() && type.compare(type.size() - suffix.size(), suffix.size(), suffix) == 0)
          transformer = path;
      }
  }
  std::vector<std::string> files;
  for (const auto& s : siblings) {
    const auto slash = s.rfind('/');
    const std::string folder = slash == std::string::npos ? "" : s.substr(0, slash);
    const std::string base = slash == std::string::npos ? s : s.substr(slash + 1);
    if (folders.count(folder) && kHubModelFiles.count(base) && s != "modules.json") files.push_back(s);
  }
  const std::string in = transformer.empty() ? "" : transformer + "/";
  if (siblings.count(in + "model.safetensors")) {
    files.push_back(in + "model.safetensors");
  } else if (siblings.count(in + "pytorch_model.bin")) {
    files.push_back(in + "pytorch_model.bin");
  } else if (siblings.count(in + "model.safetensors.index.json") ||
             siblings.count(in + "pytorch_model.bin.index.json")) {
    throw UserError("'" + repo_id + "' keeps its weights in shards (" + in +
                    (siblings.count(in + "model.safetensors.index.json") ? "model.safetensors.index.json"
                                                                         : "pytorch_model.bin.index.json") +
                    "), and unif reads one weights file (model.safetensors or pytorch_model.bin)");
  } else {
    throw UserError("'" + repo_id + "' has no " + in + "model.safetensors or " + in +
                    "pytorch_model.bin at revision '" + revision + "' (unif reads no other weight format)");
  }
  for (const auto& f : files) repo.fetch(f);
  write_ref(storage, revision, commit);
  return repo.snapshot();
}

}  // namespace unif::hub
