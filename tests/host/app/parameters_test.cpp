// Scenario parameters: sizes and counts parsed exactly or refused with the reason,
// `--set` resolved against the selected scenarios with errors that name the parameter, the value
// and the scenarios, the trials' processes given the same settings, and defaults that show what
// each scenario exists to show.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gmemprof/commands.hpp"
#include "gmem/profiler/analysis.hpp"
#include "gmem/profiler/graph_model.hpp"
#include "gmem/usage_error.hpp"
#include "suite/parameters.hpp"
#include "suite/runner.hpp"
#include "suite/scenarios.hpp"

namespace gmem::profiler {
namespace {

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;
constexpr std::uint64_t GiB = 1024 * MiB;
constexpr std::uint64_t TiB = 1024 * GiB;

using values = std::vector<std::uint64_t>;

/// The message of the invalid_argument `f` throws; fails the test when it throws none.
template <typename F>
std::string invalid_argument_message(F f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << "no std::invalid_argument was thrown";
  return "";
}

/// The message of the usage_error resolve_parameters throws; fails the test when it throws none.
std::string resolve_error(const std::vector<std::string>& only,
                          const std::vector<std::string>& settings) {
  try {
    (void)resolve_parameters(only, settings);
  } catch (const usage_error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no usage_error was thrown";
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// ---- sizes, counts, flags -----------------------------------------------------------------

TEST(ParseSize, PlainBytesAndEveryUnit) {
  EXPECT_EQ(parse_size("4096"), 4096u);
  EXPECT_EQ(parse_size("1"), 1u);
  EXPECT_EQ(parse_size("4096B"), 4096u);
  EXPECT_EQ(parse_size("3KiB"), 3 * KiB);
  EXPECT_EQ(parse_size("64MiB"), 64 * MiB);
  EXPECT_EQ(parse_size("1GiB"), GiB);
  EXPECT_EQ(parse_size("2TiB"), 2 * TiB);
  EXPECT_EQ(parse_size("7b"), 7u);
  EXPECT_EQ(parse_size("64mib"), 64 * MiB) << "units are case-insensitive";
  EXPECT_EQ(parse_size("64 MiB"), 64 * MiB) << "spaces between number and unit";
  EXPECT_EQ(parse_size("0064MiB"), 64 * MiB);
}

TEST(ParseSize, FractionsThatComeToWholeBytes) {
  EXPECT_EQ(parse_size("1.5GiB"), GiB + GiB / 2);
  EXPECT_EQ(parse_size("0.5KiB"), 512u);
  EXPECT_EQ(parse_size("0.25MiB"), 256 * KiB);
  EXPECT_EQ(parse_size("1.0"), 1u);
  EXPECT_EQ(parse_size("2.000000000000000000000000MiB"), 2 * MiB) << "trailing zeros";
  EXPECT_EQ(parse_size("0.0009765625KiB"), 1u);  // 2^-10 KiB
  EXPECT_TRUE(contains(invalid_argument_message([] { (void)parse_size("1.1KiB"); }),
                       "not a whole number of bytes"));
  EXPECT_TRUE(contains(invalid_argument_message([] { (void)parse_size("0.3B"); }),
                       "not a whole number of bytes"));
  EXPECT_TRUE(contains(invalid_argument_message([] { (void)parse_size("1.5"); }),
                       "not a whole number of bytes"));
}

TEST(ParseSize, TheLargestIs2To63Minus1) {
  EXPECT_EQ(parse_size("9223372036854775807"), max_param_value);
  EXPECT_EQ(parse_size("8388607TiB"), 8388607 * TiB);
  for (const char* text : {"9223372036854775808", "8388608TiB", "99999999999999999999999999",
                           "8589934592GiB", "8388608.0TiB", "8388608.5TiB"}) {
    const std::string m = invalid_argument_message([text] { (void)parse_size(text); });
    EXPECT_TRUE(contains(m, "too large")) << text << ": " << m;
    EXPECT_TRUE(contains(m, "9223372036854775807")) << m;
  }
}

TEST(ParseSize, MalformedValuesAreRefusedWithTheReason) {
  const std::map<std::string, std::string> refused{
      {"", "empty"},
      {"-1", "negative"},
      {"-1GiB", "negative"},
      {"1.5.3GiB", "not a number with a unit"},
      {"12XB", "unknown unit 'XB'"},
      {"12 bytes", "unknown unit 'bytes'"},
      {"GiB", "must start with a digit"},
      {".5GiB", "must start with a digit"},
      {"+1", "must start with a digit"},
      {" 1GiB", "must start with a digit"},
      {"1.GiB", "needs digits after it"},
      {"1GiB ", "not a number with a unit"},
      {"1 GiB 2", "not a number with a unit"},
      {"0x10", "not a number with a unit"},
      {"1e3", "not a number with a unit"},
  };
  for (const auto& [text, reason] : refused) {
    const std::string& value = text;  // a structured binding is not capturable before C++20
    const std::string m = invalid_argument_message([&value] { (void)parse_size(value); });
    EXPECT_TRUE(contains(m, reason)) << "'" << text << "': " << m;
  }
}

TEST(ParseSize, DecimalUnitsAreRefusedAsAmbiguous) {
  for (const auto& [text, suggestion] :
       std::map<std::string, std::string>{{"1KB", "KiB"}, {"64MB", "MiB"}, {"1GB", "GiB"},
                                           {"1TB", "TiB"}, {"1G", "GiB"}, {"512k", "KiB"},
                                           {"2mb", "MiB"}}) {
    const std::string& value = text;  // a structured binding is not capturable before C++20
    const std::string m = invalid_argument_message([&value] { (void)parse_size(value); });
    EXPECT_TRUE(contains(m, "ambiguous")) << text << ": " << m;
    EXPECT_TRUE(contains(m, "write " + suggestion)) << text << ": " << m;
  }
}

TEST(ParseCount, WholeNumbersOnly) {
  EXPECT_EQ(parse_count("64"), 64u);
  EXPECT_EQ(parse_count("0"), 0u) << "0 parses; the parameter's range refuses it";
  EXPECT_EQ(parse_count("100000"), 100000u);
  EXPECT_EQ(parse_count("9223372036854775807"), max_param_value);
  EXPECT_TRUE(contains(invalid_argument_message([] { (void)parse_count(""); }), "empty"));
  EXPECT_TRUE(contains(invalid_argument_message([] { (void)parse_count("-1"); }), "negative"));
  for (const char* text : {"1.5", "64k", "1e3", "+3", " 3", "3 ", "0x10", "two"}) {
    EXPECT_TRUE(contains(invalid_argument_message([text] { (void)parse_count(text); }),
                         "not a whole number"))
        << text;
  }
  EXPECT_TRUE(contains(invalid_argument_message([] { (void)parse_count("9223372036854775808"); }),
                       "too large"));
}

TEST(ParseFlag, TrueFalseOneZero) {
  EXPECT_TRUE(parse_flag("true"));
  EXPECT_TRUE(parse_flag("TRUE"));
  EXPECT_TRUE(parse_flag("1"));
  EXPECT_FALSE(parse_flag("false"));
  EXPECT_FALSE(parse_flag("0"));
  EXPECT_TRUE(contains(invalid_argument_message([] { (void)parse_flag("yes"); }),
                       "not true or false"));
  EXPECT_TRUE(contains(invalid_argument_message([] { (void)parse_flag(""); }), "empty"));
}

TEST(FormatParamValue, SizesInTheLargestExactUnitAndBackAgain) {
  EXPECT_EQ(format_param_value(param_kind::size, 2 * MiB), "2MiB");
  EXPECT_EQ(format_param_value(param_kind::size, 1536 * MiB), "1536MiB");
  EXPECT_EQ(format_param_value(param_kind::size, 8 * GiB), "8GiB");
  EXPECT_EQ(format_param_value(param_kind::size, TiB), "1TiB");
  EXPECT_EQ(format_param_value(param_kind::size, 1000), "1000B");
  EXPECT_EQ(format_param_value(param_kind::count, 1024), "1024");
  EXPECT_EQ(format_param_value(param_kind::flag, 1), "true");
  EXPECT_EQ(format_param_value(param_kind::flag, 0), "false");
  for (const std::uint64_t v : values{1, 1000, 4096, 3 * MiB + 512, 1536 * MiB, 5 * TiB,
                                      max_param_value}) {
    EXPECT_EQ(parse_size(format_param_value(param_kind::size, v)), v) << v;
  }
}

// ---- the scenarios' declarations ----------------------------------------------------------

TEST(ScenarioParameters, EveryScenarioDeclaresConsistentParametersWithDefaultsInRange) {
  std::map<std::string, param_kind> kinds;
  for (const auto& d : scenario_definitions()) {
    std::set<std::string> names;
    EXPECT_FALSE(d.params.empty()) << d.name << " declares no parameter";
    for (const auto& p : d.params) {
      EXPECT_TRUE(names.insert(p.name).second) << d.name << " declares " << p.name << " twice";
      EXPECT_FALSE(p.meaning.empty()) << d.name << "." << p.name;
      ASSERT_FALSE(p.defaults.empty()) << d.name << "." << p.name;
      EXPECT_LE(p.min, p.max) << d.name << "." << p.name;
      EXPECT_LE(p.max, max_param_value) << d.name << "." << p.name;
      for (const auto v : p.defaults) {
        EXPECT_GE(v, p.min) << d.name << "." << p.name;
        EXPECT_LE(v, p.max) << d.name << "." << p.name;
      }
      if (p.kind == param_kind::count) {
        EXPECT_LE(p.max, 1000000u) << "counts are ints";
      }
      const auto [it, fresh] = kinds.emplace(p.name, p.kind);
      EXPECT_EQ(it->second, p.kind) << p.name << " is a " << to_string(it->second)
                                    << " elsewhere but a " << to_string(p.kind) << " in "
                                    << d.name;
      (void)fresh;
    }
  }
}

TEST(ScenarioParameters, ListShowsEachScenarioWithItsParametersAndDefaults) {
  const std::string list = format_scenario_list();
  EXPECT_TRUE(contains(list, "many_small_concurrent\t")) << list;
  EXPECT_TRUE(contains(list, "    allocations=64 ")) << list;
  EXPECT_TRUE(contains(list, "    bytes=2MiB ")) << list;
  EXPECT_TRUE(contains(list, "count, 1 to 100000: how many allocations")) << list;
  EXPECT_TRUE(contains(list, "    bytes=2MiB,64MiB,1GiB,8GiB ")) << list;
  EXPECT_TRUE(contains(list, "size, 1B to 1TiB, each default in turn")) << list;
  EXPECT_TRUE(contains(list, "    upload=true,false ")) << list;
  // Every scenario is there, each followed by its parameter lines.
  for (const auto& d : scenario_definitions()) {
    std::string block = d.name + "\t" + d.summary + "\n";
    for (const auto& p : d.params) block += "    " + describe(p) + "\n";
    EXPECT_TRUE(contains(list, block)) << d.name;
  }
}

// ---- --set resolution ---------------------------------------------------------------------

TEST(ResolveParameters, DefaultsWithoutSettings) {
  const auto all = resolve_parameters({}, {});
  EXPECT_EQ(all.size(), scenario_definitions().size());
  EXPECT_EQ(all.at("many_small_concurrent").get("allocations"), 64u);
  EXPECT_EQ(all.at("many_small_concurrent").get("bytes"), 2 * MiB);
  EXPECT_EQ(all.at("many_small_chained").get("allocations"), 64u);
  EXPECT_EQ(all.at("many_small_chained").get("bytes"), 2 * MiB);
  EXPECT_EQ(all.at("single_alloc").values("bytes"), (values{2 * MiB, 64 * MiB, GiB, 8 * GiB}));
  EXPECT_EQ(all.at("single_alloc").values("upload"), (values{1, 0}));
  EXPECT_THROW((void)all.at("single_alloc").get("bytes"), std::logic_error) << "a sweep";
  EXPECT_THROW((void)all.at("single_alloc").get("allocations"), std::logic_error);
  EXPECT_EQ(all.at("child_graph_move").count("children"), 2);
  const auto one = resolve_parameters({"trim_relaunch"}, {});
  EXPECT_EQ(one.size(), 1u);
  EXPECT_EQ(one.at("trim_relaunch").get("bytes"), 256 * MiB);
}

TEST(ResolveParameters, ASettingReplacesASweepWithOneValue) {
  const auto p = resolve_parameters({"single_alloc"}, {"bytes=64MiB"});
  EXPECT_EQ(p.at("single_alloc").values("bytes"), (values{64 * MiB}));
  EXPECT_EQ(p.at("single_alloc").values("upload"), (values{1, 0})) << "untouched";
  const auto q = resolve_parameters({"single_alloc"}, {"upload=false", "bytes=1.5GiB"});
  EXPECT_EQ(q.at("single_alloc").values("upload"), (values{0}));
  EXPECT_EQ(q.at("single_alloc").get("bytes"), GiB + GiB / 2);
}

TEST(ResolveParameters, ASettingAppliesToEverySelectedScenarioThatHasIt) {
  const auto p = resolve_parameters({"single_alloc", "many_small_concurrent", "trim_relaunch"},
                                    {"allocations=16", "bytes=4MiB"});
  EXPECT_EQ(p.at("many_small_concurrent").get("allocations"), 16u);
  EXPECT_FALSE(p.at("single_alloc").has("allocations"));
  EXPECT_FALSE(p.at("trim_relaunch").has("allocations"));
  for (const char* s : {"single_alloc", "many_small_concurrent", "trim_relaunch"}) {
    EXPECT_EQ(p.at(s).values("bytes"), (values{4 * MiB})) << s;
  }
  // All selected: every scenario has bytes; only those with allocations take that.
  const auto all = resolve_parameters({}, {"allocations=3", "bytes=8MiB"});
  for (const auto& d : scenario_definitions()) {
    EXPECT_EQ(all.at(d.name).values("bytes"), (values{8 * MiB})) << d.name;
    const bool declares = std::any_of(d.params.begin(), d.params.end(),
                                      [](const param_spec& s) { return s.name == "allocations"; });
    EXPECT_EQ(all.at(d.name).has("allocations"), declares) << d.name;
    if (declares) {
      EXPECT_EQ(all.at(d.name).get("allocations"), 3u) << d.name;
    }
  }
}

TEST(ResolveParameters, AnUnknownNameListsThatScenariosParametersAndWhoTakesIt) {
  const std::string m = resolve_error({"single_alloc"}, {"allocations=64"});
  EXPECT_TRUE(contains(m, "scenario single_alloc has no parameter 'allocations'")) << m;
  EXPECT_TRUE(contains(m, "--set allocations=64")) << m;
  EXPECT_TRUE(contains(m, "its parameters: bytes (size), upload (flag)")) << m;
  EXPECT_TRUE(contains(m, "scenarios that take allocations: address_reuse_chain, "
                          "independent_allocs, many_small_concurrent, many_small_chained"))
      << m;
  const std::string n = resolve_error({"trim_relaunch"}, {"colour=blue"});
  EXPECT_TRUE(contains(n, "scenario trim_relaunch has no parameter 'colour'")) << n;
  EXPECT_TRUE(contains(n, "its parameters: bytes (size)")) << n;
  EXPECT_FALSE(contains(n, "scenarios that take")) << "nobody takes it: " << n;
}

TEST(ResolveParameters, ASettingThatAppliesToNoneOfSeveralNamesThoseThatWouldTakeIt) {
  const std::string m = resolve_error({"single_alloc", "trim_relaunch"}, {"allocations=64"});
  EXPECT_TRUE(contains(m, "--set allocations=64 applies to none of the selected scenarios "
                          "(single_alloc, trim_relaunch)"))
      << m;
  EXPECT_TRUE(contains(m, "scenarios that take allocations: address_reuse_chain")) << m;
  EXPECT_TRUE(contains(m, "gmemprof run address_reuse_chain --set allocations=64")) << m;
  const std::string all = resolve_error({}, {"colour=blue"});
  EXPECT_TRUE(contains(all, "applies to none of the selected scenarios (all " +
                                std::to_string(scenario_definitions().size()) + ")"))
      << all;
  EXPECT_TRUE(contains(all, "the parameters are allocations, bytes, children, graphs, upload"))
      << all;
}

TEST(ResolveParameters, ValuesOutsideTheRangeNameTheScenariosAndTheRange) {
  const std::string zero = resolve_error({"many_small_concurrent"}, {"allocations=0"});
  EXPECT_TRUE(contains(zero, "--set allocations=0 is out of range: many_small_concurrent takes "
                             "allocations from 1 to 100000"))
      << zero;
  const std::string both =
      resolve_error({"many_small_concurrent", "many_small_chained"}, {"allocations=100001"});
  EXPECT_TRUE(contains(both, "many_small_concurrent, many_small_chained take allocations from 1 "
                             "to 100000"))
      << both;
  const std::string bytes0 = resolve_error({"single_alloc"}, {"bytes=0"});
  EXPECT_TRUE(contains(bytes0, "single_alloc takes bytes from 1B to 1TiB")) << bytes0;
  const std::string huge = resolve_error({"single_alloc"}, {"bytes=2TiB"});
  EXPECT_TRUE(contains(huge, "--set bytes=2TiB is out of range")) << huge;
  const std::string graphs = resolve_error({"graphs_in_separate_streams"}, {"graphs=257"});
  EXPECT_TRUE(contains(graphs, "takes graphs from 1 to 256")) << graphs;
  // The edges of the range are accepted.
  EXPECT_EQ(resolve_parameters({"many_small_concurrent"}, {"allocations=100000"})
                .at("many_small_concurrent")
                .get("allocations"),
            100000u);
  EXPECT_EQ(resolve_parameters({"single_alloc"}, {"bytes=1"}).at("single_alloc").get("bytes"),
            1u);
  EXPECT_EQ(resolve_parameters({"single_alloc"}, {"bytes=1TiB"}).at("single_alloc").get("bytes"),
            TiB);
}

TEST(ResolveParameters, UnparsableValuesNameTheParameterTheScenariosAndWhatIsAccepted) {
  const std::string m = resolve_error({"single_alloc", "trim_relaunch"}, {"bytes=12XB"});
  EXPECT_TRUE(contains(m, "--set bytes=12XB (for single_alloc, trim_relaunch)")) << m;
  EXPECT_TRUE(contains(m, "unknown unit 'XB'")) << m;
  EXPECT_TRUE(contains(m, "bytes takes a size: a whole number of bytes, or a number with the "
                          "unit B, KiB, MiB, GiB or TiB"))
      << m;
  const std::string c = resolve_error({"many_small_chained"}, {"allocations=1.5"});
  EXPECT_TRUE(contains(c, "'1.5' is not a whole number; allocations takes a count")) << c;
  const std::string f = resolve_error({"single_alloc"}, {"upload=maybe"});
  EXPECT_TRUE(contains(f, "'maybe' is not true or false; upload takes a flag")) << f;
  for (const char* bad : {"bytes=", "bytes=-1", "bytes=1.5.3GiB", "bytes=64MB"}) {
    EXPECT_TRUE(contains(resolve_error({"single_alloc"}, {bad}), std::string("--set ") + bad))
        << bad;
  }
}

TEST(ResolveParameters, MalformedRepeatedAndUnknownScenario) {
  for (const char* bad : {"bytes", "=64MiB", ""}) {
    const std::string m = resolve_error({"single_alloc"}, {bad});
    EXPECT_TRUE(contains(m, "is not NAME=VALUE")) << bad << ": " << m;
  }
  const std::string twice = resolve_error({"single_alloc"}, {"bytes=1GiB", "bytes=2GiB"});
  EXPECT_TRUE(contains(twice, "--set bytes is given twice ('1GiB' and '2GiB')")) << twice;
  const std::string unknown = resolve_error({"single_allocs"}, {"bytes=1GiB"});
  EXPECT_TRUE(contains(unknown, "unknown scenario 'single_allocs'")) << unknown;
}

TEST(ResolveParameters, RangesThatDifferAreGroupedByScenario) {
  const auto noop = [](const scenario_context&) { return std::vector<scenario_result>{}; };
  const std::vector<scenario_definition> defs{
      {"a", "", {{"n", param_kind::count, {4}, 1, 10, "n"}}, noop},
      {"b", "", {{"n", param_kind::count, {4}, 1, 100, "n"}}, noop},
      {"c", "", {{"n", param_kind::count, {4}, 1, 10, "n"}}, noop},
      {"d", "", {}, noop}};
  const auto p = resolve_parameters(defs, {}, {"n=7"});
  EXPECT_EQ(p.at("a").get("n"), 7u);
  EXPECT_EQ(p.at("b").get("n"), 7u);
  EXPECT_FALSE(p.at("d").has("n"));
  try {
    (void)resolve_parameters(defs, {}, {"n=50"});
    ADD_FAILURE() << "n=50 is out of a's and c's range";
  } catch (const usage_error& e) {
    EXPECT_STREQ(e.what(), "--set n=50 is out of range: a, c take n from 1 to 10");
  }
  try {
    (void)resolve_parameters(defs, {"d"}, {"n=5"});
    ADD_FAILURE() << "d has no parameters";
  } catch (const usage_error& e) {
    EXPECT_TRUE(contains(e.what(), "scenario d has no parameter 'n' (--set n=5); its parameters: "
                                   "none; scenarios that take n: a, b, c"))
        << e.what();
  }
}

// ---- gmemprof run --------------------------------------------------------------------------

TEST(RunSettings, EachTrialProcessGetsTheSameSettings) {
  run_options o;
  o.only = {"single_alloc", "trim_relaunch"};
  o.settings = {"bytes=64MiB", "upload=false"};
  o.device = 1;
  o.reps = 7;
  o.warmups = 3;
  o.trials = 5;
  const std::vector<std::string> expected{
      "gmemprof", "run",    "single_alloc", "trim_relaunch", "--set", "bytes=64MiB",
      "--set",    "upload=false", "--device",   "1",        "--reps", "7",
      "--warmups", "3",     "--trials",     "1",             "--out", "r.json.trial1.tmp"};
  EXPECT_EQ(trial_arguments(o, "r.json.trial1.tmp"), expected);
  o.settings.clear();
  const auto plain = trial_arguments(o, "x");
  EXPECT_EQ(std::count(plain.begin(), plain.end(), "--set"), 0);
}

TEST(RunSettings, ABadSettingIsExit2BeforeAnythingRuns) {
  // Checked before the GPU is looked for, so the same answer on any machine.
  run_options o;
  o.only = {"many_small_concurrent"};
  o.settings = {"allocations=0"};
  o.progress = nullptr;
  std::ostringstream out, err;
  const std::string path = std::string(GMEM_BINARY_DIR) + "/parameters-test-report.json";
  EXPECT_EQ(run_run(o, path, "gmemprof run", out, err), 2);
  EXPECT_TRUE(contains(err.str(), "gmemprof run: --set allocations=0 is out of range")) << err.str();
  EXPECT_EQ(out.str(), "");
  o.settings = {"bytes=1GB"};
  std::ostringstream err2;
  EXPECT_EQ(run_run(o, path, "gmemprof run", out, err2), 2);
  EXPECT_TRUE(contains(err2.str(), "ambiguous")) << err2.str();
}

// ---- the defaults show what the scenarios exist to show --------------------------------------

/// The granule the driver reserves in on H100 and H200 (measured, README "Reservation
/// granularity: 32 MiB"); their allocation granularity is 2 MiB.
constexpr std::uint64_t h100_granule = 32 * MiB;

const param_spec& declared(const std::string& scenario, const std::string& name) {
  for (const auto& d : scenario_definitions()) {
    if (d.name != scenario) continue;
    for (const auto& p : d.params) {
      if (p.name == name) return p;
    }
  }
  throw std::logic_error(scenario + " declares no " + name);
}

struct model_builder {
  graph_model g;
  std::size_t add(node_kind kind, std::uint64_t address = 0, std::size_t bytes = 0) {
    model_node n;
    n.kind = kind;
    n.address = address;
    n.bytes = bytes;
    g.nodes.push_back(n);
    return g.nodes.size() - 1;
  }
  void edge(std::size_t from, std::size_t to) { g.edges.emplace_back(from, to); }
};

/// The graph many_small_concurrent builds: n unordered alloc -> memset -> free chains.
graph_model concurrent_model(std::uint64_t n, std::uint64_t bytes) {
  model_builder b;
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint64_t address = 0x7f0000000000 + i * bytes;
    const auto a = b.add(node_kind::mem_alloc, address, bytes);
    const auto m = b.add(node_kind::memset);
    const auto f = b.add(node_kind::mem_free, address);
    b.edge(a, m);
    b.edge(m, f);
  }
  return b.g;
}

/// The graph many_small_chained builds: each alloc after the previous free (one address reused,
/// as the driver gives it).
graph_model chained_model(std::uint64_t n, std::uint64_t bytes) {
  model_builder b;
  const std::uint64_t address = 0x7f0000000000;
  std::optional<std::size_t> previous;
  for (std::uint64_t i = 0; i < n; ++i) {
    const auto a = b.add(node_kind::mem_alloc, address, bytes);
    if (previous) b.edge(*previous, a);
    const auto m = b.add(node_kind::memset);
    const auto f = b.add(node_kind::mem_free, address);
    b.edge(a, m);
    b.edge(m, f);
    previous = f;
  }
  return b.g;
}

TEST(ScenarioDefaults, ManySmallConcurrentNeedsMoreGranulesThanChained) {
  const auto& n_c = declared("many_small_concurrent", "allocations");
  const auto& b_c = declared("many_small_concurrent", "bytes");
  const auto& n_s = declared("many_small_chained", "allocations");
  const auto& b_s = declared("many_small_chained", "bytes");
  ASSERT_EQ(n_c.defaults.size(), 1u);
  ASSERT_EQ(b_c.defaults.size(), 1u);
  // The same allocations in both, so that only the ordering differs.
  EXPECT_EQ(n_c.defaults, n_s.defaults);
  EXPECT_EQ(b_c.defaults, b_s.defaults);
  const std::uint64_t n = n_c.defaults.front(), bytes = b_c.defaults.front();
  EXPECT_GT(n * bytes, h100_granule) << "concurrent requests must exceed one granule";
  EXPECT_EQ(bytes % (2 * MiB), 0u) << "whole multiples of the 2 MiB allocation granularity";

  const graph_analysis concurrent = analyse(concurrent_model(n, bytes), h100_granule);
  const graph_analysis chained = analyse(chained_model(n, bytes), h100_granule);
  EXPECT_EQ(concurrent.requested_bytes, n * bytes);
  EXPECT_EQ(chained.requested_bytes, n * bytes);
  EXPECT_EQ(concurrent.lower_bound_rounded_bytes, 128 * MiB) << "64 x 2 MiB: four granules";
  EXPECT_EQ(chained.lower_bound_rounded_bytes, h100_granule) << "one 2 MiB live: one granule";
  EXPECT_GT(concurrent.lower_bound_rounded_bytes, chained.lower_bound_rounded_bytes);
  EXPECT_EQ(chained.distinct_addresses, 1u);

  // Why the defaults changed: the former 256 x 64 KiB (16 MiB) fit one granule either way.
  EXPECT_EQ(analyse(concurrent_model(256, 64 * KiB), h100_granule).lower_bound_rounded_bytes,
            analyse(chained_model(256, 64 * KiB), h100_granule).lower_bound_rounded_bytes);
}

TEST(ScenarioDefaults, ReuseScenariosCompareSeveralGranules) {
  // address_reuse_chain vs independent_allocs: the same allocations, chained (one live) or
  // unordered (all live); each allocation spans whole granules, so the difference shows.
  const std::uint64_t n = declared("independent_allocs", "allocations").defaults.front();
  const std::uint64_t bytes = declared("independent_allocs", "bytes").defaults.front();
  EXPECT_EQ(declared("address_reuse_chain", "allocations").defaults.front(), n);
  EXPECT_EQ(declared("address_reuse_chain", "bytes").defaults.front(), bytes);
  EXPECT_EQ(bytes % h100_granule, 0u);
  EXPECT_GT(analyse(concurrent_model(n, bytes), h100_granule).lower_bound_rounded_bytes,
            analyse(chained_model(n, bytes), h100_granule).lower_bound_rounded_bytes);
}

}  // namespace
}  // namespace gmem::profiler
