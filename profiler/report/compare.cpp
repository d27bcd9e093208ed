#include "gmem/profiler/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "gmem/profiler/report_io.hpp"
#include "gmem/profiler/statistics.hpp"
#include "report/processes.hpp"

namespace gmem::profiler {
namespace {

// A change exactly at the tolerance passes ("at most"); without the slack, (110 - 100) / 100
// can land a hair above 0.10 in binary.
constexpr double slack = 1e-9;

const char* const memory_metrics[] = {"used_high_bytes", "reserved_high_bytes"};
const char* const reuse_metrics[] = {"va_reuse_ratio", "physical_reuse_ratio"};
// Recordings only: a graph's granules held between launches; a device pool's high watermark and
// its reservation at the end (rows "pool[device N]").
// The fewest calls of one class, in each recording, whose host times a check judges.
constexpr std::size_t min_recorded_samples = 5;

const char* const recorded_memory_metrics[] = {"held_granule_bytes", "high_bytes", "end_bytes",
                                               "capture_pool_growth_bytes", "private_pool_bytes",
                                               "node_pool_retained_bytes", "framework_retained_bytes",
                                               "framework_warmup_bytes", "exec_state_bytes",
                                               "graph_memory_bytes", "graph_memory_peak_bytes"};

bool is_known_metric(const std::string& name) {
  for (const char* m : memory_metrics)
    if (name == m) return true;
  for (const char* m : recorded_memory_metrics)
    if (name == m) return true;
  for (const char* m : reuse_metrics)
    if (name == m) return true;
  for (const char* prefix : {"host.", "wall.", "mapped."}) {
    const std::string p = prefix;
    if (name.size() > p.size() && name.compare(0, p.size(), p) == 0) return true;
  }
  return false;
}

// (a - b) / |b|: 0 when equal, +-inf from 0.
double relative(double a, double b) {
  if (a == b) return 0;
  if (b == 0) {
    return a > 0 ? std::numeric_limits<double>::infinity()
                 : -std::numeric_limits<double>::infinity();
  }
  return (a - b) / std::fabs(b);
}

// The smallest one-sided p the exact test can give with these sizes: 1 / C(n1 + n2, n1).
double min_p_value(std::size_t n1, std::size_t n2) {
  double c = 1;
  for (std::size_t i = 1; i <= n1; ++i) c = c * static_cast<double>(n2 + i) / static_cast<double>(i);
  return 1.0 / c;
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
  return format_double("%+.1f%%", r.change * 100.0) + (r.per_reference() ? "*" : "");
}

bool notable(const comparison_row& r) {
  return r.verdict != "pass" && r.verdict != "skipped";
}

// The footnote of a table whose shown rows include one judged per reference ("" otherwise).
std::string reference_footnote(const comparison& c, bool all) {
  const bool any = std::any_of(c.rows.begin(), c.rows.end(), [all](const comparison_row& r) {
    return r.per_reference() && (all || notable(r));
  });
  return any ? "* the change at the baseline's reference-launch speed: each trial's time scaled "
               "by its reference launch (timed beside it in the same process) as far as the "
               "trials' times moved with it (reference_weight); baseline and current are the "
               "medians measured\n"
             : "";
}

std::string format_tolerance(const comparison_row& r) {
  if (r.category == "scenario") return "-";
  // Reuse may drop by the tolerance, the others may grow by it: the sign says which.
  return format_double(r.category == "reuse" ? "-%.1f%%" : "+%.1f%%", r.tolerance * 100.0);
}

// A time row's trials at the baseline's reference-launch speed. `b_ref` and `c_ref`
// hold the reference launch (timing.hpp's reference_launch, timed beside the phase in the same
// process) for every trial. In logarithms, each trial's time minus weight * (its reference's
// minus the baseline references' median): the weight is the slope of time on reference within
// each side (pooled over both, held within [0, 1]). A small launch's host time moves with its
// process's speed (weight near 1; on the H100 measured, per-trial spread from 0.25-0.49 down to
// 0.03-0.08 in logarithms); a large graph's mapping or a long kernel moves less or not at all
// (weight near 0: left as measured). Needs two trials a side and every value and reference
// positive. Returns the weight (0: nothing changed).
double to_reference_speed(std::vector<double>& b, std::vector<double>& c,
                          const std::vector<double>& b_ref, const std::vector<double>& c_ref) {
  if (b.size() < 2 || c.size() < 2 || b_ref.size() != b.size() || c_ref.size() != c.size()) {
    return 0;
  }
  const auto usable = [](const std::vector<double>& v) {
    return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x) && x > 0; });
  };
  if (!usable(b) || !usable(c) || !usable(b_ref) || !usable(c_ref)) return 0;
  // Sums over both sides of (time - its side's mean) * (reference - its side's mean), in logs.
  double cross = 0, ref_square = 0;
  for (const auto* side : {&b, &c}) {
    const std::vector<double>& ref = side == &b ? b_ref : c_ref;
    const double n = static_cast<double>(side->size());
    double mean_x = 0, mean_r = 0;
    for (std::size_t i = 0; i < side->size(); ++i) {
      mean_x += std::log((*side)[i]) / n;
      mean_r += std::log(ref[i]) / n;
    }
    for (std::size_t i = 0; i < side->size(); ++i) {
      const double dr = std::log(ref[i]) - mean_r;
      cross += (std::log((*side)[i]) - mean_x) * dr;
      ref_square += dr * dr;
    }
  }
  if (!(ref_square > 0)) return 0;
  const double weight = std::clamp(cross / ref_square, 0.0, 1.0);
  if (weight == 0) return 0;
  const double speed = median(b_ref);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] *= std::pow(speed / b_ref[i], weight);
  for (std::size_t i = 0; i < c.size(); ++i) c[i] *= std::pow(speed / c_ref[i], weight);
  return weight;
}

// How the trials of one report's side were judged: whether the metric regressed or improved.
struct movement {
  bool worse = false, better = false;
};

// What a one-sided test of the trials allows: without enough trials for any p to reach alpha,
// the effect alone decides.
struct trial_test {
  bool testable = false;
  bool significant_up = true, significant_down = true;
};

// Whether a time moved up and down from the edge of what the baseline's trials `bs` showed,
// scaled by `scale` (its slowest trial for a regression, its fastest for an improvement):
// processes of one binary settle in different modes (e.g. 1.7 or 2.8 us for one launch), and a
// current run entirely in a mode the baseline saw once is not a regression. Either the median
// moved beyond that edge by the tolerance and the floor (against a wide baseline: with every
// current trial beyond it), or every trial did by `separation`.
std::pair<bool, bool> time_moved(const std::vector<double>& bs, const std::vector<double>& cs, double scale,
                                 double tol, double floor_us, double separation, bool testable) {
  const auto [b_lo, b_hi] = std::minmax_element(bs.begin(), bs.end());
  const auto [c_lo, c_hi] = std::minmax_element(cs.begin(), cs.end());
  const double hi = *b_hi * scale, lo = *b_lo * scale, mid = median(cs);
  const bool spread = relative(*b_hi, *b_lo) > tol && *b_hi - *b_lo > floor_us;
  const bool median_up = relative(mid, hi) > tol && mid - hi > floor_us &&
                         (!spread || *c_lo > hi);
  const bool median_down = relative(lo, mid) > tol && lo - mid > floor_us &&
                           (!spread || *c_hi < lo);
  const bool all_up = testable && *c_lo > hi && relative(*c_lo, hi) > separation;
  const bool all_down = testable && *c_hi < lo && relative(lo, *c_hi) > separation;
  return std::pair<bool, bool>{median_up || all_up, median_down || all_down};
}

// Counters: the current median outside every value the baseline's trials showed, by more
// than the tolerance, and the test: a counter the driver sets by a race between streams
// (graphs_in_separate_streams) lands in a mode the baseline's few trials did not see.
// Where either side's trials spread beyond the tolerance (the race shows), only a current
// run entirely beyond every baseline trial counts: on an H200 the five trials of one run
// all reserved 256 MiB (the least; other runs 256 to 512), and the next runs' 15 trials,
// a third of them at 256 MiB too, would each have been a regression against it.
// `bmin`, `bmax`: the baseline trials' extremes; `current`: the median of `c`.
movement counter_moved(double bmin, double bmax, double current, const std::vector<double>& c, double tol,
                       bool growth_regresses, const trial_test& test) {
  const auto [c_lo, c_hi] = std::minmax_element(c.begin(), c.end());
  const bool raced = relative(bmax, bmin) > tol || relative(*c_hi, *c_lo) > tol;
  const double up_from = raced ? *c_lo : current, down_from = raced ? *c_hi : current;
  const bool above = up_from > bmax && relative(up_from, bmax) > tol;
  const bool below = down_from < bmin && relative(bmin, down_from) > tol;
  movement m;
  m.worse = growth_regresses ? above && test.significant_up : below && test.significant_down;
  m.better = growth_regresses ? below && test.significant_down : above && test.significant_up;
  return m;
}

class comparer {
 public:
  comparer(const tolerances& t, comparison& out) : t_(t), out_(out) {}

  // `growth_regresses`: memory and time; otherwise (reuse) a drop regresses. `b` and `c`: the
  // metric's value in each trial of the baseline and of the current report (one value for a
  // report without trials).
  // `comparable` false: the trials ran against different reservations (see compare_scenario),
  // so their times are not compared: the row is "unstable".
  // `b_ref`, `c_ref` (times of suite reports): the reference launch beside each trial
  // (to_reference_speed); empty where there is none.
  void judge(const std::string& scenario, const std::string& metric, const std::string& category,
             std::vector<double> b, std::vector<double> c, bool growth_regresses,
             bool comparable = true, const std::vector<double>& b_ref = {},
             const std::vector<double>& c_ref = {}, bool few = false) {
    const auto finite = [](std::vector<double>& v) {
      v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); }),
              v.end());
    };
    finite(b);
    finite(c);
    comparison_row row;
    row.scenario = scenario;
    row.metric = metric;
    row.category = category;
    // What the trials measured; the judgement below may see them at the reference's speed.
    row.baseline = b.empty() ? std::numeric_limits<double>::quiet_NaN() : median(b);
    row.current = c.empty() ? std::numeric_limits<double>::quiet_NaN() : median(c);
    row.raw_change = b.empty() || c.empty() ? std::numeric_limits<double>::quiet_NaN()
                                            : relative(row.current, row.baseline);
    // As measured, for the suite's move below.
    const std::vector<double> b_measured = b, c_measured = c;
    if (category == "time") row.reference_weight = to_reference_speed(b, c, b_ref, c_ref);
    row.baseline_trials = b.size();
    row.current_trials = c.size();
    row.tolerance = few ? std::max(t_.few_samples, t_.for_metric(metric, category)) : t_.for_metric(metric, category);
    const double tol = row.tolerance + slack;
    const double floor_us = few ? std::max(t_.few_samples_floor_us, t_.time_floor_us) : t_.time_floor_us;

    if (b.empty() || c.empty()) {
      judge_one_sided(std::move(row), b.empty());
      return;
    }
    const double baseline = median(b), current = median(c);
    row.change = relative(current, baseline);
    const double bmin = *std::min_element(b.begin(), b.end());
    const double bmax = *std::max_element(b.begin(), b.end());
    // The baseline's own trials spread beyond the tolerance (for times also by more than the
    // floor: microsecond launches jitter by more than half).
    const bool wide =
        relative(bmax, bmin) > tol && (category != "time" || bmax - bmin > floor_us);
    // Every row is judged: a one-sided Mann-Whitney U test of the trials, where there
    // are enough of them for any p to reach alpha, and a minimum effect; with too few trials the
    // effect alone decides, as with one sample.
    trial_test test;
    test.testable = min_p_value(b.size(), c.size()) <= t_.alpha;
    if (test.testable) row.p_value = mann_whitney_greater(b, c);
    const double p_less = test.testable ? mann_whitney_greater(c, b) : 0;
    test.significant_up = !test.testable || row.p_value <= t_.alpha;
    test.significant_down = !test.testable || p_less <= t_.alpha;
    bool with_phase = false;
    double drift = 1;
    movement m = category == "time"
                     ? time_movement(row, b, c, b_measured, c_measured, tol, floor_us, test, with_phase, drift)
                     : counter_moved(bmin, bmax, current, c, tol, growth_regresses, test);
    if (!comparable) m.worse = m.better = false;
    const bool disagree = judged_apart(row, m);
    row.verdict = m.worse                                 ? "regression"
                  : m.better                              ? "improvement"
                  : !comparable || with_phase || disagree ? "unstable"
                                                          : "pass";
    if (with_phase) {
      // As measured: what was held against the suite's move.
      const double moved_by = row.per_reference() ? row.raw_change : row.change;
      note(scenario + ": " + metric + " moved " + format_double("%+.0f%%", 100 * moved_by) +
           (row.per_reference() ? " as measured" : "") + drift_words(metric, drift));
    }
    row.wide_baseline = wide;
    if (m.worse && baseline == 0) {
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
  /// A note of what the bills show (a kind that held graph memory in one recording only).
  void bill_note(std::string text) {
    out_.said_by_bills.push_back(out_.notes.size());
    note(std::move(text));
  }
  [[nodiscard]] double memory_tolerance() const { return t_.memory; }
  [[nodiscard]] const tolerances& limits() const { return t_; }
  /// How each time metric ("host.instantiate") moved across the suite, held within host_drift.
  void set_drift(std::map<std::string, double> drift) { drift_ = std::move(drift); }
  /// Two recordings: the drift is the recording's graphs', and notes name the process.
  void for_recordings() {
    whole_ = "the recording's graphs";
    runner_ = "process";
  }

  // A recorded graph's rare calls of one phase (`metric`, "host.instantiate"), to be judged
  // with those of the other graphs of its site (judge_pooled): `b` and `c` its calls' times.
  void pool(const std::string& site, const std::string& graph, const std::string& metric, double b, double c) {
    const auto key = std::make_pair(site, metric);
    auto it = pool_index_.find(key);
    if (it == pool_index_.end()) {
      it = pool_index_.emplace(key, pools_.size()).first;
      pools_.push_back({site, metric, {}, {}, {}});
    }
    pooled& p = pools_[it->second];
    p.graphs.push_back(graph);
    p.b.push_back(b);
    p.c.push_back(c);
  }

  // One row per site and phase pooled, in the order they were first met: the graphs' changes
  // judged together. Each graph's own change (current / baseline) is one paired sample: the sign
  // test where there are enough graphs for any p to reach alpha (seven at 0.01), with the time
  // tolerance and floor on the median graph's change and difference; with fewer graphs, the
  // median alone with the few-samples tolerance and floor, as one graph's single call is judged.
  void judge_pooled() {
    for (const pooled& p : pools_) judge_pool(p);
    pools_.clear();
    pool_index_.clear();
    for (const auto& [what, graphs] : site_notes_) {
      std::string names;
      for (std::size_t i = 0; i < graphs.size() && i < 3; ++i) names += (i ? ", " : "") + graphs[i];
      note("site " + what.first + ": in " + std::to_string(graphs.size()) + " of its graphs (" + names +
           (graphs.size() > 3 ? ", ..." : "") + "), " + what.second);
    }
    site_notes_.clear();
  }

  // A note of one graph (`graph`: its row label); where it has a pooled `site`, the graphs of
  // that site with the same note are named in one (a warm-up's 2000 graphs each launched three
  // times: which launch is "steady" differs from run to run, 139 notes of one check).
  void graph_note(const std::string& site, const std::string& graph, const std::string& text) {
    if (site.empty()) {
      note(graph + ": " + text);
      return;
    }
    site_notes_[{site, text}].push_back(graph);
  }

 private:
  // A row one of whose reports has no value: skipped where the baseline has none, otherwise a
  // regression.
  void judge_one_sided(comparison_row row, bool no_baseline) {
    row.change = std::numeric_limits<double>::quiet_NaN();
    if (no_baseline) {
      row.verdict = "skipped";
      note(row.scenario + ": " + row.metric + " has no value in the baseline; not compared");
    } else {
      row.verdict = "regression";
      note(row.scenario + ": " + row.metric +
           " has no value in the current report (it had one in the "
           "baseline); counted as a regression");
    }
    out_.rows.push_back(std::move(row));
  }

  // A time's movement (time_moved), and whether it moved only with its phase across the suite
  // (`with_phase`, by `drift`: set_drift).
  movement time_movement(const comparison_row& row, const std::vector<double>& b, const std::vector<double>& c,
                         const std::vector<double>& b_measured, const std::vector<double>& c_measured,
                         double tol, double floor_us, const trial_test& test, bool& with_phase, double& drift) const {
    // How this metric moved across the whole suite (set_drift): a time that regresses or
    // improves only by as much as its phase did everywhere is "unstable".
    if (const auto d = drift_.find(row.metric); d != drift_.end()) drift = d->second;
    const double separation = t_.time_separation + slack;
    const auto [up, down] = time_moved(b, c, 1, tol, floor_us, separation, test.testable);
    movement m;
    m.worse = up && test.significant_up;
    m.better = down && test.significant_down;
    // Against the baseline as the whole suite moved (a host period), a row that
    // moved no further than its phase did everywhere is not judged. A row judged at the
    // reference's speed must also have moved beyond the suite as measured: the reference and
    // the suite's move are two readings of the host's speed, and a time that grows faster
    // than its reference between two speeds (an H200's upload then launch on another stream:
    // 4.1 us at the fast speed, 7.1 to 7.9 us at a slower one) is explained by the second.
    const auto moved = [&](double scale) {
      return row.per_reference() ? time_moved(b_measured, c_measured, scale, tol, floor_us, separation, test.testable)
                                 : time_moved(b, c, scale, tol, floor_us, separation, test.testable);
    };
    if ((m.worse && drift > 1 && !moved(drift).first) ||
        (m.better && drift < 1 && !moved(drift).second)) {
      m.worse = m.better = false;
      with_phase = true;
    }
    return m;
  }

  // A time judged at the reference's speed regresses only if it also grew as measured, and
  // improves only if it also fell: the slope is learned within each report's trials, and
  // carried to a process speed that only the other report saw it can turn a faster launch
  // into a slower one (an H200: wall.first_launch_after_upload 10.6 -> 9.2 us as measured,
  // +29% at the reference's speed). Such a row is not judged: returns true, `m` cleared.
  bool judged_apart(const comparison_row& row, movement& m) {
    if (!row.per_reference() || !((m.worse && !(row.raw_change > 0)) || (m.better && !(row.raw_change < 0)))) {
      return false;
    }
    m.worse = m.better = false;
    note(row.scenario + ": " + row.metric + " changed " + format_double("%+.0f%%", 100 * row.change) +
         " at the baseline's reference speed but " + format_double("%+.0f%%", 100 * row.raw_change) +
         " as measured: the two disagree, so it is not judged (unstable)");
    return true;
  }
  struct pooled {
    std::string site, metric;
    std::vector<std::string> graphs;
    std::vector<double> b, c;
  };

  void judge_pool(const pooled& p) {
    if (p.b.size() == 1) {  // the site's only graph with this phase: its own row, as any lone graph's
      judge(p.graphs[0], p.metric, "time", {p.b[0]}, {p.c[0]}, true, true, {}, {}, true);
      return;
    }
    comparison_row row;
    row.metric = p.metric;
    row.category = "time";
    std::vector<double> bs, cs, ratios;
    // A single call's floor: the graph whose call moved most (either way) beyond it, for the note.
    const double alone_floor = std::max(t_.few_samples_floor_us, t_.time_floor_us);
    const auto far = [](double r) { return std::fabs(std::log(r)); };
    std::size_t up = 0, down = 0, largest = p.b.size();
    for (std::size_t i = 0; i < p.b.size(); ++i) {
      if (!std::isfinite(p.b[i]) || !std::isfinite(p.c[i]) || !(p.b[i] > 0)) continue;
      bs.push_back(p.b[i]);
      cs.push_back(p.c[i]);
      ratios.push_back(p.c[i] / p.b[i]);
      up += p.c[i] > p.b[i] ? 1 : 0;
      down += p.c[i] < p.b[i] ? 1 : 0;
      if (std::fabs(p.c[i] - p.b[i]) > alone_floor && ratios.back() > 0 &&
          (largest == p.b.size() || far(ratios.back()) > far(p.c[largest] / p.b[largest]))) {
        largest = i;
      }
    }
    row.graphs = bs.size();
    row.scenario = "site " + p.site + " (" + std::to_string(row.graphs) + " graphs)";
    row.baseline_trials = row.current_trials = bs.size();
    if (bs.empty()) {
      row.baseline = row.current = row.change = row.raw_change = std::numeric_limits<double>::quiet_NaN();
      row.verdict = "skipped";
      note(row.scenario + ": " + p.metric + " has no positive time in the baseline; not compared");
      out_.rows.push_back(std::move(row));
      return;
    }
    row.baseline = median(bs);
    row.current = median(cs);
    const double ratio = median(ratios);
    row.change = row.raw_change = ratio - 1;
    const bool testable = sign_test_greater(up + down, 0) <= t_.alpha;
    const double p_up = sign_test_greater(up, down), p_down = sign_test_greater(down, up);
    if (testable) row.p_value = p_up;
    const double time_tol = t_.for_metric(p.metric, "time");
    row.tolerance = testable ? time_tol : std::max(t_.few_samples, time_tol);
    const double tol = row.tolerance + slack;
    const double floor_us = testable ? t_.time_floor_us : std::max(t_.few_samples_floor_us, t_.time_floor_us);
    // Against the baseline's times scaled by `scale` (1, or the recording's drift).
    const auto moved = [&](double scale) {
      std::vector<double> diffs;
      for (std::size_t i = 0; i < bs.size(); ++i) diffs.push_back(cs[i] - bs[i] * scale);
      const double r = ratio / scale, d = median(std::move(diffs));
      return std::pair<bool, bool>{relative(r, 1) > tol && d > floor_us && (!testable || p_up <= t_.alpha),
                                   relative(1, r) > tol && -d > floor_us && (!testable || p_down <= t_.alpha)};
    };
    auto [worse, better] = moved(1);
    double drift = 1;
    if (const auto d = drift_.find(p.metric); d != drift_.end()) drift = d->second;
    const bool with_phase = (worse && drift > 1 && !moved(drift).first) || (better && drift < 1 && !moved(drift).second);
    if (with_phase) worse = better = false;
    row.verdict = worse ? "regression" : better ? "improvement" : with_phase ? "unstable" : "pass";
    if (with_phase) {
      note(row.scenario + ": " + p.metric + " moved " + format_double("%+.0f%%", 100 * row.change) +
           " by the median graph" + drift_words(p.metric, drift));
    }
    // A graph whose one call moved beyond what a single call's tolerance allows: said, not judged
    // alone (one call's time moved 13x between two runs of one program on an H100).
    const double lb = largest < p.b.size() ? p.b[largest] : 0, lc = largest < p.b.size() ? p.c[largest] : 0;
    if (relative(lc, lb) > t_.few_samples + slack || relative(lb, lc) > t_.few_samples + slack) {
      note(row.scenario + ": " + p.metric + " is judged by its " + std::to_string(row.graphs) +
           " graphs together (" + std::to_string(up) + " slower, " + std::to_string(down) +
           " faster; the median graph " + format_double("%+.0f%%", 100 * row.change) + "): each measured it fewer than " +
           std::to_string(min_recorded_samples) + " times, and one call's time is not judged alone; the largest change, " +
           p.graphs[largest] + ": " + format_double("%.2f us", lb) + " -> " + format_double("%.2f us", lc) + " (" +
           format_double("%+.0f%%", 100 * relative(lc, lb)) + ")");
    }
    out_.rows.push_back(std::move(row));
  }

  // Why a row that moved only as far as `metric`'s `drift` is not judged.
  [[nodiscard]] std::string drift_words(const std::string& metric, double drift) const {
    return ", no further than " + metric + " moved across " + whole_ + " (" + format_double("%.2fx", drift) +
           "): the " + runner_ + " ran slower or faster as a whole, so it is not judged (unstable)";
  }

  const tolerances& t_;
  comparison& out_;
  std::map<std::string, double> drift_;
  std::string whole_ = "the suite", runner_ = "host";
  std::vector<pooled> pools_;
  std::map<std::pair<std::string, std::string>, std::size_t> pool_index_;
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> site_notes_;
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

// The value of a counter in each trial (the scenario's own value when it has no trials).
template <typename Get, typename GetTrial>
std::vector<double> samples(const scenario_result& s, Get get, GetTrial get_trial) {
  std::vector<double> v;
  for (const auto& t : s.trials) v.push_back(static_cast<double>(get_trial(t)));
  if (v.empty()) v.push_back(static_cast<double>(get(s.analysis)));
  return v;
}

// One figure of a launch cost's phase (a trial_sample::launch member) in each trial.
std::vector<double> per_trial(const scenario_result& s, const std::string& phase,
                              double trial_sample::launch::*figure) {
  std::vector<double> v;
  for (const auto& t : s.trials) {
    for (const auto& tl : t.launches) {
      if (tl.phase == phase) v.push_back(tl.*figure);
    }
  }
  return v;
}

// A launch cost's medians (host or wall) in each trial.
std::vector<double> time_samples(const scenario_result& s, const launch_cost& l, bool wall) {
  std::vector<double> v = per_trial(
      s, l.phase, wall ? &trial_sample::launch::wall_median_us : &trial_sample::launch::host_median_us);
  if (v.empty()) v.push_back(wall ? l.wall.median_us : l.host.median_us);
  return v;
}

// The reference launch's host medians beside a launch cost, in each trial; empty where any trial
// has none (reports before the reference, recordings). Host and wall rows alike are judged
// against the host time of the reference: what a process's speed changes is the driver's host
// work, which an instantiate's wall time is too (measured: with the reference's wall time, which
// adds its GPU latency, wall.instantiate kept most of its spread and was 4 of 5 false alarms).
std::vector<double> reference_samples(const scenario_result& s, const launch_cost& l) {
  std::vector<double> v = per_trial(s, l.phase, &trial_sample::launch::reference_host_median_us);
  const bool every = std::all_of(v.begin(), v.end(), [](double r) { return r > 0; });
  return every ? v : std::vector<double>{};
}

// The reserved high watermark of each trial.
std::vector<double> reserved_samples(const scenario_result& s) {
  return samples(s, [](const analysis_summary& a) { return a.reserved_high_bytes; },
                 [](const trial_sample& t) { return t.reserved_high_bytes; });
}

// The least and most that the trials of both sides reserved.
std::pair<double, double> reserved_range(const scenario_result& b, const scenario_result& c) {
  std::vector<double> reserved = reserved_samples(b);
  const std::vector<double> more = reserved_samples(c);
  reserved.insert(reserved.end(), more.begin(), more.end());
  const auto [low, high] = std::minmax_element(reserved.begin(), reserved.end());
  return {*low, *high};
}

// How each time metric moved across the suite: the hosts the GPUs are lent on run
// whole suites at 0.6 to 0.75 of their usual instantiate and launch times for seconds at a time
// (reports/check-quality/), and a baseline made in such a period makes every later run slower.
// Per metric ("host.instantiate", "wall.steady_launch"), the median over the scenarios both
// reports hold (ok on both sides, trials that reserved alike) of current / baseline medians,
// where at least min_scenarios have it, held within [1 / (1 + host_drift), 1 + host_drift].
// Times only. A change that moved most scenarios alike moves the median too: its rows turn
// unstable, with a note each, not regressions (docs/checks.md says so).
// `others` (two recordings): each metric's drift is the median over the other metrics of its
// side (host or wall), where at least min_scenarios have them: a process's speed as its other
// calls show it. A recording's graphs are often of one site, whose instantiations would make
// their own drift: every graph's instantiation twice as slow, its launches not, is a regression.
// (One recording of a C++ warm-up on an H100 ran every call 1.8 to 3.9x as slow as the last.)
std::map<std::string, double> suite_drift(
    const std::vector<std::pair<const scenario_result*, const scenario_result*>>& pairs,
    const tolerances& t, bool others = false) {
  constexpr std::size_t min_scenarios = 8;
  std::map<std::string, std::vector<double>> ratios;
  for (const auto& [b, c] : pairs) {
    const auto [low, high] = reserved_range(*b, *c);
    if (relative(high, low) > t.memory + slack) continue;
    for (const auto& bl : b->launch_costs) {
      const auto cl = std::find_if(c->launch_costs.begin(), c->launch_costs.end(),
                                   [&](const launch_cost& l) { return l.phase == bl.phase; });
      if (cl == c->launch_costs.end()) continue;
      for (const bool wall : {false, true}) {
        const double bm = median(time_samples(*b, bl, wall));
        const double cm = median(time_samples(*c, *cl, wall));
        if (std::isfinite(bm) && std::isfinite(cm) && bm > 0 && cm > 0) {
          ratios[(wall ? "wall." : "host.") + bl.phase].push_back(cm / bm);
        }
      }
    }
  }
  // A metric of fewer scenarios (a phase few scenarios have) takes the median over every host
  // (wall) time row instead.
  std::map<std::string, std::vector<double>> all;
  for (const auto& [metric, r] : ratios) {
    auto& side = all[metric.substr(0, 5)];
    side.insert(side.end(), r.begin(), r.end());
  }
  const auto held = [&t](std::vector<double> r) {
    return std::clamp(median(std::move(r)), 1 / (1 + t.host_drift), 1 + t.host_drift);
  };
  std::map<std::string, double> drift;
  for (auto& [metric, r] : ratios) {
    const auto& side = all[metric.substr(0, 5)];
    if (others) {
      std::vector<double> rest;
      for (const auto& [m, v] : ratios) {
        if (m != metric && m.compare(0, 5, metric, 0, 5) == 0) rest.insert(rest.end(), v.begin(), v.end());
      }
      if (rest.size() >= min_scenarios) drift[metric] = held(std::move(rest));
    } else if (r.size() >= min_scenarios) {
      drift[metric] = held(r);
    } else if (side.size() >= min_scenarios) {
      drift[metric] = held(side);
    }
  }
  return drift;
}

// A recorded graph's side of a comparison: its recorded calls (null where the recording does not
// list it), and whether its scenario's figures are its analysis (false where the recording's
// analysis was deferred: those figures are the graph model's, not comparable).
struct recorded_pair {
  const recorded_graph* baseline = nullptr;
  const recorded_graph* current = nullptr;
  bool analysed = true;
  /// Its process shares its device with another process of the recording (ranks on one GPU).
  bool shared_device = false;
  /// Where the recordings paired two or more graphs of its site: that site, under which its rare
  /// calls are judged with the others' (comparer::pool); empty: judged as its own.
  std::string pool_site;
  /// Its memory is of another kind in each recording (memory nodes in one, the framework's
  /// private pool in the other): its memory figures are not compared, its times are.
  [[nodiscard]] bool kinds_differ() const { return baseline && current && baseline->kind != current->kind; }
};

// The pool growth that a recorded graph's calls of one launch-cost phase caused. The phase is
// named as the recorder names its launch costs (record/recording_report.cpp, phase_of).
std::uint64_t mapped_in_phase(const recorded_graph* g, const std::string& phase) {
  std::uint64_t bytes = 0;
  if (!g) return bytes;
  for (const auto& e : g->events) {
    if (e.kind == "free") continue;
    const std::string p =
        !e.result.empty() ? e.kind + "_failed" : e.kind == "launch" ? e.cls : e.kind;
    if (p == phase && e.growth_bytes > 0) bytes += static_cast<std::uint64_t>(e.growth_bytes);
  }
  return bytes;
}

// Whether a recorded graph's calls of one phase overlapped another thread's (concurrent): their
// host time holds the wait for the driver the other calls held (first launches of four threads
// at once took 10 to 15 ms in one run of a program on an H100, 22 to 24 ms in the next).
bool concurrent_in_phase(const recorded_graph* g, const std::string& phase) {
  if (!g) return false;
  for (const auto& e : g->events) {
    if (e.kind == "free" || !e.concurrent) continue;
    const std::string p = !e.result.empty() ? e.kind + "_failed" : e.kind == "launch" ? e.cls : e.kind;
    if (p == phase) return true;
  }
  return false;
}

// A scenario's memory and reuse rows: its high watermarks and reuse ratios.
void judge_footprint(const std::string& key, const scenario_result& b, const scenario_result& c, comparer& out) {
  using a_t = analysis_summary;
  using t_t = trial_sample;
  const std::vector<double> b_reserved = reserved_samples(b), c_reserved = reserved_samples(c);
  out.judge(key, "used_high_bytes", "memory",
            samples(b, [](const a_t& a) { return a.used_high_bytes; },
                    [](const t_t& t) { return t.used_high_bytes; }),
            samples(c, [](const a_t& a) { return a.used_high_bytes; },
                    [](const t_t& t) { return t.used_high_bytes; }),
            true);
  out.judge(key, "reserved_high_bytes", "memory", b_reserved, c_reserved, true);
  out.judge(key, "va_reuse_ratio", "reuse",
            samples(b, [](const a_t& a) { return a.va_reuse_ratio; },
                    [](const t_t& t) { return t.va_reuse_ratio; }),
            samples(c, [](const a_t& a) { return a.va_reuse_ratio; },
                    [](const t_t& t) { return t.va_reuse_ratio; }),
            false);
  out.judge(key, "physical_reuse_ratio", "reuse",
            samples(b, [](const a_t& a) { return a.physical_reuse_ratio; },
                    [](const t_t& t) { return t.physical_reuse_ratio; }),
            samples(c, [](const a_t& a) { return a.physical_reuse_ratio; },
                    [](const t_t& t) { return t.physical_reuse_ratio; }),
            false);
}

// A launch's cost depends on the reservation it runs against (a launch that must map memory
// takes hundreds of microseconds more). Where the trials reserved different amounts (graphs in
// several streams overlap by chance: 288 to 512 MiB for one scenario on an H100), their times
// were measured in different states and are not compared.
bool same_reservations(const std::string& key, const scenario_result& b, const scenario_result& c, comparer& out) {
  const auto [low, high] = reserved_range(b, c);
  const bool comparable = relative(high, low) <= out.memory_tolerance() + slack;
  if (!comparable && !b.launch_costs.empty()) {
    out.note(key + ": its trials reserved from " + format_bytes(low) + " to " +
             format_bytes(high) +
             ": launch costs measured against different reservations are not compared "
             "(unstable)");
  }
  return comparable;
}

// Launch costs pair by phase and, where a phase appears more than once, by occurrence counted
// from the last: a recording names both its steady launches' aggregate (appended last) and a
// steady-class launch recorded as an event (after a trim or a stream switch) "steady". The
// last keeps the plain name, so that "host.steady" is the aggregate in every report.
std::vector<const launch_cost*> costs_of_phase(const scenario_result& s, const std::string& phase) {
  std::vector<const launch_cost*> v;
  for (const auto& l : s.launch_costs) {
    if (l.phase == phase) v.push_back(&l);
  }
  return v;
}

// The row name of the `k`th of `n` launch costs of one phase.
std::string occurrence_name(const std::string& phase, std::size_t k, std::size_t n) {
  return k + 1 == n ? phase : phase + " #" + std::to_string(k + 1);
}

// The rows of one launch cost of a recorded graph (`bl` in the baseline, `cl` now), named `phase`.
void judge_recorded_launch(const std::string& key, const scenario_result& b, const scenario_result& c,
                           const launch_cost& bl, const launch_cost& cl, const std::string& phase,
                           const recorded_pair& rec, comparer& out) {
  // Which graph's first launch (or upload) maps memory depends on the order the program's
  // graphs first ran in, which threads racing change from run to run: a call that mapped
  // memory in one run and not in the other measured another thing (1.1 ms against 12 us on
  // an H100), so that row is "unstable", like trials against different reservations.
  const std::uint64_t b_mapped = mapped_in_phase(rec.baseline, bl.phase);
  const std::uint64_t c_mapped = mapped_in_phase(rec.current, bl.phase);
  const bool same_state =
      relative(static_cast<double>(std::max(b_mapped, c_mapped)),
               static_cast<double>(std::min(b_mapped, c_mapped))) <=
      out.memory_tolerance() + slack;
  // A graph whose memory moved kind maps in one recording only: said once for all of them.
  if (!same_state && !rec.kinds_differ()) {
    out.note(key + ": its '" + phase + "' calls mapped " + format_bytes(b_mapped) +
             " in the baseline and " + format_bytes(c_mapped) +
             " now (the launch order decides which graph maps): their times are not compared "
             "(unstable)");
  }
  const bool alone = !concurrent_in_phase(rec.baseline, bl.phase) && !concurrent_in_phase(rec.current, bl.phase);
  if (same_state && !alone) {
    out.note(key + ": its '" + phase + "' calls overlapped other threads' calls in " +
             (concurrent_in_phase(rec.baseline, bl.phase) ? "the baseline" : "the current recording") +
             " (concurrent): their times hold the wait for the others and are not compared (unstable)");
  }
  // A recording has host times only (measuring wall time would synchronize the program's
  // streams): its wall statistics have no samples, and rows of nothing are not printed.
  if (bl.host.count > 0 && cl.host.count > 0) {
    // A recording measures each call once, as the program made it: a phase of a few calls
    // (first launches, remaps) is one or two samples, whose cost varies by 2x between runs of
    // one program on an H100 (a remap of 32 MiB: 25 us in one run, 60 us in the next). Such a
    // phase is judged one sample against one, with the few-samples tolerance and floor, or,
    // in a graph of a site of several, with the site's other graphs (comparer::pool);
    // `gmemprof run` measures launch costs with repetitions and trials.
    const bool enough = bl.host.count >= min_recorded_samples && cl.host.count >= min_recorded_samples;
    if (!enough && same_state && b_mapped > 0) {
      // A rare call that mapped memory stands for the bytes it mapped: its time is the driver's
      // mapping under whatever else the device did meanwhile (a first launch of 32 MiB took 0.1 ms
      // in one run and 1.1 ms in the next on an H100, another process mapping on the device).
      out.judge(key, "mapped." + phase, "memory", {static_cast<double>(b_mapped)}, {static_cast<double>(c_mapped)},
                true);
    } else if (!enough && rec.shared_device) {
      // Two ranks sharing an H100: one instantiation took 106 us in one run and 377 us in the
      // next, the other process's captures running beside it.
      out.note(key + ": its '" + phase + "' calls are " + std::to_string(std::min(bl.host.count, cl.host.count)) +
               " sample(s) of a process that shares its device with another recorded process: their time "
               "holds the other's driver work, so it is not judged (unstable)");
      out.judge(key, "host." + phase, "time", time_samples(b, bl, false), time_samples(c, cl, false), true, false);
    } else if (!enough && same_state && alone && !rec.pool_site.empty()) {
      out.pool(rec.pool_site, key, "host." + phase, median(time_samples(b, bl, false)),
               median(time_samples(c, cl, false)));
    } else {
      out.judge(key, "host." + phase, "time", time_samples(b, bl, false), time_samples(c, cl, false), true,
                same_state && alone, {}, {}, !enough);
    }
  }
  if (bl.wall.count > 0 && cl.wall.count > 0) {
    out.judge(key, "wall." + phase, "time", time_samples(b, bl, true),
              time_samples(c, cl, true), true, same_state);
  }
}

// `rec` non-null: a recorded graph (rows as the header of compare.hpp lists for recordings).
void compare_scenario(const std::string& key, const scenario_result& b, const scenario_result& c,
                      comparer& out, const recorded_pair* rec = nullptr) {
  if (!rec || (rec->analysed && !rec->kinds_differ())) judge_footprint(key, b, c, out);

  // A recorded graph's figures are its own footprint, not the state its calls met: what its
  // calls mapped decides (judge_recorded_launch).
  const bool comparable = rec ? true : same_reservations(key, b, c, out);
  for (const auto& bl : b.launch_costs) {
    const auto b_same = costs_of_phase(b, bl.phase), c_same = costs_of_phase(c, bl.phase);
    const std::size_t k = static_cast<std::size_t>(
        std::find(b_same.begin(), b_same.end(), &bl) - b_same.begin());
    const std::size_t from_last = b_same.size() - 1 - k;
    const std::string phase = occurrence_name(bl.phase, k, b_same.size());
    if (from_last >= c_same.size()) {
      out.graph_note(rec ? rec->pool_site : std::string(), key,
                     "launch cost '" + phase + "' is in the baseline only; not compared");
      continue;
    }
    const launch_cost& cl = *c_same[c_same.size() - 1 - from_last];
    if (!rec) {
      for (const bool wall : {false, true}) {
        out.judge(key, (wall ? "wall." : "host.") + phase, "time", time_samples(b, bl, wall),
                  time_samples(c, cl, wall), true, comparable, reference_samples(b, bl),
                  reference_samples(c, cl));
      }
      continue;
    }
    judge_recorded_launch(key, b, c, bl, cl, phase, *rec, out);
  }
  for (const auto& cl : c.launch_costs) {
    const auto b_same = costs_of_phase(b, cl.phase), c_same = costs_of_phase(c, cl.phase);
    const std::size_t k = static_cast<std::size_t>(
        std::find(c_same.begin(), c_same.end(), &cl) - c_same.begin());
    if (c_same.size() - 1 - k >= b_same.size()) {
      out.graph_note(rec ? rec->pool_site : std::string(), key,
                     "launch cost '" + occurrence_name(cl.phase, k, c_same.size()) + "' is new (not in the baseline); not compared");
    }
  }
}

// Each device's pool: the program's graph memory as the driver reserved it, all graphs together
// (the figure a recording exists for). A pool of the baseline missing now is a regression.
void compare_pools(const recording& b, const recording& c, comparer& out) {
  // A pool is a process's (its label in a merged recording of several) on one device.
  const auto label = [](const recorded_pool& p) {
    return "pool[" + (p.process.empty() ? std::string() : p.process + " ") + "device " +
           std::to_string(p.device) + "]";
  };
  const auto find = [](const recording& r, const recorded_pool& like) {
    const auto it = std::find_if(r.pools.begin(), r.pools.end(), [&](const recorded_pool& p) {
      return p.device == like.device && p.process == like.process;
    });
    return it == r.pools.end() ? nullptr : &*it;
  };
  for (const auto& bp : b.pools) {
    if (find(b, bp) != &bp) continue;  // a pool listed twice: its first
    const recorded_pool* cp = find(c, bp);
    if (!cp) {
      out.missing(label(bp), "missing from the current recording (no graph memory reserved on "
                             "device " + std::to_string(bp.device) +
                             (bp.process.empty() ? std::string() : " by " + bp.process) + ")");
      continue;
    }
    // The memory-node pool (or the framework's private pools) holding memory in one recording
    // only: another allocator, said and compared as the bill's graph memory in all.
    const bool b_nodes = bp.high_bytes != 0, c_nodes = cp->high_bytes != 0;
    if (b_nodes == c_nodes) {
      out.judge(label(bp), "high_bytes", "memory", {static_cast<double>(bp.high_bytes)},
                {static_cast<double>(cp->high_bytes)}, true);
      out.judge(label(bp), "end_bytes", "memory", {static_cast<double>(bp.end_bytes)},
                {static_cast<double>(cp->end_bytes)}, true);
    } else {
      out.bill_note(label(bp) + ": the memory-node pool held graph memory in the " + (b_nodes ? "baseline" : "current") +
               " recording only; compared in the bill's graph memory in all");
    }
    if (bp.private_pool_bytes != 0 && cp->private_pool_bytes != 0) {
      out.judge(label(bp), "private_pool_bytes", "memory", {static_cast<double>(bp.private_pool_bytes)},
                {static_cast<double>(cp->private_pool_bytes)}, true);
    } else if (bp.private_pool_bytes != 0 || cp->private_pool_bytes != 0) {
      out.bill_note(label(bp) + ": the framework's private pools held graph memory in the " +
               (bp.private_pool_bytes ? "baseline" : "current") +
               " recording only; compared in the bill's graph memory in all");
    }
  }
  for (const auto& cp : c.pools) {
    if (!find(b, cp) && find(c, cp) == &cp) out.note(label(cp) + ": new (not in the baseline); not compared");
  }
}

// Each process's and device's bill (rows "bill[device N]"): every kind both recordings saw, as
// memory; a kind one of them did not see is said, not compared.
void compare_bills(const recording& b, const recording& c, comparer& out) {
  const auto label = bill_row_label;
  for (const auto& bb : b.bills) {
    const graph_bill* found = find_bill(c, bb);
    if (!found) {
      out.note(label(bb) + ": not in the current recording; not compared");
      continue;
    }
    const graph_bill& cb = *found;
    // A kind that holds memory in one recording only (the graphs' memory moved from the
    // framework's pools to memory nodes: another allocator) is not a regression of that kind
    // nor an improvement of the other: the bill's total, judged below, compares them.
    const auto judge = [&](bool b_seen, bool c_seen, const char* metric, std::uint64_t bv, std::uint64_t cv,
                           const char* kind) {
      if (b_seen != c_seen) {
        out.bill_note(label(bb) + ": " + kind + " seen in the " + (b_seen ? "baseline" : "current") +
                 " recording only; not compared");
      } else if (b_seen && (bv == 0) != (cv == 0)) {
        out.bill_note(label(bb) + ": " + kind + " held graph memory in the " + (bv != 0 ? "baseline" : "current") +
                      " recording only; compared in the bill's graph memory in all");
      } else if (b_seen) {
        out.judge(label(bb), metric, "memory", {static_cast<double>(bv)}, {static_cast<double>(cv)}, true);
      }
    };
    judge(bb.node_pool_seen, cb.node_pool_seen, "node_pool_retained_bytes", bb.node_pool_retained_bytes,
          cb.node_pool_retained_bytes, "the memory-node pool");
    judge(bb.framework_seen, cb.framework_seen, "framework_retained_bytes", bb.framework_retained_bytes,
          cb.framework_retained_bytes, "the framework's graph pools");
    judge(bb.framework_named, cb.framework_named, "framework_warmup_bytes", bb.framework_warmup_bytes,
          cb.framework_warmup_bytes, "warm-ups into the framework's pools");
    judge(bb.exec_state_measured, cb.exec_state_measured, "exec_state_bytes", bb.exec_state_bytes,
          cb.exec_state_bytes, "the executable graphs' state");
    // Graph memory in all, whatever kind holds it: at the bill's end and with each kind at its peak.
    out.judge(label(bb), "graph_memory_bytes", "memory", {static_cast<double>(graph_memory_bytes(bb))},
              {static_cast<double>(graph_memory_bytes(cb))}, true);
    out.judge(label(bb), "graph_memory_peak_bytes", "memory", {static_cast<double>(graph_memory_peaks_bytes(bb))},
              {static_cast<double>(graph_memory_peaks_bytes(cb))}, true);
  }
}

// Why graphs of `r` cannot be matched by identity ("" when they can).
std::string no_identities(const report& r) {
  const auto& graphs = r.recorded->graphs;
  if (graphs.size() != r.scenarios.size()) {
    return "lists " + std::to_string(graphs.size()) + " recorded graph(s) for " +
           std::to_string(r.scenarios.size()) + " scenario(s)";
  }
  const auto it = std::find_if(graphs.begin(), graphs.end(),
                               [](const recorded_graph& g) { return g.identity.empty(); });
  if (it != graphs.end()) {
    return "has no identity for graph '" + it->name +
           "' (recorded before gmemprof gave graphs identities)";
  }
  return "";
}

// A recorded graph as the check matches it: its scenario (same index as in the recording).
struct recorded_entry {
  std::string key;  // identity, or the scenario's key when matched by name
  std::string site;  // the graph's site (identity without sizes), empty when matched by name
  const scenario_result* scenario = nullptr;
  const recorded_graph* graph = nullptr;  // null where the recording lists fewer graphs
};

std::vector<recorded_entry> recorded_entries(const report& r, bool by_identity) {
  std::vector<recorded_entry> entries;
  for (std::size_t i = 0; i < r.scenarios.size(); ++i) {
    recorded_entry e;
    e.scenario = &r.scenarios[i];
    e.graph = i < r.recorded->graphs.size() ? &r.recorded->graphs[i] : nullptr;
    e.key = by_identity ? e.graph->identity : e.scenario->key();
    if (by_identity) e.site = e.graph->site;
    entries.push_back(std::move(e));
  }
  return entries;
}

// Entries by key; a key seen twice keeps its first entry (and says so).
std::unordered_map<std::string, const recorded_entry*> index_entries(
    const std::vector<recorded_entry>& entries, const char* which, comparer& out) {
  std::unordered_map<std::string, const recorded_entry*> index;
  for (const auto& e : entries) {
    if (!index.emplace(e.key, &e).second) {
      out.note(e.scenario->name + ": its key '" + e.key + "' appears more than once in the " +
               which + " recording; only the first is compared");
    }
  }
  return index;
}

// Baseline entries to current ones: the same identity, then, among those left, the same site
// (a graph made where and as another was, whose sizes changed), the n-th of a site left in the
// baseline with the n-th left now. Only the first entry of a key takes part.
std::map<const recorded_entry*, const recorded_entry*> pair_entries(
    const std::vector<recorded_entry>& b_entries, const std::vector<recorded_entry>& c_entries,
    const std::unordered_map<std::string, const recorded_entry*>& b_index,
    const std::unordered_map<std::string, const recorded_entry*>& c_index) {
  std::map<const recorded_entry*, const recorded_entry*> pairs;
  std::set<const recorded_entry*> taken;
  for (const auto& b : b_entries) {
    if (b_index.at(b.key) != &b) continue;
    if (const auto it = c_index.find(b.key); it != c_index.end()) {
      pairs[&b] = it->second;
      taken.insert(it->second);
    }
  }
  std::map<std::string, std::vector<const recorded_entry*>> left_by_site;
  for (const auto& c : c_entries) {
    if (c_index.at(c.key) == &c && !taken.count(&c) && !c.site.empty()) left_by_site[c.site].push_back(&c);
  }
  std::map<std::string, std::size_t> next;
  for (const auto& b : b_entries) {
    if (b_index.at(b.key) != &b || pairs.count(&b) || b.site.empty()) continue;
    const auto it = left_by_site.find(b.site);
    if (it == left_by_site.end()) continue;
    std::size_t& k = next[b.site];
    if (k < it->second.size()) pairs[&b] = it->second[k++];
  }
  return pairs;
}

// Whether graphs are matched by identity (both recordings give them), noting why not otherwise.
bool graphs_match_by_identity(const report& baseline, const report& current, comparer& out) {
  const std::string b_why = no_identities(baseline), c_why = no_identities(current);
  const bool by_identity = b_why.empty() && c_why.empty();
  if (!by_identity) {
    out.note("graphs matched by name, which differ between runs when threads race to capture: "
             "the " + std::string(b_why.empty() ? "current" : "baseline") + " recording " +
             (b_why.empty() ? c_why : b_why) + "; record it again with this gmemprof");
  }
  return by_identity;
}

// One baseline graph `b` paired with `c`, whose scenario is ok in the baseline: the current
// one's state, then its rows (compare_scenario, held granules, a private pool's growth).
void compare_paired_graph(const recorded_entry& b, const recorded_entry& c, bool by_identity, bool analysed,
                          bool shared, const std::string& pool_site, comparer& out) {
  const scenario_result& bs = *b.scenario;
  if (c.key != b.key) {
    out.note(c.scenario->name + ": identity " + b.key + " in the baseline and " + c.key +
             " now, made where and as the other was (site " + b.site +
             ") with other sizes: compared as one graph");
  }
  const scenario_result& cs = *c.scenario;
  // The current run's name, which the current report's views show; the baseline's beside it
  // where the run named the graph otherwise.
  const std::string label =
      cs.name + (cs.name == bs.name ? std::string() : " (baseline: " + bs.name + ")");
  if (cs.status != scenario_status::ok) {
    out.missing(label, std::string(to_string(cs.status)) + " in the current recording" +
                           (cs.status_message.empty() ? "" : " (" + cs.status_message + ")"));
    return;
  }
  const recorded_pair pair{b.graph, c.graph, analysed, shared, pool_site};
  compare_scenario(label, bs, cs, out, &pair);
  // A graph that holds one more output between launches pins one more granule for the whole
  // run; in a pool of many GiB that is within the pool's tolerance, so it is its own row.
  // Only with identities: older recordings did not record held granules (0, not "none").
  if (by_identity && analysed && b.graph && c.graph && !pair.kinds_differ()) {
    out.judge(label, "held_granule_bytes", "memory",
              {static_cast<double>(b.graph->held_granule_bytes)},
              {static_cast<double>(c.graph->held_granule_bytes)}, true);
  }
  // A graph whose memory is the allocator's private pool: what its capture took is
  // its figure. Compared as memory: a capture that takes more is a regression.
  if (b.graph && c.graph && b.graph->kind == "private_pool" && c.graph->kind == "private_pool") {
    out.judge(label, "capture_pool_growth_bytes", "memory",
              {static_cast<double>(b.graph->capture_pool_growth_bytes)},
              {static_cast<double>(c.graph->capture_pool_growth_bytes)}, true);
  }
  // Not growth_bytes: a graph's growth is what the pool lacked when its calls ran, and the
  // launch order decides which graph that is (largest first: the largest graph grows it by
  // its whole working set and the others by nothing); with another order the same growth
  // moves to other graphs. The pool's high watermark is the order-free total compared above.
}

// Two recordings of one program: pools, then graphs matched by identity. A graph's name comes
// from its capturing stream's number when no NVTX range names it, and threads that race to
// capture number their streams in another order each run: by name, "stream 1 #1" is one graph
// in one run and another graph in the next.
void compare_recordings(const report& baseline, const report& current, comparer& out) {
  const recording& br = *baseline.recorded;
  const recording& cr = *current.recorded;
  for (const auto* r : {&br, &cr}) {
    if (r->partial) {
      out.note(std::string(r == &br ? "the baseline" : "the current") +
               " recording is partial (" + r->partial_reason +
               "): what it did not reach is missing from it");
    }
  }
  compare_pools(br, cr, out);
  compare_bills(br, cr, out);

  const bool by_identity = graphs_match_by_identity(baseline, current, out);
  const bool analysed = !br.analysis_deferred && !cr.analysis_deferred;
  if (!analysed) {
    out.note(std::string("the ") + (br.analysis_deferred ? "baseline" : "current") +
             " recording's analysis was deferred (it ran out of time at exit): graphs' footprints "
             "and reuse ratios are not compared; record it again with more time at exit");
  }

  const auto b_entries = recorded_entries(baseline, by_identity);
  const auto c_entries = recorded_entries(current, by_identity);
  const auto b_index = index_entries(b_entries, "baseline", out);
  const auto c_index = index_entries(c_entries, "current", out);
  const auto who = [&](const recorded_entry& e) {
    return by_identity ? " (identity " + e.key + ")" : std::string();
  };
  const auto pairs = pair_entries(b_entries, c_entries, b_index, c_index);
  // Sites of two or more paired graphs (a warm-up's graphs of one capture call, one per batch
  // size): their graphs' rare calls are judged together. And how each time metric moved across
  // the graphs that are ok on both sides, as across a suite.
  std::map<std::string, std::size_t> per_site;
  std::vector<std::pair<const scenario_result*, const scenario_result*>> ok_pairs;
  for (const auto& [b, c] : pairs) {
    if (b->scenario->status != scenario_status::ok || c->scenario->status != scenario_status::ok) continue;
    ok_pairs.emplace_back(b->scenario, c->scenario);
    if (!b->site.empty()) ++per_site[b->site];
  }
  std::size_t moved = 0;
  for (const auto& [b, c] : pairs) moved += b->graph && c->graph && b->graph->kind != c->graph->kind;
  if (moved != 0) {
    out.note(std::to_string(moved) + " graph(s) hold their memory in another kind now (memory nodes in one "
             "recording, the framework's private pool in the other): their memory figures are not compared, "
             "and their calls that map memory in one recording only are unstable; the bills compare graph "
             "memory in all");
  }
  out.for_recordings();
  out.set_drift(suite_drift(ok_pairs, out.limits(), /*others=*/true));
  const std::vector<std::string> sb = processes_sharing_a_device(br), sc = processes_sharing_a_device(cr);
  const std::set<std::string> shared_b(sb.begin(), sb.end()), shared_c(sc.begin(), sc.end());
  for (const auto& b : b_entries) {
    if (b_index.at(b.key) != &b) continue;
    const scenario_result& bs = *b.scenario;
    if (bs.status != scenario_status::ok) {
      out.note(bs.name + ": " + to_string(bs.status) + " in the baseline" +
               (bs.status_message.empty() ? "" : " (" + bs.status_message + ")") +
               "; not compared");
      continue;
    }
    const auto it = pairs.find(&b);
    if (it == pairs.end()) {
      out.missing(bs.name, "missing from the current recording" + who(b));
      continue;
    }
    const recorded_entry& c = *it->second;
    const bool shared = b.graph && c.graph &&
                        (shared_b.count(process_of(*b.graph)) || shared_c.count(process_of(*c.graph)));
    const auto site = per_site.find(b.site);
    compare_paired_graph(b, c, by_identity, analysed, shared,
                         site != per_site.end() && site->second >= 2 ? b.site : std::string(), out);
  }
  out.judge_pooled();
  std::set<const recorded_entry*> paired;
  for (const auto& [b, c] : pairs) paired.insert(c);
  for (const auto& c : c_entries) {
    if (c_index.at(c.key) == &c && !paired.count(&c)) {
      out.note(c.scenario->name + who(c) + ": new (not in the baseline); not compared");
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
  } else if (name == "few_samples") {
    t.few_samples = value;
  } else if (name == "few_samples_floor_us") {
    t.few_samples_floor_us = value;
  } else if (name == "time_separation") {
    t.time_separation = value;
  } else if (name == "host_drift") {
    t.host_drift = value;
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
        "'; use memory, reuse, time, time_floor_us, time_separation, host_drift, few_samples, few_samples_floor_us, or a metric: used_high_bytes, reserved_high_bytes, "
        "va_reuse_ratio, physical_reuse_ratio, host.<phase>, wall.<phase>, and for recordings mapped.<phase>, "
        "held_granule_bytes, high_bytes, end_bytes, capture_pool_growth_bytes, private_pool_bytes, "
        "node_pool_retained_bytes, framework_retained_bytes, framework_warmup_bytes, exec_state_bytes");
  }
}

bool comparison::regressed() const {
  return std::any_of(rows.begin(), rows.end(), [&](const comparison_row& r) {
    return r.verdict == "regression" || r.verdict == "missing" ||
           (strict && r.verdict == "unstable");
  });
}

double sign_test_greater(std::size_t up, std::size_t down) {
  const std::size_t n = up + down;
  if (n == 0) return 1;
  // P(X >= up), X ~ Binomial(n, 1/2), summed in logarithms (n reaches thousands of graphs).
  const double log_half_n = static_cast<double>(n) * std::log(0.5);
  double p = 0;
  for (std::size_t k = up; k <= n; ++k) {
    p += std::exp(std::lgamma(static_cast<double>(n) + 1) - std::lgamma(static_cast<double>(k) + 1) -
                  std::lgamma(static_cast<double>(n - k) + 1) + log_half_n);
  }
  return std::min(1.0, p);
}

double mann_whitney_greater(const std::vector<double>& baseline,
                            const std::vector<double>& current) {
  const std::size_t n1 = baseline.size(), n2 = current.size();
  if (n1 == 0 || n2 == 0) return 1;
  double u = 0;  // pairs where current exceeds baseline; ties count one half
  for (double c : current) {
    for (double b : baseline) u += c > b ? 1.0 : c == b ? 0.5 : 0.0;
  }
  const std::size_t m = n1 * n2;
  if (m > 2500) {  // normal approximation with a continuity correction
    const double mean = static_cast<double>(m) / 2;
    const double sd = std::sqrt(static_cast<double>(m) * static_cast<double>(n1 + n2 + 1) / 12);
    return 0.5 * std::erfc((u - 0.5 - mean) / sd / std::sqrt(2.0));
  }
  // Exact null distribution of U: ways[i][j][k], built row by row over i (baseline size) with
  // ways(i, j, k) = ways(i - 1, j, k - j) + ways(i, j - 1, k) (the largest value from either side).
  std::vector<std::vector<std::vector<double>>> w(
      n1 + 1, std::vector<std::vector<double>>(n2 + 1));
  for (std::size_t i = 0; i <= n1; ++i) {
    for (std::size_t j = 0; j <= n2; ++j) {
      auto& cell = w[i][j];
      cell.assign(i * j + 1, 0.0);
      if (i == 0 || j == 0) {
        cell[0] = 1;
        continue;
      }
      // U counts (current > baseline) pairs: the largest value is a current (j) one, above all
      // i baseline values (adds i), or a baseline one (adds 0).
      for (std::size_t k = 0; k < w[i][j - 1].size(); ++k) cell[k + i] += w[i][j - 1][k];
      for (std::size_t k = 0; k < w[i - 1][j].size(); ++k) cell[k] += w[i - 1][j][k];
    }
  }
  const auto& dist = w[n1][n2];
  double total = 0, tail = 0;
  for (std::size_t k = 0; k < dist.size(); ++k) {
    total += dist[k];
    if (static_cast<double>(k) >= std::floor(u + 1e-9)) tail += dist[k];
  }
  return tail / total;
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

  if (static_cast<bool>(baseline.recorded) != static_cast<bool>(current.recorded)) {
    const char* recorded = baseline.recorded ? "the baseline" : "the current report";
    const char* suite = baseline.recorded ? "the current report" : "the baseline";
    throw report_error(report_error::kind::different_kinds,
                       std::string("cannot compare a recording with a suite report: ") + recorded +
                           " was written by `gmemprof record` (a program's graphs) and " + suite +
                           " by `gmemprof run` (the scenario suite); check a recording against a "
                           "recording of the same program, a suite report against a suite report");
  }
  comparison result;
  result.strict = t.strict;
  comparer out(t, result);
  if (baseline.recorded && current.recorded) {
    compare_recordings(baseline, current, out);
    return result;
  }
  const auto base_index = index_by_key(baseline, "baseline", out);
  const auto current_index = index_by_key(current, "current", out);

  std::vector<std::pair<const scenario_result*, const scenario_result*>> pairs;
  for (const auto& [key, b] : base_index) {
    const auto it = current_index.find(key);
    if (b->status == scenario_status::ok && it != current_index.end() &&
        it->second->status == scenario_status::ok) {
      pairs.emplace_back(b, it->second);
    }
  }
  out.set_drift(suite_drift(pairs, t));

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

std::string format_comparison(const comparison& c, bool all) {
  const std::vector<std::string> header = {"scenario", "metric",    "baseline", "current",
                                           "change",   "tolerance", "verdict"};
  std::vector<std::vector<std::string>> cells;
  cells.reserve(c.rows.size());
  for (const auto& r : c.rows) {
    if (!all && !notable(r)) continue;
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
  if (!cells.empty()) {
    out += line(header);
    for (const auto& row : cells) out += line(row);
  }
  out += reference_footnote(c, all);
  for (const auto& n : c.notes) out += "note: " + n + "\n";

  const auto compared = std::count_if(
      c.rows.begin(), c.rows.end(), [](const comparison_row& r) { return r.verdict != "skipped"; });
  const auto regressed = std::count_if(c.rows.begin(), c.rows.end(), [](const comparison_row& r) {
    return r.verdict == "regression" || r.verdict == "missing";
  });
  out += std::to_string(compared) + " compared, " + std::to_string(regressed) + " regressed\n";
  return out;
}

std::string format_row_value(const comparison_row& r, double v) { return format_value(r, v); }
std::string format_row_change(const comparison_row& r) { return format_change(r); }
std::string format_row_tolerance(const comparison_row& r) { return format_tolerance(r); }
bool row_is_notable(const comparison_row& r) { return notable(r); }
std::string comparison_footnote(const comparison& c, bool all) { return reference_footnote(c, all); }

std::string verdict_counts(const comparison& c) {
  std::string s = std::to_string(c.rows.size()) + " rows:";
  bool first = true;
  for (const char* v : {"pass", "regression", "improvement", "unstable", "missing", "skipped"}) {
    const auto n = std::count_if(c.rows.begin(), c.rows.end(),
                                 [&](const comparison_row& r) { return r.verdict == v; });
    s += std::string(first ? " " : ", ") + std::to_string(n) + " " + v;
    first = false;
  }
  return s + (c.strict ? " (--strict: unstable fails)" : "");
}

std::string format_summary(const comparison& c, bool all) {
  return verdict_counts(c) + "\n" + format_comparison(c, all);
}

std::string format_markdown(const comparison& c, bool all) {
  std::string out = "**gmemprof check**: " + verdict_counts(c) + "\n\n";
  out += "| scenario | metric | baseline | current | change | verdict |\n";
  out += "|---|---|---:|---:|---:|---|\n";
  for (const auto& r : c.rows) {
    if (!all && !notable(r)) continue;
    out += "| `" + r.scenario + "` | " + r.metric + " | " + format_value(r, r.baseline) + " | " +
           format_value(r, r.current) + " | " + format_change(r) + " | " + r.verdict + " |\n";
  }
  const std::string footnote = reference_footnote(c, all);
  if (!footnote.empty()) out += "\n" + footnote;
  for (const auto& n : c.notes) out += "\n- " + n;
  return out + (c.notes.empty() ? "" : "\n");
}

std::string format_comparison_json(const comparison& c, bool all) {
  nlohmann::json j;
  nlohmann::json counts = nlohmann::json::object();
  for (const auto& r : c.rows) counts[r.verdict] = counts.value(r.verdict, 0) + 1;
  j["counts"] = counts;
  j["regressed"] = c.regressed();
  j["strict"] = c.strict;
  nlohmann::json rows = nlohmann::json::array();
  const auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); };
  for (const auto& r : c.rows) {
    if (!all && !notable(r)) continue;
    rows.push_back({{"scenario", r.scenario},
                    {"metric", r.metric},
                    {"category", r.category},
                    {"baseline", num(r.baseline)},
                    {"current", num(r.current)},
                    {"change", num(r.change)},
                    {"raw_change", num(r.raw_change)},
                    {"per_reference", r.per_reference()},
                    {"reference_weight", r.reference_weight},
                    {"tolerance", r.tolerance},
                    {"baseline_trials", r.baseline_trials},
                    {"current_trials", r.current_trials},
                    {"p_value", r.p_value < 0 ? nlohmann::json() : nlohmann::json(r.p_value)},
                    {"wide_baseline", r.wide_baseline},
                    {"graphs", r.graphs},
                    {"verdict", r.verdict}});
  }
  j["rows"] = rows;
  j["notes"] = c.notes;
  return j.dump(2) + "\n";
}

int exit_code(const comparison& c) noexcept { return c.regressed() ? 1 : 0; }

}  // namespace gmem::profiler
