// Batcher: dynamic batching of concurrent callers' records through one Predictor, as `unif serve`
// runs its requests (any C++ program can embed it the same way).
//
//   unif::Batcher batcher(predictor, {/*max_batch*/ 32, /*max_batch_tokens*/ 16384, /*max_wait*/ 5ms});
//   // on each request thread:
//   auto answers = batcher.submit(records);  // tokenized here, then queued; waits for the answers
//   if (!answers) ...                       // the queue is full, or the batcher is stopping
//   answers->outputs[i].to_json();          // what `unif predict` writes for record i
//
// A request is read and tokenized on its caller's thread (Predictor::preprocess) before it is
// queued; the batcher's one thread takes the queued requests in arrival order and runs them as
// one batch (Predictor::forward, then postprocess) when they fill one, or when the oldest has
// waited max_wait. A batch holds whole requests: at most max_batch records and at most
// max_batch_tokens tokens, padding counted (its rows, records or their windows, times its longest
// row). A request over either bound on its own is not refused: it runs as a batch of its own (the
// predictor cuts it into forward passes of max_batch rows, as predict() does). The queue holds at
// most `capacity` requests: submit() refuses more. stop() answers everything queued before it
// returns.
//
// A request whose caller has gone (its `cancelled` check says so when its batch is formed) is
// dropped: it does not run, and submit() returns it with `dropped` set.
//
// A run that throws is retried on each half of its records, down to single records: a record that
// makes the run throw even alone fails alone (its request's other records, and the other requests
// of its batch, are answered). So does a record whose tokenizing throws.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
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

#include "framework/inference/predictor.h"

namespace unif {

struct BatcherOptions {
  /// Most records in one batch (`unif serve --max-batch`).
  size_t max_batch = 32;
  /// Most tokens in one batch, padding counted: its rows times its longest row, special tokens
  /// included (`unif serve --max-batch-tokens`).
  int64_t max_batch_tokens = 16384;
  /// Longest the oldest queued request waits for others to fill a batch (`--max-wait-ms`).
  std::chrono::microseconds max_wait{5000};
  /// Most requests waiting to be batched; submit() refuses more (`--queue`).
  size_t capacity = 1024;
};

/// What one batch held when it ran (Batcher's on_batch).
struct BatchStats {
  size_t requests = 0;
  size_t records = 0;  // every record of its requests, those answered without the model too
  int64_t rows = 0;    // the model's inputs: records, or their windows
  int64_t tokens = 0;  // rows x the longest row: its padded size
};

class Batcher {
 public:
  /// Answers the prepared records of a batch (of one or more requests), one Prediction per record,
  /// in order. The Predictor constructor's run is postprocess(records, forward(records)).
  using Run = std::function<std::vector<Prediction>(const std::vector<PreparedRecord>& records)>;
  /// Called on the batcher's thread after each batch.
  using OnBatch = std::function<void(const BatchStats& batch)>;
  /// Whether a request's caller has gone (e.g. its client closed the connection). Called on the
  /// batcher's thread, without its lock, while the caller waits in submit().
  using Cancelled = std::function<bool()>;

  /// What a request gets.
  struct Answers {
    /// One Prediction per record, in order; a default one for a failed record.
    std::vector<Prediction> outputs;
    /// The records the run threw on even alone: their index in the request (from 0), the exception.
    std::vector<std::pair<size_t, std::exception_ptr>> failed;
    /// The caller had gone when its batch was formed: nothing ran, `outputs` is empty.
    bool dropped = false;
  };

  /// Batches for `predictor` (which must outlive the batcher).
  Batcher(const Predictor& predictor, BatcherOptions options, OnBatch on_batch = {});
  /// Batches for another run on prepared records (a test's, a pipeline's own).
  Batcher(Run run, BatcherOptions options, OnBatch on_batch = {});
  ~Batcher();
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  /// Reads and tokenizes `records` on this thread (Predictor::preprocess; errors name
  /// "record:N"), queues them and waits for their answers; nullopt when the queue is full or the
  /// batcher is stopping. A record whose tokenizing throws is in `failed`, the others answered.
  /// Needs the Predictor constructor (std::logic_error otherwise).
  std::optional<Answers> submit(const std::vector<nlohmann::json>& records, Cancelled cancelled = {});
  /// Queues records already prepared and waits for their answers; nullopt when the queue is full or
  /// the batcher is stopping.
  std::optional<Answers> submit_prepared(std::vector<PreparedRecord> records, Cancelled cancelled = {});
  /// Requests waiting to be batched now.
  size_t queued() const;
  /// Requests dropped so far because their caller had gone.
  uint64_t dropped() const;
  /// Refuses new requests, answers the queued ones, ends the thread.
  void stop();

 private:
  struct Job {
    std::vector<PreparedRecord> records;
    Cancelled cancelled;
    int64_t rows = 0, longest = 0;
    Answers answers;
    bool done = false;
    std::chrono::steady_clock::time_point arrived;
  };
  void loop();
  // Whether the queue holds a full batch: the requests taken in order reach max_batch records or
  // max_batch_tokens tokens, or the next one would not fit.
  bool full_batch_queued() const;
  // Answers records [begin, end) into `answers`, halving a run that throws; a single record's
  // exception goes to `errors`.
  void answer(const std::vector<PreparedRecord>& records, size_t begin, size_t end, std::vector<Prediction>& answers,
              std::vector<std::exception_ptr>& errors);

  const Predictor* predictor_ = nullptr;
  Run run_;
  OnBatch on_batch_;
  const BatcherOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool stopping_ = false;
  uint64_t dropped_ = 0;
  std::thread thread_;
};

}  // namespace unif
