// WorkerPool: N persistent CPU worker threads, each with one intra-op thread, that run the tasks
// 0..T-1 of a job (task k on worker k mod N) while the caller waits. Used for evaluation and
// prediction on several cores over one model (framework/train/trainer.h evaluate()). The threads
// live as long as the pool: creating threads per call grew predict's memory with the input (every
// new thread that multiplies gets its own BLAS buffers: +8-15 MB over 20000-60000 lines in
// session 10 against +2-3 MB for one persistent set).
#pragma once
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace unif::framework {

class WorkerPool {
 public:
  /// `workers` threads (at least 1), started now.
  explicit WorkerPool(int64_t workers);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int64_t size() const { return static_cast<int64_t>(threads_.size()); }
  /// Runs task(k) for k in [0, tasks), task k on worker k mod size(), under the caller's
  /// thread-local Torch state (grad mode, inference mode); returns when all are done. The first
  /// exception of any task is rethrown here (that worker skips its remaining tasks).
  void run(int64_t tasks, const std::function<void(int64_t)>& task);

 private:
  void loop(int64_t index);

  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int64_t)>* job_ = nullptr;
  const void* state_ = nullptr;  // the caller's at::ThreadLocalState during run()
  int64_t tasks_ = 0;
  uint64_t generation_ = 0;
  int64_t running_ = 0;
  bool stop_ = false;
  std::vector<std::exception_ptr> errors_;
};

}  // namespace unif::framework
