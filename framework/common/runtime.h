// Process set-up shared by every unif binary (the CLI, tests, benchmarks): the thread policy.
//
// Torch's OpenMP threads spin while waiting and fight OpenBLAS's own threads; on 2 cores that made a
// BERT step 2x slower. libgomp reads OMP_WAIT_POLICY once, when it is loaded (before main), so
// init_runtime re-executes the binary once with OMP_WAIT_POLICY=PASSIVE when the user has not set
// it, then sets Torch's intra-op threads (UNIF_NUM_THREADS, else every core this process may use).
#pragma once

namespace unif {

/// Call first thing in main(). May re-execute the process (same argv) once.
void init_runtime(int argc, char** argv);

/// Number of cores this process may use (sched affinity), at least 1.
int available_cores();

}  // namespace unif
