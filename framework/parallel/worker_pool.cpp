// WorkerPool: see worker_pool.h.
#include "framework/parallel/worker_pool.h"

#include <algorithm>

#include <ATen/ThreadLocalState.h>

#include "framework/parallel/worker_threads.h"

namespace unif::framework {

WorkerPool::WorkerPool(int64_t workers, int64_t threads_per_worker) {
  const int64_t n = std::max<int64_t>(1, workers);
  active_.assign(static_cast<size_t>(n), false);
  errors_.assign(static_cast<size_t>(n), nullptr);
  for (int64_t i = 0; i < n; ++i) threads_.emplace_back([this, i, threads_per_worker] { loop(i, threads_per_worker); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

std::vector<std::exception_ptr> WorkerPool::run_each(const std::vector<bool>& active,
                                                     const std::function<void(int64_t)>& job) {
  const auto count = std::count(active.begin(), active.end(), true);
  if (count == 0) return std::vector<std::exception_ptr>(threads_.size());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &job;
    active_ = active;
    std::fill(errors_.begin(), errors_.end(), nullptr);
    pending_ = count;
    ++generation_;
  }
  wake_.notify_all();
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
  return errors_;
}

void WorkerPool::run(int64_t tasks, const std::function<void(int64_t)>& task) {
  if (tasks <= 0) return;
  const at::ThreadLocalState state;  // grad / inference mode and the rest of the caller's state
  const int64_t n = size();
  const auto errors = run_each(std::vector<bool>(static_cast<size_t>(n), true), [&](int64_t w) {
    at::ThreadLocalStateGuard guard(state);
    for (int64_t k = w; k < tasks; k += n) task(k);
  });
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

void WorkerPool::loop(int64_t index, int64_t intra_op_threads) {
  set_worker_threads(intra_op_threads);  // this worker's intra-op threads only
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t)>* job = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (!active_[static_cast<size_t>(index)]) continue;
      job = job_;
    }
    std::exception_ptr error;
    try {
      (*job)(index);
    } catch (...) { error = std::current_exception(); }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      errors_[static_cast<size_t>(index)] = error;
      if (--pending_ == 0) done_.notify_all();
    }
  }
}

}  // namespace unif::framework
