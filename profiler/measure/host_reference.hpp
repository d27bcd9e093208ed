#pragma once
// How fast the host ran just now: the time of a fixed CPU loop. The GPU machines are virtual
// machines whose host cores change speed for seconds at a time (issue 21: on an H100 host,
// whole runs of the suite took 0.6 to 0.75 of their usual instantiate and launch times), so the
// suite records this beside every scenario and the check allows a time to grow by as much as
// the host slowed down.

namespace gmem::profiler {

/// The least time, in microseconds, of five runs of a chain of 250,000 dependent integer
/// multiply-adds (about 0.3 to 0.5 ms on a 2 to 3.5 GHz core). Plain C++, no CUDA.
[[nodiscard]] double host_reference_us() noexcept;

}  // namespace gmem::profiler
