// `unif serve --model DIR [--host 127.0.0.1] [--port 8080] [--max-batch 32] [--max-batch-tokens 16384]
// [--max-wait-ms 5] [--queue 1024] [--max-body-bytes 8388608] [--request-timeout 30] [--api-key KEY]`
// (SPEC §8): the model behind HTTP/1.1 JSON.
//
//   POST /v1/predict {"inputs": [record, ...]} -> 200 {"outputs": [object, ...]}, object i being what
//        `unif predict` writes for record i (a bad record: {"error": ...} in its place); 400 bad
//        JSON or no "inputs" array, 415 a Content-Type other than JSON, 413 a body over
//        --max-body-bytes, 503 the queue is full.
//   POST /embed, /v1/embeddings (embedding models: serve/embeddings_api.h); POST /predict, /rerank,
//        /similarity, /tokenize, GET /info (text-embeddings-inference's shapes), POST / (TEI's route
//        of the model's kind), GET /v1/models (OpenAI's list): serve/tei_api.h.
//   GET /health -> {"status": "ok"};  GET /metrics -> Prometheus text (serve/metrics.h).
//   Another method on these paths: 405 with an Allow header; another path: 404.
//   With --api-key (or UNIF_API_KEY), every request but GET /health without `Authorization: Bearer
//   KEY` is answered 401 (serve/auth.h), before its path or body is looked at.
//
// Connections are read by one thread (Connections below) until they hold a whole request (its
// framing: serve/request.h), so a slow client holds no worker thread: it has --request-timeout for
// the whole request and 5 s between its bytes, then is answered 408 and closed. A whole request
// goes to a worker thread, which hands it to cpp-httplib (Debian's libcpp-httplib-dev: routing,
// header parsing, the answer) through a stream over the bytes read. The routes that run the model
// (POST /v1/predict, /embed, /, /v1/embeddings, /predict, /rerank, /similarity) have their own
// workers, which read and tokenize their request's records and wait on the batcher
// (unif::Batcher, framework/inference/batcher.h); the other requests have theirs, so /health and
// /metrics are answered while every model worker waits. The batcher's one thread runs the
// records of concurrent requests as one batch through unif::Predictor, bounded by --max-batch
// records and --max-batch-tokens padded tokens; a request whose client has closed its connection
// by then is dropped (not run; logged with status 499, counted in
// unif_requests_dropped_total). SIGTERM / SIGINT: stop
// accepting (the connections waiting to be accepted are accepted first), answer every request of
// an accepted connection, exit 0. Each answer gets an access log line on stderr.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "apps/unif/commands.h"
#include "apps/unif/serve/auth.h"
#include "apps/unif/serve/embeddings_api.h"
#include "apps/unif/serve/metrics.h"
#include "apps/unif/serve/request.h"
#include "apps/unif/serve/tei_api.h"
#include "framework/common/error.h"
#include "framework/common/hub_cache.h"
#include "framework/inference/batcher.h"
#include "framework/inference/predictor.h"
#include "framework/inference/standard_records.h"

namespace unif::app {

namespace {

using nlohmann::json;
using serve::frame_request;
using serve::kMaxRequestHead;
using serve::RequestFrame;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// SIGTERM / SIGINT write a byte here; the accepting thread reads it and stops (whichever thread the
// signal lands on, the handler only writes).
int g_signal_pipe[2] = {-1, -1};

extern "C" void on_serve_signal(int sig) {
  const char c = static_cast<char>(sig);
  ssize_t ignored = ::write(g_signal_pipe[1], &c, 1);
  (void)ignored;
}

// Per request, on the worker thread that answers it: set by the pre-routing handler and the
// predict handler, read by the logger (the same thread, in that order).
thread_local Clock::time_point t_start;
thread_local bool t_started = false;
thread_local size_t t_records = 0, t_record_errors = 0;
thread_local std::string t_request_id;
// The socket of the connection whose request this worker thread answers (-1: none), set around
// the request by Connections::serve: the batcher asks through it whether the client is still there.
thread_local int t_client_fd = -1;

// Whether the client of connection `fd` has gone: it closed the connection (or reset it). A
// client that shuts its sending side after the request is taken as gone too, as most servers
// take it (HTTP clients wait for the answer with their connection open).
bool client_gone(int fd) {
  if (fd < 0) return false;
  pollfd p{fd, POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

// nginx's code for a request whose client closed the connection before the answer: only the log
// and the metrics see it (no client reads it).
constexpr int kClientClosedRequest = 499;
// The most texts one request to an embedding route may hold (the OpenAI API's own bound).
constexpr size_t kMaxEmbedInputs = 2048;

// The routes that run the model (their requests are counted in /metrics).
bool is_model_route(const std::string& path) {
  return path == "/v1/predict" || path == "/embed" || path == "/" || path == "/v1/embeddings" || path == "/predict" ||
         path == "/rerank" || path == "/similarity";
}

std::string status_text(int status) {
  switch (status) {
    case 400: return "bad request";
    case 404:
      return "not found: the endpoints are POST /v1/predict, POST /predict and POST /rerank (classifiers), POST "
             "/embed, POST /similarity and POST /v1/embeddings (embedding models), POST /, POST /tokenize, GET /info, "
             "GET /v1/models, GET /health, GET /metrics";
    case 405: return "method not allowed";
    case 413: return "the request body is larger than --max-body-bytes";
    case 414: return "the request URI is too long";
    default: return "HTTP status " + std::to_string(status);
  }
}

// Invalid UTF-8 in a message (bytes a client sent) becomes U+FFFD rather than a failed answer.
std::string error_body(const std::string& message) {
  return json{{"error", message}}.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

void answer_error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(error_body(message), "application/json");
}

// An exception's message, for the log (LibTorch's carry a stack trace and source paths).
std::string what_of(std::exception_ptr ep) {
  try {
    std::rethrow_exception(ep);
  } catch (const std::exception& e) { return e.what(); } catch (...) {
  }
  return "unknown exception";
}

// The methods a path takes, for 405's Allow header; nullptr: not one of ours (404).
const char* allowed_methods(const std::string& path) {
  if (is_model_route(path) || path == "/tokenize") return "POST";
  if (path == "/health" || path == "/metrics" || path == "/info" || path == "/v1/models") return "GET, HEAD";
  return nullptr;
}

bool allows(std::string_view allow, std::string_view method) {
  for (size_t at = 0; at <= allow.size();) {
    const size_t end = std::min(allow.find(", ", at), allow.size());
    if (allow.substr(at, end - at) == method) return true;
    at = end + 2;
  }
  return false;
}

struct ServeOptions {
  std::string model, host = "127.0.0.1";
  int port = 8080;
  int64_t max_batch = 32, max_batch_tokens = 16384, max_wait_ms = 5, queue = 1024, max_body_bytes = 8388608,
          request_timeout = 30;
  std::string quantize = "none";
  std::shared_ptr<std::optional<double>> exit_threshold = std::make_shared<std::optional<double>>();
  std::string api_key;  // empty: no key asked for
};

// cpp-httplib's request handling (routing, handlers, answers) on a stream we give it.
class Router : public httplib::Server {
 public:
  bool answer(httplib::Stream& strm, bool close_connection, bool& connection_closed) {
    return process_request(strm, close_connection, connection_closed, {});
  }
};

// The stream cpp-httplib reads one request from and writes its answer to: reads come from the
// request's bytes, read whole beforehand (then the end of input), writes go to the socket with a
// timeout for each.
class RequestStream : public httplib::Stream {
 public:
  static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

  RequestStream(int fd, std::string_view request, milliseconds write_timeout, bool continue_sent,
                const std::string& remote_addr, int remote_port)
      : fd_(fd),
        request_(request),
        write_timeout_(write_timeout),
        swallow_continue_(continue_sent),
        remote_addr_(remote_addr),
        remote_port_(remote_port) {}

  bool is_readable() const override { return at_ < request_.size(); }
  bool is_writable() const override {
    pollfd p{fd_, POLLOUT, 0};
    return ::poll(&p, 1, static_cast<int>(write_timeout_.count())) > 0;
  }
  ssize_t read(char* ptr, size_t size) override {
    const size_t n = std::min(size, request_.size() - at_);
    std::memcpy(ptr, request_.data() + at_, n);
    at_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    // The reader already said "100 Continue" for this request: the library's own is not sent again.
    if (swallow_continue_ && std::string_view(ptr, size) == kContinue) {
      swallow_continue_ = false;
      return static_cast<ssize_t>(size);
    }
    size_t sent = 0;
    while (sent < size) {
      const ssize_t k = ::send(fd_, ptr + sent, size - sent, MSG_NOSIGNAL);
      if (k > 0) {
        sent += static_cast<size_t>(k);
      } else if (k < 0 && errno == EINTR) {
        continue;
      } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        pollfd p{fd_, POLLOUT, 0};
        const int r = ::poll(&p, 1, static_cast<int>(write_timeout_.count()));
        if (r <= 0 && !(r < 0 && errno == EINTR)) break;  // the client reads nothing for the write timeout
      } else {
        break;
      }
    }
    return sent > 0 ? static_cast<ssize_t>(sent) : -1;
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = remote_addr_;
    port = remote_port_;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) address_of(a, ip, port);
  }
  socket_t socket() const override { return fd_; }

  static void address_of(const sockaddr_storage& a, std::string& ip, int& port) {
    char host[INET6_ADDRSTRLEN] = "";
    if (a.ss_family == AF_INET) {
      const auto& v4 = reinterpret_cast<const sockaddr_in&>(a);
      ::inet_ntop(AF_INET, &v4.sin_addr, host, sizeof host);
      port = ntohs(v4.sin_port);
    } else if (a.ss_family == AF_INET6) {
      const auto& v6 = reinterpret_cast<const sockaddr_in6&>(a);
      ::inet_ntop(AF_INET6, &v6.sin6_addr, host, sizeof host);
      port = ntohs(v6.sin6_port);
    }
    ip = host;
  }

 private:
  int fd_;
  std::string_view request_;
  size_t at_ = 0;
  milliseconds write_timeout_;
  bool swallow_continue_;
  const std::string& remote_addr_;
  int remote_port_;
};

// The server's connections: one thread reads every connection that is between requests or in the
// middle of one (poll, no thread each) until it holds a whole request, then gives the connection
// to a worker, which answers the request and gives the connection back (kept alive) or closes it.
class Connections {
 public:
  struct Settings {
    size_t max_body = 0;
    milliseconds request_timeout{30000};  // the whole request, from its first byte
    milliseconds read_timeout{5000};      // between two bytes of a request
    milliseconds keep_alive{5000};        // for the first byte of a request
    milliseconds write_timeout{5000};     // each write of an answer
    milliseconds linger{2000};            // reading what a client still sends after the last answer
    size_t keep_alive_max = 5;            // requests on one connection
    size_t predict_workers = 1, other_workers = 4;
  };
  /// Answers one request read from the stream (Router::answer).
  using Answer = std::function<bool(httplib::Stream&, bool close_connection, bool& connection_closed)>;
  /// A request that did not arrive in time (answered 408): its client, method and target ("" when
  /// not yet read), and how long it took.
  using OnTimeout = std::function<void(const std::string& addr, int port, const std::string& method,
                                       const std::string& target, double seconds, const std::string& body)>;

  Connections(Settings s, Answer answer, OnTimeout on_timeout)
      : s_(s), answer_(std::move(answer)), on_timeout_(std::move(on_timeout)) {
    if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0)
      throw std::runtime_error("pipe: " + std::string(std::strerror(errno)));
    predict_ = std::make_unique<httplib::ThreadPool>(s_.predict_workers);
    other_ = std::make_unique<httplib::ThreadPool>(s_.other_workers);
    thread_ = std::thread([this] { loop(); });
  }
  ~Connections() {
    stop();
    join();
    ::close(wake_[0]);
    ::close(wake_[1]);
  }
  Connections(const Connections&) = delete;
  Connections& operator=(const Connections&) = delete;

  /// An accepted connection (non-blocking).
  void add(int fd, const sockaddr_storage& peer) {
    auto c = std::make_shared<Conn>();
    c->fd = fd;
    RequestStream::address_of(peer, c->remote_addr, c->remote_port);
    c->idle_until = Clock::now() + s_.keep_alive;
    int yes = 1;
    // cpp-httplib writes an answer's headers and body in two sends: without TCP_NODELAY the body
    // waits for the client's delayed ACK of the headers (40 ms on Linux).
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    hand_back(std::move(c), false);
  }
  /// From now on every answer closes its connection, and connections between requests are closed;
  /// a connection that has not sent its first request yet keeps its 5 s for it.
  void stop() {
    stopping_ = true;
    wake();
  }
  /// Waits until every connection is closed (after stop()) and every worker is done.
  void join() {
    if (thread_.joinable()) thread_.join();
    if (predict_) predict_->shutdown();
    if (other_) other_->shutdown();
    predict_.reset();
    other_.reset();
  }

 private:
  struct Conn {
    int fd = -1;
    std::string remote_addr;
    int remote_port = 0;
    std::string bytes;             // received, not yet answered (the start of the next request)
    Clock::time_point first_byte;  // of the request in `bytes`
    Clock::time_point last_byte;
    Clock::time_point idle_until;  // no request yet: closed then
    Clock::time_point close_at;    // closing: closed then at the latest
    size_t answered = 0;
    bool continue_sent = false;  // "100 Continue" said for the request in `bytes`
    bool peer_closed = false;
    bool closing = false;  // the last answer is sent: reading until the client closes
    bool fresh = true;     // bytes came since the request was last framed
  };
  using ConnPtr = std::shared_ptr<Conn>;

  void wake() {
    const char c = 1;
    ssize_t ignored = ::write(wake_[1], &c, 1);
    (void)ignored;
  }

  // A connection enters the reading thread: new, or back from a worker (`from_worker`).
  void hand_back(ConnPtr c, bool from_worker) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      inbox_.push_back(std::move(c));
      if (from_worker) --in_flight_;
    }
    wake();
  }

  // The most a connection's buffer holds before its request is refused as unframed (a head and a
  // body at their limits, and chunk framing).
  size_t read_cap() const { return kMaxRequestHead + s_.max_body + s_.max_body / 2 + 65536; }

  void close_now(Conn& c) {
    ::close(c.fd);
    c.fd = -1;
  }

  // No more answers on this connection: the client gets our end of the stream, and what it still
  // sends is read and dropped (for `linger`) so that closing does not reset the connection before
  // it has read the answer.
  void begin_close(Conn& c) {
    ::shutdown(c.fd, SHUT_WR);
    c.closing = true;
    c.bytes.clear();
    c.close_at = Clock::now() + s_.linger;
  }

  void read_from(Conn& c) {
    char buf[65536];
    for (;;) {
      if (!c.closing && c.bytes.size() >= read_cap()) return;  // framed as unframed before more is read
      const ssize_t n = ::recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) {
        if (c.closing) continue;
        const auto now = Clock::now();
        if (c.bytes.empty()) c.first_byte = now;
        c.last_byte = now;
        c.bytes.append(buf, static_cast<size_t>(n));
        c.fresh = true;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      c.peer_closed = true;  // end of stream, or an error
      return;
    }
  }

  void send_best_effort(int fd, std::string_view data) {
    while (!data.empty()) {
      const ssize_t k = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) return;
      data.remove_prefix(static_cast<size_t>(k));
    }
  }

  // The request did not arrive in time: 408, then the connection is closed.
  void time_out(Conn& c, const RequestFrame& f, Clock::time_point now) {
    const std::string body =
        error_body("the request did not arrive in time: a request must arrive whole within --request-timeout (" +
                   std::to_string(s_.request_timeout.count() / 1000) + " s), with no pause over " +
                   std::to_string(s_.read_timeout.count() / 1000) + " s");
    const std::string head = "HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\nContent-Length: " +
                             std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
    send_best_effort(c.fd, head + body);
    if (on_timeout_)
      on_timeout_(c.remote_addr, c.remote_port, f.method, f.target,
                  std::chrono::duration<double>(now - c.first_byte).count(), body);
    begin_close(c);
  }

  // What to do with a connection now. Returns false when it leaves the reading thread (closed, or
  // given to a worker).
  bool step(const ConnPtr& cp, Clock::time_point now) {
    Conn& c = *cp;
    if (c.closing) {
      if (c.peer_closed || now >= c.close_at) {
        close_now(c);
        return false;
      }
      return true;
    }
    if (c.bytes.empty() && stopping_ && c.answered > 0) read_from(c);  // a request sent already is answered
    if (c.bytes.empty()) {                                             // between requests
      if (c.peer_closed || now >= c.idle_until || (stopping_ && c.answered > 0)) {
        close_now(c);
        return false;
      }
      return true;
    }
    RequestFrame f;
    if (c.fresh) {
      c.fresh = false;
      f = frame_request(c.bytes, s_.max_body);
      if (f.state == RequestFrame::State::Incomplete && c.bytes.size() >= read_cap())
        f.state = RequestFrame::State::Unframed;
      if (f.state != RequestFrame::State::Incomplete) {
        dispatch(cp, f);
        return false;
      }
      if (f.expects_continue && !c.continue_sent) {
        send_best_effort(c.fd, RequestStream::kContinue);
        c.continue_sent = true;
      }
    }
    if (c.peer_closed) {  // gone in the middle of a request: nothing to answer
      close_now(c);
      return false;
    }
    if (now >= c.first_byte + s_.request_timeout || now >= c.last_byte + s_.read_timeout) {
      if (f.method.empty()) f = frame_request(c.bytes, s_.max_body);  // the method and target, for the log
      time_out(c, f, now);
    }
    return true;
  }

  // When step() has something to do for a connection, at the latest.
  Clock::time_point next_event(const Conn& c) const {
    if (c.closing) return c.close_at;
    if (c.bytes.empty()) return c.idle_until;
    return std::min(c.first_byte + s_.request_timeout, c.last_byte + s_.read_timeout);
  }

  void dispatch(const ConnPtr& c, const RequestFrame& f) {
    const bool whole = f.state == RequestFrame::State::Complete;
    const size_t size = whole ? f.size : c->bytes.size();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++in_flight_;
    }
    const std::string path = f.target.substr(0, f.target.find('?'));
    auto& pool = f.method == "POST" && is_model_route(path) ? *predict_ : *other_;
    pool.enqueue([this, c, size, whole] { serve(c, size, whole); });
  }

  // On a worker: answers the request in the connection's first `size` bytes.
  void serve(const ConnPtr& cp, size_t size, bool whole) {
    Conn& c = *cp;
    // An unframed request leaves the connection's bytes unusable after it: the answer closes it.
    const bool close = !whole || stopping_ || c.peer_closed || c.answered + 1 >= s_.keep_alive_max;
    bool closed = false, ok = false;
    {
      RequestStream strm(c.fd, std::string_view(c.bytes).substr(0, size), s_.write_timeout, c.continue_sent,
                         c.remote_addr, c.remote_port);
      t_client_fd = c.fd;
      try {
        ok = answer_(strm, close, closed);
      } catch (...) {  // the library answers handler exceptions itself: this is its own failure
        ok = false;
      }
      t_client_fd = -1;
    }
    ++c.answered;
    c.bytes.erase(0, size);
    c.continue_sent = false;
    c.fresh = true;
    const auto now = Clock::now();
    c.first_byte = c.last_byte = now;  // a request already sent behind this one starts its clock now
    c.idle_until = now + s_.keep_alive;
    if (!ok || close || closed) begin_close(c);
    hand_back(cp, true);
  }

  void loop() {
    std::vector<ConnPtr> conns;
    std::vector<pollfd> fds;
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto& c : inbox_) conns.push_back(std::move(c));
        inbox_.clear();
      }
      auto now = Clock::now();
      conns.erase(std::remove_if(conns.begin(), conns.end(), [&](const ConnPtr& c) { return !step(c, now); }),
                  conns.end());
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_ && conns.empty() && inbox_.empty() && in_flight_ == 0) return;
      }
      auto next = now + milliseconds(1000);
      for (const auto& c : conns) next = std::min(next, next_event(*c));
      fds.assign(1, pollfd{wake_[0], POLLIN, 0});
      for (const auto& c : conns) fds.push_back(pollfd{c->fd, POLLIN, 0});
      const auto wait = std::chrono::duration_cast<milliseconds>(next - now).count() + 1;
      const int ready = ::poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(0, wait)));
      if (ready <= 0) continue;
      if (fds[0].revents) {
        char drain[256];
        while (::read(wake_[0], drain, sizeof drain) > 0) {}
      }
      for (size_t i = 0; i < conns.size(); ++i)
        if (fds[i + 1].revents) read_from(*conns[i]);
    }
  }

  const Settings s_;
  const Answer answer_;
  const OnTimeout on_timeout_;
  std::unique_ptr<httplib::ThreadPool> predict_, other_;
  int wake_[2] = {-1, -1};
  std::mutex mutex_;
  std::vector<ConnPtr> inbox_;
  size_t in_flight_ = 0;  // connections with a worker
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

// The listening socket (non-blocking), with SO_REUSEADDR only (SO_REUSEPORT would let a second
// server share a port in use instead of being refused). Sets `port` to the one bound.
int listen_on(const std::string& host, int& port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string where = port == 0 ? host + " (any port)" : host + ":" + std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0)
    throw UserError("cannot listen on " + where + ": " + ::gai_strerror(rc));
  int fd = -1, err = 0;
  for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
      err = errno;
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) {
    if (port == 0) throw UserError("cannot listen on " + where + ": " + std::strerror(err));
    throw UserError("cannot listen on " + where + " (the port is in use, or the address is not this machine's)");
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len) == 0) {
    std::string ip;
    RequestStream::address_of(bound, ip, port);
  }
  return fd;
}

// Accepts what waits on the listening socket; false on an error other than "nothing waits".
bool accept_waiting(int listening, Connections& conns) {
  for (;;) {
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    const int fd = ::accept4(listening, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      conns.add(fd, peer);
      continue;
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

// Every waiting request to a model route holds a worker: enough for the queue (up to 256) and a few
// more, which find the queue full (503, 429) rather than wait for a worker. Each reads and tokenizes
// its own request.
int64_t model_workers(const ServeOptions& o) { return std::min<int64_t>(o.queue, 256) + 4; }

int run_server(const ServeOptions& o) {
  if (::pipe2(g_signal_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe: " + std::string(std::strerror(errno)));
  struct sigaction sa {};
  sa.sa_handler = on_serve_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);  // a client gone mid-answer is a write error, not our death
  // A connection is a file descriptor: as many as the system lets this process have.
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = std::min<rlim_t>(files.rlim_max, 65536);
    ::setrlimit(RLIMIT_NOFILE, &files);
  }

  PredictorOptions popt;
  popt.batch_size = o.max_batch;
  popt.quantize = o.quantize;
  popt.exit_threshold = *o.exit_threshold;
  const auto predictor = Predictor::load(o.model, popt);
  if (!predictor.quantization().empty()) std::fprintf(stderr, "%s\n", predictor.quantization().c_str());

  serve::Metrics metrics;
  // The records of concurrent requests through the predictor at once, each request read and
  // tokenized on its own worker before it is queued (errors name records within their request).
  BatcherOptions bopt;
  bopt.max_batch = static_cast<size_t>(o.max_batch);
  bopt.max_batch_tokens = o.max_batch_tokens;
  bopt.max_wait = std::chrono::milliseconds(o.max_wait_ms);
  bopt.capacity = static_cast<size_t>(o.queue);
  Batcher batcher(predictor, bopt, [&metrics](const BatchStats& b) { metrics.batch(b.records, b.tokens); });

  std::mutex log_mutex;
  std::atomic<uint64_t> next_request_id{0};
  Router svr;
  svr.set_payload_max_length(static_cast<size_t>(o.max_body_bytes));
  svr.set_keep_alive_timeout(5);  // the Keep-Alive header it writes: Connections' keep_alive

  svr.set_pre_routing_handler([&](const httplib::Request& req, httplib::Response& res) {
    t_start = Clock::now();
    t_started = true;
    t_records = t_record_errors = 0;
    t_request_id = std::to_string(++next_request_id);
    res.set_header("X-Request-Id", t_request_id);
    if (!o.api_key.empty() && serve::needs_api_key(req.path) &&
        !serve::bearer_matches(req.get_header_value("Authorization"), o.api_key)) {
      res.set_header("WWW-Authenticate", "Bearer");
      const std::string message = req.has_header("Authorization")
                                      ? "the API key is not this server's"
                                      : "this server needs an API key: send the header Authorization: Bearer KEY";
      res.status = 401;
      if (req.path == "/v1/embeddings" || req.path == "/v1/models")
        res.set_content(json{{"error",
                              {{"message", message},
                               {"type", "invalid_request_error"},
                               {"param", nullptr},
                               {"code", "invalid_api_key"}}}}
                                .dump() +
                            "\n",
                        "application/json");
      else
        res.set_content(error_body(message), "application/json");
      return httplib::Server::HandlerResponse::Handled;
    }
    // A path of ours with another method: 405 (before any body is looked at).
    const char* allow = allowed_methods(req.path);
    if (allow && !allows(allow, req.method)) {
      res.set_header("Allow", allow);
      answer_error(res, 405, req.method + " is not a method of " + req.path + " (it takes " + allow + ")");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  svr.Post("/v1/predict", [&](const httplib::Request& req, httplib::Response& res) {
    auto decoded = serve::decode_predict_request(req.body, req.get_header_value("Content-Type"));
    if (decoded.status != 200) return answer_error(res, decoded.status, decoded.error);
    const size_t n = decoded.inputs.size();
    const int fd = t_client_fd;
    auto answers = batcher.submit(decoded.inputs, [fd] { return client_gone(fd); });
    if (!answers)
      return answer_error(res, 503,
                          "the queue is full (" + std::to_string(o.queue) +
                              " requests waiting) or the server is stopping: try again later");
    if (answers->dropped) {
      metrics.dropped();
      t_records = n;
      return answer_error(res, kClientClosedRequest,
                          "the client closed the connection before the request's batch ran: dropped, not run");
    }
    std::vector<json> outputs;
    outputs.reserve(answers->outputs.size());
    for (const auto& p : answers->outputs) outputs.push_back(p.to_json());
    // A record the model could not take even alone: its error in its place; what went wrong is for
    // the log, under the request's id.
    for (const auto& [index, error] : answers->failed) {
      const std::string where = "record:" + std::to_string(index + 1);
      {
        std::lock_guard<std::mutex> lock(log_mutex);
        std::fprintf(stderr, "request %s: %s: %s\n", t_request_id.c_str(), where.c_str(), what_of(error).c_str());
      }
      outputs[index] = {{"error", where + ": internal error: the server could not answer this record (request " +
                                      t_request_id + ", in the server's log)"}};
    }
    t_records = n;
    for (const auto& a : outputs) t_record_errors += a.contains("error");
    res.set_content(json{{"outputs", std::move(outputs)}}.dump() + "\n", "application/json");
  });
  // text-embeddings-inference's POST /embed and the OpenAI API's POST /v1/embeddings (an embedding
  // model only): each input a {"text": ...} record through the same batcher, the embedding cut and
  // normalized as the request asks, answered in the API's shape (apps/unif/serve/embeddings_api.h).
  const bool embedder = task_spec(predictor.task()).output == PredictKind::Embedding;
  const auto embed_route = [&](serve::EmbeddingApi api) {
    return [&, api](const httplib::Request& req, httplib::Response& res) {
      const auto fail = [&](int status, const std::string& message, const std::string& param) {
        res.status = status;
        res.set_content(
            serve::embed_error(api, message, param).dump(-1, ' ', false, json::error_handler_t::replace) + "\n",
            "application/json");
      };
      if (!embedder)
        return fail(api == serve::EmbeddingApi::Tei ? 424 : 400,
                    "this server's model is a " + to_string(predictor.task()) +
                        " model, not an embedding model: use POST /v1/predict",
                    "");
      auto request = serve::decode_embed_request(api, req.body, req.get_header_value("Content-Type"), kMaxEmbedInputs);
      if (request.status != 200) return fail(request.status, request.error, request.param);
      std::vector<json> records;
      records.reserve(request.texts.size());
      for (const auto& t : request.texts) records.push_back(json{{"text", t}});
      const size_t n = records.size();
      const int fd = t_client_fd;
      auto answers = batcher.submit(records, [fd] { return client_gone(fd); });
      if (!answers) return fail(503, "the queue is full or the server is stopping: try again later", "");
      t_records = n;
      if (answers->dropped) {
        metrics.dropped();
        return fail(kClientClosedRequest, "the client closed the connection before the request's batch ran", "");
      }
      if (!answers->failed.empty()) {
        const auto& [index, error] = answers->failed.front();
        {
          std::lock_guard<std::mutex> lock(log_mutex);
          std::fprintf(stderr, "request %s: input %zu: %s\n", t_request_id.c_str(), index, what_of(error).c_str());
        }
        t_record_errors = answers->failed.size();
        return fail(500, "internal error (request " + t_request_id + ", in the server's log)", "");
      }
      std::vector<std::vector<float>> embeddings;
      embeddings.reserve(n);
      int64_t tokens = 0;
      for (size_t i = 0; i < n; ++i) {
        const auto& p = answers->outputs[i];
        if (!p.ok()) {
          t_record_errors = 1;
          return fail(api == serve::EmbeddingApi::Tei ? 422 : 400, "input " + std::to_string(i) + ": " + p.error,
                      api == serve::EmbeddingApi::Tei ? "inputs" : "input");
        }
        tokens += p.tokens;
        embeddings.push_back(serve::shape_embedding(p.embedding, request.dimensions, request.normalize));
      }
      res.set_content(serve::embed_answer(api, request, embeddings, tokens).dump() + "\n", "application/json");
    };
  };
  svr.Post("/embed", embed_route(serve::EmbeddingApi::Tei));
  svr.Post("/v1/embeddings", embed_route(serve::EmbeddingApi::OpenAi));

  // text-embeddings-inference's other routes (apps/unif/serve/tei_api.h): POST /predict and /rerank
  // (classifiers and regression models), /similarity (embedding models), /tokenize and GET /info (any
  // model), POST / routed by the model as TEI routes it; and OpenAI's GET /v1/models. Their records go
  // through the same batcher; errors in TEI's shape, 429 for a full queue (TEI's "overloaded").
  const Task task = predictor.task();
  const bool takes_pairs = predictor.plain_hf() || predictor.text_fields().size() == 2;
  const auto tei_fail = [](httplib::Response& res, int status, const std::string& message, const char* type) {
    res.status = status;
    res.set_content(serve::tei_error_body(message, type), "application/json");
  };
  const auto tei_refused = [&](httplib::Response& res, const serve::TeiStatus& s) {
    tei_fail(res, s.status, s.error, s.error_type.c_str());
  };
  // TEI's `truncate: false`: an input longer than the model takes is refused (413), not cut.
  const auto tei_too_long = [&](httplib::Response& res, std::string_view text, std::optional<std::string_view> pair) {
    const auto n = static_cast<int64_t>(predictor.tokenize(text, pair).size());
    if (n <= predictor.max_seq_length()) return false;
    tei_fail(res, 413,
             "Input validation error: `inputs` must have less than " + std::to_string(predictor.max_seq_length()) +
                 " tokens. Given: " + std::to_string(n),
             "Validation");
    return true;
  };
  // `records` through the batcher: their predictions, or nullopt once the error is answered (429
  // the queue is full, 499 the client has gone, 424 the model failed or gave no finite output, 422
  // a record the model does not take).
  const auto tei_run = [&](httplib::Response& res,
                           const std::vector<json>& records) -> std::optional<std::vector<Prediction>> {
    const int fd = t_client_fd;
    auto answers = batcher.submit(records, [fd] { return client_gone(fd); });
    if (!answers) {
      tei_fail(res, 429,
               "Model is overloaded: the queue is full (" + std::to_string(o.queue) +
                   " requests waiting) or the server is stopping: try again later",
               "Overloaded");
      return std::nullopt;
    }
    t_records = records.size();
    if (answers->dropped) {
      metrics.dropped();
      tei_fail(res, kClientClosedRequest, "the client closed the connection before the request's batch ran", "Backend");
      return std::nullopt;
    }
    if (!answers->failed.empty()) {
      const auto& [index, error] = answers->failed.front();
      {
        std::lock_guard<std::mutex> lock(log_mutex);
        std::fprintf(stderr, "request %s: input %zu: %s\n", t_request_id.c_str(), index, what_of(error).c_str());
      }
      t_record_errors = answers->failed.size();
      tei_fail(res, 424, "Inference failed: internal error (request " + t_request_id + ", in the server's log)",
               "Backend");
      return std::nullopt;
    }
    for (size_t i = 0; i < answers->outputs.size(); ++i) {
      const auto& p = answers->outputs[i];
      if (p.ok()) continue;
      t_record_errors = 1;
      tei_fail(res, p.rejected ? 422 : 424, "input " + std::to_string(i) + ": " + p.error,
               p.rejected ? "Validation" : "Backend");
      return std::nullopt;
    }
    return std::move(answers->outputs);
  };
  const auto tei_predict = [&](const httplib::Request& req, httplib::Response& res) {
    if (const auto why = serve::tei_predict_refusal(task); !why.empty()) return tei_fail(res, 424, why, "Backend");
    const auto request = serve::decode_tei_predict(req.body, req.get_header_value("Content-Type"), kMaxEmbedInputs);
    if (!request.ok()) return tei_refused(res, request);
    std::vector<json> records;
    records.reserve(request.inputs.size());
    for (const auto& in : request.inputs) {
      if (!request.truncate && tei_too_long(res, in.text, in.pair)) return;
      records.push_back(in.pair ? json::array({in.text, *in.pair}) : json(in.text));
    }
    const auto predictions = tei_run(res, records);
    if (!predictions) return;
    const auto labels = serve::tei_labels(task, predictor.labels());
    json answer = json::array();
    for (const auto& p : *predictions)
      answer.push_back(serve::tei_predictions(labels, serve::tei_scores(task, p.logits, p.value, request.raw_scores)));
    res.set_content((request.batch ? answer : answer.at(0)).dump() + "\n", "application/json");
  };
  const auto tei_rerank = [&](const httplib::Request& req, httplib::Response& res) {
    if (const auto why = serve::tei_rerank_refusal(task, predictor.labels().size(), takes_pairs); !why.empty())
      return tei_fail(res, 424, why, "Backend");
    const auto request = serve::decode_tei_rerank(req.body, req.get_header_value("Content-Type"), kMaxEmbedInputs);
    if (!request.ok()) return tei_refused(res, request);
    std::vector<json> records;
    records.reserve(request.texts.size());
    for (const auto& text : request.texts) {
      if (!request.truncate && tei_too_long(res, request.query, text)) return;
      records.push_back(json::array({request.query, text}));
    }
    const auto predictions = tei_run(res, records);
    if (!predictions) return;
    std::vector<double> scores;
    scores.reserve(predictions->size());
    for (const auto& p : *predictions)
      scores.push_back(serve::tei_rerank_score(task, p.logits, p.value, request.raw_scores));
    res.set_content(serve::tei_ranks(request, scores).dump() + "\n", "application/json");
  };
  const auto tei_similarity = [&](const httplib::Request& req, httplib::Response& res) {
    if (!embedder)
      return tei_fail(
          res, 424,
          "this server's model is a " + to_string(task) + " model, not an embedding model: use POST /v1/predict",
          "Backend");
    const auto request = serve::decode_tei_similarity(req.body, req.get_header_value("Content-Type"), kMaxEmbedInputs);
    if (!request.ok()) return tei_refused(res, request);
    std::vector<json> records{json{{"text", request.source_sentence}}};
    for (const auto& s : request.sentences) records.push_back(json{{"text", s}});
    if (!request.truncate)
      for (const auto& r : records)
        if (tei_too_long(res, r.at("text").get_ref<const std::string&>(), std::nullopt)) return;
    const auto predictions = tei_run(res, records);
    if (!predictions) return;
    std::vector<std::vector<double>> embeddings;
    embeddings.reserve(predictions->size());
    for (const auto& p : *predictions) embeddings.push_back(p.embedding);
    res.set_content(json(serve::cosine_to_first(embeddings)).dump() + "\n", "application/json");
  };
  svr.Post("/predict", tei_predict);
  svr.Post("/rerank", tei_rerank);
  svr.Post("/similarity", tei_similarity);
  // TEI's POST / is the route of the model's kind (where huggingface_hub's InferenceClient posts for
  // a server URL): /predict for a classifier, /rerank for a regression model (TEI's reranker: one
  // output) that takes pairs, /embed for an embedding model (/similarity for a similarity request,
  // which InferenceClient.sentence_similarity also posts there).
  const auto embed_tei = embed_route(serve::EmbeddingApi::Tei);
  svr.Post("/", [&](const httplib::Request& req, httplib::Response& res) {
    switch (task_spec(task).output) {
      case PredictKind::Label:
      case PredictKind::Labels: return tei_predict(req, res);
      case PredictKind::Value: return takes_pairs ? tei_rerank(req, res) : tei_predict(req, res);
      case PredictKind::Embedding:
        if (serve::is_similarity_body(req.body)) return tei_similarity(req, res);
        return embed_tei(req, res);
      default: return embed_tei(req, res);  // 424: not an embedding model
    }
  });
  svr.Post("/tokenize", [&](const httplib::Request& req, httplib::Response& res) {
    const auto request = serve::decode_tei_tokenize(req.body, req.get_header_value("Content-Type"), kMaxEmbedInputs);
    if (!request.ok()) return tei_refused(res, request);
    json answer = json::array();
    for (const auto& text : request.inputs) {
      std::vector<serve::TeiToken> tokens;
      for (auto& t : predictor.tokenize(text, std::nullopt, request.add_special_tokens))
        tokens.push_back({t.id, std::move(t.token), t.special, t.start, t.end});
      answer.push_back(serve::tei_tokens(text, tokens));
    }
    res.set_content(answer.dump() + "\n", "application/json");
  });
  serve::TeiServerInfo info;
  if (is_hub_model_name(o.model)) {
    info.model_id = o.model;  // the Hub id, as text-embeddings-inference names its model
  } else {
    auto dir = std::filesystem::path(o.model).lexically_normal();
    if (dir.filename().empty()) dir = dir.parent_path();
    if (dir.filename().empty() || dir.filename() == "." || dir.filename() == "..")
      dir = std::filesystem::absolute(dir).lexically_normal();
    if (dir.filename().empty()) dir = dir.parent_path();
    info.model_id = dir.filename().string();
  }
  info.model_dtype = predictor.quantization().empty() ? "float32" : "int8";
  info.task = task;
  info.labels = predictor.labels();
  info.pooling = predictor.pooling();
  info.accepted_records = framework::accepted_record_shapes(
      task, predictor.plain_hf() ? std::vector<std::string>{} : predictor.text_fields());
  info.max_concurrent_requests = o.queue;
  info.max_input_length = predictor.max_seq_length();
  info.max_batch_tokens = o.max_batch_tokens;
  info.max_batch_requests = o.max_batch;
  info.max_client_batch_size = static_cast<int64_t>(kMaxEmbedInputs);
  info.tokenization_workers = model_workers(o);
  info.version = UNIF_VERSION;
  const std::string info_body = serve::tei_info(info).dump() + "\n";
  svr.Get("/info", [&info_body](const httplib::Request&, httplib::Response& res) {
    res.set_content(info_body, "application/json");
  });
  const std::string models_body =
      serve::openai_model_list(
          info.model_id,
          std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count())
          .dump() +
      "\n";
  svr.Get("/v1/models", [&models_body](const httplib::Request&, httplib::Response& res) {
    res.set_content(models_body, "application/json");
  });
  svr.Get("/health", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{\"status\":\"ok\"}\n", "application/json");
  });
  svr.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics.render(batcher.queued()), "text/plain; version=0.0.4");
  });
  // The library's own answers (404, 413, 400 for a request it cannot read) get a JSON body too.
  svr.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) answer_error(res, res.status, status_text(res.status));
  });
  // Not a message for the client (a LibTorch error holds a stack trace and source paths): the log
  // has it, under the request's id.
  svr.set_exception_handler([&](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    {
      std::lock_guard<std::mutex> lock(log_mutex);
      std::fprintf(stderr, "request %s: internal error: %s\n", t_request_id.c_str(), what_of(ep).c_str());
    }
    answer_error(res, 500, "internal error (request " + t_request_id + ", in the server's log)");
  });
  svr.set_logger([&](const httplib::Request& req, const httplib::Response& res) {
    const double seconds = t_started ? std::chrono::duration<double>(Clock::now() - t_start).count() : 0.0;
    t_started = false;
    metrics.response(res.status);
    if (is_model_route(req.path) && req.method == "POST")
      metrics.request(res.status, seconds, res.status == 200 ? t_records : 0, res.status == 200 ? t_record_errors : 0);
    std::lock_guard<std::mutex> lock(log_mutex);
    std::fprintf(stderr, "%s:%d \"%s %s\" %d %zu B, %zu records, %.1f ms%s%s\n", req.remote_addr.c_str(),
                 req.remote_port, req.method.c_str(), req.path.substr(0, 200).c_str(), res.status, res.body.size(),
                 t_records, seconds * 1000.0, t_request_id.empty() ? "" : ", request ", t_request_id.c_str());
    t_request_id.clear();
    t_records = t_record_errors = 0;
  });

  Connections::Settings cs;
  cs.max_body = static_cast<size_t>(o.max_body_bytes);
  cs.request_timeout = milliseconds(o.request_timeout * 1000);
  cs.predict_workers = static_cast<size_t>(model_workers(o));
  Connections conns(
      cs,
      [&svr](httplib::Stream& strm, bool close_connection, bool& connection_closed) {
        return svr.answer(strm, close_connection, connection_closed);
      },
      [&](const std::string& addr, int port, const std::string& method, const std::string& target, double seconds,
          const std::string& body) {
        metrics.response(408);
        std::lock_guard<std::mutex> lock(log_mutex);
        std::fprintf(stderr, "%s:%d \"%s %s\" 408 %zu B, 0 records, %.1f ms\n", addr.c_str(), port,
                     method.empty() ? "-" : method.c_str(), target.empty() ? "-" : target.substr(0, 200).c_str(),
                     body.size(), seconds * 1000.0);
      });

  int port = o.port;
  const int listening = listen_on(o.host, port);
  if (o.api_key.empty() && !serve::is_loopback_host(o.host))
    std::fprintf(stderr,
                 "warning: %s is reachable from other machines and the server has no API key: anyone who reaches "
                 "it can use the model (set UNIF_API_KEY, or --api-key)\n",
                 o.host.c_str());
  std::fprintf(stderr, "listening on http://%s:%d\n", o.host.c_str(), port);
  std::fflush(stderr);
  int sig = 0;
  while (sig == 0) {
    pollfd fds[2] = {{listening, POLLIN, 0}, {g_signal_pipe[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) continue;  // EINTR
    if (fds[1].revents) {
      char c = 0;
      if (::read(g_signal_pipe[0], &c, 1) == 1) sig = c;
      continue;
    }
    if ((fds[0].revents & POLLIN) && !accept_waiting(listening, conns) && (errno == EMFILE || errno == ENFILE))
      std::this_thread::sleep_for(milliseconds(10));  // out of descriptors: the backlog waits
  }
  std::fprintf(stderr, "stopping (%s): answering the requests in flight\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
  std::fflush(stderr);
  // The connections the system has accepted for us are taken before the socket closes (closing
  // it would reset them); after it, a new connection is refused.
  accept_waiting(listening, conns);
  ::close(listening);
  conns.stop();
  conns.join();  // every request of an accepted connection answered
  batcher.stop();
  std::fprintf(stderr, "stopped\n");
  return 0;
}

}  // namespace

Command add_serve(CLI::App& app) {
  auto* cmd = app.add_subcommand("serve", "Serve a model directory over HTTP (POST /v1/predict, /health, /metrics)");
  auto o = std::make_shared<ServeOptions>();
  cmd->add_option("--model", o->model,
                  "Model directory (ours or a plain HF one), or a Hub id (org/name) through the Hugging Face cache")
      ->required();
  cmd->add_option("--host", o->host, "Address to listen on (default 127.0.0.1: this machine only)");
  cmd->add_option("--port", o->port, "Port (default 8080; 0 picks a free one)")->check(CLI::Range(0, 65535));
  cmd->add_option("--max-batch", o->max_batch, "Most records run as one batch (default 32)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  cmd->add_option("--max-batch-tokens", o->max_batch_tokens,
                  "Most tokens run as one batch, padding counted: rows x the longest row (default 16384; a "
                  "request over it runs alone)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  cmd->add_option("--max-wait-ms", o->max_wait_ms, "Longest a request waits for others to fill a batch (default 5)")
      ->check(CLI::Range(int64_t{0}, int64_t{60000}));
  cmd->add_option("--queue", o->queue, "Most requests waiting for a batch; more are answered 503 (default 1024)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--max-body-bytes", o->max_body_bytes,
                  "Largest request body; larger ones are answered 413 (default 8388608)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 34));
  cmd->add_option("--request-timeout", o->request_timeout,
                  "Seconds a request (head and body) has to arrive whole; a later one is answered 408 (default 30)")
      ->check(CLI::Range(int64_t{1}, int64_t{3600}));
  cmd->add_option("--api-key", o->api_key,
                  "Answer only requests with the header Authorization: Bearer KEY (all but GET /health); the "
                  "environment variable keeps it out of the process list")
      ->envname("UNIF_API_KEY");
  add_quantize_option(cmd, o->quantize);
  add_exit_threshold_option(cmd, o->exit_threshold);
  return [o] {
    if (o->api_key.find_first_of(" \t\r\n") != std::string::npos)
      throw UserError("--api-key: the key must not hold spaces or line breaks (it is sent in an HTTP header)");
    return run_server(*o);
  };
}

}  // namespace unif::app
