// Dynamic batching for `unif serve`: the records of concurrent requests are queued and run
// together. One thread takes the queued requests in arrival order when they hold max_batch
// records, or when the oldest has waited max_wait, and runs them as one batch (a request larger
// than max_batch runs as a batch of its own); each request's caller then gets its answers.
// The queue holds at most `capacity` waiting requests: submit() refuses more (503). stop() answers
// everything queued before it returns.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace unif::app::serve {

class Batcher {
 public:
  /// Answers a batch of records, one object per record, in order.
  using Run = std::function<std::vector<nlohmann::json>(const std::vector<nlohmann::json>&)>;
  /// Called after each batch with its number of records.
  using OnBatch = std::function<void(size_t records)>;

  Batcher(Run run, size_t max_batch, std::chrono::microseconds max_wait, size_t capacity, OnBatch on_batch = {});
  ~Batcher();
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  /// Queues `records` and waits for their answers; nullopt when the queue is full or stopped.
  /// An exception of the run (not a per-record error) is rethrown to every caller of that batch.
  std::optional<std::vector<nlohmann::json>> submit(std::vector<nlohmann::json> records);
  /// Requests waiting to be batched now.
  size_t queued() const;
  /// Refuses new requests, answers the queued ones, ends the thread.
  void stop();

 private:
  struct Job {
    std::vector<nlohmann::json> records;
    std::vector<nlohmann::json> answers;
    std::exception_ptr error;
    bool done = false;
    std::chrono::steady_clock::time_point arrived;
  };
  void loop();

  Run run_;
  OnBatch on_batch_;
  const size_t max_batch_;
  const std::chrono::microseconds max_wait_;
  const size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::deque<std::shared_ptr<Job>> queue_;
  size_t queued_records_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace unif::app::serve
