// `gmemprof check` of one program recorded with two allocators (committed recordings of two
// torchrun ranks on two H200s: PyTorch's native allocator, then cudaMallocAsync): the bills
// come first with what differs between the runs, graph memory is compared across kinds as the
// bill's total, and no row is a kind one recording did not use.

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "gmemprof/commands.hpp"

namespace gmem::profiler {
namespace {

namespace fs = std::filesystem;

std::string committed(const char* name) {
  return (fs::path(GMEM_SOURCE_DIR) / "reports" / "record" / "tp-2xh200" / name).string();
}

struct checked {
  int status = 0;
  std::string text;
};

checked check(const std::string& baseline, const std::string& current) {
  std::ostringstream out, err;
  checked c;
  c.status = run_check(baseline, current, tolerances{}, out, err);
  c.text = out.str() + err.str();
  return c;
}

TEST(CheckAllocators, TheBillsComeFirstAndGraphMemoryIsComparedAcrossKinds) {
  const checked c = check(committed("tp-native.json"), committed("tp-async.json"));
  ASSERT_EQ(c.status, 1) << c.text;  // graph memory in all grew: a regression
  const std::string& t = c.text;
  const std::size_t differs = t.find("differs: where the graphs' memory lives: the framework's graph pools in the baseline, the\n  memory-node pool now");
  const std::size_t bills = t.find("what CUDA graphs cost, baseline -> current");
  const std::size_t rows = t.find(" rows: ");
  ASSERT_NE(differs, std::string::npos) << t;
  ASSERT_NE(bills, std::string::npos) << t;
  ASSERT_NE(rows, std::string::npos) << t;
  EXPECT_LT(differs, bills);
  EXPECT_LT(bills, rows);
  // The commands differ by their output folders only, and that part of them is shown.
  EXPECT_NE(t.find("differs: the command: "), std::string::npos) << t;
  EXPECT_NE(t.find("/native`"), std::string::npos) << t;
  EXPECT_NE(t.find("/async`"), std::string::npos) << t;
  // Each rank's bill: the kinds side by side, the total judged.
  for (const char* rank : {"  rank 0, device 0\n", "  rank 1, device 1\n"}) {
    const std::size_t at = t.find(rank, bills);
    ASSERT_NE(at, std::string::npos) << rank << t;
    const std::string block = t.substr(at, t.find("\n\n", at) - at);
    EXPECT_NE(block.find("    memory-node pool                -    160 MiB"), std::string::npos) << block;
    EXPECT_NE(block.find("    framework graph pools    34.0 MiB          -\n"), std::string::npos) << block;
    EXPECT_NE(block.find("    graph memory in all      36.0 MiB    162 MiB   +126 MiB  regression (+350.0%, at most +2.0%)"),
              std::string::npos)
        << block;
  }
  // No row of a kind one recording did not use, none "up from 0", and pids only where they tell
  // processes apart (each rank is one process in each recording).
  EXPECT_EQ(t.find("up from 0"), std::string::npos) << t;
  EXPECT_EQ(t.find("down to 0"), std::string::npos) << t;
  EXPECT_EQ(t.find("private_pool_bytes"), std::string::npos) << t;
  EXPECT_EQ(t.find("used_high_bytes"), std::string::npos) << t;
  EXPECT_EQ(t.substr(0, t.find("\nnote: ")).find("pid "), std::string::npos) << t;
  EXPECT_NE(t.find("    graph_memory_bytes        36.0 MiB  162.0 MiB  +350.0%      +2.0%  regression"),
            std::string::npos)
      << t;
  std::istringstream in(t);
  for (std::string line; std::getline(in, line);) EXPECT_LE(line.size(), 100u) << line;
}

// A serving warm-up recorded through a pip install on an H100, with each allocator.
TEST(CheckAllocators, TheServingWarmUpsBillChangeComesFirst) {
  const auto path = [](const char* name) {
    return (fs::path(GMEM_SOURCE_DIR) / "reports" / "views" / "first-screen-pip-h100" / name).string();
  };
  const checked c = check(path("serving-native.json"), path("serving-async.json"));
  ASSERT_EQ(c.status, 1) << c.text;
  const std::size_t bills = c.text.find("what CUDA graphs cost, baseline -> current");
  ASSERT_NE(bills, std::string::npos) << c.text;
  EXPECT_LT(bills, c.text.find(" rows: "));
  EXPECT_NE(c.text.find("    graph memory in all       806 MiB   1.16 GiB   +380 MiB  regression (+47.1%, at most +2.0%)"),
            std::string::npos)
      << c.text;
  EXPECT_NE(c.text.find("differs: where the graphs' memory lives"), std::string::npos) << c.text;
  EXPECT_EQ(c.text.find("up from 0"), std::string::npos) << c.text;
}

TEST(CheckAllocators, OneAllocatorAgainstItselfSaysNothingDiffers) {
  const checked c = check(committed("tp-async.json"), committed("tp-async.json"));
  EXPECT_EQ(c.status, 0) << c.text;
  EXPECT_EQ(c.text.find("differs:"), std::string::npos) << c.text;
  EXPECT_NE(c.text.find("    graph memory in all       162 MiB    162 MiB     0 B  pass (+0.0%, at most +2.0%)"),
            std::string::npos)
      << c.text;
}

}  // namespace
}  // namespace gmem::profiler
