#include "report/show.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace gmem::profiler {
namespace {

template <typename... Args>
std::string format(const char* fmt, Args... args) {
  char buf[128];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

std::string mib(std::uint64_t bytes) {
  return format("%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

std::string gib(std::uint64_t bytes) {
  return format("%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
}

// CUDA encodes versions as 1000 * major + 10 * minor.
std::string cuda_version(int v) {
  if (v <= 0) return "unknown";
  return format("%d.%d (%d)", v / 1000, (v % 1000) / 10, v);
}

std::string or_unknown(const std::string& s) { return s.empty() ? "unknown" : s; }

std::string us(double v) { return format("%.2f", v); }

std::string ratio(double v) { return std::isfinite(v) ? format("%.3f", v) : "n/a"; }

// Left-aligned first column, right-aligned numbers, each line indented by `indent`.
std::string table(const std::vector<std::vector<std::string>>& rows, const std::string& indent) {
  std::vector<std::size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()));
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line = indent;
    for (std::size_t i = 0; i < row.size(); ++i) {
      const std::string pad(width[i] - row[i].size(), ' ');
      if (i != 0) line += "  ";
      line += i == 0 ? row[i] + pad : pad + row[i];
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string format_environment(const environment& e) {
  std::vector<std::vector<std::string>> rows = {
      {"device", or_unknown(e.device_name) + " (device " + std::to_string(e.device_index) + " of " +
                     std::to_string(e.device_count) + ")"},
      {"compute capability", std::to_string(e.cc_major) + "." + std::to_string(e.cc_minor)},
      {"memory", gib(e.total_memory_bytes)},
      {"driver", cuda_version(e.driver_version) +
                     (e.driver_release.empty() ? "" : ", release " + e.driver_release)},
      {"runtime", cuda_version(e.runtime_version)},
      {"granularity", mib(e.granularity_bytes) + " (" + std::to_string(e.granularity_bytes) +
                          " B), " + or_unknown(e.granularity_method)},
      {"tool", or_unknown(e.tool_version) + ", commit " + or_unknown(e.git_commit)},
      {"date", or_unknown(e.date)},
      {"command", or_unknown(e.command_line)},
  };
  // Labels only: a value column padded to the right would be noise.
  std::size_t label = 0;
  for (const auto& row : rows) label = std::max(label, row[0].size());
  std::string out;
  for (const auto& row : rows)
    out += row[0] + std::string(label - row[0].size() + 2, ' ') + row[1] + "\n";
  return out;
}

std::string format_scenario(const scenario_result& s) {
  std::string out = s.key() + "  " + to_string(s.status);
  if (!s.status_message.empty()) out += ": " + s.status_message;
  out += "\n";

  const analysis_summary& a = s.analysis;
  // A scenario that was skipped, or failed before its graph was built, has no numbers: a
  // block of zeros would read like a measurement.
  const bool measured = s.status == scenario_status::ok || a.alloc_nodes != 0 ||
                        a.requested_bytes != 0 || a.reserved_high_bytes != 0;
  if (measured) {
    out += "  memory: requested " + mib(a.requested_bytes) + ", lower bound " +
           mib(a.lower_bound_rounded_bytes) + " (rounded), used high " + mib(a.used_high_bytes) +
           ", reserved high " + mib(a.reserved_high_bytes) + "\n";
    out += "  nodes: " + std::to_string(a.alloc_nodes) + " alloc, " + std::to_string(a.free_nodes) +
           " free, " + std::to_string(a.unfreed_allocations) + " unfreed, " +
           std::to_string(a.distinct_addresses) + " distinct addresses\n";
    out += "  ratios: va reuse " + ratio(a.va_reuse_ratio) + ", physical reuse " +
           ratio(a.physical_reuse_ratio) + ", reserved / lower bound " + ratio(a.bound_ratio) +
           "\n";
  }

  if (!s.launch_costs.empty()) {
    std::vector<std::vector<std::string>> rows = {
        {"phase", "runs", "host median", "min", "max", "wall median", "min", "max (us)"}};
    for (const auto& l : s.launch_costs) {
      rows.push_back({l.phase, std::to_string(l.host.count), us(l.host.median_us),
                      us(l.host.min_us), us(l.host.max_us), us(l.wall.median_us), us(l.wall.min_us),
                      us(l.wall.max_us)});
    }
    out += table(rows, "  ");
  }

  for (const auto& d : s.diagnostics) {
    out += "  [" + d.severity + "] " + d.message;
    if (d.bytes != 0) out += " (" + mib(d.bytes) + ")";
    out += "\n";
  }
  if (s.advice) {
    out += std::string("  advice, measured on the driver (") +
           (s.skeletons.size() > 1 ? "the graphs as launched: " : "the skeleton replayed: ") +
           mib(s.advice->baseline_bytes) + "):";
    if (s.advice->changes.empty()) out += " none saves a granule";
    out += "\n";
    for (const auto& c : s.advice->changes) {
      out += "    saves " + mib(c.saving_bytes) + " measured (predicted " + mib(c.predicted_bytes) +
             " after it): " + c.where + "\n";
    }
    for (const auto& c : s.advice->tried) {
      out += "    tried, saves less than a granule: " + c.kind + " (reserved " + mib(c.measured_bytes) + ")\n";
    }
  }
  return out;
}

}  // namespace

std::string format_report(const report& r) {
  std::string out = format_environment(r.env);
  for (const auto& s : r.scenarios) out += "\n" + format_scenario(s);
  if (r.scenarios.empty()) out += "\nno scenarios\n";
  return out;
}

}  // namespace gmem::profiler
