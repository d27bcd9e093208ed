#include "views/bench_summary.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>

#include "gmem/profiler/report_io.hpp"

namespace gmem::profiler {
namespace {

using json = nlohmann::json;

/// One benchmark's median (and spread) across repetitions.
struct measured {
  double median_us = NAN;
  double stddev_us = NAN;
  double host_us = NAN;
  double footprint = NAN;
  std::map<std::string, double> counters;  ///< every numeric field of the median row
  [[nodiscard]] double counter(const std::string& name) const {
    const auto it = counters.find(name);
    return it == counters.end() ? NAN : it->second;
  }
};

/// (family, bytes, allocs): "graph/upload", 2097152, 1.
using key = std::tuple<std::string, std::uint64_t, int>;

key parse_name(const std::string& run_name) {
  std::string family;
  std::uint64_t bytes = 0;
  int allocs = 0;
  std::stringstream in(run_name);
  std::string part;
  while (std::getline(in, part, '/')) {
    const auto colon = part.find(':');
    if (colon == std::string::npos) {
      if (part != "manual_time" && part != "real_time") family += (family.empty() ? "" : "/") + part;
      continue;
    }
    const std::string k = part.substr(0, colon), v = part.substr(colon + 1);
    if (k == "bytes" || k == "allocs") {
      char* end = nullptr;
      const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
      if (v.empty() || v[0] == '-' || *end != '\0' || (k == "allocs" && n > 1u << 30)) {
        throw report_error(report_error::kind::invalid,
                           "benchmark '" + run_name + "' has " + k + ":" + v +
                               ", not a count: it was not made by gmem_bench");
      }
      if (k == "bytes") bytes = n;
      else allocs = static_cast<int>(n);
    } else if (k != "iterations" && k != "repeats") {
      family += (family.empty() ? "" : "/") + part;  // e.g. nodes:1000, sampler_ms:10
    }
  }
  return {family, bytes, allocs};
}

std::string fmt_time(double us) {
  if (!std::isfinite(us)) return "-";
  char buf[32];
  if (us >= 1000) {
    std::snprintf(buf, sizeof buf, "%.2f ms", us / 1000);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f us", us);
  }
  return buf;
}

std::string fmt_bytes(double b) {
  if (!std::isfinite(b)) return "-";
  char buf[32];
  if (b >= 1024.0 * 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.0f GiB", b / (1024.0 * 1024 * 1024));
  } else if (b >= 1024.0 * 1024) {
    std::snprintf(buf, sizeof buf, "%.0f MiB", b / (1024.0 * 1024));
  } else {
    std::snprintf(buf, sizeof buf, "%.0f B", b);
  }
  return buf;
}

std::string fmt(const char* pattern, double v) {
  if (!std::isfinite(v)) return "-";
  char buf[128];
  std::snprintf(buf, sizeof buf, pattern, v);
  return buf;
}

class table {
 public:
  explicit table(std::vector<std::string> header) : rows_{std::move(header)} {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  [[nodiscard]] std::string str() const {
    std::ostringstream out;
    for (std::size_t r = 0; r < rows_.size(); ++r) {
      out << "|";
      for (const auto& c : rows_[r]) out << " " << c << " |";
      out << "\n";
      if (r == 0) {
        out << "|";
        for (std::size_t c = 0; c < rows_[0].size(); ++c) out << (c ? " ---: |" : " --- |");
        out << "\n";
      }
    }
    return out.str();
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace

json parse_benchmark_json(const std::string& json_text, const std::string& source) {
  json doc;
  try {
    // Google Benchmark writes non-finite aggregates (the cv of a constant counter) as bare
    // NaN / inf, which JSON does not have: read them as null.
    static const std::regex non_finite(R"((:\s*)-?(NaN|nan|inf|Infinity)\b)");
    doc = json::parse(std::regex_replace(json_text, non_finite, "$1null"));
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number beyond double
    throw report_error(report_error::kind::not_json,
                       "benchmark result '" + source + "' is not JSON (" + e.what() +
                           "); write it with gmem_bench --benchmark_out=FILE "
                           "--benchmark_out_format=json");
  }
  if (!doc.is_object() || !doc.contains("benchmarks") || !doc["benchmarks"].is_array()) {
    throw report_error(report_error::kind::invalid,
                       "benchmark result '" + source +
                           "' has no 'benchmarks' array: it is not Google Benchmark JSON; write "
                           "it with gmem_bench --benchmark_out=FILE --benchmark_out_format=json");
  }
  return doc;
}

std::string benchmark_string(const json& row, const char* field, const std::string& fallback) {
  if (!row.is_object()) return fallback;
  const auto it = row.find(field);
  return it != row.end() && it->is_string() ? it->get<std::string>() : fallback;
}

double benchmark_real_time_us(const json& row) {
  if (!row.is_object() || !row.contains("real_time") || !row["real_time"].is_number()) return NAN;
  const double v = row["real_time"].get<double>();
  const std::string unit = benchmark_string(row, "time_unit", "ns");
  if (unit == "ns") return v / 1e3;
  if (unit == "ms") return v * 1e3;
  if (unit == "s") return v * 1e6;
  return v;
}

namespace {

// The medians and spreads of a gmem_bench run by (family, bytes, allocs), and the sizes and
// allocation counts its graph benchmarks ran at.
struct bench_results {
  std::map<key, measured> by_key;
  std::set<std::uint64_t> sizes;  // of the graph benchmarks of one allocation
  std::set<int> counts;
  // Nothing measured (NaN) where the run has no such benchmark.
  [[nodiscard]] measured get(const std::string& family, std::uint64_t bytes, int allocs) const {
    const auto it = by_key.find({family, bytes, allocs});
    return it == by_key.end() ? measured{} : it->second;
  }
};

// The run's context, refused where it is not gmem_bench's.
const json& bench_context(const json& doc, const std::string& source) {
  if (!doc.contains("context") || !doc["context"].is_object()) {
    throw report_error(report_error::kind::invalid,
                       "benchmark result '" + source +
                           "' has no 'context' object: it is not Google Benchmark JSON");
  }
  const json& context = doc["context"];
  if (!context.contains("device_name")) {
    throw report_error(report_error::kind::invalid,
                       "benchmark result '" + source +
                           "' has no device_name in its context: it was not made by gmem_bench");
  }
  return context;
}

// The median and stddev aggregates of each benchmark.
bench_results read_bench_results(const json& doc) {
  bench_results r;
  std::map<key, measured>& m = r.by_key;
  for (const json& b : doc["benchmarks"]) {
    if (benchmark_string(b, "run_type", "") != "aggregate") continue;
    const std::string agg = benchmark_string(b, "aggregate_name", "");
    if (agg != "median" && agg != "stddev") continue;
    const key k = parse_name(benchmark_string(b, "run_name", benchmark_string(b, "name", "")));
    measured& e = m[k];
    const auto number = [&b](const char* field) {
      return b.contains(field) && b[field].is_number() ? b[field].get<double>() : NAN;
    };
    const double t = benchmark_real_time_us(b);
    if (agg == "median") {
      e.median_us = t;
      e.host_us = number("host_us");
      e.footprint = number("footprint_bytes");
      for (const auto& [field, value] : b.items()) {
        if (value.is_number()) e.counters[field] = value.get<double>();
      }
    } else {
      e.stddev_us = t;
    }
  }
  for (const auto& [k, v] : m) {
    if (std::get<0>(k).rfind("graph/", 0) != 0) continue;
    if (std::get<2>(k) == 1) r.sizes.insert(std::get<1>(k));
    r.counts.insert(std::get<2>(k));
  }
  return r;
}

// The title and what the run measured on: device, driver, runtime, granularity, mode.
void write_bench_header(std::ostringstream& out, const json& context, const std::string& source) {
  const auto ctx_str = [&](const char* name) {
    return context.contains(name) && context[name].is_string() ? context[name].get<std::string>()
                                                                : std::string("?");
  };
  out << "# gmem benchmark summary\n\n"
      << "Made by `gmemprof bench-summary` from `" << source << "`. Device: "
      << ctx_str("device_name") << " (compute capability " << ctx_str("compute_capability")
      << "), driver " << ctx_str("driver_release") << " (CUDA " << ctx_str("driver_version")
      << "), runtime " << ctx_str("runtime_version") << ", measured reservation granularity "
      << fmt_bytes(std::stod(ctx_str("granularity_bytes") == "?" ? "0" : ctx_str("granularity_bytes")))
      << ". " << ctx_str("tool_version") << ", " << ctx_str("mode") << " mode, run "
      << ctx_str("date") << ". Sizes skipped for lack of free memory: " << ctx_str("skipped_sizes")
      << ".\n\n"
      << "Times are medians over repetitions of GPU time (CUDA events around the call; the GPU "
         "waits while the host maps memory inside the call), except where marked host. Every "
         "cold sample starts from an untimed reset (destroy, trim, re-instantiate).\n\n";
}

void write_first_launch_table(std::ostringstream& out, const bench_results& r) {
  out << "## First launch, upload and the floor, by allocation size (one allocation)\n\n"
      << "*Mapping per GiB* is the first launch without upload over the size; *to floor* is that "
         "launch over cuMemCreate + cuMemMap + cuMemSetAccess of the same bytes; *upload saves* "
         "is what the first launch costs less after an upload (the upload itself costs about the "
         "same mapping).\n\n";
  table t1({"bytes", "first launch (no upload)", "upload", "first launch after upload",
            "steady launch", "floor (host)", "mapping per GiB", "to floor", "upload saves"});
  for (std::uint64_t b : r.sizes) {
    const measured cold = r.get("graph/first_launch_no_upload", b, 1);
    const measured up = r.get("graph/upload", b, 1);
    const measured after = r.get("graph/first_launch_after_upload", b, 1);
    const measured steady = r.get("graph/steady_launch", b, 1);
    const measured floor = r.get("floor/map", b, 1);
    const double gib = static_cast<double>(b) / (1024.0 * 1024 * 1024);
    t1.add({fmt_bytes(static_cast<double>(b)), fmt_time(cold.median_us), fmt_time(up.median_us),
            fmt_time(after.median_us), fmt_time(steady.median_us), fmt_time(floor.median_us),
            fmt("%.2f ms", cold.median_us / 1000 / gib),
            fmt("%.2fx", cold.median_us / floor.median_us),
            fmt_time(cold.median_us - after.median_us)});
  }
  out << t1.str() << "\n";
}

void write_remap_table(std::ostringstream& out, const bench_results& r) {
  out << "## What remaps, by allocation size\n\n";
  table t2({"bytes", "steady launch", "after a stream switch",
            "uploaded in one stream, launched in another", "after a trim",
            "with another graph's unfreed allocation"});
  for (std::uint64_t b : r.sizes) {
    t2.add({fmt_bytes(static_cast<double>(b)), fmt_time(r.get("graph/steady_launch", b, 1).median_us),
            fmt_time(r.get("graph/launch_after_stream_switch", b, 1).median_us),
            fmt_time(r.get("graph/upload_then_launch_other_stream", b, 1).median_us),
            fmt_time(r.get("graph/launch_after_trim", b, 1).median_us),
            fmt_time(r.get("graph/launch_with_unfreed_contention", b, 1).median_us)});
  }
  out << t2.str() << "\n";
}

void write_allocations_table(std::ostringstream& out, const bench_results& r) {
  out << "## Allocations per graph (2 MiB each, all live together)\n\n";
  table t3({"allocations", "instantiate (host)", "upload", "first launch (no upload)",
            "steady launch", "after a trim", "reserved"});
  for (int k : r.counts) {
    const std::uint64_t b = 2ull << 20;
    t3.add({std::to_string(k), fmt_time(r.get("graph/instantiate", b, k).median_us),
            fmt_time(r.get("graph/upload", b, k).median_us),
            fmt_time(r.get("graph/first_launch_no_upload", b, k).median_us),
            fmt_time(r.get("graph/steady_launch", b, k).median_us),
            fmt_time(r.get("graph/launch_after_trim", b, k).median_us),
            fmt_bytes(r.get("graph/first_launch_no_upload", b, k).footprint)});
  }
  out << t3.str() << "\n";
}

void write_alternatives_table(std::ostringstream& out, const bench_results& r) {
  out << "## The alternatives at the same sizes\n\n"
      << "Graph memory nodes (first and steady launch; graph memory is reserved only while "
         "mapped), stream-ordered cudaMallocFromPoolAsync + cudaFreeAsync without a graph (cold: "
         "pool trimmed before each sample; warm: the pool keeps its memory), and a graph over "
         "memory allocated ahead with cudaMalloc (fast launches, paid for in footprint: the "
         "buffer is held all the time).\n\n";
  table t4({"bytes", "graph first launch", "graph steady", "pool cold", "pool warm",
            "prealloc graph steady", "footprint: graph", "pool", "prealloc"});
  for (std::uint64_t b : r.sizes) {
    const measured cold = r.get("graph/first_launch_no_upload", b, 1);
    const measured pool_cold = r.get("pool/malloc_free_cold", b, 1);
    const measured pool_warm = r.get("pool/malloc_free_warm", b, 1);
    const measured pre = r.get("prealloc/steady_launch", b, 1);
    t4.add({fmt_bytes(static_cast<double>(b)), fmt_time(cold.median_us),
            fmt_time(r.get("graph/steady_launch", b, 1).median_us), fmt_time(pool_cold.median_us),
            fmt_time(pool_warm.median_us), fmt_time(pre.median_us), fmt_bytes(cold.footprint),
            fmt_bytes(pool_warm.footprint), fmt_bytes(pre.footprint)});
  }
  out << t4.str() << "\n";
}

void write_overhead_table(std::ostringstream& out, const bench_results& r) {
  out << "## What gmem costs\n\n"
      << "Paired measurements: each iteration runs the variants back to back in rotating "
         "order, and the ratio is the median of the per-iteration ratios.\n\n";
  const measured build = r.get("overhead/build_instantiate/nodes:1000", 0, 0);
  const measured reads = r.get("overhead/read_counters", 0, 0);
  const measured loop = r.get("overhead/launch_loop_with_sampler", 0, 0);
  table t5({"what", "median (host)", "note"});
  t5.add({"build + instantiate 1000 memory nodes through gmem", fmt_time(build.counter("gmem_us")),
          fmt("%.3fx the same raw CUDA calls (goal: at most 1.05x); ", build.counter("ratio")) +
              fmt("building %.3fx, ", build.counter("build_ratio")) +
              fmt("instantiating %.3fx", build.counter("instantiate_ratio"))});
  t5.add({"build + instantiate 1000 memory nodes, raw CUDA", fmt_time(build.counter("raw_us")), ""});
  t5.add({"read the four counters", fmt_time(reads.median_us), ""});
  t5.add({"1000 launches without the sampler", fmt_time(loop.counter("off_us")), ""});
  t5.add({"1000 launches, sampler every 10 ms", fmt_time(loop.counter("sampler_10ms_us")),
          fmt("%+.2f%% against no sampler", loop.counter("overhead_10ms_pct"))});
  t5.add({"1000 launches, sampler every 1 ms", fmt_time(loop.counter("sampler_1ms_us")),
          fmt("%+.2f%% against no sampler", loop.counter("overhead_1ms_pct"))});
  out << t5.str();
}

}  // namespace

std::string bench_summary_markdown(const std::string& json_text, const std::string& source) {
  const json doc = parse_benchmark_json(json_text, source);
  const json& context = bench_context(doc, source);
  const bench_results results = read_bench_results(doc);
  std::ostringstream out;
  write_bench_header(out, context, source);
  write_first_launch_table(out, results);
  write_remap_table(out, results);
  write_allocations_table(out, results);
  write_alternatives_table(out, results);
  write_overhead_table(out, results);
  return out.str();
}

std::string bench_summary_of_file(const std::string& path) {
  if (!std::filesystem::exists(path)) {
    throw report_error(report_error::kind::missing,
                       "benchmark result '" + path + "' does not exist; run gmem_bench "
                       "--benchmark_out=" + path + " --benchmark_out_format=json first");
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) {
    throw report_error(report_error::kind::unreadable, "benchmark result '" + path +
                                                           "' cannot be read");
  }
  return bench_summary_markdown(text.str(), path);
}

}  // namespace gmem::profiler
