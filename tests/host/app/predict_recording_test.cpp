// The prediction from a recording of the sampled captures: its graphs split among the sampled
// sizes, each graph's readings, the recordings it refuses; and `gmemprof predict` on one.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <string>

#include "gmem/profiler/predict_io.hpp"
#include "gmem/profiler/report_io.hpp"
#include "gmemprof/commands.hpp"

namespace gmem::profiler {
namespace {

constexpr std::uint64_t MiB = 1ull << 20;

// A program that captured sizes 64, 16 and 4, two graphs each (memory nodes), each launched once:
// graph 0 of each size grew the memory-node pool by 32 MiB (64 MiB for the first size), graph 1
// by nothing; each instantiation read 2 MiB of state or none, and the first size's graph 1 took
// 4 MiB of a library's buffers while captured.
report recorded_warmup() {
  report r;
  r.env.device_name = "NVIDIA H200";
  recording rec;
  std::uint64_t sequence = 0;
  for (std::uint64_t size : {64, 16, 4}) {
    for (int j = 0; j < 2; ++j) {
      recorded_graph g;
      g.name = "size " + std::to_string(size) + " piece " + std::to_string(j);
      g.site = "site:piece" + std::to_string(j);
      g.sequence = ++sequence;
      g.pid = 42;
      g.growth_bytes = j == 0 ? (size == 64 ? 64 : 32) * MiB : 0;
      g.exec_state_bytes = (sequence % 2) ? static_cast<std::int64_t>(2 * MiB) : 0;
      g.libraries_at_capture_bytes = size == 64 && j == 1 ? 4 * MiB : 0;
      rec.graphs.push_back(g);
    }
  }
  r.recorded = rec;
  return r;
}

TEST(PredictFromRecording, SplitsTheGraphsAmongTheSampledSizesInTheirOrder) {
  const predict_sample s = sample_from_recording(recorded_warmup(), {64, 16, 4});
  EXPECT_EQ(s.source, "recording");
  EXPECT_EQ(s.device, "NVIDIA H200");
  EXPECT_EQ(s.copies, 1u);
  ASSERT_EQ(s.sizes.size(), 3u);
  EXPECT_EQ(s.sizes[0].size, 64);
  EXPECT_EQ(s.sizes[0].graphs, 2u);
  EXPECT_EQ(s.sizes[0].node_pool_change, static_cast<std::int64_t>(64 * MiB));
  EXPECT_EQ(s.sizes[1].node_pool_change, static_cast<std::int64_t>(32 * MiB));
  ASSERT_EQ(s.sizes[0].each_graph.size(), 2u);
  EXPECT_EQ(s.sizes[0].each_graph[1].node_pool_change, 0);
  EXPECT_DOUBLE_EQ(*s.sizes[0].exec_state_bytes, 2.0 * MiB);
  // The device memory in use each capture moved: its pool growth, state and libraries.
  EXPECT_EQ(s.sizes[0].used_change, static_cast<std::int64_t>((64 + 2 + 4) * MiB));
  EXPECT_TRUE(s.sizes[0].calls.empty());
  EXPECT_FALSE(s.notes.empty());

  // 64, then 32 MiB for every size after it; 2 MiB of state a size (1 MiB a graph); the 4 MiB
  // of library buffers once.
  const warmup_prediction p = predict_warmup(s, {64, 32, 16, 8, 4});
  EXPECT_EQ(p.kinds[3].kind, "node_pool");
  EXPECT_EQ(p.kinds[3].bytes, static_cast<std::int64_t>((64 + 4 * 32) * MiB));
  EXPECT_EQ(p.kinds[1].bytes, static_cast<std::int64_t>(10 * MiB));
  EXPECT_EQ(p.kinds[2].bytes, static_cast<std::int64_t>(4 * MiB));
  EXPECT_EQ(p.kinds[0].bytes, 0);
  // Each graph: size 32's 32 MiB are its graph 0's, as size 16's were.
  ASSERT_EQ(p.graphs.size(), 10u);
  EXPECT_EQ(p.graphs[2].node_pool_bytes, static_cast<std::int64_t>(32 * MiB));
  EXPECT_EQ(p.graphs[3].node_pool_bytes, 0);
  EXPECT_EQ(p.notes.front(), s.notes.front());
}

TEST(PredictFromRecording, RefusesWhatARecordingCannotTellAndSaysWhatToDo) {
  const auto refusal = [](const report& r, const std::vector<std::int64_t>& sizes) {
    try {
      (void)sample_from_recording(r, sizes);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(refusal(recorded_warmup(), {}).find("--sampled-sizes"), std::string::npos);
  EXPECT_NE(refusal(recorded_warmup(), {64, 16, 4, 2}).find("6 graphs with memory nodes do not split evenly"), std::string::npos);
  EXPECT_NE(refusal(recorded_warmup(), {64, 64, 4}).find("twice"), std::string::npos);
  report pytorch = recorded_warmup();
  pytorch.recorded->graphs[3].kind = "private_pool";
  pytorch.recorded->graphs[3].pool_id = "(0, 1)";
  EXPECT_NE(refusal(pytorch, {64, 16, 4}).find("gmem.predict.sample"), std::string::npos);
  report ranks = recorded_warmup();
  ranks.recorded->graphs[5].pid = 43;
  EXPECT_NE(refusal(ranks, {64, 16, 4}).find("2 processes"), std::string::npos);
  report suite = recorded_warmup();
  suite.recorded.reset();
  EXPECT_NE(refusal(suite, {64}).find("suite report"), std::string::npos);
  // A split that puts a graph where another site's was made is said, not refused.
  report shifted = recorded_warmup();
  shifted.recorded->graphs[2].site = "site:elsewhere";
  const predict_sample s = sample_from_recording(shifted, {64, 16, 4});
  EXPECT_NE(s.notes[1].find("1 graph(s) were made elsewhere"), std::string::npos);
}

TEST(PredictFromRecording, GmemprofPredictReadsARecordingWithItsSampledSizes) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gmem-predict-recording-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "recording.json").string();
  write_report(recorded_warmup(), path);
  predict_options o;
  o.sample_path = path;
  o.sampled_sizes = "64,16,4";
  o.sizes = "4-64:4";
  std::ostringstream out, err;
  ASSERT_EQ(run_predict(o, out, err), 0) << err.str();
  EXPECT_NE(out.str().find("from a recording of 3 sampled (64, 16, 4)"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("memory-node pool"), std::string::npos);
  EXPECT_EQ(out.str().find("PyTorch's graph pool"), std::string::npos) << out.str();
  // Without the sizes it captured, it says what to give.
  o.sampled_sizes.clear();
  std::ostringstream out2, err2;
  EXPECT_EQ(run_predict(o, out2, err2), 2);
  EXPECT_NE(err2.str().find(path + ": a recording does not say"), std::string::npos) << err2.str();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gmem::profiler
