#include "views/predict_view.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "gmem/profiler/size_text.hpp"

namespace gmem::profiler {

namespace {

// A predicted amount: signed only where it is negative.
std::string signed_size(std::int64_t b) {
  return b < 0 ? signed_size_text(b) : size_text(static_cast<std::uint64_t>(b));
}

std::string sizes_text(const std::vector<std::int64_t>& v) {
  std::string out;
  for (std::size_t k = 0; k < v.size(); ++k) {
    if (k == 3 && v.size() > 5) {
      out += ", ..., " + std::to_string(v.back());
      break;
    }
    out += (k ? ", " : "") + std::to_string(v[k]);
  }
  return out;
}

std::string row(const std::string& label, std::int64_t bytes, std::uint64_t uncertainty, const std::string& why) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "  %-24s %12s  +- %-10s %s\n", label.c_str(), signed_size(bytes).c_str(),
                size_text(uncertainty).c_str(), why.c_str());
  return buf;
}

std::string graph_rows(const warmup_prediction& p, std::size_t shown) {
  if (p.graphs.empty() || shown == 0) return "";
  std::vector<const predicted_graph*> listed;
  for (const predicted_graph& g : p.graphs) listed.push_back(&g);
  const auto cost = [](const predicted_graph* g) {
    return static_cast<double>(g->pool_growth) + g->exec_state_bytes + static_cast<double>(g->node_pool_bytes);
  };
  const bool every = shown >= listed.size();
  if (!every) {
    std::stable_sort(listed.begin(), listed.end(), [&](auto* a, auto* b) { return cost(a) > cost(b); });
    listed.resize(shown);
  }
  std::ostringstream o;
  o << (every ? "each graph, in capture order:\n"
               : "the " + std::to_string(shown) + " costliest of " + std::to_string(p.graphs.size()) +
                     " graphs (--graphs all lists each):\n")
    << "  (pool growth: the graph pool's over the graph's own calls; state and node pool: its size's, in the\n"
    << "  proportions its sampled size read; what captures take outside the pools is each size's, not a graph's)\n";
  char buf[256];
  std::snprintf(buf, sizeof buf, "  %10s %6s %12s %12s %12s %12s\n", "batch size", "graph", "pool growth", "state",
                "node pool", "total");
  o << buf;
  for (const predicted_graph* g : listed) {
    std::snprintf(buf, sizeof buf, "  %10lld %6zu %12s %12s %12s %12s\n", static_cast<long long>(g->size), g->index,
                  size_text(g->pool_growth).c_str(), size_text(static_cast<std::uint64_t>(std::llround(g->exec_state_bytes))).c_str(),
                  signed_size(g->node_pool_bytes).c_str(), signed_size(static_cast<std::int64_t>(std::llround(cost(g)))).c_str());
    o << buf;
  }
  return o.str();
}

}  // namespace

std::string format_prediction(const warmup_prediction& p, const predict_sample& sample, std::size_t listed_graphs) {
  std::ostringstream o;
  std::vector<std::int64_t> sampled;
  for (const sampled_size& s : sample.sizes) sampled.push_back(s.size);
  std::uint64_t graphs = 0;
  for (const predicted_size& s : p.sizes) graphs += s.graphs;
  o << "the predicted bill of a warm-up of " << p.order.size() << " batch size(s) (" << sizes_text(p.order)
    << ", in this order) into one graph pool, from " << (sample.source == "recording" ? "a recording of " : "")
    << sampled.size() << " sampled (" << sizes_text(sampled) << ")" << (sample.device.empty() ? "" : " on " + sample.device)
    << (sample.torch.empty() ? "" : ", PyTorch " + sample.torch) << ":\n";
  for (const predicted_kind& k : p.kinds) {
    if (k.kind == "framework_pool" && sample.source != "recording") {
      o << row("PyTorch's graph pool", k.bytes, k.uncertainty_bytes, "(the caching allocator's rules, every size's calls)");
    } else if (k.kind == "exec_state") {
      o << row("executable-graph state", k.bytes, k.uncertainty_bytes, "(" + std::to_string(graphs) + " graphs)");
    } else if (k.kind == "outside") {
      o << row("outside the pools", k.bytes, k.uncertainty_bytes, "(what captures take besides: workspaces)");
    } else if (k.kind == "node_pool" && (k.bytes != 0 || sample.allocator != "native")) {
      o << row("memory-node pool", k.bytes, k.uncertainty_bytes, "(its reservation, as the sampled captures moved it)");
    }
  }
  o << row("total", p.total.bytes, p.total.uncertainty_bytes, "");
  o << "  linear extrapolation from sizes " << p.linear_from_large << " and " << p.linear_from_small
    << (sample.source == "recording" ? " (what each one's graphs took, a line through the two): "
                                     : " (what the device memory in use moved while each was captured, a line through the two): ")
    << signed_size(p.linear_bytes) << "\n";
  o << graph_rows(p, listed_graphs);
  if (sample.source != "recording") {
    o << "the allocator model on the sample's own calls (the pool after each sampled size):";
    for (const model_check& c : p.checks) {
      o << " " << c.size << ": " << size_text(c.simulated_bytes)
        << (c.simulated_bytes == c.measured_bytes ? " (as PyTorch listed)"
                                                   : " (PyTorch listed " + size_text(c.measured_bytes) + ")")
        << ";";
    }
    o << "\n";
  }
  for (const std::string& n : p.notes) o << "note: " << n << "\n";
  return o.str();
}

}  // namespace gmem::profiler
