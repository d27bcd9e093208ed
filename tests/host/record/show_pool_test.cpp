// `gmemprof show` of a recording: each graph's figures labelled as its own, and per
// device the pool: the measured high watermark and whose call reached it, the model's figure, what
// was mapped there by graph and why, the growth each graph caused, diagnostics and the mapping
// events. The P1 recording (the pool probe's case fed to the recorder, as record_pool_test does)
// and a hand-made recording whose figures all differ, so that a field read in place of another
// shows.
#include <gtest/gtest.h>

#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "probe_cases.hpp"
#include "record/recording_report.hpp"
#include "record_feed.hpp"
#include "views/show.hpp"

namespace gmem {
namespace {

// These tests read the sections past the first screen (each graph's figures, the pools' events):
// `gmemprof show --all`.
profiler::show_options every_section() {
  profiler::show_options o;
  o.all = true;
  return o;
}


using profiler::probe::granule;
using profiler::probe::MiB;

// The cells of the first line of `text` whose first cell is `first` (cells are separated by two
// spaces or more, as show's tables are), or nothing.
std::optional<std::vector<std::string>> row_of(const std::string& text, const std::string& first) {
  std::istringstream in(text);
  static const std::regex gap(" {2,}");
  for (std::string line; std::getline(in, line);) {
    const auto start = line.find_first_not_of(' ');
    if (start == std::string::npos) continue;
    line = line.substr(start);
    std::vector<std::string> cells(std::sregex_token_iterator(line.begin(), line.end(), gap, -1),
                                   std::sregex_token_iterator());
    if (!cells.empty() && cells[0] == first) return cells;
  }
  return std::nullopt;
}

// The cells of every line of `text`.
std::vector<std::vector<std::string>> rows_of(const std::string& text) {
  std::vector<std::vector<std::string>> out;
  std::istringstream in(text);
  static const std::regex gap(" {2,}");
  for (std::string line; std::getline(in, line);) {
    const auto start = line.find_first_not_of(' ');
    if (start == std::string::npos) continue;
    line = line.substr(start);
    out.emplace_back(std::sregex_token_iterator(line.begin(), line.end(), gap, -1),
                     std::sregex_token_iterator());
  }
  return out;
}

std::string between(const std::string& text, const std::string& from, const std::string& to) {
  const auto a = text.find(from);
  if (a == std::string::npos) return "";
  const auto b = to.empty() ? std::string::npos : text.find(to, a + from.size());
  return text.substr(a, b == std::string::npos ? std::string::npos : b - a);
}

// ---- P1 through the recorder --------------------------------------------------------------

std::string shown_p1() {
  static const std::string text = [] {
    for (const auto& c : profiler::probe::read_cases()) {
      if (c.name.rfind("P1 ", 0) != 0) continue;
      record::recorder r;
      (void)record::test::feed(r, c);
      profiler::environment env;
      env.granularity_bytes = granule;
      return profiler::format_report(record::assemble(r, env, granule), every_section());
    }
    return std::string("no probe case P1");
  }();
  return text;
}

// P1: six graphs (512 + 1 ... 16 + 6 MiB, outputs held), largest first: 704 MiB, reached by g0's
// relaunch, which found the five others' outputs holding a granule each.
TEST(ShowPool, P1ShowsTheHighWatermarkWhoseCallReachedItAndWhatHeldIt) {
  const std::string text = shown_p1();
  const std::string pool = between(text, "\npool of device 0\n", "");
  ASSERT_FALSE(pool.empty()) << text;
  EXPECT_NE(pool.find("high watermark  704 MiB measured"), std::string::npos) << pool;
  EXPECT_NE(pool.find("reached by      'g0', launch:remap_contention, at "), std::string::npos) << pool;
  EXPECT_NE(pool.find("704 MiB (the pool model's reservation at the high watermark, as measured)"),
            std::string::npos) << pool;
  const auto g0 = row_of(pool, "'g0'");
  ASSERT_TRUE(g0) << pool;
  EXPECT_EQ(*g0, (std::vector<std::string>{"'g0'", "working set of its call", "544 MiB", "77.3%"}));
  for (const char* g : {"'g1'", "'g2'", "'g3'", "'g4'", "'g5'"}) {
    const auto row = row_of(pool, g);
    ASSERT_TRUE(row) << g << "\n" << pool;
    EXPECT_EQ(*row, (std::vector<std::string>{g, "outputs held between launches", "32.0 MiB", "4.5%"}));
  }
  const auto total = row_of(pool, "total");
  ASSERT_TRUE(total) << pool;
  EXPECT_EQ(*total, (std::vector<std::string>{"total", "6 shares", "704 MiB", "100.0%"}));
  EXPECT_EQ(text.find("shares sum to"), std::string::npos) << "the shares sum to the measurement";
}

TEST(ShowPool, P1GivesEachGraphItsOwnFootprintAndTheGrowthItsCallsCaused) {
  const std::string pool = between(shown_p1(), "\npool of device 0\n", "");
  // The graph table's rows come after the attribution's (whose rows start with the same names).
  const std::string graphs = between(pool, "graphs in this pool", "");
  ASSERT_FALSE(graphs.empty()) << pool;
  const auto head = row_of(graphs, "graph");
  ASSERT_TRUE(head);
  EXPECT_EQ(*head, (std::vector<std::string>{"graph", "kind", "alone", "growth", "held", "mapped", "launches",
                                             "auto-free"}));
  // g0: 544 at its first launch, 160 again when the others' outputs held granules, 512 after
  // the trim; alone it needs 544, not the 704 the device reached.
  const auto g0 = row_of(graphs, "'g0'");
  ASSERT_TRUE(g0);
  EXPECT_EQ((*g0)[1], "memory nodes");
  EXPECT_EQ((*g0)[2], "544 MiB");
  EXPECT_EQ((*g0)[3], "1.19 GiB");
  EXPECT_EQ((*g0)[7], "yes");
  // g3 fitted in what g0 had mapped: it caused no growth, though it needs 96 MiB alone.
  const auto g3 = row_of(graphs, "'g3'");
  ASSERT_TRUE(g3);
  EXPECT_EQ((*g3)[2], "96.0 MiB");
  EXPECT_EQ((*g3)[3], "0 B");
  // g5 leaves 6 MiB allocated, which pins a whole 32 MiB granule.
  const auto g5 = row_of(graphs, "'g5'");
  ASSERT_TRUE(g5);
  EXPECT_EQ((*g5)[2], "32.0 MiB");
  EXPECT_EQ((*g5)[4], "6.00 MiB");
  EXPECT_EQ((*g5)[5], "32.0 MiB");
  // The set's diagnostics: outputs held in whole granules, relaunches that mapped again.
  EXPECT_NE(pool.find("(160 MiB)\n"), std::string::npos) << pool;
  EXPECT_NE(pool.find("20.0 MiB requested"), std::string::npos) << pool;
}

TEST(ShowPool, P1LabelsEachGraphsFiguresAsItsOwnAndGivesNoSuiteAdvice) {
  const std::string text = shown_p1();
  // The graphs' blocks: after the first answer (which gives the pool's figures), before the pool.
  const std::string graphs = between(text, "\ng0[source=recorded]", "\npool of device 0\n");
  ASSERT_FALSE(graphs.empty()) << text;
  // Per graph: alone (predicted); the device's 704 MiB is the pool's, and only there.
  EXPECT_NE(graphs.find("g0[source=recorded]"), std::string::npos) << text;
  EXPECT_NE(graphs.find("alone (predicted): used high"), std::string::npos) << graphs;
  EXPECT_NE(graphs.find("reserved 544 MiB\n"), std::string::npos) << graphs;
  EXPECT_EQ(graphs.find("reserved high"), std::string::npos) << graphs;
  EXPECT_EQ(graphs.find("704 MiB"), std::string::npos) << graphs;
  // Record mode measures host times only: no columns of zero wall times.
  EXPECT_EQ(graphs.find("wall median"), std::string::npos) << graphs;
  EXPECT_NE(graphs.find("host median"), std::string::npos) << graphs;
  // A recording is not the suite's: running the suite again is no advice for it.
  EXPECT_EQ(text.find("gmemprof run"), std::string::npos) << text;
  // The mapping events: g0's first launch mapped 544 MiB, and the high watermark is marked.
  const std::string events = between(text, "mapping events", "");
  std::vector<std::vector<std::string>> first, high;
  for (const auto& row : rows_of(events)) {
    if (row.size() >= 5 && row[1] == "'g0'" && row[2] == "launch:first_launch") first.push_back(row);
    if (row.size() == 6 && row[5] == "<- high watermark") high.push_back(row);
  }
  ASSERT_EQ(first.size(), 1u) << events;
  EXPECT_EQ(first[0][3], "+544 MiB");
  EXPECT_EQ(first[0][4], "544 MiB");
  ASSERT_EQ(high.size(), 1u) << events;
  EXPECT_EQ(high[0][1], "'g0'");
  EXPECT_EQ(high[0][2], "launch:remap_contention");
  EXPECT_EQ(high[0][3], "+160 MiB");
  EXPECT_EQ(high[0][4], "704 MiB");
}

// ---- a hand-made recording: every figure distinct ------------------------------------------

profiler::report two_pools() {
  profiler::report r;
  r.env.device_name = "NVIDIA H100 80GB HBM3";
  r.env.granularity_bytes = 32 * MiB;
  for (const char* name : {"prefill", "decode", "torch_step"}) {
    profiler::scenario_result s;
    s.name = name;
    s.params.emplace_back("source", std::string("recorded"));
    s.analysis.alloc_nodes = 2;
    s.analysis.requested_bytes = 520 * MiB;
    s.analysis.lower_bound_rounded_bytes = 512 * MiB;
    s.analysis.used_high_bytes = 514 * MiB;
    s.analysis.reserved_high_bytes = 544 * MiB;
    profiler::launch_cost c;
    c.phase = "first_launch";
    c.host.count = 1;
    c.host.median_us = c.host.min_us = c.host.max_us = 1100;
    s.launch_costs.push_back(c);
    r.scenarios.push_back(s);
  }
  profiler::recording rec;
  rec.command = "python serve.py";
  rec.pid = 4242;
  profiler::recorded_graph prefill;
  prefill.name = "prefill";
  prefill.devices = {0};
  prefill.launches = 3;
  prefill.own_footprint_bytes = 544 * MiB;
  prefill.growth_bytes = 608 * MiB;
  prefill.flags_known = true;
  prefill.flags.auto_free_on_launch = true;
  profiler::recorded_graph decode;
  decode.name = "decode";
  decode.devices = {0};
  decode.launches = 12;
  decode.failed_calls = 1;
  decode.own_footprint_bytes = 64 * MiB;
  decode.growth_bytes = 96 * MiB;
  decode.held_requested_bytes = 6 * MiB;
  decode.held_granule_bytes = 32 * MiB;
  decode.flags_known = false;  // a recording made before flags were recorded
  profiler::recorded_graph torch;
  torch.name = "torch_step";
  torch.kind = "private_pool";
  torch.devices = {1};
  torch.launches = 7;
  torch.own_footprint_bytes = 384 * MiB;
  torch.capture_pool_growth_bytes = 768 * MiB;
  torch.flags_known = true;
  rec.graphs = {prefill, decode, torch};

  profiler::recorded_pool p0;
  p0.device = 0;
  p0.high_bytes = 736 * MiB;
  p0.end_bytes = 192 * MiB;
  p0.model_high_bytes = 704 * MiB;
  p0.high_t_us = 2500;
  p0.high_graph = "prefill";
  p0.high_event = "launch:first_launch";
  p0.attribution = {{"prefill", "working_set", 544 * MiB},
                    {"decode", "held_outputs", 32 * MiB},
                    {"", "idle", 128 * MiB}};
  p0.diagnostics.push_back({"held_outputs", "warning", "'decode' holds 6 MiB in a 32 MiB granule", 32 * MiB});
  // 45 points, of which 40 are shown: the reservation climbs 32 MiB a call from 96 MiB, prefill
  // reaches the high watermark at t = 2500 us, then trims and remaps take turns.
  const auto signed_mib = [](std::int64_t n) { return n * static_cast<std::int64_t>(MiB); };
  for (int i = 0; i < 45; ++i) {
    profiler::pool_point t;
    t.t_us = 1000.0 + 100.0 * i;
    t.graph = i % 2 ? "decode" : "prefill";
    t.event = i == 0 ? "launch:first_launch" : "launch:remap_contention";
    t.reserved_bytes = static_cast<std::uint64_t>(96 + 32 * i) * MiB;
    t.growth_bytes = signed_mib(32);
    if (i == 15) {
      t.graph = "prefill";
      t.reserved_bytes = p0.high_bytes;
      t.growth_bytes = signed_mib(736 - 544);
    } else if (i > 15) {
      t.graph = i % 2 ? "" : "prefill";
      t.event = i % 2 ? "trim" : "launch:remap_after_trim";
      t.reserved_bytes = (i % 2 ? 704 : 736) * MiB;
      t.growth_bytes = signed_mib(i % 2 ? -32 : 32);
    }
    p0.timeline.push_back(t);
  }
  profiler::pool_point trim;
  trim.t_us = 1050;
  trim.event = "trim";
  trim.reserved_bytes = 64 * MiB;
  trim.growth_bytes = -32 * static_cast<std::int64_t>(MiB);
  p0.timeline.insert(p0.timeline.begin() + 1, trim);
  profiler::recorded_pool p1;
  p1.device = 1;
  p1.high_bytes = 800 * MiB;
  p1.end_bytes = 800 * MiB;
  p1.model_high_bytes = 800 * MiB;
  p1.private_pool_bytes = 768 * MiB;
  rec.pools = {p0, p1};
  r.recorded = rec;
  return r;
}

TEST(ShowPool, ThePoolSectionReadsEachFigureFromItsOwnField) {
  const std::string text = profiler::format_report(two_pools(), every_section());
  const std::string pool = between(text, "\npool of device 0\n", "\npool of device 1\n");
  ASSERT_FALSE(pool.empty()) << text;
  EXPECT_NE(pool.find("high watermark  736 MiB measured"), std::string::npos) << pool;
  EXPECT_NE(pool.find("'prefill', launch:first_launch, at 2.500 ms"), std::string::npos) << pool;
  EXPECT_NE(pool.find("at the end      192 MiB reserved"), std::string::npos) << pool;
  EXPECT_NE(std::regex_replace(pool, std::regex("\n +"), " ")
                .find("704 MiB (the pool model's reservation at the high watermark; 32.0 MiB below "
                      "the measurement)"),
            std::string::npos) << pool;
  // Shares of what the model says was mapped (704 MiB), which the device measured as 736.
  const auto idle = row_of(pool, "(no graph)");
  ASSERT_TRUE(idle) << pool;
  EXPECT_EQ(*idle, (std::vector<std::string>{"(no graph)", "mapped, held by no graph", "128 MiB", "18.2%"}));
  const auto total = row_of(pool, "total");
  ASSERT_TRUE(total);
  EXPECT_EQ(*total, (std::vector<std::string>{"total", "3 shares", "704 MiB", "100.0%"}));
  EXPECT_NE(text.find("(the pool model's shares sum to 704 MiB, 32.0 MiB below the device's measurement)"),
            std::string::npos) << text;
  // decode: launches with the failed call, flags not recorded; the private pool's graph is on
  // device 1 only.
  const std::string graphs = between(pool, "graphs in this pool", "");
  const auto decode = row_of(graphs, "'decode'");
  ASSERT_TRUE(decode) << graphs;
  EXPECT_EQ(*decode, (std::vector<std::string>{"'decode'", "memory nodes", "64.0 MiB", "96.0 MiB", "6.00 MiB",
                                               "32.0 MiB", "12 (1 failed)", "unknown"}));
  EXPECT_EQ(graphs.find("torch_step"), std::string::npos) << graphs;
  EXPECT_NE(pool.find("[warning] 'decode' holds 6 MiB in a 32 MiB granule (32.0 MiB)"), std::string::npos);
}

TEST(ShowPool, EveryMappingEventIsListedAndTheHighAndTrimsMarked) {
  const std::string text = profiler::format_report(two_pools(), every_section());
  const std::string events = between(text, "mapping events", "\npool of device 1\n");
  // 46 points, every one (show --all); the first screen has none.
  EXPECT_EQ(events.find(" more"), std::string::npos) << events;
  std::size_t rows = 0;
  static const std::regex time_cell("[0-9]+\\.[0-9]{3}");
  for (const auto& row : rows_of(events)) rows += row.size() >= 5 && std::regex_match(row[0], time_cell);
  EXPECT_EQ(rows, 46u) << events;
  EXPECT_EQ(profiler::format_report(two_pools()).find("mapping events"), std::string::npos);
  const auto trim = row_of(events, "1.050");
  ASSERT_TRUE(trim) << events;
  EXPECT_EQ(*trim, (std::vector<std::string>{"1.050", "-", "trim", "-32.0 MiB", "64.0 MiB"}));
  const auto high = row_of(events, "2.500");
  ASSERT_TRUE(high) << events;
  EXPECT_EQ(*high, (std::vector<std::string>{"2.500", "'prefill'", "launch:remap_contention", "+192 MiB",
                                             "736 MiB", "<- high watermark"}));
  EXPECT_EQ(events.find("<- high watermark"), events.rfind("<- high watermark"));
}

TEST(ShowPool, APrivatePoolsGraphShowsWhatItsCaptureTook) {
  const std::string text = profiler::format_report(two_pools(), every_section());
  const std::string pool = between(text, "\npool of device 1\n", "");
  ASSERT_FALSE(pool.empty()) << text;
  EXPECT_NE(pool.find("private pools   768 MiB taken by the application's allocator"), std::string::npos) << pool;
  const auto torch = row_of(pool, "'torch_step'");
  ASSERT_TRUE(torch) << pool;
  EXPECT_EQ((*torch)[1], "private pool");
  EXPECT_EQ((*torch)[2], "384 MiB");
  EXPECT_EQ((*torch)[3], "768 MiB (capture)");
  EXPECT_EQ((*torch)[7], "no");
  // No attribution was recorded for it: no table of shares.
  EXPECT_EQ(pool.find("total"), std::string::npos) << pool;
}

TEST(ShowPool, ASuiteReportKeepsItsLabelsAndHasNoPoolSection) {
  profiler::report r = two_pools();
  r.recorded.reset();
  const std::string text = profiler::format_report(r, every_section());
  EXPECT_NE(text.find("reserved high 544 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("reserved / lower bound"), std::string::npos) << text;
  EXPECT_EQ(text.find("alone"), std::string::npos) << text;
  EXPECT_EQ(text.find("pool of device"), std::string::npos) << text;
  EXPECT_EQ(text.find("recorded: "), std::string::npos) << text;
}

}  // namespace
}  // namespace gmem
