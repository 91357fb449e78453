// `unif serve --model DIR [--host 127.0.0.1] [--port 8080] [--max-batch 32] [--max-wait-ms 5]
// [--queue 1024] [--max-body-bytes 8388608]` (SPEC §8): the model behind HTTP/1.1 JSON.
//
//   POST /v1/predict {"inputs": [record, ...]} -> 200 {"outputs": [object, ...]}, object i being what
//        `unif predict` writes for record i (a bad record: {"error": ...} in its place); 400 bad
//        JSON or no "inputs" array, 415 a Content-Type other than JSON, 413 a body over
//        --max-body-bytes, 503 the queue is full (or the server is stopping).
//   GET /health -> {"status": "ok"};  GET /metrics -> Prometheus text (serve/metrics.h).
//
// The HTTP library is cpp-httplib (Debian's libcpp-httplib-dev): maintained, small, and a server
// with its own thread pool, keep-alive, timeouts and the body size limit, so no HTTP parsing is
// written here. Its worker threads decode requests (serve/request.h) and wait on the batcher
// (serve/batcher.h), whose one thread runs the records of concurrent requests as one batch through
// unif::Predictor. SIGTERM / SIGINT: stop accepting, answer the requests in flight, exit 0. Each
// request gets an access log line on stderr.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "apps/unif/commands.h"
#include "apps/unif/serve/batcher.h"
#include "apps/unif/serve/metrics.h"
#include "apps/unif/serve/request.h"
#include "framework/common/error.h"
#include "framework/inference/predictor.h"

namespace unif::app {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// SIGTERM / SIGINT write a byte here; a watcher thread reads it and stops the server (whichever
// thread the signal lands on, the handler only writes).
int g_signal_pipe[2] = {-1, -1};

extern "C" void on_serve_signal(int sig) {
  const char c = static_cast<char>(sig);
  ssize_t ignored = ::write(g_signal_pipe[1], &c, 1);
  (void)ignored;
}

// Per request, on the HTTP worker thread that answers it: set by the pre-routing handler and the
// predict handler, read by the logger (the same thread, in that order).
thread_local Clock::time_point t_start;
thread_local bool t_started = false;
thread_local size_t t_records = 0, t_record_errors = 0;

std::string status_text(int status) {
  switch (status) {
    case 400: return "bad request";
    case 404: return "not found: the endpoints are POST /v1/predict, GET /health, GET /metrics";
    case 405: return "method not allowed";
    case 413: return "the request body is larger than --max-body-bytes";
    case 414: return "the request URI is too long";
    default: return "HTTP status " + std::to_string(status);
  }
}

void answer_error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(json{{"error", message}}.dump() + "\n", "application/json");
}

struct ServeOptions {
  std::string model, host = "127.0.0.1";
  int port = 8080;
  int64_t max_batch = 32, max_wait_ms = 5, queue = 1024, max_body_bytes = 8388608;
  std::string quantize = "none";
};

int run_server(const ServeOptions& o) {
  if (::pipe2(g_signal_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe: " + std::string(std::strerror(errno)));
  struct sigaction sa {};
  sa.sa_handler = on_serve_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);  // a client gone mid-answer is the library's write error, not our death

  PredictorOptions popt;
  popt.batch_size = o.max_batch;
  popt.quantize = o.quantize;
  const auto predictor = Predictor::load(o.model, popt);
  if (!predictor.quantization().empty()) std::fprintf(stderr, "%s\n", predictor.quantization().c_str());

  serve::Metrics metrics;
  serve::Batcher batcher(
      [&predictor](const std::vector<json>& records) {
        std::vector<json> out;
        out.reserve(records.size());
        for (const auto& p : predictor.predict(records)) out.push_back(p.to_json());
        return out;
      },
      static_cast<size_t>(o.max_batch), std::chrono::milliseconds(o.max_wait_ms), static_cast<size_t>(o.queue),
      [&metrics](size_t n) { metrics.batch(n); });

  httplib::Server svr;
  // Every waiting request holds a worker thread: enough for the queue (up to 256) and a few more
  // for /health and /metrics; connections beyond them wait in the library's own queue.
  const size_t threads = static_cast<size_t>(std::min<int64_t>(o.queue, 256)) + 4;
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  svr.set_payload_max_length(static_cast<size_t>(o.max_body_bytes));
  svr.set_read_timeout(5, 0);  // a client that stops sending mid-request is dropped after 5 s
  svr.set_write_timeout(5, 0);
  svr.set_keep_alive_timeout(5);
  // The library writes an answer's headers and body in two sends: with Nagle's algorithm the body
  // waits for the client's delayed ACK of the headers (40 ms on Linux) on every answer.
  svr.set_tcp_nodelay(true);
  // SO_REUSEADDR only: the library's default adds SO_REUSEPORT, with which a second server would
  // share a port in use instead of being refused.
  // The listening socket is kept to raise its backlog after bind: Debian's library listens with a
  // backlog of 5, and 32 clients connecting at once would wait out SYN retransmits (1 s).
  socket_t listening = INVALID_SOCKET;
  svr.set_socket_options([&listening](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    listening = sock;
  });

  svr.set_pre_routing_handler([](const httplib::Request&, httplib::Response&) {
    t_start = Clock::now();
    t_started = true;
    t_records = t_record_errors = 0;
    return httplib::Server::HandlerResponse::Unhandled;
  });
  svr.Post("/v1/predict", [&](const httplib::Request& req, httplib::Response& res) {
    auto decoded = serve::decode_predict_request(req.body, req.get_header_value("Content-Type"));
    if (decoded.status != 200) return answer_error(res, decoded.status, decoded.error);
    const size_t n = decoded.inputs.size();
    auto answers = batcher.submit(std::move(decoded.inputs));
    if (!answers)
      return answer_error(res, 503,
                          "the queue is full (" + std::to_string(o.queue) +
                              " requests waiting) or the server is stopping: try again later");
    t_records = n;
    for (const auto& a : *answers) t_record_errors += a.contains("error");
    res.set_content(json{{"outputs", std::move(*answers)}}.dump() + "\n", "application/json");
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
  svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) { what = e.what(); } catch (...) {
    }
    answer_error(res, 500, "internal: " + what);
  });
  std::mutex log_mutex;
  svr.set_logger([&](const httplib::Request& req, const httplib::Response& res) {
    const double seconds = t_started ? std::chrono::duration<double>(Clock::now() - t_start).count() : 0.0;
    t_started = false;
    if (req.path == "/v1/predict" && req.method == "POST")
      metrics.request(res.status, seconds, res.status == 200 ? t_records : 0, res.status == 200 ? t_record_errors : 0);
    std::lock_guard<std::mutex> lock(log_mutex);
    std::fprintf(stderr, "%s:%d \"%s %s\" %d %zu B, %zu records, %.1f ms\n", req.remote_addr.c_str(), req.remote_port,
                 req.method.c_str(), req.path.substr(0, 200).c_str(), res.status, res.body.size(), t_records,
                 seconds * 1000.0);
  });

  int port = o.port;
  if (port == 0) {
    port = svr.bind_to_any_port(o.host);
    if (port < 0) throw UserError("cannot listen on " + o.host + " (any port): " + std::strerror(errno));
  } else if (!svr.bind_to_port(o.host, port)) {
    throw UserError("cannot listen on " + o.host + ":" + std::to_string(port) +
                    " (the port is in use, or the address is not this machine's)");
  }
  if (listening != INVALID_SOCKET) ::listen(listening, SOMAXCONN);  // a larger backlog, same socket
  // Watches the signal pipe: a signal stops the server once it is running; 'q' ends the watch.
  std::atomic<bool> listening_done{false};
  std::thread watcher([&] {
    for (;;) {
      char c = 0;
      const ssize_t got = ::read(g_signal_pipe[0], &c, 1);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0 || c == 'q') return;
      std::fprintf(stderr, "stopping (%s): answering the requests in flight\n", c == SIGINT ? "SIGINT" : "SIGTERM");
      // stop() does nothing before listen_after_bind has started: wait for it.
      while (!svr.is_running() && !listening_done) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      svr.stop();
      return;
    }
  });
  std::fprintf(stderr, "listening on http://%s:%d\n", o.host.c_str(), port);
  std::fflush(stderr);
  svr.listen_after_bind();  // returns after stop(), once every worker thread is done
  listening_done = true;
  batcher.stop();
  const char q = 'q';
  ssize_t ignored = ::write(g_signal_pipe[1], &q, 1);
  (void)ignored;
  watcher.join();
  std::fprintf(stderr, "stopped\n");
  return 0;
}

}  // namespace

Command add_serve(CLI::App& app) {
  auto* cmd = app.add_subcommand("serve", "Serve a model directory over HTTP (POST /v1/predict, /health, /metrics)");
  auto o = std::make_shared<ServeOptions>();
  cmd->add_option("--model", o->model, "Model directory (ours or a plain HF one)")->required();
  cmd->add_option("--host", o->host, "Address to listen on (default 127.0.0.1: this machine only)");
  cmd->add_option("--port", o->port, "Port (default 8080; 0 picks a free one)")->check(CLI::Range(0, 65535));
  cmd->add_option("--max-batch", o->max_batch, "Most records run as one batch (default 32)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  cmd->add_option("--max-wait-ms", o->max_wait_ms, "Longest a request waits for others to fill a batch (default 5)")
      ->check(CLI::Range(int64_t{0}, int64_t{60000}));
  cmd->add_option("--queue", o->queue, "Most requests waiting for a batch; more are answered 503 (default 1024)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--max-body-bytes", o->max_body_bytes,
                  "Largest request body; larger ones are answered 413 (default 8388608)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 34));
  add_quantize_option(cmd, o->quantize);
  return [o] { return run_server(*o); };
}

}  // namespace unif::app
