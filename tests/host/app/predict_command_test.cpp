// `gmemprof predict` on sample files: the text and the JSON it writes, its refusals.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "gmem/profiler/predict_io.hpp"
#include "gmemprof/commands.hpp"

namespace gmem::profiler {
namespace {

namespace fs = std::filesystem;
constexpr std::uint64_t MiB = 1ull << 20;

// Sizes 8 and 2 of a runner that allocates a temporary of 4b MiB and keeps an output of 2b MiB.
nlohmann::json sample_json() {
  nlohmann::json s = {{"format", "gmem.predict.sample"}, {"version", 1}, {"device", "NVIDIA H200"},
                      {"torch", "2.11.0"}, {"allocator", "native"}, {"copies", 64},
                      {"before", {{"framework_pools", nlohmann::json::object()}}}};
  s["sizes"] = nlohmann::json::array();
  std::uint64_t address = 1 << 20;
  for (int b : {8, 2}) {
    nlohmann::json z = {{"size", b}, {"graphs", 1}, {"used_change", 0}, {"exec_state_bytes", 65536.0}};
    z["calls"] = {{"alloc", address, 4 * MiB * b}, {"alloc", address + 1, 2 * MiB * b}, {"free", address}};
    z["pools_after"] = {{"0,1", 48 * MiB}};
    address += 16;
    s["sizes"].push_back(z);
  }
  return s;
}

struct temp_dir {
  fs::path path = fs::temp_directory_path() / ("gmem-predict-" + std::to_string(::getpid()));
  temp_dir() { fs::create_directories(path); }
  ~temp_dir() { fs::remove_all(path); }
};

std::string write(const fs::path& p, const nlohmann::json& j) {
  std::ofstream(p) << j.dump();
  return p.string();
}

TEST(PredictCommand, PrintsTheBillByKindAndWritesItsJson) {
  temp_dir d;
  predict_options o;
  o.sample_path = write(d.path / "sample.json", sample_json());
  o.sizes = "1-8";
  o.json_path = (d.path / "prediction.json").string();
  std::ostringstream out, err;
  ASSERT_EQ(run_predict(o, out, err), 0) << err.str();
  EXPECT_NE(out.str().find("warm-up of 8 batch size(s) (8, 7, 6, ..., 1, in this order)"), std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("PyTorch's graph pool"), std::string::npos);
  EXPECT_NE(out.str().find("linear extrapolation from sizes 8 and 2"), std::string::npos);
  std::ifstream in(o.json_path);
  const nlohmann::json p = nlohmann::json::parse(in);
  EXPECT_EQ(p["format"], "gmem.predict");
  EXPECT_EQ(p["order"].size(), 8u);
  EXPECT_EQ(p["order"][0], 8);
  // Eight graphs of 64 KiB.
  EXPECT_EQ(p["kinds"]["exec_state"]["predicted_bytes"], 8 * 65536);
  EXPECT_EQ(p["sizes"].size(), 8u);
  EXPECT_EQ(p["model_checks"][0]["measured_bytes"], 48 * MiB);
  EXPECT_TRUE(p["graphs"].empty());  // the sample did not read its graphs apart
}

TEST(PredictCommand, ListsEachGraphWhereTheSampleReadThemApart) {
  temp_dir d;
  nlohmann::json s = sample_json();
  for (auto& z : s["sizes"]) {
    z["graphs"] = 2;
    z["each_graph"] = {{{"calls", 1}, {"node_pool_change", 0}, {"exec_state_bytes", 16384.0}},
                       {{"calls", 3}, {"node_pool_change", 0}, {"exec_state_bytes", 49152.0}}};
  }
  predict_options o;
  o.sample_path = write(d.path / "sample.json", s);
  o.sizes = "1-8";
  o.json_path = (d.path / "prediction.json").string();
  o.graphs = 3;
  std::ostringstream out, err;
  ASSERT_EQ(run_predict(o, out, err), 0) << err.str();
  EXPECT_NE(out.str().find("the 3 costliest of 16 graphs"), std::string::npos) << out.str();
  // Size 8's temporary, its graph 0's own 32 MiB segment, first.
  EXPECT_NE(out.str().find("           8      0     32.0 MiB"), std::string::npos) << out.str();
  const nlohmann::json p = nlohmann::json::parse(std::ifstream(o.json_path));
  ASSERT_EQ(p["graphs"].size(), 16u);
  EXPECT_EQ(p["graphs"][0]["pool_growth_bytes"], 32 * MiB);
  EXPECT_EQ(p["graphs"][1]["pool_growth_bytes"], 16 * MiB);
  EXPECT_EQ(p["graphs"][1]["exec_state_bytes"], 49152.0);

  // Bounds that go back, or a count that is not the size's graphs, name the graph.
  s["sizes"][1]["each_graph"][1]["calls"] = 0;
  o.sample_path = write(d.path / "backwards.json", s);
  std::ostringstream out2, err2;
  EXPECT_EQ(run_predict(o, out2, err2), 2);
  EXPECT_NE(err2.str().find("graph #1 of sampled size 2"), std::string::npos) << err2.str();
  s = sample_json();
  s["sizes"][0]["each_graph"] = {{{"calls", 3}, {"node_pool_change", 0}}};
  s["sizes"][0]["graphs"] = 2;
  o.sample_path = write(d.path / "short.json", s);
  std::ostringstream out3, err3;
  EXPECT_EQ(run_predict(o, out3, err3), 2);
  EXPECT_NE(err3.str().find("read 1 graphs apart of its 2"), std::string::npos) << err3.str();
}

TEST(PredictCommand, RefusesASampleItCannotReadAndSaysWhatToDo) {
  temp_dir d;
  predict_options o;
  std::ostringstream out, err;
  o.sample_path = (d.path / "absent.json").string();
  EXPECT_EQ(run_predict(o, out, err), 2);
  EXPECT_NE(err.str().find("gmem.predict.sample()"), std::string::npos) << err.str();

  nlohmann::json async = sample_json();
  async["allocator"] = "pluggable";
  o.sample_path = write(d.path / "pluggable.json", async);
  err.str("");
  EXPECT_EQ(run_predict(o, out, err), 2);
  EXPECT_NE(err.str().find("'pluggable' allocator"), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("pluggable.json"), std::string::npos) << err.str();

  nlohmann::json later = sample_json();
  later["version"] = 2;
  o.sample_path = write(d.path / "later.json", later);
  err.str("");
  EXPECT_EQ(run_predict(o, out, err), 2);
  EXPECT_NE(err.str().find("sample version 2"), std::string::npos) << err.str();

  o.sample_path = write(d.path / "sample.json", sample_json());
  o.sizes = "8-x";
  err.str("");
  EXPECT_EQ(run_predict(o, out, err), 2);
  EXPECT_NE(err.str().find("'8-x' in --sizes"), std::string::npos) << err.str();
}

TEST(PredictCommand, RefusesBadValuesInsideASampleNamingTheFile) {
  temp_dir d;
  const auto refused = [&](nlohmann::json j, const std::string& why) {
    predict_options o;
    o.sample_path = write(d.path / "bad.json", j);
    std::ostringstream out, err;
    EXPECT_EQ(run_predict(o, out, err), 2) << why;
    EXPECT_NE(err.str().find("bad.json"), std::string::npos) << err.str();
    EXPECT_NE(err.str().find(why), std::string::npos) << err.str();
  };
  nlohmann::json j = sample_json();
  j["sizes"][0]["calls"][0][2] = -1;
  refused(j, "not a number from 0 to 2^48");
  j = sample_json();
  j["sizes"][1]["size"] = 8;
  refused(j, "batch size 8 is sampled twice");
  j = sample_json();
  j["format"] = 7;
  refused(j, "not a gmem.predict sample");
  j = sample_json();
  j["version"] = "1";
  refused(j, "sample version \"1\"");
  j = sample_json();
  j["capture_order"] = {8, 0};
  refused(j, "\"capture_order\" holds 0");
  j = sample_json();
  j["sizes"][0]["exec_state_bytes"] = -5.0;
  refused(j, "\"exec_state_bytes\" of -5.0");
  j = sample_json();
  j["copies"] = 1.5;
  refused(j, "'copies' is not a whole number");
}

TEST(PredictCommand, BatchSizesFromListsAndRanges) {
  EXPECT_EQ(parse_batch_sizes("1,2,4"), (std::vector<std::int64_t>{1, 2, 4}));
  const auto vllm = parse_batch_sizes("1,2,4,8-512:8");
  EXPECT_EQ(vllm.size(), 67u);
  EXPECT_EQ(vllm.back(), 512);
  EXPECT_EQ(parse_batch_sizes("1-512").size(), 512u);
  EXPECT_THROW((void)parse_batch_sizes("0"), std::invalid_argument);
  EXPECT_THROW((void)parse_batch_sizes("9-3"), std::invalid_argument);
  EXPECT_THROW((void)parse_batch_sizes("1-100000000000"), std::invalid_argument);  // too many
  EXPECT_THROW((void)parse_batch_sizes("1-9223372036854775807:4611686018427387904"), std::invalid_argument);
}

}  // namespace
}  // namespace gmem::profiler
