#include "gmem/profiler/report.hpp"

#include <algorithm>
#include <map>
#include <cstdio>
#include <type_traits>

#include "gmem/profiler/statistics.hpp"

namespace gmem::profiler {
namespace {

std::string format_param(const param_value& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) {
          return x ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
          return std::to_string(x);
        } else if constexpr (std::is_same_v<T, double>) {
          char buf[64];
          std::snprintf(buf, sizeof buf, "%g", x);
          return buf;
        } else {
          return x;
        }
      },
      v);
}

}  // namespace

stats summarize_samples(std::vector<double> samples_us) {
  stats s;
  s.count = samples_us.size();
  if (samples_us.empty()) return s;
  std::sort(samples_us.begin(), samples_us.end());
  s.median_us = median_of_sorted(samples_us);
  s.min_us = samples_us.front();
  s.max_us = samples_us.back();
  return s;
}

void add_event_phases(scenario_result& s, const recorded_graph& g) {
  std::map<std::string, std::vector<double>> host_by_phase;
  std::vector<std::string> phase_order;
  for (const recorded_event& e : g.events) {
    if (e.kind == "free" || e.kind == "release" || e.kind == "capture") continue;
    const std::string phase = !e.result.empty() ? e.kind + "_failed" : e.kind == "launch" ? e.cls : e.kind;
    if (!host_by_phase.count(phase)) phase_order.push_back(phase);
    host_by_phase[phase].push_back(e.host_us);
    if (e.after) s.counters_after_phase.push_back({phase, *e.after});
  }
  for (const std::string& phase : phase_order) {
    launch_cost c;
    c.phase = phase;
    c.host = summarize_samples(std::move(host_by_phase[phase]));
    s.launch_costs.push_back(c);  // no wall time: it would synchronize the program's streams
  }
}

const char* to_string(scenario_status s) noexcept {
  switch (s) {
    case scenario_status::ok:
      return "ok";
    case scenario_status::skipped:
      return "skipped";
    case scenario_status::error:
      return "error";
  }
  return "unknown";
}

std::string scenario_result::key() const {
  if (params.empty()) return name;
  std::string k = name + "[";
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (i != 0) k += ",";
    k += params[i].first + "=" + format_param(params[i].second);
  }
  return k + "]";
}

}  // namespace gmem::profiler
