// `unif serve`'s counters and histograms, rendered in the Prometheus text exposition format
// (version 0.0.4) for GET /metrics. Thread-safe.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace unif::app::serve {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);
  /// `name`_bucket{le="..."} (cumulative), `name`_sum, `name`_count lines.
  void render(std::string& out, const std::string& name) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; the last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

class Metrics {
 public:
  Metrics();
  /// A finished POST /v1/predict: its HTTP status, seconds from its arrival to the answer, and
  /// its records with how many were answered with an error object.
  void request(int status, double seconds, size_t records, size_t record_errors);
  /// Any answer the server sends, on any path (404, 405 and 408 too): its HTTP status.
  void response(int status);
  /// A batch of `records` run by the model, `tokens` its padded size (rows x the longest row).
  void batch(size_t records, int64_t tokens);
  /// A request dropped before its batch ran: its client had closed the connection.
  void dropped();
  /// The whole text; `queued`: requests waiting now.
  std::string render(size_t queued) const;

 private:
  mutable std::mutex mutex_;
  uint64_t requests_ = 0, request_errors_ = 0, records_ = 0, record_errors_ = 0, rejected_full_ = 0, dropped_ = 0;
  std::map<int, uint64_t> responses_;  // by status
  Histogram batch_size_, batch_tokens_, duration_;
};

}  // namespace unif::app::serve
