#include "gmem/profiler/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "gmem/profiler/report_io.hpp"

namespace gmem::profiler {
namespace {

// A change exactly at the tolerance passes ("at most"); without the slack, (110 - 100) / 100
// can land a hair above 0.10 in binary.
constexpr double slack = 1e-9;

const char* const memory_metrics[] = {"used_high_bytes", "reserved_high_bytes"};
const char* const reuse_metrics[] = {"va_reuse_ratio", "physical_reuse_ratio"};

bool is_known_metric(const std::string& name) {
  for (const char* m : memory_metrics)
    if (name == m) return true;
  for (const char* m : reuse_metrics)
    if (name == m) return true;
  for (const char* prefix : {"host.", "wall."}) {
    const std::string p = prefix;
    if (name.size() > p.size() && name.compare(0, p.size(), p) == 0) return true;
  }
  return false;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string format_double(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string format_bytes(double bytes) {
  return format_double("%.1f MiB", bytes / (1024.0 * 1024.0));
}

std::string format_value(const comparison_row& r, double v) {
  if (r.category == "scenario") return "-";
  if (std::isnan(v)) return "n/a";
  if (ends_with(r.metric, "_bytes")) return format_bytes(v);
  if (r.category == "time") return format_double("%.2f us", v);
  return format_double("%.3f", v);
}

std::string format_change(const comparison_row& r) {
  if (r.category == "scenario" || std::isnan(r.change)) return "-";
  if (std::isinf(r.change)) return r.change > 0 ? "up from 0" : "down to 0";
  return format_double("%+.1f%%", r.change * 100.0);
}

std::string format_tolerance(const comparison_row& r) {
  if (r.category == "scenario") return "-";
  // Reuse may drop by the tolerance, the others may grow by it: the sign says which.
  return format_double(r.category == "reuse" ? "-%.1f%%" : "+%.1f%%", r.tolerance * 100.0);
}

class comparer {
 public:
  comparer(const tolerances& t, comparison& out) : t_(t), out_(out) {}

  // `growth_regresses`: memory and time; otherwise (reuse) a drop regresses.
  void judge(const std::string& scenario, const std::string& metric, const std::string& category,
             double baseline, double current, bool growth_regresses) {
    comparison_row row;
    row.scenario = scenario;
    row.metric = metric;
    row.category = category;
    row.baseline = baseline;
    row.current = current;
    row.tolerance = t_.for_metric(metric, category);

    if (!std::isfinite(baseline)) {
      row.change = std::numeric_limits<double>::quiet_NaN();
      row.verdict = "skipped";
      note(scenario + ": " + metric + " has no value in the baseline; not compared");
      out_.rows.push_back(std::move(row));
      return;
    }
    if (!std::isfinite(current)) {
      row.change = std::numeric_limits<double>::quiet_NaN();
      row.verdict = "regression";
      note(scenario + ": " + metric +
           " has no value in the current report (it had one in the "
           "baseline); counted as a regression");
      out_.rows.push_back(std::move(row));
      return;
    }

    if (baseline == current) {
      row.change = 0;
    } else if (baseline == 0) {
      // No fraction of 0 allows any growth: going from nothing to something is a regression.
      row.change = current > 0 ? std::numeric_limits<double>::infinity()
                               : -std::numeric_limits<double>::infinity();
    } else {
      row.change = (current - baseline) / std::fabs(baseline);
    }

    bool regressed = growth_regresses ? row.change > row.tolerance + slack
                                      : row.change < -(row.tolerance + slack);
    if (category == "time" && current - baseline <= t_.time_floor_us) regressed = false;
    row.verdict = regressed ? "regression" : "pass";
    if (regressed && baseline == 0) {
      note(scenario + ": " + metric + " was 0 in the baseline and is " +
           (ends_with(metric, "_bytes") ? format_bytes(current) : format_double("%g", current)) +
           " now; growth from 0 exceeds any tolerance");
    }
    out_.rows.push_back(std::move(row));
  }

  void missing(const std::string& scenario, const std::string& why) {
    comparison_row row;
    row.scenario = scenario;
    row.metric = "scenario";
    row.category = "scenario";
    row.verdict = "missing";
    out_.rows.push_back(std::move(row));
    note(scenario + ": ok in the baseline, " + why + "; counted as a regression");
  }

  void note(std::string text) { out_.notes.push_back(std::move(text)); }

 private:
  const tolerances& t_;
  comparison& out_;
};

// Scenarios by key; a key seen twice keeps its first scenario (and says so).
std::unordered_map<std::string, const scenario_result*> index_by_key(const report& r,
                                                                     const char* which,
                                                                     comparer& c) {
  std::unordered_map<std::string, const scenario_result*> index;
  for (const auto& s : r.scenarios) {
    if (!index.emplace(s.key(), &s).second) {
      c.note(s.key() + ": appears more than once in the " + std::string(which) +
             " report; only the first is compared");
    }
  }
  return index;
}

void compare_scenario(const std::string& key, const scenario_result& b, const scenario_result& c,
                      comparer& out) {
  out.judge(key, "used_high_bytes", "memory", static_cast<double>(b.analysis.used_high_bytes),
            static_cast<double>(c.analysis.used_high_bytes), true);
  out.judge(key, "reserved_high_bytes", "memory",
            static_cast<double>(b.analysis.reserved_high_bytes),
            static_cast<double>(c.analysis.reserved_high_bytes), true);
  out.judge(key, "va_reuse_ratio", "reuse", b.analysis.va_reuse_ratio, c.analysis.va_reuse_ratio,
            false);
  out.judge(key, "physical_reuse_ratio", "reuse", b.analysis.physical_reuse_ratio,
            c.analysis.physical_reuse_ratio, false);

  for (const auto& bl : b.launch_costs) {
    const auto it = std::find_if(c.launch_costs.begin(), c.launch_costs.end(),
                                 [&](const launch_cost& l) { return l.phase == bl.phase; });
    if (it == c.launch_costs.end()) {
      out.note(key + ": launch cost '" + bl.phase + "' is in the baseline only; not compared");
      continue;
    }
    out.judge(key, "host." + bl.phase, "time", bl.host.median_us, it->host.median_us, true);
    out.judge(key, "wall." + bl.phase, "time", bl.wall.median_us, it->wall.median_us, true);
  }
  for (const auto& cl : c.launch_costs) {
    const bool in_baseline = std::any_of(b.launch_costs.begin(), b.launch_costs.end(),
                                         [&](const launch_cost& l) { return l.phase == cl.phase; });
    if (!in_baseline) {
      out.note(key + ": launch cost '" + cl.phase + "' is new (not in the baseline); not compared");
    }
  }
}

}  // namespace

double tolerances::for_metric(const std::string& metric, const std::string& category) const {
  if (const auto it = per_metric.find(metric); it != per_metric.end()) return it->second;
  if (category == "memory") return memory;
  if (category == "reuse") return reuse;
  if (category == "time") return time;
  if (category == "scenario") return 0;
  throw std::invalid_argument("unknown metric category '" + category + "' for metric '" + metric +
                              "': expected memory, reuse or time");
}

void set_tolerance(tolerances& t, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == assignment.size()) {
    throw std::invalid_argument("tolerance '" + assignment +
                                "' is not NAME=FRACTION; write e.g. memory=0.05 (5%) or "
                                "reserved_high_bytes=0.1");
  }
  const std::string name = assignment.substr(0, eq);
  const std::string value_text = assignment.substr(eq + 1);

  const char* begin = value_text.c_str();
  char* end = nullptr;
  const double value = std::strtod(begin, &end);
  if (end == begin || *end != '\0' || !std::isfinite(value) || value < 0) {
    throw std::invalid_argument("tolerance '" + assignment + "': '" + value_text +
                                "' is not a fraction >= 0; write e.g. " + name + "=0.15 for 15%");
  }

  if (name == "time_floor_us") {
    t.time_floor_us = value;
  } else if (name == "memory") {
    t.memory = value;
  } else if (name == "reuse") {
    t.reuse = value;
  } else if (name == "time") {
    t.time = value;
  } else if (is_known_metric(name)) {
    t.per_metric[name] = value;
  } else {
    throw std::invalid_argument(
        "tolerance '" + assignment + "': unknown name '" + name +
        "'; use memory, reuse, time, time_floor_us, or a metric: used_high_bytes, reserved_high_bytes, "
        "va_reuse_ratio, physical_reuse_ratio, host.<phase>, wall.<phase>");
  }
}

bool comparison::regressed() const {
  return std::any_of(rows.begin(), rows.end(), [](const comparison_row& r) {
    return r.verdict == "regression" || r.verdict == "missing";
  });
}

comparison compare_reports(const report& baseline, const report& current, const tolerances& t) {
  if (baseline.version != current.version) {
    throw report_error(report_error::kind::wrong_schema_version,
                       "cannot compare reports of schema_version " +
                           std::to_string(baseline.version) + " (baseline) and " +
                           std::to_string(current.version) +
                           " (current); measure the baseline again with this gmemprof");
  }
  if (baseline.env.device_name != current.env.device_name) {
    throw report_error(report_error::kind::different_gpu,
                       "cannot compare a report measured on '" + current.env.device_name +
                           "' with a baseline measured on '" + baseline.env.device_name +
                           "': memory and timings differ between GPUs; compare against a "
                           "baseline from the same GPU model");
  }

  comparison result;
  comparer out(t, result);
  const auto base_index = index_by_key(baseline, "baseline", out);
  const auto current_index = index_by_key(current, "current", out);

  std::set<std::string> seen;
  for (const auto& b : baseline.scenarios) {
    const std::string key = b.key();
    if (!seen.insert(key).second) continue;
    if (b.status != scenario_status::ok) {
      out.note(key + ": " + to_string(b.status) + " in the baseline" +
               (b.status_message.empty() ? "" : " (" + b.status_message + ")") + "; not compared");
      continue;
    }
    const auto it = current_index.find(key);
    if (it == current_index.end()) {
      out.missing(key, "missing from the current report");
      continue;
    }
    const scenario_result& c = *it->second;
    if (c.status != scenario_status::ok) {
      out.missing(key, std::string(to_string(c.status)) + " in the current report" +
                           (c.status_message.empty() ? "" : " (" + c.status_message + ")"));
      continue;
    }
    compare_scenario(key, b, c, out);
  }
  for (const auto& c : current.scenarios) {
    if (base_index.find(c.key()) == base_index.end()) {
      out.note(c.key() + ": new (not in the baseline); not compared");
    }
  }
  return result;
}

std::string format_comparison(const comparison& c) {
  const std::vector<std::string> header = {"scenario", "metric",    "baseline", "current",
                                           "change",   "tolerance", "verdict"};
  std::vector<std::vector<std::string>> cells;
  cells.reserve(c.rows.size());
  for (const auto& r : c.rows) {
    cells.push_back({r.scenario, r.metric, format_value(r, r.baseline), format_value(r, r.current),
                     format_change(r), format_tolerance(r), r.verdict});
  }

  std::vector<std::size_t> width(header.size());
  for (std::size_t i = 0; i < header.size(); ++i) width[i] = header[i].size();
  for (const auto& row : cells) {
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  // Names left-aligned, numbers right-aligned so that their digits line up.
  const auto line = [&](const std::vector<std::string>& row) {
    std::string s;
    for (std::size_t i = 0; i < row.size(); ++i) {
      const bool numeric = i >= 2 && i <= 5;
      const std::string pad(width[i] - row[i].size(), ' ');
      if (i != 0) s += "  ";
      s += numeric ? pad + row[i] : row[i] + (i + 1 == row.size() ? "" : pad);
    }
    return s + "\n";
  };

  std::string out;
  if (!c.rows.empty()) {
    out += line(header);
    for (const auto& row : cells) out += line(row);
  }
  for (const auto& n : c.notes) out += "note: " + n + "\n";

  const auto compared = std::count_if(
      c.rows.begin(), c.rows.end(), [](const comparison_row& r) { return r.verdict != "skipped"; });
  const auto regressed = std::count_if(c.rows.begin(), c.rows.end(), [](const comparison_row& r) {
    return r.verdict == "regression" || r.verdict == "missing";
  });
  out += std::to_string(compared) + " compared, " + std::to_string(regressed) + " regressed\n";
  return out;
}

int exit_code(const comparison& c) noexcept { return c.regressed() ? 1 : 0; }

}  // namespace gmem::profiler
