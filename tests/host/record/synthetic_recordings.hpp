#pragma once
// Recordings of many graphs, made by driving a recording session over the fake driver
// (fake_driver.hpp) as a program of that shape would: the views' and show's tests at 9, 1000
// and 2000 graphs read these (the recordings made on the GPU machine of the same programs are
// too large for git).

#include <algorithm>
#include <cstdint>
#include <string>

#include "fake_driver.hpp"

namespace gmem::record::test {

/// tests/record/corpus_client.cu back-to-back: `graphs` graphs captured in one stream, each
/// with 2 MiB of working memory freed inside and an output of `output_kib` it leaves allocated
/// (AutoFreeOnLaunch), launched in three rounds back to back. Each first launch maps one more
/// granule (the others' outputs hold theirs); later launches map nothing.
inline void back_to_back(program& p, int graphs, std::uint64_t output_kib = 500) {
  using profiler::probe::granule;
  const std::string spec = "g=w2,o" + std::to_string(static_cast<double>(output_kib) / 1024.0);
  for (int k = 0; k < graphs; ++k) {
    const std::uint64_t id = static_cast<std::uint64_t>(k) + 1;
    p.capture(0xA, 0x10000 + id, graph_of(spec, id << 36));
    p.instantiate(0x100000 + id, 0x10000 + id, true);
  }
  for (int round = 0; round < 3; ++round) {
    for (int k = 0; k < graphs; ++k) {
      const std::uint64_t id = static_cast<std::uint64_t>(k) + 1;
      if (round == 0) p.use(static_cast<std::int64_t>(granule));  // cuMemGetInfo sees the mapping
      p.launch(0x100000 + id, 0xA, round == 0 ? 60 : 4, round == 0 ? granule : 0);
    }
    p.s.stream_synchronized(0xA);
  }
}

/// A serving engine's warm-up: `graphs` batch sizes captured largest first inside NVTX ranges
/// ("decode bs=N"), each with working memory that grows with the batch (freed inside) and a
/// held output; a few of them (every 97th) also launched from a second stream while the first
/// still runs.
inline void serving(program& p, int graphs) {
  using profiler::probe::granule;
  using profiler::probe::MiB;
  for (int k = 0; k < graphs; ++k) {
    const int batch = graphs - k;
    const std::uint64_t id = static_cast<std::uint64_t>(k) + 1;
    const double working_mib = 4.0 + 0.5 * batch;
    const double output_mib = 0.125 * (1 + batch % 16);
    const std::string name = "decode bs=" + std::to_string(batch);
    p.s.nvtx_push(name.c_str());
    p.capture(0xA, 0x10000 + id,
              graph_of("g=w" + std::to_string(working_mib) + ",o" + std::to_string(output_mib), id << 36));
    p.instantiate(0x100000 + id, 0x10000 + id, true);
    p.s.nvtx_pop();
  }
  for (int round = 0; round < 2; ++round) {
    for (int k = 0; k < graphs; ++k) {
      const std::uint64_t id = static_cast<std::uint64_t>(k) + 1;
      const int batch = graphs - k;
      std::uint64_t grows = 0;
      if (round == 0) {
        // The largest maps its working set and output together; each later one a granule for
        // its output (its working set fits in what the largest mapped).
        const double bytes = (4.0 + 0.5 * batch + 0.125 * (1 + batch % 16)) * static_cast<double>(MiB);
        grows = k == 0 ? (static_cast<std::uint64_t>(bytes) + granule - 1) / granule * granule : granule;
      }
      p.use(static_cast<std::int64_t>(grows));
      const bool other_stream = round == 0 && k % 97 == 96;
      p.launch(0x100000 + id, other_stream ? 0xB : 0xA, round == 0 ? 80 : 5, grows);
    }
    p.s.stream_synchronized(0xA);
    p.s.stream_synchronized(0xB);
  }
}

}  // namespace gmem::record::test
