#include "suite/runner.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <string>

#include "gmem/capability.hpp"
#include "gmem/error.hpp"
#include "gmem/handles.hpp"
#include "gmem/profiler/counters.hpp"
#include "gmem/profiler/environment.hpp"
#include "measure/nvtx_range.hpp"
#include "gmem/profiler/statistics.hpp"
#include "suite/scenarios.hpp"

namespace gmem::profiler {
namespace {

trial_sample sample_of(const scenario_result& r) {
  trial_sample t;
  t.used_high_bytes = r.analysis.used_high_bytes;
  t.reserved_high_bytes = r.analysis.reserved_high_bytes;
  t.va_reuse_ratio = r.analysis.va_reuse_ratio;
  t.physical_reuse_ratio = r.analysis.physical_reuse_ratio;
  for (const auto& l : r.launch_costs) {
    t.launches.push_back({l.phase, l.host.median_us, l.wall.median_us, l.reference_host.median_us,
                          l.reference_wall.median_us});
  }
  return t;
}

}  // namespace

std::vector<scenario_result> combine_trials(std::vector<std::vector<scenario_result>> trials) {
  if (trials.empty()) return {};
  std::vector<scenario_result> out = std::move(trials.front());
  if (trials.size() == 1) return out;  // one trial: the report as before, no trials section
  for (std::size_t i = 0; i < out.size(); ++i) {
    scenario_result& r = out[i];
    if (r.status != scenario_status::ok) continue;
    r.trials.push_back(sample_of(r));
    // The same scenario in the other trials (matched by key, looked up once).
    const std::string key = r.key();
    std::vector<std::pair<std::size_t, const scenario_result*>> same;  // (trial index, result)
    for (std::size_t t = 1; t < trials.size(); ++t) {
      if (i < trials[t].size() && trials[t][i].key() == key) {
        same.emplace_back(t, &trials[t][i]);
        continue;
      }
      const auto found = std::find_if(trials[t].begin(), trials[t].end(),
                                      [&](const scenario_result& o) { return o.key() == key; });
      if (found != trials[t].end()) same.emplace_back(t, &*found);
    }
    for (const auto& [t, found] : same) {
      const scenario_result& other = *found;
      if (other.status != scenario_status::ok) {
        // A trial that failed fails the scenario: the check must see it.
        r.status = other.status;
        r.status_message = "trial " + std::to_string(t + 1) + ": " + other.status_message;
        break;
      }
      r.trials.push_back(sample_of(other));
    }
    // Launch costs: the median is the median of the trials' medians; count, min and max cover
    // every trial's launches (so that the median lies between min and max).
    for (auto& l : r.launch_costs) {
      for (const auto& entry : same) {
        for (const auto& ol : entry.second->launch_costs) {
          if (ol.phase != l.phase) continue;
          for (auto [mine, theirs] :
               {std::pair{&l.host, &ol.host}, std::pair{&l.wall, &ol.wall},
                std::pair{&l.reference_host, &ol.reference_host},
                std::pair{&l.reference_wall, &ol.reference_wall}}) {
            if (theirs->count == 0) continue;
            mine->min_us = mine->count ? std::min(mine->min_us, theirs->min_us) : theirs->min_us;
            mine->max_us = mine->count ? std::max(mine->max_us, theirs->max_us) : theirs->max_us;
            mine->count += theirs->count;
          }
        }
      }
      std::vector<double> host, wall, ref_host, ref_wall;
      for (const auto& t : r.trials) {
        for (const auto& tl : t.launches) {
          if (tl.phase == l.phase) {
            host.push_back(tl.host_median_us);
            wall.push_back(tl.wall_median_us);
            ref_host.push_back(tl.reference_host_median_us);
            ref_wall.push_back(tl.reference_wall_median_us);
          }
        }
      }
      if (!host.empty()) l.host.median_us = median(host);
      if (!wall.empty()) l.wall.median_us = median(wall);
      if (l.reference_host.count > 0) l.reference_host.median_us = median(ref_host);
      if (l.reference_wall.count > 0) l.reference_wall.median_us = median(ref_wall);
    }
  }
  return out;
}

std::vector<std::string> scenario_names() {
  std::vector<std::string> names;
  for (const auto& d : scenario_definitions()) names.push_back(d.name);
  return names;
}

namespace {

void check_names(const std::vector<scenario_definition>& defs,
                 const std::vector<std::string>& names) {
  std::string unknown;
  for (const auto& n : names) {
    const bool known = std::any_of(defs.begin(), defs.end(),
                                   [&n](const scenario_definition& d) { return d.name == n; });
    if (!known) unknown += (unknown.empty() ? "'" : ", '") + n + "'";
  }
  if (unknown.empty()) return;
  std::string list;
  for (const auto& d : defs) list += (list.empty() ? "" : ", ") + d.name;
  throw usage_error("unknown scenario " + unknown + "; valid scenarios: " + list);
}

std::string joined(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : ", ") + i;
  return s;
}

/// "bytes (size), upload (flag)", or "none".
std::string parameter_list(const scenario_definition& d) {
  std::vector<std::string> items;
  for (const auto& p : d.params) items.push_back(p.name + " (" + to_string(p.kind) + ")");
  return items.empty() ? "none" : joined(items);
}

const param_spec* find_param(const scenario_definition& d, const std::string& name) {
  for (const auto& p : d.params) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

/// Why `setting` (NAME=VALUE, `name` declared by no selected scenario) is refused.
std::string not_taken(const std::vector<scenario_definition>& defs,
                      const std::vector<const scenario_definition*>& selected,
                      const std::string& name, const std::string& setting) {
  std::vector<std::string> takers;
  for (const auto& d : defs) {
    if (find_param(d, name) != nullptr) takers.push_back(d.name);
  }
  std::string msg;
  if (selected.size() == 1) {
    msg = "scenario " + selected.front()->name + " has no parameter '" + name + "' (--set " +
          setting + "); its parameters: " + parameter_list(*selected.front());
  } else {
    std::vector<std::string> names;
    for (const auto* d : selected) names.push_back(d->name);
    msg = "--set " + setting + " applies to none of the selected scenarios (" +
          (selected.size() == defs.size() ? "all " + std::to_string(defs.size())
                                          : joined(names)) +
          ")";
    if (takers.empty()) {
      std::vector<std::string> all;
      for (const auto& d : defs) {
        for (const auto& p : d.params) {
          if (std::find(all.begin(), all.end(), p.name) == all.end()) all.push_back(p.name);
        }
      }
      std::sort(all.begin(), all.end());
      msg += ": no scenario has a parameter '" + name + "'; the parameters are " + joined(all) +
             " (gmemprof run --list says which scenario takes which)";
    }
  }
  if (!takers.empty()) {
    msg += "; scenarios that take " + name + ": " + joined(takers) +
           " (name them, e.g. gmemprof run " + takers.front() + " --set " + setting + ")";
  }
  return msg;
}

}  // namespace

void check_scenario_names(const std::vector<std::string>& names) {
  check_names(scenario_definitions(), names);
}

std::map<std::string, scenario_parameters> resolve_parameters(
    const std::vector<scenario_definition>& defs, const std::vector<std::string>& only,
    const std::vector<std::string>& settings) {
  check_names(defs, only);
  std::vector<const scenario_definition*> selected;
  std::map<std::string, scenario_parameters> out;
  for (const auto& d : defs) {
    if (!only.empty() && std::find(only.begin(), only.end(), d.name) == only.end()) continue;
    selected.push_back(&d);
    scenario_parameters& p = out[d.name];
    for (const auto& spec : d.params) p.set(spec.name, spec.defaults);
  }
  std::map<std::string, std::string> given;  // name -> value, to refuse a name given twice
  for (const auto& setting : settings) {
    const std::size_t eq = setting.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw usage_error("--set '" + setting +
                        "' is not NAME=VALUE (e.g. --set bytes=64MiB; gmemprof run --list "
                        "shows each scenario's parameters)");
    }
    const std::string name = setting.substr(0, eq);
    const std::string value = setting.substr(eq + 1);
    if (const auto it = given.find(name); it != given.end()) {
      throw usage_error("--set " + name + " is given twice ('" + it->second + "' and '" + value +
                        "'); give each parameter once");
    }
    given[name] = value;
    std::vector<std::pair<const scenario_definition*, const param_spec*>> takers;
    std::vector<std::string> taker_names;
    for (const auto* d : selected) {
      if (const param_spec* spec = find_param(*d, name)) {
        takers.emplace_back(d, spec);
        taker_names.push_back(d->name);
      }
    }
    if (takers.empty()) throw usage_error(not_taken(defs, selected, name, setting));
    // Out-of-range values, grouped by the range the scenarios accept.
    std::vector<std::pair<std::string, std::vector<std::string>>> out_of_range;
    for (const auto& [d, spec] : takers) {
      std::uint64_t v = 0;
      try {
        v = parse_param(spec->kind, value);
      } catch (const std::invalid_argument& e) {
        throw usage_error("--set " + setting + " (for " + joined(taker_names) + "): " + e.what() +
                          "; " + name + " takes " + accepted_values(spec->kind));
      }
      if (v < spec->min || v > spec->max) {
        const std::string range = format_param_value(spec->kind, spec->min) + " to " +
                                  format_param_value(spec->kind, spec->max);
        auto it = std::find_if(out_of_range.begin(), out_of_range.end(),
                               [&range](const auto& r) { return r.first == range; });
        if (it == out_of_range.end()) it = out_of_range.insert(out_of_range.end(), {range, {}});
        it->second.push_back(d->name);
      }
      out[d->name].set(name, {v});
    }
    if (!out_of_range.empty()) {
      std::string msg = "--set " + setting + " is out of range:";
      for (const auto& [range, names] : out_of_range) {
        msg += (msg.back() == ':' ? " " : "; ") + joined(names) +
               (names.size() == 1 ? " takes " : " take ") + name + " from " + range;
      }
      throw usage_error(msg);
    }
  }
  return out;
}

std::map<std::string, scenario_parameters> resolve_parameters(
    const std::vector<std::string>& only, const std::vector<std::string>& settings) {
  return resolve_parameters(scenario_definitions(), only, settings);
}

std::string format_scenario_list() {
  std::string s;
  for (const auto& d : scenario_definitions()) {
    s += d.name + "\t" + d.summary + "\n";
    for (const auto& p : d.params) s += "    " + describe(p) + "\n";
  }
  return s;
}

report run_suite(const run_options& options, const std::string& command_line) {
  const auto params = resolve_parameters(options.only, options.settings);
  if (const auto why = gpu_unavailable_reason()) throw unsupported_error(*why);
  const int count = device_count();
  if (options.device < 0 || options.device >= count) {
    throw usage_error("device " + std::to_string(options.device) +
                      " is out of range: this machine has " + std::to_string(count) +
                      " CUDA device(s), 0.." + std::to_string(count - 1));
  }
  if (options.reps < 1 || options.warmups < 0 || options.trials < 1) {
    throw usage_error("run options: reps and trials must be at least 1 and warmups at least 0 "
                      "(got reps " + std::to_string(options.reps) + ", trials " +
                      std::to_string(options.trials) + ", warmups " +
                      std::to_string(options.warmups) + ")");
  }
  require_graph_mem_nodes(options.device);
  device_guard on(options.device);

  report rep;
  rep.env = collect_environment(options.device, command_line);
  scenario_context ctx;
  ctx.device = options.device;
  ctx.device_count = count;
  ctx.warmups = options.warmups;
  ctx.reps = options.reps;
  ctx.granularity = rep.env.granularity_bytes;
  std::size_t free_bytes = 0, total_bytes = 0;
  GMEM_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
  ctx.free_memory = free_bytes;

  const auto wanted = [&options](const std::string& name) {
    return options.only.empty() ||
           std::find(options.only.begin(), options.only.end(), name) != options.only.end();
  };
  std::size_t selected = 0, position = 0;
  for (const auto& def : scenario_definitions()) selected += wanted(def.name) ? 1 : 0;
  for (const auto& def : scenario_definitions()) {
    if (!wanted(def.name)) continue;
    ++position;
    ctx.params = params.at(def.name);
    if (options.progress) {
      options.progress("[" + std::to_string(position) + "/" + std::to_string(selected) + "] " +
                       def.name + ": " + def.summary);
    }
    const auto t0 = std::chrono::steady_clock::now();
    const nvtx_range range(def.name);
    try {
      std::vector<std::vector<scenario_result>> trials;
      for (int t = 0; t < options.trials; ++t) {
        if (t > 0) (void)trim(options.device);  // each trial from a trimmed pool
        trials.push_back(def.run(ctx));
      }
      for (auto& r : combine_trials(std::move(trials))) rep.scenarios.push_back(std::move(r));
    } catch (const std::exception& e) {
      scenario_result r;
      r.name = def.name;
      r.status = scenario_status::error;
      r.status_message = e.what();
      rep.scenarios.push_back(std::move(r));
      // Leave the device clean for the next scenario.
      (void)cudaDeviceSynchronize();
      (void)cudaGetLastError();
    }
    try {
      (void)trim(options.device);
    } catch (const std::exception& e) {
      // A broken context must not lose what was measured: say so and stop here.
      scenario_result r;
      r.name = def.name;
      r.status = scenario_status::error;
      r.status_message = std::string("trimming after the scenario failed: ") + e.what() +
                         "; the remaining scenarios were not run";
      rep.scenarios.push_back(std::move(r));
      break;
    }
    if (options.progress) {
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      char buf[64];
      std::snprintf(buf, sizeof buf, "  done in %.2f s", s);
      options.progress(buf);
    }
  }
  return rep;
}

}  // namespace gmem::profiler

namespace gmem::profiler {

std::vector<std::string> unsettled_scenarios(const std::vector<std::vector<scenario_result>>& trials,
                                             double tolerance) {
  // Per scenario key, in first-seen order: its name and the smallest and largest used and
  // reserved high watermarks over the trials.
  struct seen {
    std::string key, name;
    std::uint64_t lo[2], hi[2];
  };
  std::vector<seen> scenarios;
  for (const auto& trial : trials) {
    for (const scenario_result& r : trial) {
      if (r.status != scenario_status::ok) continue;
      const std::uint64_t v[2] = {r.analysis.used_high_bytes, r.analysis.reserved_high_bytes};
      const std::string key = r.key();
      auto it = std::find_if(scenarios.begin(), scenarios.end(), [&](const seen& s) { return s.key == key; });
      if (it == scenarios.end()) {
        scenarios.push_back({key, r.name, {v[0], v[1]}, {v[0], v[1]}});
        continue;
      }
      for (int m = 0; m < 2; ++m) {
        it->lo[m] = std::min(it->lo[m], v[m]);
        it->hi[m] = std::max(it->hi[m], v[m]);
      }
    }
  }
  std::vector<std::string> out;
  for (const seen& s : scenarios) {
    bool apart = false;
    for (int m = 0; m < 2; ++m) {
      apart = apart || static_cast<double>(s.hi[m]) > static_cast<double>(s.lo[m]) * (1 + tolerance);
    }
    if (apart && std::find(out.begin(), out.end(), s.name) == out.end()) out.push_back(s.name);
  }
  return out;
}

}  // namespace gmem::profiler
