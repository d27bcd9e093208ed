#include "views/predict_view.hpp"

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

}  // namespace

std::string format_prediction(const warmup_prediction& p, const predict_sample& sample) {
  std::ostringstream o;
  std::vector<std::int64_t> sampled;
  for (const sampled_size& s : sample.sizes) sampled.push_back(s.size);
  std::uint64_t graphs = 0;
  for (const predicted_size& s : p.sizes) graphs += s.graphs;
  o << "the predicted bill of a warm-up of " << p.order.size() << " batch size(s) (" << sizes_text(p.order)
    << ", in this order) into one graph pool, from " << sampled.size() << " sampled (" << sizes_text(sampled)
    << ")" << (sample.device.empty() ? "" : " on " + sample.device)
    << (sample.torch.empty() ? "" : ", PyTorch " + sample.torch) << ":\n";
  for (const predicted_kind& k : p.kinds) {
    if (k.kind == "framework_pool") {
      o << row("PyTorch's graph pool", k.bytes, k.uncertainty_bytes, "(the caching allocator's rules, every size's calls)");
    } else if (k.kind == "exec_state") {
      o << row("executable-graph state", k.bytes, k.uncertainty_bytes, "(" + std::to_string(graphs) + " graphs)");
    } else if (k.kind == "outside") {
      o << row("outside the pools", k.bytes, k.uncertainty_bytes, "(what captures take besides: workspaces)");
    } else if (k.kind == "node_pool" && (k.bytes != 0 || sample.allocator != "native")) {
      o << row("memory-node pool", k.bytes, k.uncertainty_bytes, "(its reservation, as the sample moved it)");
    }
  }
  o << row("total", p.total.bytes, p.total.uncertainty_bytes, "");
  o << "  linear extrapolation from sizes " << p.linear_from_large << " and " << p.linear_from_small
    << " (what the device memory in use moved while each was captured, a line through the two): "
    << signed_size(p.linear_bytes) << "\n";
  o << "the allocator model on the sample's own calls (the pool after each sampled size):";
  for (const model_check& c : p.checks) {
    o << " " << c.size << ": " << size_text(c.simulated_bytes)
      << (c.simulated_bytes == c.measured_bytes ? " (as PyTorch listed)"
                                                 : " (PyTorch listed " + size_text(c.measured_bytes) + ")")
      << ";";
  }
  o << "\n";
  for (const std::string& n : p.notes) o << "note: " << n << "\n";
  return o.str();
}

}  // namespace gmem::profiler
