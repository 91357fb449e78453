// WorkerPool: N persistent CPU worker threads that run a job while the caller waits: the
// data-parallel engine's replicas (framework/engines/data_parallel.h, job i on worker i) and
// evaluation and prediction on several cores over one model (framework/train/trainer.h evaluate(),
// tasks dealt k mod N). The threads live as long as the pool: creating threads per call grew
// predict's memory with the input (every new thread that multiplies gets its own BLAS buffers:
// +8-15 MB over 20000-60000 lines against +2-3 MB for one persistent set).
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
  /// `workers` threads (at least 1), started now, each with `threads_per_worker` intra-op threads.
  explicit WorkerPool(int64_t workers, int64_t threads_per_worker = 1);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int64_t size() const { return static_cast<int64_t>(threads_.size()); }
  /// Runs job(i) on worker i for every i with active[i] (active has size() entries); returns when
  /// all are done, with each worker's exception (nullptr where it finished).
  std::vector<std::exception_ptr> run_each(const std::vector<bool>& active, const std::function<void(int64_t)>& job);
  /// Runs task(k) for k in [0, tasks), task k on worker k mod size(), under the caller's
  /// thread-local Torch state (grad mode, inference mode); returns when all are done. The first
  /// exception of any task is rethrown here (that worker skips its remaining tasks).
  void run(int64_t tasks, const std::function<void(int64_t)>& task);

 private:
  void loop(int64_t index, int64_t intra_op_threads);

  std::vector<std::thread> threads_;
  // generation_ advances once per job; each active worker runs it once.
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int64_t)>* job_ = nullptr;
  std::vector<bool> active_;
  std::vector<std::exception_ptr> errors_;
  uint64_t generation_ = 0;
  int64_t pending_ = 0;
  bool stop_ = false;
};

}  // namespace unif::framework
