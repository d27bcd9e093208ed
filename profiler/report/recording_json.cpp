#include "report/recording_json.hpp"

#include "report/fields.hpp"
#include "report/json_tree.hpp"
#include "report/shared_values.hpp"

#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <algorithm>
#include <iterator>
#include <utility>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace gmem::profiler {
namespace {

using json = nlohmann::ordered_json;
using namespace fields;  // NOLINT: the one way a report's fields are read

// The four counters in the order the driver's attributes name them: [used_current, used_high,
// reserved_current, reserved_high] (an object of four named members before: a recording of 2000
// graphs spent a fifth of its bytes on their names); one number where the four are equal (a pool
// that only grows, as a warm-up's does: half of a 2000-graph recording's events).
json counters_json(const counters& c) {
  if (c.used_current == c.used_high && c.used_high == c.reserved_current && c.reserved_current == c.reserved_high) {
    return json(c.used_current);
  }
  return json::array({c.used_current, c.used_high, c.reserved_current, c.reserved_high});
}

// The instantiation flags by their names in reports.
constexpr std::pair<const char*, bool instantiate_flags::*> flag_names[] = {
    {"auto_free_on_launch", &instantiate_flags::auto_free_on_launch},
    {"upload", &instantiate_flags::upload},
    {"device_launch", &instantiate_flags::device_launch},
    {"use_node_priority", &instantiate_flags::use_node_priority}};

// The flags an executable graph was instantiated with, by name: those set.
json flags_json(const instantiate_flags& f) {
  json j = json::array();
  for (const auto& [name, member] : flag_names) {
    if (f.*member) j.push_back(name);
  }
  return j;
}

json number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// A time on the recording library's clock (microseconds of a nanosecond clock): to the
// nanosecond, without the digits a difference of two doubles leaves below it.
json time_ns(double us) { return std::isfinite(us) ? json(std::round(us * 1e3) / 1e3) : json(nullptr); }

json event_json(const recorded_event& e) {
  json j;
  j["t_us"] = number(e.t_us);
  j["kind"] = e.kind;
  if (!e.cls.empty()) j["class"] = e.cls;
  j["device"] = e.device;
  j["host_us"] = time_ns(e.host_us);
  if (!e.stream.empty()) j["stream"] = e.stream;
  if (e.before) j["before"] = counters_json(*e.before);
  if (e.after) j["after"] = counters_json(*e.after);
  if (!e.result.empty()) j["result"] = e.result;
  if (e.concurrent) j["concurrent"] = true;
  if (e.growth_bytes != 0) j["growth_bytes"] = e.growth_bytes;
  return j;
}

// Stacks as the "stacks" table holds them: each distinct stack once (2000 graphs captured from
// one Python site repeat one stack of the interpreter's frames 2000 times).
class stack_table {
 public:
  std::size_t index_of(const std::vector<std::string>& stack) {
    const auto [it, fresh] = index_.emplace(stack, stacks_.size());
    if (fresh) stacks_.push_back(stack);
    return it->second;
  }
  [[nodiscard]] json to_json() const { return json(stacks_); }

 private:
  std::map<std::vector<std::string>, std::size_t> index_;
  std::vector<std::vector<std::string>> stacks_;
};

json graph_json(const recorded_graph& g, stack_table& stacks, const std::string& common_method) {
  json j;
  j["name"] = g.name;
  j["identity"] = g.identity;
  if (!g.site.empty()) j["site"] = g.site;
  j["kind"] = g.kind;
  j["nvtx"] = g.nvtx;
  j["stream"] = g.stream;
  j["sequence"] = g.sequence;
  if (g.pid) j["pid"] = g.pid;
  j["devices"] = g.devices;
  j["peers"] = g.peers;
  j["nodes"] = g.nodes;
  j["launches"] = g.launches;
  j["steady_launches"] = g.steady_launches;
  if (g.slow_launches) j["slow_launches"] = g.slow_launches;
  j["failed_calls"] = g.failed_calls;
  if (g.updates) j["updates"] = g.updates;
  if (g.node_param_sets) j["node_param_sets"] = g.node_param_sets;
  if (g.instances != 1) j["instances"] = g.instances;
  if (g.events_dropped) j["events_dropped"] = g.events_dropped;
  if (g.flags_known) j["flags"] = flags_json(g.flags);
  j["growth_bytes"] = g.growth_bytes;
  j["own_footprint_bytes"] = g.own_footprint_bytes;
  // The recording states the method most of its graphs share once (own_footprint_method).
  if (g.own_footprint_method != common_method) j["own_footprint_method"] = g.own_footprint_method;
  j["held_requested_bytes"] = g.held_requested_bytes;
  j["held_granule_bytes"] = g.held_granule_bytes;
  if (g.kind == "private_pool") {
    j["capture_pool_growth_bytes"] = g.capture_pool_growth_bytes;
    if (!g.pool_id.empty()) j["pool_id"] = g.pool_id;
  }
  if (g.exec_state_bytes != 0) j["exec_state_bytes"] = g.exec_state_bytes;
  if (!g.python_site.empty()) j["python_site"] = g.python_site;
  if (!g.framework_label.empty()) j["framework_label"] = g.framework_label;
  if (!g.framework_detail.empty()) j["framework_detail"] = g.framework_detail;
  if (g.libraries_at_capture_bytes != 0) j["libraries_at_capture_bytes"] = g.libraries_at_capture_bytes;
  if (g.framework_pool_added_known) j["framework_pool_added_bytes"] = g.framework_pool_added_bytes;
  if (!g.instantiate_stack.empty()) j["stack"] = stacks.index_of(g.instantiate_stack);
  json events = json::array();
  for (const auto& e : g.events) events.push_back(event_json(e));
  j["events"] = std::move(events);
  return j;
}

json pool_json(const recorded_pool& p) {
  json j;
  j["device"] = p.device;
  if (!p.process.empty()) j["process"] = p.process;
  j["high_bytes"] = p.high_bytes;
  j["end_bytes"] = p.end_bytes;
  if (p.start_bytes) j["start_bytes"] = p.start_bytes;
  j["model_high_bytes"] = p.model_high_bytes;
  j["high_t_us"] = number(p.high_t_us);
  j["high_graph"] = p.high_graph;
  j["high_event"] = p.high_event;
  if (p.high_concurrent) j["high_concurrent"] = true;
  if (p.private_pool_bytes) j["private_pool_bytes"] = p.private_pool_bytes;
  json attribution = json::array();
  for (const auto& s : p.attribution) {
    attribution.push_back({{"graph", s.graph}, {"bytes", s.bytes}, {"why", s.why}});
  }
  j["attribution"] = std::move(attribution);
  json diagnostics = json::array();
  for (const auto& d : p.diagnostics) {
    diagnostics.push_back(
        {{"code", d.code}, {"severity", d.severity}, {"message", d.message}, {"bytes", d.bytes}});
  }
  j["diagnostics"] = std::move(diagnostics);
  json timeline = json::array();
  for (const auto& t : p.timeline) {
    json point{{"t_us", number(t.t_us)},
               {"graph", t.graph},
               {"event", t.event},
               {"reserved_bytes", t.reserved_bytes},
               {"growth_bytes", t.growth_bytes}};
    if (t.concurrent) point["concurrent"] = true;
    timeline.push_back(std::move(point));
  }
  j["timeline"] = std::move(timeline);
  return j;
}

// ---------------------------------------------------------------------------------------------
// Reading: each accessor names the field's path in its message.

// "7 graphs (0 to 6)", "1 event (index 0)", "no events": the indexes that `count` things allow.
std::string valid_indexes(std::size_t count, const char* one, const char* many) {
  if (count == 0) return std::string("no ") + many;
  const std::string n = std::to_string(count);
  if (count == 1) return n + " " + one + " (index 0)";
  return n + " " + many + " (0 to " + std::to_string(count - 1) + ")";
}

counters read_counters(const json& o, const std::string& path) {
  if (o.is_array()) {
    if (o.size() != 4) fail(path, "must hold four counters [used_current, used_high, reserved_current, reserved_high]");
    std::uint64_t v[4];
    for (std::size_t k = 0; k < 4; ++k) {
      if (!o[k].is_number_unsigned()) fail(at(path, k), "must be an unsigned integer (bytes), is " + kind_of(o[k]));
      v[k] = o[k].get<std::uint64_t>();
    }
    return counters{v[0], v[1], v[2], v[3]};
  }
  if (o.is_number_unsigned()) {  // the four are equal
    const std::uint64_t v = o.get<std::uint64_t>();
    return counters{v, v, v, v};
  }
  if (!o.is_object()) fail(path, "must be an array of four counters, or one number where the four are equal");
  counters c;
  c.used_current = u64(o, "used_current", path);
  c.used_high = u64(o, "used_high", path);
  c.reserved_current = u64(o, "reserved_current", path);
  c.reserved_high = u64(o, "reserved_high", path);
  return c;
}

recorded_event read_event(const json& j, const std::string& path) {
  recorded_event e;
  e.t_us = time_us(j, "t_us", path);
  e.kind = text(j, "kind", path);
  e.cls = text(j, "class", path, optional);
  e.device = integer(j, "device", path, optional);
  e.host_us = time_us(j, "host_us", path, optional);
  e.stream = text(j, "stream", path, optional);
  if (const json* b = find(j, "before")) e.before = read_counters(*b, join(path, "before"));
  if (const json* a = find(j, "after")) e.after = read_counters(*a, join(path, "after"));
  e.result = text(j, "result", path, optional);
  e.concurrent = flag(j, "concurrent", path);
  e.growth_bytes = i64(j, "growth_bytes", path, optional);
  return e;
}

recorded_graph read_graph(const json& j, const std::string& path,
                          const std::vector<std::vector<std::string>>& stacks, const std::string& common_method) {
  recorded_graph g;
  g.name = text(j, "name", path);
  if (g.name.empty()) fail(join(path, "name"), "must not be empty");
  g.identity = text(j, "identity", path, optional);
  g.site = text(j, "site", path, optional);
  g.kind = text(j, "kind", path, optional, "memory_nodes");
  if (g.kind != "memory_nodes" && g.kind != "private_pool") {
    fail(join(path, "kind"), "must be \"memory_nodes\" or \"private_pool\", is \"" + g.kind + "\"");
  }
  g.nvtx = text(j, "nvtx", path, optional);
  g.stream = text(j, "stream", path, optional);
  g.sequence = u64(j, "sequence", path, optional);
  g.pid = static_cast<long>(i64(j, "pid", path, optional));
  g.devices = devices(j, "devices", path);
  g.peers = devices(j, "peers", path);
  g.nodes = u64(j, "nodes", path, optional);
  g.launches = u64(j, "launches", path, optional);
  g.steady_launches = u64(j, "steady_launches", path, optional);
  g.slow_launches = u64(j, "slow_launches", path, optional);
  g.failed_calls = u64(j, "failed_calls", path, optional);
  g.updates = u64(j, "updates", path, optional);
  g.node_param_sets = u64(j, "node_param_sets", path, optional);
  g.instances = find(j, "instances") ? u64(j, "instances", path, optional) : 1;
  g.events_dropped = u64(j, "events_dropped", path, optional);
  if (const json* f = find(j, "flags")) {
    const std::string fp = join(path, "flags");
    g.flags_known = true;
    if (f->is_array()) {  // the names of the flags set
      for (std::size_t k = 0; k < f->size(); ++k) {
        const json& name = (*f)[k];
        const std::string word = name.is_string() ? name.get<std::string>() : "";
        const auto named = std::find_if(std::begin(flag_names), std::end(flag_names),
                                        [&word](const auto& fl) { return word == fl.first; });
        if (named == std::end(flag_names)) {
          fail(at(fp, k), "must name a flag (auto_free_on_launch, upload, device_launch or use_node_priority), is " +
                              kind_of(name));
        }
        g.flags.*(named->second) = true;
      }
    } else {
      if (!f->is_object()) fail(fp, "must be an array of the flags set");
      for (const auto& [name, member] : flag_names) g.flags.*member = flag(*f, name, fp);
    }
  }
  g.growth_bytes = u64(j, "growth_bytes", path, optional);
  g.own_footprint_bytes = u64(j, "own_footprint_bytes", path, optional);
  g.own_footprint_method = find(j, "own_footprint_method") ? text(j, "own_footprint_method", path, optional) : common_method;
  g.held_requested_bytes = u64(j, "held_requested_bytes", path, optional);
  g.held_granule_bytes = u64(j, "held_granule_bytes", path, optional);
  g.capture_pool_growth_bytes = u64(j, "capture_pool_growth_bytes", path, optional);
  g.pool_id = text(j, "pool_id", path, optional);
  g.exec_state_bytes = i64(j, "exec_state_bytes", path, optional);
  g.python_site = text(j, "python_site", path, optional);
  g.framework_label = text(j, "framework_label", path, optional);
  g.framework_detail = text(j, "framework_detail", path, optional);
  g.libraries_at_capture_bytes = u64(j, "libraries_at_capture_bytes", path, optional);
  g.framework_pool_added_known = find(j, "framework_pool_added_bytes") != nullptr;
  g.framework_pool_added_bytes = i64(j, "framework_pool_added_bytes", path, optional);
  if (find(j, "stack")) {
    const std::uint64_t k = u64(j, "stack", path, optional);
    if (k >= stacks.size()) {
      fail(join(path, "stack"), "names stack " + std::to_string(k) + "; stacks has " +
                                    valid_indexes(stacks.size(), "stack", "stacks"));
    }
    g.instantiate_stack = stacks[k];
  } else {
    g.instantiate_stack = strings(j, "instantiate_stack", path);  // before the table
  }
  return g;
}

// A graph's events (`j`: the graph as written, whether or not its site states some of its values).
void read_events(const json& j, const std::string& path, recorded_graph& g) {
  const json& events = array(j, "events", path);
  const std::string ep = join(path, "events");
  g.events.reserve(events.size());
  for (std::size_t i = 0; i < events.size(); ++i) g.events.push_back(read_event(object_at(events, i, ep), at(ep, i)));
}

recorded_pool read_pool(const json& j, const std::string& path) {
  recorded_pool p;
  p.device = integer(j, "device", path);
  p.process = text(j, "process", path, optional);
  p.high_bytes = u64(j, "high_bytes", path);
  p.end_bytes = u64(j, "end_bytes", path, optional);
  p.start_bytes = u64(j, "start_bytes", path, optional);
  p.model_high_bytes = u64(j, "model_high_bytes", path, optional);
  p.high_t_us = time_us(j, "high_t_us", path, optional);
  p.high_graph = text(j, "high_graph", path, optional);
  p.high_event = text(j, "high_event", path, optional);
  p.high_concurrent = flag(j, "high_concurrent", path);
  p.private_pool_bytes = u64(j, "private_pool_bytes", path, optional);
  const json& attribution = array(j, "attribution", path);
  for (std::size_t i = 0; i < attribution.size(); ++i) {
    const std::string ip = at(join(path, "attribution"), i);
    const json& s = object_at(attribution, i, join(path, "attribution"));
    p.attribution.push_back({text(s, "graph", ip), text(s, "why", ip), u64(s, "bytes", ip)});
  }
  const json& diagnostics = array(j, "diagnostics", path, optional);
  for (std::size_t i = 0; i < diagnostics.size(); ++i) {
    const std::string ip = at(join(path, "diagnostics"), i);
    const json& d = object_at(diagnostics, i, join(path, "diagnostics"));
    p.diagnostics.push_back({text(d, "code", ip), text(d, "severity", ip),
                             text(d, "message", ip), u64(d, "bytes", ip, optional)});
  }
  const json& timeline = array(j, "timeline", path, optional);
  const std::string tp = join(path, "timeline");
  p.timeline.reserve(timeline.size());
  for (std::size_t i = 0; i < timeline.size(); ++i) {
    const std::string ip = at(tp, i);
    const json& t = object_at(timeline, i, tp);
    p.timeline.push_back({time_us(t, "t_us", ip), text(t, "graph", ip, optional), text(t, "event", ip),
                          u64(t, "reserved_bytes", ip), i64(t, "growth_bytes", ip, optional), flag(t, "concurrent", ip)});
  }
  return p;
}

json framework_pool_json(const framework_pool& p) {
  json j{{"id", p.id},
         {"device", p.device},
         {"warmup_bytes", p.warmup_bytes},
         {"capture_bytes", p.capture_bytes},
         {"released_bytes", p.released_bytes},
         {"retained_bytes", p.retained_bytes},
         {"peak_bytes", p.peak_bytes}};
  if (p.snapshot_bytes >= 0) j["snapshot_bytes"] = p.snapshot_bytes;
  j["graphs"] = p.graphs;
  if (!p.after_captures.empty()) {
    json checks = json::array();
    for (const pool_check& c : p.after_captures) {
      checks.push_back({{"graph", c.graph}, {"retained_bytes", c.retained_bytes}, {"framework_bytes", c.framework_bytes}});
    }
    j["after_captures"] = std::move(checks);
  }
  return j;
}

// Each kind is written only where the recording saw it: an absent kind reads as not seen.
json bill_json(const graph_bill& b) {
  json j{{"device", b.device}};
  if (!b.process.empty()) j["process"] = b.process;
  j["end"] = b.end;
  if (b.node_pool_seen) {
    j["memory_node_pool"] = {{"high_bytes", b.node_pool_high_bytes}, {"retained_bytes", b.node_pool_retained_bytes}};
  }
  if (b.framework_seen) {
    json f{{"named", b.framework_named},
           {"warmup_bytes", b.framework_warmup_bytes},
           {"capture_bytes", b.framework_capture_bytes},
           {"retained_bytes", b.framework_retained_bytes},
           {"peak_bytes", b.framework_peak_bytes}};
    if (b.framework_snapshot_bytes >= 0) f["snapshot_bytes"] = b.framework_snapshot_bytes;
    if (b.framework_checked_captures) {
      f["checked_captures"] = b.framework_checked_captures;
      f["differing_captures"] = b.framework_differing_captures;
    }
    j["framework_pools"] = std::move(f);
  }
  if (b.library_allocations + b.library_streams > 0) {
    json l{{"bytes", b.library_bytes}, {"allocations", b.library_allocations}};
    if (b.library_streams) l["streams"] = b.library_streams;
    json by = json::array();
    for (const library_taker& t : b.library_takers) {
      json one{{"library", t.library}, {"bytes", t.bytes}, {"allocations", t.allocations}};
      if (t.streams) one["streams"] = t.streams;
      by.push_back(std::move(one));
    }
    if (!by.empty()) l["by_library"] = std::move(by);
    j["libraries_at_capture"] = std::move(l);
  }
  if (b.exec_state_measured) {
    j["exec_state"] = {{"bytes", b.exec_state_bytes},
                       {"instantiations", b.exec_state_instantiations},
                       {"unmeasured", b.exec_state_unmeasured}};
    if (b.exec_state_destroys + b.exec_state_destroys_unmeasured > 0) {
      j["exec_state"]["released_bytes"] = b.exec_state_released_bytes;
      j["exec_state"]["destroys"] = b.exec_state_destroys;
      j["exec_state"]["destroys_unmeasured"] = b.exec_state_destroys_unmeasured;
    }
  }
  if (b.process_measured) {
    j["process_memory"] = {{"delta_bytes", b.process_delta_bytes}, {"not_graph_bytes", b.not_graph_bytes}};
  }
  if (!b.own_hook.empty()) {
    j["own"] = {{"hook", b.own_hook}};
    if (b.own_apart) j["own"]["bytes"] = b.own_bytes;
  }
  return j;
}

}  // namespace

std::string bill_to_json_text(const graph_bill& b) { return bill_json(b).dump(); }

namespace {

framework_pool read_framework_pool(const json& j, const std::string& path) {
  framework_pool p;
  p.id = text(j, "id", path);
  p.device = integer(j, "device", path, optional);
  p.warmup_bytes = u64(j, "warmup_bytes", path, optional);
  p.capture_bytes = u64(j, "capture_bytes", path, optional);
  p.released_bytes = u64(j, "released_bytes", path, optional);
  p.retained_bytes = u64(j, "retained_bytes", path, optional);
  p.peak_bytes = u64(j, "peak_bytes", path, optional);
  p.snapshot_bytes = find(j, "snapshot_bytes") ? static_cast<std::int64_t>(u64(j, "snapshot_bytes", path, optional)) : -1;
  p.graphs = strings(j, "graphs", path);
  const json& checks = array(j, "after_captures", path, optional);
  const std::string cp = join(path, "after_captures");
  for (std::size_t i = 0; i < checks.size(); ++i) {
    const std::string ip = at(cp, i);
    const json& c = object_at(checks, i, cp);
    p.after_captures.push_back({text(c, "graph", ip), u64(c, "retained_bytes", ip), u64(c, "framework_bytes", ip)});
  }
  return p;
}

graph_bill read_bill(const json& j, const std::string& path) {
  graph_bill b;
  b.device = integer(j, "device", path);
  b.end = text(j, "end", path, optional);
  b.process = text(j, "process", path, optional);
  if (const json* n = optional_object(j, "memory_node_pool", path)) {
    const std::string np = join(path, "memory_node_pool");
    b.node_pool_seen = true;
    b.node_pool_high_bytes = u64(*n, "high_bytes", np);
    b.node_pool_retained_bytes = u64(*n, "retained_bytes", np);
  }
  if (const json* f = optional_object(j, "framework_pools", path)) {
    const std::string fp = join(path, "framework_pools");
    b.framework_seen = true;
    b.framework_named = flag(*f, "named", fp);
    b.framework_warmup_bytes = u64(*f, "warmup_bytes", fp, optional);
    b.framework_capture_bytes = u64(*f, "capture_bytes", fp, optional);
    b.framework_retained_bytes = u64(*f, "retained_bytes", fp);
    b.framework_peak_bytes = u64(*f, "peak_bytes", fp, optional);
    b.framework_snapshot_bytes = find(*f, "snapshot_bytes") ? static_cast<std::int64_t>(u64(*f, "snapshot_bytes", fp, optional)) : -1;
    b.framework_checked_captures = u64(*f, "checked_captures", fp, optional);
    b.framework_differing_captures = u64(*f, "differing_captures", fp, optional);
    if (b.framework_differing_captures > b.framework_checked_captures) {
      fail(join(fp, "differing_captures"), "is more than checked_captures (" + std::to_string(b.framework_checked_captures) + ")");
    }
  }
  if (const json* l = optional_object(j, "libraries_at_capture", path)) {
    const std::string lp = join(path, "libraries_at_capture");
    b.library_bytes = u64(*l, "bytes", lp);
    b.library_allocations = u64(*l, "allocations", lp);
    b.library_streams = u64(*l, "streams", lp, optional);
    if (b.library_allocations + b.library_streams == 0) {
      fail(join(lp, "allocations"), "must be 1 or more, or streams must (the section is left out where there are none)");
    }
    const json& by = array(*l, "by_library", lp, optional);
    const std::string bp = join(lp, "by_library");
    for (std::size_t i = 0; i < by.size(); ++i) {
      const std::string ip = at(bp, i);
      const json& t = object_at(by, i, bp);
      b.library_takers.push_back({name(t, "library", ip), u64(t, "bytes", ip), u64(t, "allocations", ip),
                                  u64(t, "streams", ip, optional)});
    }
  }
  if (const json* e = optional_object(j, "exec_state", path)) {
    const std::string ep = join(path, "exec_state");
    b.exec_state_measured = true;
    b.exec_state_bytes = u64(*e, "bytes", ep);
    b.exec_state_instantiations = u64(*e, "instantiations", ep, optional);
    b.exec_state_unmeasured = u64(*e, "unmeasured", ep, optional);
    b.exec_state_released_bytes = u64(*e, "released_bytes", ep, optional);
    b.exec_state_destroys = u64(*e, "destroys", ep, optional);
    b.exec_state_destroys_unmeasured = u64(*e, "destroys_unmeasured", ep, optional);
  }
  if (const json* p = optional_object(j, "process_memory", path)) {
    const std::string pp = join(path, "process_memory");
    b.process_measured = true;
    b.process_delta_bytes = i64(*p, "delta_bytes", pp, optional);
    b.not_graph_bytes = i64(*p, "not_graph_bytes", pp, optional);
  }
  if (const json* o = optional_object(j, "own", path)) {
    const std::string op = join(path, "own");
    const std::string hook = text(*o, "hook", op);
    if (hook != "interpose" && hook != "cupti") fail(join(op, "hook"), "must be \"interpose\" or \"cupti\"");
    set_own_hook(b, hook);
    if (find(*o, "bytes")) {
      if (!b.own_apart) fail(join(op, "bytes"), "is given, but CUPTI's own memory is not told apart (hook \"cupti\")");
      b.own_bytes = u64(*o, "bytes", op, optional);
    }
  }
  return b;
}

bool same_point(const recording::point& a, const recording::point& b) {
  return a.t_us == b.t_us && a.device == b.device && a.event == b.event && a.graph == b.graph && a.values == b.values;
}

// The counter timeline's points that the graphs' events state (each event's counters after it),
// in time order: a recording writes only the others ("timeline_from_events").
std::vector<recording::point> event_points(const recording& r) {
  std::vector<recording::point> out;
  for (const auto& g : r.graphs) {
    for (const auto& e : g.events) {
      if (e.after) out.push_back({e.t_us, e.device, e.kind + (e.cls.empty() ? "" : ":" + e.cls), g.name, *e.after});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const recording::point& a, const recording::point& b) { return a.t_us < b.t_us; });
  return out;
}

// The events' points and the others in time order (the others first at equal times).
std::vector<recording::point> merge_points(const std::vector<recording::point>& from_events,
                                           const std::vector<recording::point>& others) {
  std::vector<recording::point> out;
  out.reserve(from_events.size() + others.size());
  std::size_t a = 0, b = 0;
  while (a < from_events.size() || b < others.size()) {
    if (b < others.size() && (a == from_events.size() || others[b].t_us <= from_events[a].t_us)) {
      out.push_back(others[b++]);
    } else {
      out.push_back(from_events[a++]);
    }
  }
  return out;
}

// The timeline's points the events do not state, where the events' points and those rebuild the
// timeline exactly (the reader rebuilds it so); nullopt where they would not (a timeline cut at
// its bound, a launch reclassified after its point was taken): then the whole timeline is written.
std::optional<std::vector<recording::point>> points_beside_events(const recording& r) {
  const std::vector<recording::point> from_events = event_points(r);
  std::vector<recording::point> others;
  std::size_t k = 0;
  for (const auto& p : r.timeline) {
    if (k < from_events.size() && same_point(p, from_events[k])) {
      ++k;
    } else {
      others.push_back(p);
    }
  }
  if (k != from_events.size()) return std::nullopt;
  const std::vector<recording::point> rebuilt = merge_points(from_events, others);
  for (std::size_t i = 0; i < rebuilt.size(); ++i) {
    if (!same_point(rebuilt[i], r.timeline[i])) return std::nullopt;
  }
  return others;
}

// The keys a graph always states itself: those that tell graphs of one site apart.
bool own_key(const std::string& key) {
  return key == "name" || key == "identity" || key == "site" || key == "sequence" || key == "events";
}

// The values every graph of a site shares (2000 graphs captured at one Python site repeat its
// kind, stream, flags, stack and more), taken out of the graphs and returned by site:
// recorded.site_fields. Sites of one graph are left as they are.
json shared_site_fields(json& graphs) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::size_t>> by_site;
  for (std::size_t i = 0; i < graphs.size(); ++i) {
    const auto site = graphs[i].find("site");
    if (site == graphs[i].end() || !site->is_string()) continue;
    auto& members = by_site[site->get<std::string>()];
    if (members.empty()) order.push_back(site->get<std::string>());
    members.push_back(i);
  }
  json table = json::object();
  for (const std::string& site : order) {
    if (json common = take_shared_fields(graphs, by_site[site], own_key); !common.empty()) table[site] = std::move(common);
  }
  return table;
}

json point_json(const recording::point& p) {
  json jp = object_with_room(5);
  jp["t_us"] = number(p.t_us);
  jp["device"] = p.device;
  jp["event"] = p.event;
  jp["graph"] = p.graph;
  jp["counters"] = counters_json(p.values);
  return jp;
}

// The call stacks that graphs name by index: each an array of frames.
std::vector<std::vector<std::string>> read_stacks(const json& j, const std::string& path) {
  std::vector<std::vector<std::string>> stacks;
  const json& stack_list = array(j, "stacks", path, optional);
  for (std::size_t i = 0; i < stack_list.size(); ++i) {
    const std::string sp = at(join(path, "stacks"), i);
    if (!stack_list[i].is_array()) fail(sp, "must be an array of frames");
    stacks.emplace_back();
    for (std::size_t f = 0; f < stack_list[i].size(); ++f) {
      if (!stack_list[i][f].is_string()) fail(at(sp, f), "must be a string");
      stacks.back().push_back(stack_list[i][f].get<std::string>());
    }
  }
  return stacks;
}

// By site, the values its graphs share (shared_site_fields), checked; nullptr where none.
const json* read_site_fields(const json& j, const std::string& path) {
  const json* site_fields = find(j, "site_fields");
  if (site_fields) {
    const std::string sp = join(path, "site_fields");
    if (!site_fields->is_object()) fail(sp, "must be an object: by site, the values its graphs share");
    for (const auto& [site, fields] : site_fields->items()) {
      if (!fields.is_object()) fail(join(sp, site.c_str()), "must be an object of the values the site's graphs share");
      for (const auto& [key, value] : fields.items()) {
        if (own_key(key)) fail(join(join(sp, site.c_str()), key.c_str()), "is stated by each graph itself, not by its site");
      }
    }
  }
  return site_fields;
}

// One graph, with the values its site's graphs share (`site_fields`) where it states none of
// its own.
recorded_graph read_graph_of_site(const json& g, const std::string& gp, const json* site_fields,
                                  const std::vector<std::vector<std::string>>& stacks,
                                  const std::string& common_method) {
  const json* shared = nullptr;
  if (const auto site = g.find("site"); site_fields && site != g.end() && site->is_string()) {
    if (const auto it = site_fields->find(site->get<std::string>()); it != site_fields->end()) shared = &*it;
  }
  recorded_graph read;
  if (shared) {
    // The site's values where the graph states none of its own; its events, the bulk of it, are
    // read where they are.
    json whole = object_with_room(g.size() + shared->size());
    for (const auto& [key, value] : g.items()) {
      if (key != "events") whole[key] = value;
    }
    for (const auto& [key, value] : shared->items()) {
      if (!g.contains(key)) whole[key] = value;
    }
    read = read_graph(whole, gp, stacks, common_method);
  } else {
    read = read_graph(g, gp, stacks, common_method);
  }
  read_events(g, gp, read);
  return read;
}

recording::point read_point(const json& t, const std::string& ip) {
  recording::point p;
  p.t_us = time_us(t, "t_us", ip);
  p.device = integer(t, "device", ip, optional);
  p.event = text(t, "event", ip, optional);
  p.graph = text(t, "graph", ip, optional);
  const json* values = find(t, "counters");
  p.values = values ? read_counters(*values, join(ip, "counters")) : read_counters(t, ip);
  return p;
}

// One step of the call sequence, whose graph and event must be among `graphs`.
sequence_step read_step(const json& s, const std::string& ip, const std::string& path,
                        const std::vector<recorded_graph>& graphs) {
  sequence_step st;
  st.op = text(s, "op", ip);
  st.graph = find(s, "graph") ? i64(s, "graph", ip, optional) : -1;
  if (st.graph >= static_cast<std::int64_t>(graphs.size()) || st.graph < -1) {
    fail(join(ip, "graph"), "names graph " + std::to_string(st.graph) + "; " + join(path, "graphs") +
                                " has " + valid_indexes(graphs.size(), "graph", "graphs"));
  }
  st.stream = text(s, "stream", ip, optional);
  st.device = find(s, "device") ? integer(s, "device", ip, optional) : -1;
  st.count = find(s, "count") ? u64(s, "count", ip, optional) : 1;
  st.address = u64(s, "address", ip, optional);
  st.held = find(s, "held") ? i64(s, "held", ip, optional) : -1;
  st.event = find(s, "event") ? i64(s, "event", ip, optional) : -1;
  st.upto = find(s, "upto") ? i64(s, "upto", ip, optional) : -1;
  if (st.upto < -1 || (st.upto >= 0 && (st.op != "sync" || st.stream.empty()))) {
    fail(join(ip, "upto"), "is " + std::to_string(st.upto) +
                               ": only a sync of one stream names the launch it completes up to (1 or more)");
  }
  if (st.event >= 0 && st.graph < 0) {
    fail(join(ip, "event"), "names event " + std::to_string(st.event) + ", but the step names no graph");
  }
  if (st.event >= 0) {
    const std::size_t events = graphs[static_cast<std::size_t>(st.graph)].events.size();
    if (static_cast<std::size_t>(st.event) >= events) {
      fail(join(ip, "event"), "names event " + std::to_string(st.event) + " of graph " +
                                  std::to_string(st.graph) + ", which has " +
                                  valid_indexes(events, "event", "events"));
    }
  }
  return st;
}

recorded_process read_process(const json& p, const std::string& ip) {
  recorded_process rp;
  rp.pid = static_cast<long>(i64(p, "pid", ip, optional));
  rp.rank = text(p, "rank", ip, optional);
  rp.command = text(p, "command", ip, optional);
  rp.report = text(p, "report", ip, optional);
  rp.graphs = static_cast<std::size_t>(u64(p, "graphs", ip, optional));
  return rp;
}

record_cost read_record_cost(const json& c, const std::string& ip) {
  record_cost rc;
  rc.part = text(c, "part", ip);
  rc.process = text(c, "process", ip, optional);
  rc.calls = u64(c, "calls", ip, optional);
  rc.us = time_us(c, "us", ip);
  return rc;
}

// Each object of the array `key`, read by `read_one` in order.
template <typename Read>
auto read_list(const json& j, const char* key, const std::string& path, Read read_one) {
  std::vector<decltype(read_one(j, path))> out;
  const json& list = array(j, key, path, optional);
  for (std::size_t i = 0; i < list.size(); ++i) {
    out.push_back(read_one(object_at(list, i, join(path, key)), at(join(path, key), i)));
  }
  return out;
}

}  // namespace

json recording_to_json(const recording& r, const for_each_index& each) {
  // Room for every member, the compact forms' tables added after it too (report_to_json): a
  // member set beyond it would copy the graphs, the timeline and the sequence (json_tree.hpp).
  json j = object_with_room(40);
  j["partial"] = r.partial;
  if (r.partial) j["partial_reason"] = r.partial_reason;
  j["command"] = r.command;
  j["pid"] = r.pid;
  if (!r.rank.empty()) j["rank"] = r.rank;
  j["name_from"] = r.name_from;
  j["graphs_without_memory_nodes"] = r.graphs_without_memory_nodes;
  // Stated even when 0: a recording of graphs without memory nodes then says that none was updated.
  j["updates_without_memory_nodes"] = r.updates_without_memory_nodes;
  j["refused_updates_without_memory_nodes"] = r.refused_updates_without_memory_nodes;
  j["node_param_sets_without_memory_nodes"] = r.node_param_sets_without_memory_nodes;
  j["notes"] = r.notes;
  if (r.analysis_deferred) j["analysis_deferred"] = true;
  // The method of the graphs' own footprints most of them share, stated once.
  std::map<std::string, std::size_t> methods;
  std::string common_method;
  for (const auto& g : r.graphs) {
    if (++methods[g.own_footprint_method] > methods[common_method]) common_method = g.own_footprint_method;
  }
  if (!common_method.empty()) j["own_footprint_method"] = common_method;
  json graphs = json::array();
  stack_table stacks;
  for (const auto& g : r.graphs) graphs.push_back(graph_json(g, stacks, common_method));
  if (const json table = stacks.to_json(); !table.empty()) j["stacks"] = table;
  j["graphs"] = std::move(graphs);
  // The counters after each call: those of the graphs' events are not repeated.
  const std::optional<std::vector<recording::point>> others = points_beside_events(r);
  if (others) j["timeline_from_events"] = true;
  // The counter points and the calls are made in runs on `each`'s threads (tens of thousands of
  // each at 16,000 rounds); the same elements in the same order.
  const std::vector<recording::point>& points = others ? *others : r.timeline;
  json timeline = json::array();
  timeline.get_ref<json::array_t&>().resize(points.size());
  run_in_runs(each, points.size(), 512, [&](std::size_t i) { timeline[i] = point_json(points[i]); });
  j["timeline"] = std::move(timeline);
  json pools = json::array();
  for (const auto& p : r.pools) pools.push_back(pool_json(p));
  j["pools"] = std::move(pools);
  json sequence = json::array();
  sequence.get_ref<json::array_t&>().resize(r.sequence.size());
  run_in_runs(each, r.sequence.size(), 512, [&](std::size_t i) {
    const sequence_step& s = r.sequence[i];
    json js = object_with_room(9);
    js["op"] = s.op;
    if (s.graph >= 0) js["graph"] = s.graph;
    if (!s.stream.empty()) js["stream"] = s.stream;
    if (s.device >= 0) js["device"] = s.device;
    if (s.count != 1) js["count"] = s.count;
    if (s.address) js["address"] = s.address;
    if (s.held >= 0) js["held"] = s.held;
    if (s.event >= 0) js["event"] = s.event;
    if (s.upto >= 0) js["upto"] = s.upto;
    sequence[i] = std::move(js);
  });
  j["sequence"] = std::move(sequence);
  if (r.sequence_truncated) j["sequence_truncated"] = true;
  if (!r.framework_pools.empty()) {
    json pools_json = json::array();
    for (const auto& p : r.framework_pools) pools_json.push_back(framework_pool_json(p));
    j["framework_pools"] = std::move(pools_json);
  }
  if (!r.bills.empty()) {
    json bills = json::array();
    for (const auto& b : r.bills) bills.push_back(bill_json(b));
    j["bills"] = std::move(bills);
  }
  if (!r.processes.empty()) {
    json processes = json::array();
    for (const auto& p : r.processes) {
      json jp{{"pid", p.pid}, {"command", p.command}, {"report", p.report}, {"graphs", p.graphs}};
      if (!p.rank.empty()) jp["rank"] = p.rank;
      processes.push_back(std::move(jp));
    }
    j["processes"] = std::move(processes);
  }
  if (!r.cost.empty()) {
    json cost = json::array();
    for (const auto& c : r.cost) {
      json jc{{"part", c.part}, {"calls", c.calls}, {"us", number(c.us)}};
      if (!c.process.empty()) jc["process"] = c.process;
      cost.push_back(std::move(jc));
    }
    j["record_cost"] = std::move(cost);
  }
  return j;
}

void share_site_fields(json& recorded) {
  const auto graphs = recorded.find("graphs");
  if (graphs == recorded.end() || !graphs->is_array()) return;
  if (json shared = shared_site_fields(*graphs); !shared.empty()) recorded["site_fields"] = std::move(shared);
}

std::string recording_to_json_text(const recording& r) {
  return recording_to_json(r).dump(-1, ' ', false, json::error_handler_t::replace);
}

recording recording_from_json_text(const std::string& text_, const std::string& path) {
  return recording_from_json(json::parse(text_, nullptr, false), path);
}

recording recording_from_json(const json& j, const std::string& path, const for_each_index& each) {
  if (!j.is_object()) fail(path, "must be an object");
  recording r;
  r.partial = flag(j, "partial", path);
  r.partial_reason = text(j, "partial_reason", path, optional);
  r.command = text(j, "command", path, optional);
  r.pid = static_cast<long>(i64(j, "pid", path, optional));
  r.rank = text(j, "rank", path, optional);
  r.name_from = text(j, "name_from", path, optional, "nvtx");
  r.graphs_without_memory_nodes = u64(j, "graphs_without_memory_nodes", path, optional);
  r.updates_without_memory_nodes = u64(j, "updates_without_memory_nodes", path, optional);
  r.refused_updates_without_memory_nodes = u64(j, "refused_updates_without_memory_nodes", path, optional);
  r.node_param_sets_without_memory_nodes = u64(j, "node_param_sets_without_memory_nodes", path, optional);
  r.notes = strings(j, "notes", path);
  r.analysis_deferred = flag(j, "analysis_deferred", path);
  const std::vector<std::vector<std::string>> stacks = read_stacks(j, path);
  const std::string common_method = text(j, "own_footprint_method", path, optional);
  const json* site_fields = read_site_fields(j, path);
  // The graphs, the counter points and the calls are read in runs on `each`'s threads (a
  // recording of 16,000 rounds: tens of thousands of each); what is read, and the first error in
  // order, are the same.
  const json& graphs = array(j, "graphs", path);
  const std::string graphs_path = join(path, "graphs");
  r.graphs.resize(graphs.size());
  run_in_runs(each, graphs.size(), 64, [&](std::size_t i) {
    r.graphs[i] = read_graph_of_site(object_at(graphs, i, graphs_path), at(graphs_path, i), site_fields, stacks,
                                     common_method);
  });
  const json& timeline = array(j, "timeline", path, optional);
  const std::string tp = join(path, "timeline");
  r.timeline.resize(timeline.size());
  run_in_runs(each, timeline.size(), 512, [&](std::size_t i) {
    const std::string ip = at(tp, i);
    r.timeline[i] = read_point(object_at(timeline, i, tp), ip);
  });
  if (flag(j, "timeline_from_events", path)) r.timeline = merge_points(event_points(r), r.timeline);
  r.pools = read_list(j, "pools", path, read_pool);
  const json& sequence = array(j, "sequence", path, optional);
  const std::string sp = join(path, "sequence");
  r.sequence.resize(sequence.size());
  run_in_runs(each, sequence.size(), 512, [&](std::size_t i) {
    const std::string ip = at(sp, i);
    r.sequence[i] = read_step(object_at(sequence, i, sp), ip, path, r.graphs);
  });
  r.sequence_truncated = flag(j, "sequence_truncated", path);
  r.framework_pools = read_list(j, "framework_pools", path, read_framework_pool);
  r.bills = read_list(j, "bills", path, read_bill);
  r.processes = read_list(j, "processes", path, read_process);
  r.cost = read_list(j, "record_cost", path, read_record_cost);
  return r;
}

}  // namespace gmem::profiler
