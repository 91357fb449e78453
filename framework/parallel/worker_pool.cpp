// WorkerPool: see worker_pool.h.
#include "framework/parallel/worker_pool.h"

#include <algorithm>

#include <ATen/ThreadLocalState.h>

#include "framework/parallel/worker_threads.h"

namespace unif::framework {

WorkerPool::WorkerPool(int64_t workers) {
  const int64_t n = std::max<int64_t>(1, workers);
  errors_.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) threads_.emplace_back([this, i] { loop(i); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void WorkerPool::run(int64_t tasks, const std::function<void(int64_t)>& task) {
  if (tasks <= 0) return;
  const at::ThreadLocalState state;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &task;
    state_ = &state;
    tasks_ = tasks;
    running_ = size();
    std::fill(errors_.begin(), errors_.end(), nullptr);
    ++generation_;
  }
  wake_.notify_all();
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return running_ == 0; });
  job_ = nullptr;
  state_ = nullptr;
  for (const auto& e : errors_)
    if (e) std::rethrow_exception(e);
}

void WorkerPool::loop(int64_t index) {
  set_worker_threads(1);
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t)>* job = nullptr;
    const at::ThreadLocalState* state = nullptr;
    int64_t tasks = 0;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      state = static_cast<const at::ThreadLocalState*>(state_);
      tasks = tasks_;
    }
    std::exception_ptr error;
    try {
      at::ThreadLocalStateGuard guard(*state);
      for (int64_t k = index; k < tasks; k += size()) (*job)(k);
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      errors_[static_cast<size_t>(index)] = error;
      if (--running_ == 0) done_.notify_all();
    }
  }
}

}  // namespace unif::framework
