// Steady-clock seconds for the timings unif reports (the engines' compute, reduce and wait times).
#pragma once
#include <chrono>

namespace unif::framework {

using Clock = std::chrono::steady_clock;

/// Seconds from `t0` to now.
inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace unif::framework
