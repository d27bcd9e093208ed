#include "gmem/profiler/predict_io.hpp"

#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "gmem/profiler/report_io.hpp"

namespace gmem::profiler {

namespace {

using json = nlohmann::json;

const char* const sample_format = "gmem.predict.sample";
constexpr int sample_version = 1;

// Bytes and batch sizes beyond this are not a sample's (2^48: 256 TiB).
constexpr std::uint64_t largest = std::uint64_t{1} << 48;

std::int64_t whole(const json& j, const char* key, std::int64_t otherwise = 0) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return otherwise;
  if (!it->is_number_integer()) throw std::invalid_argument(std::string("'") + key + "' is not a whole number");
  if (it->is_number_unsigned() && it->get<std::uint64_t>() > largest) {
    throw std::invalid_argument(std::string("'") + key + "' is out of range");
  }
  const std::int64_t v = it->get<std::int64_t>();
  if (v < -static_cast<std::int64_t>(largest) || v > static_cast<std::int64_t>(largest)) {
    throw std::invalid_argument(std::string("'") + key + "' is out of range");
  }
  return v;
}

std::uint64_t bytes_of(const json& j) {
  if (!j.is_number_unsigned() || j.get<std::uint64_t>() > largest) {
    throw std::invalid_argument("a call's address or bytes is not a number from 0 to 2^48");
  }
  return j.get<std::uint64_t>();
}

std::uint64_t pools_total(const json& pools) {
  std::uint64_t sum = 0;
  if (pools.is_object()) {
    for (const auto& [id, bytes] : pools.items()) sum += bytes_of(bytes);
  }
  return sum;
}

/// An "exec_state_bytes" of `j` (absent or null: none read); `what` names `j` in errors.
std::optional<double> state_bytes(const json& j, const std::string& what) {
  if (!j.contains("exec_state_bytes") || j["exec_state_bytes"].is_null()) return std::nullopt;
  const json& e = j["exec_state_bytes"];
  if (!e.is_number() || !(e.get<double>() >= 0) || e.get<double>() > static_cast<double>(largest)) {
    throw std::invalid_argument(what + " has an \"exec_state_bytes\" of " + e.dump());
  }
  return e.get<double>();
}

sampled_call call_of(const json& c) {
  if (!c.is_array() || c.empty() || !c[0].is_string()) {
    throw std::invalid_argument("a call is not [\"alloc\", address, bytes(, stream)], [\"free\", address] or "
                                "[\"segment\", address, bytes]");
  }
  const std::string what = c[0].get<std::string>();
  sampled_call out;
  if (what == "alloc" || what == "segment") {
    if (c.size() != 3 && !(what == "alloc" && c.size() == 4)) {
      throw std::invalid_argument("an '" + what + "' call needs an address and bytes (and, for an alloc, a stream)");
    }
    out.what = what == "alloc" ? sampled_call::kind::alloc : sampled_call::kind::segment;
    if (!c[1].is_number_unsigned()) throw std::invalid_argument("a call's address is not a number");
    out.address = c[1].get<std::uint64_t>();
    out.bytes = bytes_of(c[2]);
    if (c.size() == 4) {
      if (!c[3].is_number_unsigned()) throw std::invalid_argument("an 'alloc' call's stream is not a number");
      out.stream = c[3].get<std::uint64_t>();
    }
  } else if (what == "free") {
    if (c.size() != 2 || !c[1].is_number_unsigned()) throw std::invalid_argument("a 'free' call needs an address");
    out.what = sampled_call::kind::free;
    out.address = c[1].get<std::uint64_t>();
  } else {
    throw std::invalid_argument("unknown call '" + what + "'");
  }
  return out;
}

}  // namespace

predict_sample predict_sample_from_json(const std::string& text, const std::string& source) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw report_error(report_error::kind::not_json, source + " is not JSON: " + e.what());
  }
  const auto bad = [&](const std::string& why) {
    return report_error(report_error::kind::invalid, source + ": " + why);
  };
  if (!j.is_object() || !j.contains("format") || j["format"] != sample_format) {
    throw bad("not a gmem.predict sample (its \"format\" is not \"gmem.predict.sample\"): write one with "
              "gmem.predict.sample()");
  }
  const json version = j.value("version", json());
  if (!version.is_number_integer() || version.get<std::int64_t>() != sample_version) {
    throw bad("sample version " + version.dump() + ", this gmemprof reads version " + std::to_string(sample_version));
  }
  predict_sample s;
  try {
    s.device = j.value("device", "");
    s.torch = j.value("torch", "");
    s.allocator = j.value("allocator", "");
    if (whole(j, "copies") < 0) throw std::invalid_argument("\"copies\" is negative");
    s.copies = static_cast<std::uint64_t>(whole(j, "copies"));
    if (j.contains("before")) s.pool_bytes_before = pools_total(j["before"].value("framework_pools", json::object()));
    if (j.contains("capture_order") && !j["capture_order"].is_array()) throw std::invalid_argument("\"capture_order\" is not a list");
    for (const json& b : j.value("capture_order", json::array())) {
      if (!b.is_number_integer() || b.get<std::int64_t>() < 1 || b.get<std::uint64_t>() > largest) {
        throw std::invalid_argument("\"capture_order\" holds " + b.dump() + ", not a batch size");
      }
      s.capture_order.push_back(b.get<std::int64_t>());
    }
    const json sizes = j.value("sizes", json::array());
    if (!sizes.is_array() || sizes.empty()) throw std::invalid_argument("it has no sampled size (\"sizes\" is empty)");
    std::size_t k = 0;
    for (const json& z : sizes) {
      sampled_size ss;
      ss.size = whole(z, "size");
      if (ss.size < 1) throw std::invalid_argument("sampled size #" + std::to_string(k) + " has no positive \"size\"");
      for (const sampled_size& earlier : s.sizes) {
        if (earlier.size == ss.size) throw std::invalid_argument("batch size " + std::to_string(ss.size) + " is sampled twice");
      }
      if (whole(z, "graphs") < 0) throw std::invalid_argument("sampled size " + std::to_string(ss.size) + " has negative \"graphs\"");
      ss.graphs = static_cast<std::uint64_t>(whole(z, "graphs"));
      for (const json& c : z.value("calls", z.value("events", json::array()))) ss.calls.push_back(call_of(c));
      ss.pool_bytes_after = pools_total(z.value("pools_after", json::object()));
      ss.used_change = whole(z, "used_change");
      if (z.contains("node_pool_change")) ss.node_pool_change = whole(z, "node_pool_change");
      ss.exec_state_bytes = state_bytes(z, "sampled size " + std::to_string(ss.size));
      const json graphs = z.value("each_graph", json::array());
      if (!graphs.is_array()) throw std::invalid_argument("sampled size " + std::to_string(ss.size) + "'s \"each_graph\" is not a list");
      for (const json& g : graphs) {
        const std::string which = "graph #" + std::to_string(ss.each_graph.size()) + " of sampled size " + std::to_string(ss.size);
        sampled_graph sg;
        const std::int64_t made = whole(g, "calls");
        if (made < 0 || static_cast<std::size_t>(made) > ss.calls.size() ||
            (!ss.each_graph.empty() && static_cast<std::size_t>(made) < ss.each_graph.back().calls)) {
          throw std::invalid_argument(which + " has \"calls\" " + std::to_string(made) + ": not between the graph before's and the size's " +
                                      std::to_string(ss.calls.size()));
        }
        sg.calls = static_cast<std::size_t>(made);
        sg.node_pool_change = whole(g, "node_pool_change");
        sg.exec_state_bytes = state_bytes(g, which);
        ss.each_graph.push_back(sg);
      }
      if (!ss.each_graph.empty() && ss.each_graph.size() != ss.graphs) {
        throw std::invalid_argument("sampled size " + std::to_string(ss.size) + " read " + std::to_string(ss.each_graph.size()) +
                                    " graphs apart of its " + std::to_string(ss.graphs));
      }
      s.sizes.push_back(std::move(ss));
      ++k;
    }
  } catch (const json::exception& e) {
    throw bad(e.what());
  } catch (const std::invalid_argument& e) {
    throw bad(e.what());
  }
  if (s.allocator != "native" && s.allocator != "cudaMallocAsync") {
    throw bad("sampled with PyTorch's '" + s.allocator + "' allocator; the prediction knows the caching "
              "allocator (backend native) and cudaMallocAsync");
  }
  return s;
}

predict_sample read_predict_sample(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw report_error(report_error::kind::missing, path + " cannot be opened: write it with gmem.predict.sample()");
  std::ostringstream text;
  text << in.rdbuf();
  return predict_sample_from_json(text.str(), path);
}

std::vector<std::int64_t> parse_batch_sizes(const std::string& text) {
  constexpr std::size_t max_sizes = 1000000;
  std::vector<std::int64_t> out;
  std::stringstream parts(text);
  std::string part;
  const auto number = [&](const std::string& s) {
    std::size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != s.size() || s.empty() || v < 1 || static_cast<std::uint64_t>(v) > largest) {
      throw std::invalid_argument("'" + part + "' in --sizes is not a batch size (N, A-B or A-B:STEP, N >= 1)");
    }
    return static_cast<std::int64_t>(v);
  };
  while (std::getline(parts, part, ',')) {
    const auto dash = part.find('-');
    if (dash == std::string::npos) {
      out.push_back(number(part));
      if (out.size() > max_sizes) throw std::invalid_argument("--sizes names more than " + std::to_string(max_sizes) + " batch sizes");
      continue;
    }
    const auto colon = part.find(':', dash);
    const std::int64_t from = number(part.substr(0, dash));
    const std::int64_t to = number(part.substr(dash + 1, colon == std::string::npos ? std::string::npos : colon - dash - 1));
    const std::int64_t step = colon == std::string::npos ? 1 : number(part.substr(colon + 1));
    if (to < from) throw std::invalid_argument("'" + part + "' in --sizes ends below where it starts");
    if (static_cast<std::uint64_t>((to - from) / step) + 1 + out.size() > max_sizes) {
      throw std::invalid_argument("--sizes names more than " + std::to_string(max_sizes) + " batch sizes");
    }
    for (std::int64_t b = from; b <= to; b += step) out.push_back(b);
  }
  if (out.empty()) throw std::invalid_argument("--sizes names no batch size");
  return out;
}

std::string prediction_json(const warmup_prediction& p, const predict_sample& sample) {
  json j;
  j["format"] = "gmem.predict";
  j["version"] = 1;
  j["sample"] = {{"device", sample.device}, {"torch", sample.torch}, {"allocator", sample.allocator},
                 {"copies", sample.copies}, {"source", sample.source}};
  json sampled = json::array();
  for (const sampled_size& s : sample.sizes) sampled.push_back(s.size);
  j["sample"]["sizes"] = sampled;
  j["order"] = p.order;
  json kinds = json::object();
  for (const predicted_kind& k : p.kinds) {
    kinds[k.kind] = {{"predicted_bytes", k.bytes}, {"uncertainty_bytes", k.uncertainty_bytes}};
  }
  j["kinds"] = kinds;
  j["total"] = {{"predicted_bytes", p.total.bytes}, {"uncertainty_bytes", p.total.uncertainty_bytes}};
  j["linear"] = {{"predicted_bytes", p.linear_bytes}, {"from_sizes", {p.linear_from_large, p.linear_from_small}}};
  json checks = json::array();
  for (const model_check& c : p.checks) {
    checks.push_back({{"size", c.size}, {"simulated_bytes", c.simulated_bytes}, {"measured_bytes", c.measured_bytes}});
  }
  j["model_checks"] = checks;
  json sizes = json::array();
  for (const predicted_size& s : p.sizes) {
    sizes.push_back({{"size", s.size}, {"calls_from", s.calls_from}, {"sampled", s.sampled}, {"graphs", s.graphs},
                     {"pool_bytes_after", s.pool_bytes_after}, {"pool_growth_bytes", s.pool_growth},
                     {"exec_state_bytes", s.exec_state_bytes}, {"outside_bytes", s.outside_bytes},
                     {"node_pool_bytes", s.node_pool_bytes}});
  }
  j["sizes"] = sizes;
  json graphs = json::array();
  for (const predicted_graph& g : p.graphs) {
    graphs.push_back({{"size", g.size}, {"index", g.index}, {"pool_growth_bytes", g.pool_growth},
                      {"exec_state_bytes", g.exec_state_bytes}, {"node_pool_bytes", g.node_pool_bytes}});
  }
  j["graphs"] = graphs;
  j["notes"] = p.notes;
  return j.dump(1) + "\n";
}

}  // namespace gmem::profiler
