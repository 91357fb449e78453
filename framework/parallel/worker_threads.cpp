// set_worker_threads: see worker_threads.h.
#include "framework/parallel/worker_threads.h"

#include <ATen/Parallel.h>
#include <omp.h>

namespace unif::framework {

void set_worker_threads(int64_t threads) {
  at::init_num_threads();
  (void)at::get_num_threads();
  omp_set_num_threads(static_cast<int>(threads));
}

}  // namespace unif::framework
