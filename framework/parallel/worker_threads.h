// Intra-op threads of a worker thread (a replica's, an evaluation worker's).
#pragma once
#include <cstdint>

namespace unif::framework {

/// Gives the calling thread `threads` intra-op threads without touching the process-wide count.
/// at::set_num_threads would also overwrite the count new threads start from; omp_set_num_threads
/// sets only this thread's OpenMP nthreads-var, which is what every `#pragma omp parallel` ATen
/// starts from this thread uses. at::get_num_threads() first runs ATen's once-per-thread lazy
/// init, which would otherwise reset the count later.
void set_worker_threads(int64_t threads);

}  // namespace unif::framework
