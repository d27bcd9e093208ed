#pragma once
// A pool probe case (probe_cases.hpp) fed to the recorder as the injected library would see it:
// instantiations, then each step; counters around a launch only where plan_launch asks for them
// or where the launch took map_floor_us or more. Shared by the recorder's and the views' tests.

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "probe_cases.hpp"
#include "record/recording_report.hpp"

namespace gmem::record::test {

inline counters at(const profiler::probe::probe_step& s) {
  counters c;
  c.reserved_current = s.reserved;
  c.reserved_high = s.reserved_high;
  c.used_current = s.used;
  c.used_high = s.used_high;
  return c;
}

/// Feeds `c` to `r`; returns, per graph, the growth its launches caused by the probe's own readings.
inline std::vector<std::uint64_t> feed(recorder& r, const profiler::probe::probe_case& c) {
  profiler::instantiate_flags afol;
  afol.auto_free_on_launch = true;
  for (std::size_t k = 0; k < c.graphs.size(); ++k) {
    const std::string& def = c.graphs[k];
    r.on_instantiate(0x100 + k, 0x10 + k, profiler::probe::model_of_spec(def, (k + 1) << 40),
                     profiler::probe::name_of(def), static_cast<double>(k), 10, counters{}, counters{},
                     profiler::probe::auto_free(def) ? afol : profiler::instantiate_flags{});
  }
  std::vector<std::uint64_t> growth(c.graphs.size(), 0);
  counters last{};
  double t = 100;
  for (std::size_t i = 0; i < c.program.size(); ++i) {
    const std::string& tok = c.program[i];
    const counters now = at(c.steps[i]);
    const double host = c.steps[i].host_us;
    t += 1000;
    const std::size_t at_sign = tok.find('@');
    const std::uint64_t stream = 1 + (at_sign == std::string::npos ? 0 : std::stoull(tok.substr(at_sign + 1)));
    const std::size_t k = tok.size() > 1 ? std::stoul(tok.substr(1)) : 0;
    if (tok[0] == 'L') {
      const auto plan = r.plan_launch(0x100 + k, 0xA000 + stream);
      std::optional<counters> before, after;
      if (plan.read_counters || host >= map_floor_us) {
        before = last;
        after = now;
      }
      const bool grew = now.reserved_current > last.reserved_current;
      if (plan.read_counters || grew || !r.on_steady_launch(plan, host)) {
        r.on_launch(0x100 + k, plan.stream, t, host, before, after);
      }
      if (grew) growth[k] += now.reserved_current - last.reserved_current;
    } else if (tok[0] == 'S') {
      r.on_sync(0);
    } else if (tok[0] == 'T') {
      r.on_trim(0, t, host, last, now);
    } else {
      ADD_FAILURE() << "step " << tok << " is not fed";
    }
    last = now;
  }
  return growth;
}

/// The probe case whose name starts with `prefix`. Throws std::runtime_error if none.
inline const profiler::probe::probe_case& probe_case_named(const std::string& prefix) {
  static const std::vector<profiler::probe::probe_case> cases = profiler::probe::read_cases();
  for (const auto& c : cases) {
    if (c.name.rfind(prefix, 0) == 0) return c;
  }
  throw std::runtime_error("no probe case " + prefix);
}

}  // namespace gmem::record::test
