// Batcher: see batcher.h.
#include "framework/inference/batcher.h"

#include <algorithm>
#include <stdexcept>

namespace unif {

namespace {

int64_t rows_of(const std::vector<PreparedRecord>& records) {
  int64_t rows = 0;
  for (const auto& r : records) rows += r.rows();
  return rows;
}

int64_t longest_of(const std::vector<PreparedRecord>& records) {
  int64_t longest = 0;
  for (const auto& r : records) longest = std::max(longest, r.longest());
  return longest;
}

}  // namespace

Batcher::Batcher(const Predictor& predictor, BatcherOptions options, OnBatch on_batch)
    : Batcher([p = &predictor](
                  const std::vector<PreparedRecord>& records) { return p->postprocess(records, p->forward(records)); },
              options, std::move(on_batch)) {
  predictor_ = &predictor;
}

Batcher::Batcher(Run run, BatcherOptions options, OnBatch on_batch)
    : run_(std::move(run)), on_batch_(std::move(on_batch)), options_([&] {
        options.max_batch = std::max<size_t>(1, options.max_batch);
        options.max_batch_tokens = std::max<int64_t>(1, options.max_batch_tokens);
        return options;
      }()) {
  thread_ = std::thread([this] { loop(); });
}

Batcher::~Batcher() { stop(); }

std::optional<Batcher::Answers> Batcher::submit(const std::vector<nlohmann::json>& records, Cancelled cancelled) {
  if (!predictor_) throw std::logic_error("Batcher::submit(json): the batcher was made without a Predictor");
  std::vector<PreparedRecord> prepared;
  std::vector<std::pair<size_t, std::exception_ptr>> failed;
  try {
    prepared = predictor_->preprocess(records);
  } catch (...) {
    // A record that cannot even be tokenized fails alone, as one the model throws on: its place
    // holds an empty record (no rows), the others are queued.
    prepared.clear();
    for (size_t i = 0; i < records.size(); ++i) {
      try {
        prepared.push_back(
            predictor_->preprocess(std::vector<nlohmann::json>{records[i]}, static_cast<int64_t>(i) + 1).at(0));
      } catch (...) {
        failed.emplace_back(i, std::current_exception());
        prepared.emplace_back();
      }
    }
  }
  auto answers = submit_prepared(std::move(prepared), std::move(cancelled));
  if (answers && !failed.empty()) {
    answers->failed.insert(answers->failed.end(), failed.begin(), failed.end());
    std::sort(answers->failed.begin(), answers->failed.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  return answers;
}

std::optional<Batcher::Answers> Batcher::submit_prepared(std::vector<PreparedRecord> records, Cancelled cancelled) {
  if (records.empty()) return Answers{};
  auto job = std::make_shared<Job>();
  job->rows = rows_of(records);
  job->longest = longest_of(records);
  job->records = std::move(records);
  job->cancelled = std::move(cancelled);
  std::unique_lock<std::mutex> lock(mutex_);
  if (stopping_ || queue_.size() >= options_.capacity) return std::nullopt;
  job->arrived = std::chrono::steady_clock::now();
  queue_.push_back(job);
  wake_.notify_all();
  done_.wait(lock, [&] { return job->done; });
  return std::move(job->answers);
}

size_t Batcher::queued() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size();
}

uint64_t Batcher::dropped() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dropped_;
}

void Batcher::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool Batcher::full_batch_queued() const {
  size_t records = 0;
  int64_t rows = 0, longest = 0;
  for (const auto& job : queue_) {
    const int64_t r = rows + job->rows, l = std::max(longest, job->longest);
    if (records + job->records.size() > options_.max_batch || r * l > options_.max_batch_tokens) return true;
    records += job->records.size();
    rows = r;
    longest = l;
    if (records >= options_.max_batch || rows * longest >= options_.max_batch_tokens) return true;
  }
  return false;
}

void Batcher::answer(const std::vector<PreparedRecord>& records, size_t begin, size_t end,
                     std::vector<Prediction>& answers, std::vector<std::exception_ptr>& errors) {
  if (begin >= end) return;
  try {
    const std::vector<PreparedRecord> part(records.begin() + static_cast<std::ptrdiff_t>(begin),
                                           records.begin() + static_cast<std::ptrdiff_t>(end));
    auto a = run_(part);
    if (a.size() != part.size()) throw std::logic_error("the batch run answered the wrong number of records");
    std::move(a.begin(), a.end(), answers.begin() + static_cast<std::ptrdiff_t>(begin));
    return;
  } catch (...) {
    if (end - begin == 1) {
      errors[begin] = std::current_exception();
      return;
    }
  }
  // Which record made it throw is not known: each half runs without the other.
  const size_t mid = begin + (end - begin) / 2;
  answer(records, begin, mid, answers, errors);
  answer(records, mid, end, answers, errors);
}

void Batcher::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    // Wait for a full batch, up to max_wait after the oldest request arrived (not when stopping).
    const auto deadline = queue_.front()->arrived + options_.max_wait;
    while (!stopping_ && !full_batch_queued())
      if (wake_.wait_until(lock, deadline) == std::cv_status::timeout) break;
    // Whole requests in arrival order while they fit (the first one always).
    std::vector<std::shared_ptr<Job>> taken;
    size_t records = 0;
    int64_t rows = 0, longest = 0;
    while (!queue_.empty()) {
      const auto& job = queue_.front();
      const int64_t r = rows + job->rows, l = std::max(longest, job->longest);
      if (!taken.empty() && (records + job->records.size() > options_.max_batch || r * l > options_.max_batch_tokens))
        break;
      records += job->records.size();
      rows = r;
      longest = l;
      taken.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    lock.unlock();
    // A request whose caller has gone is not run.
    std::vector<std::shared_ptr<Job>> batch, gone;
    for (auto& job : taken) (job->cancelled && job->cancelled() ? gone : batch).push_back(std::move(job));
    BatchStats stats;
    int64_t longest_row = 0;
    std::vector<PreparedRecord> items;
    for (const auto& job : batch) {
      items.insert(items.end(), job->records.begin(), job->records.end());
      stats.rows += job->rows;
      longest_row = std::max(longest_row, job->longest);
    }
    stats.requests = batch.size();
    stats.records = items.size();
    stats.tokens = stats.rows * longest_row;
    std::vector<Prediction> answers(items.size());
    std::vector<std::exception_ptr> errors(items.size());
    if (!items.empty()) {
      answer(items, 0, items.size(), answers, errors);
      if (on_batch_) on_batch_(stats);
    }
    lock.lock();
    size_t at = 0;
    for (const auto& job : batch) {
      auto& a = job->answers;
      const size_t n = job->records.size();
      a.outputs.assign(std::make_move_iterator(answers.begin() + static_cast<std::ptrdiff_t>(at)),
                       std::make_move_iterator(answers.begin() + static_cast<std::ptrdiff_t>(at + n)));
      for (size_t i = 0; i < n; ++i)
        if (errors[at + i]) a.failed.emplace_back(i, errors[at + i]);
      at += n;
      job->done = true;
    }
    for (const auto& job : gone) {
      job->answers.dropped = true;
      job->done = true;
      ++dropped_;
    }
    done_.notify_all();
  }
}

}  // namespace unif
