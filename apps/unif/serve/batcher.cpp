// Dynamic batching for `unif serve`: see batcher.h.
#include "apps/unif/serve/batcher.h"

#include <algorithm>
#include <stdexcept>

namespace unif::app::serve {

Batcher::Batcher(Run run, size_t max_batch, std::chrono::microseconds max_wait, size_t capacity, OnBatch on_batch)
    : run_(std::move(run)),
      on_batch_(std::move(on_batch)),
      max_batch_(std::max<size_t>(1, max_batch)),
      max_wait_(max_wait),
      capacity_(capacity),
      thread_([this] { loop(); }) {}

Batcher::~Batcher() { stop(); }

std::optional<Batcher::Answers> Batcher::submit(std::vector<nlohmann::json> records) {
  if (records.empty()) return Answers{};
  auto job = std::make_shared<Job>();
  job->records = std::move(records);
  std::unique_lock<std::mutex> lock(mutex_);
  if (stopping_ || queue_.size() >= capacity_) return std::nullopt;
  job->arrived = std::chrono::steady_clock::now();
  queued_records_ += job->records.size();
  queue_.push_back(job);
  wake_.notify_all();
  done_.wait(lock, [&] { return job->done; });
  return std::move(job->answers);
}

size_t Batcher::queued() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size();
}

void Batcher::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Batcher::answer(const std::vector<Item>& items, size_t begin, size_t end, std::vector<nlohmann::json>& answers,
                     std::vector<std::exception_ptr>& errors) {
  if (begin >= end) return;
  try {
    const std::vector<Item> part(items.begin() + static_cast<std::ptrdiff_t>(begin),
                                 items.begin() + static_cast<std::ptrdiff_t>(end));
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
  answer(items, begin, mid, answers, errors);
  answer(items, mid, end, answers, errors);
}

void Batcher::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    // Wait for a full batch, up to max_wait after the oldest request arrived (not when stopping).
    const auto deadline = queue_.front()->arrived + max_wait_;
    while (!stopping_ && queued_records_ < max_batch_)
      if (wake_.wait_until(lock, deadline) == std::cv_status::timeout) break;
    std::vector<std::shared_ptr<Job>> batch;
    size_t n = 0;
    while (!queue_.empty() && (batch.empty() || n + queue_.front()->records.size() <= max_batch_)) {
      n += queue_.front()->records.size();
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    queued_records_ -= n;
    lock.unlock();
    std::vector<Item> items;
    items.reserve(n);
    for (const auto& job : batch)
      for (size_t i = 0; i < job->records.size(); ++i) items.push_back({&job->records[i], i + 1});
    std::vector<nlohmann::json> answers(n);
    std::vector<std::exception_ptr> errors(n);
    answer(items, 0, n, answers, errors);
    if (on_batch_) on_batch_(n);
    lock.lock();
    size_t at = 0;
    for (const auto& job : batch) {
      auto& a = job->answers;
      a.outputs.assign(
          std::make_move_iterator(answers.begin() + static_cast<std::ptrdiff_t>(at)),
          std::make_move_iterator(answers.begin() + static_cast<std::ptrdiff_t>(at + job->records.size())));
      for (size_t i = 0; i < job->records.size(); ++i)
        if (errors[at + i]) a.failed.emplace_back(i, errors[at + i]);
      at += job->records.size();
      job->done = true;
    }
    done_.notify_all();
  }
}

}  // namespace unif::app::serve
