// `unif serve`'s metrics: see metrics.h.
#include "apps/unif/serve/metrics.h"

#include <cstdio>

namespace unif::app::serve {

namespace {

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.12g", v);
  return buf;
}

void counter(std::string& out, const char* name, const char* help, uint64_t v) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n" + name + " " +
         std::to_string(v) + "\n";
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += v;
  ++count_;
}

void Histogram::render(std::string& out, const std::string& name) const {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += name + "_bucket{le=\"" + number(bounds_[i]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
  out += name + "_sum " + number(sum_) + "\n";
  out += name + "_count " + std::to_string(count_) + "\n";
}

Metrics::Metrics()
    : batch_size_({1, 2, 4, 8, 16, 32, 64, 128, 256}),
      batch_tokens_({64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536}),
      duration_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}) {}

void Metrics::request(int status, double seconds, size_t records, size_t record_errors) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++requests_;
  if (status != 200) ++request_errors_;
  if (status == 503 || status == 429) ++rejected_full_;  // 429: the TEI routes' answer
  records_ += records;
  record_errors_ += record_errors;
  duration_.observe(seconds);
}

void Metrics::response(int status) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++responses_[status];
}

void Metrics::batch(size_t records, int64_t tokens) {
  std::lock_guard<std::mutex> lock(mutex_);
  batch_size_.observe(static_cast<double>(records));
  batch_tokens_.observe(static_cast<double>(tokens));
}

void Metrics::dropped() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++dropped_;
}

std::string Metrics::render(size_t queued) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  counter(out, "unif_requests_total",
          "Requests to the model routes answered (POST /v1/predict, /embed, /, /v1/embeddings, /predict, "
          "/rerank, /similarity).",
          requests_);
  counter(out, "unif_request_errors_total", "Requests to the model routes answered with a status other than 200.",
          request_errors_);
  counter(out, "unif_requests_rejected_queue_full_total",
          "Requests answered 503 (429 on the TEI routes) because the queue was full.", rejected_full_);
  counter(out, "unif_requests_dropped_total",
          "Requests dropped before their batch ran because the client had closed the connection (status 499).",
          dropped_);
  counter(out, "unif_records_total", "Records answered in 200 responses.", records_);
  counter(out, "unif_record_errors_total", "Records answered with an error object.", record_errors_);
  out +=
      "# HELP unif_responses_total HTTP answers by status code, every path.\n"
      "# TYPE unif_responses_total counter\n";
  for (const auto& [code, n] : responses_)
    out += "unif_responses_total{code=\"" + std::to_string(code) + "\"} " + std::to_string(n) + "\n";
  out += "# HELP unif_queue_requests Requests waiting to be batched.\n# TYPE unif_queue_requests gauge\n";
  out += "unif_queue_requests " + std::to_string(queued) + "\n";
  out += "# HELP unif_batch_size Records per batch run by the model.\n# TYPE unif_batch_size histogram\n";
  batch_size_.render(out, "unif_batch_size");
  out +=
      "# HELP unif_batch_tokens Tokens per batch run by the model, padding counted (rows x the longest row).\n"
      "# TYPE unif_batch_tokens histogram\n";
  batch_tokens_.render(out, "unif_batch_tokens");
  out +=
      "# HELP unif_request_duration_seconds Time from a request's arrival to its answer.\n"
      "# TYPE unif_request_duration_seconds histogram\n";
  duration_.render(out, "unif_request_duration_seconds");
  return out;
}

}  // namespace unif::app::serve
