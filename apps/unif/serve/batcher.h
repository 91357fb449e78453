// Dynamic batching for `unif serve`: the records of concurrent requests are queued and run
// together. One thread takes the queued requests in arrival order when they hold max_batch
// records, or when the oldest has waited max_wait, and runs them as one batch (a request larger
// than max_batch runs as a batch of its own); each request's caller then gets its answers.
// The queue holds at most `capacity` waiting requests: submit() refuses more (503). stop() answers
// everything queued before it returns.
//
// A run that throws is retried on each half of its records, down to single records: a record that
// makes the run throw even alone fails alone (its request's other records, and the other requests
// of its batch, are answered).
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace unif::app::serve {

class Batcher {
 public:
  /// A record of a batch and its number in its own request (from 1), which its errors name.
  struct Item {
    const nlohmann::json* record;
    size_t number;
  };
  /// Answers records (of one or more requests), one object per record, in order.
  using Run = std::function<std::vector<nlohmann::json>(const std::vector<Item>& items)>;
  /// Called after each batch with its number of records.
  using OnBatch = std::function<void(size_t records)>;

  /// What a request gets.
  struct Answers {
    /// One object per record, in order; null for a failed record.
    std::vector<nlohmann::json> outputs;
    /// The records the run threw on even alone: their index in the request (from 0), the exception.
    std::vector<std::pair<size_t, std::exception_ptr>> failed;
  };

  Batcher(Run run, size_t max_batch, std::chrono::microseconds max_wait, size_t capacity, OnBatch on_batch = {});
  ~Batcher();
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  /// Queues `records` and waits for their answers; nullopt when the queue is full or stopped.
  std::optional<Answers> submit(std::vector<nlohmann::json> records);
  /// Requests waiting to be batched now.
  size_t queued() const;
  /// Refuses new requests, answers the queued ones, ends the thread.
  void stop();

 private:
  struct Job {
    std::vector<nlohmann::json> records;
    Answers answers;
    bool done = false;
    std::chrono::steady_clock::time_point arrived;
  };
  void loop();
  // Answers items [begin, end) into `answers`, halving a run that throws; a single item's exception
  // goes to `errors`.
  void answer(const std::vector<Item>& items, size_t begin, size_t end, std::vector<nlohmann::json>& answers,
              std::vector<std::exception_ptr>& errors);

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
