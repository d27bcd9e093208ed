#include "gmem/profiler/diagnostics.hpp"
#include "gmem/profiler/size_text.hpp"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace gmem::profiler {
namespace {

std::string hex(std::uint64_t value) {
  char buf[2 + 16 + 1];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(value));
  return buf;
}

std::string fixed2(double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", value);
  return buf;
}

const std::string& label_of(const flat_graph& flat, std::size_t node) {
  if (node >= flat.labels.size()) {
    throw std::invalid_argument("diagnose: the analysis names node #" + std::to_string(node) +
                                " but the flattened graph labels only " +
                                std::to_string(flat.labels.size()) +
                                " nodes; analyse the same flat_graph that is passed to diagnose");
  }
  return flat.labels[node];
}

const allocation& allocation_at(const graph_analysis& a, std::size_t i) {
  if (i >= a.allocations.size()) {
    throw std::invalid_argument("diagnose: the analysis names allocation " + std::to_string(i) +
                                " of " + std::to_string(a.allocations.size()));
  }
  return a.allocations[i];
}

// "alloc node #3 in graph 'g' (1048576 bytes (1.00 MiB) at 0x7f0000000000)".
std::string describe(const flat_graph& flat, const allocation& al) {
  return label_of(flat, al.alloc_node) + " (" + size_text(al.bytes) + " at " + hex(al.address) + ")";
}

void unfreed_allocations(const flat_graph& flat, const graph_analysis& a, const runtime_facts& facts,
                         std::vector<diagnostic>& out) {
  if (a.unfreed.empty()) return;
  if (facts.auto_free_on_launch) {
    // Not a mistake: AutoFreeOnLaunch frees them before the next launch; still memory that stays
    // mapped between launches, so say how much.
    std::uint64_t bytes = 0;
    for (std::size_t i : a.unfreed) bytes += allocation_at(a, i).bytes;
    const std::string mapped =
        facts.held_granule_bytes
            ? ", " + size_text(facts.held_granule_bytes) + " mapped (an allocation occupies whole granules)"
            : std::string();
    out.push_back({"unfreed_allocation", "info",
                   std::to_string(a.unfreed.size()) + " allocation(s) of graph '" + facts.graph_name +
                       "' are held between launches (" + size_text(bytes) + " requested" +
                       mapped +
                       "): they have no free node, and the executable graph is instantiated with "
                       "AutoFreeOnLaunch, so its next launch frees them. Other graphs cannot use "
                       "that memory meanwhile; free them in the graph, or allocate them outside it, "
                       "if it is needed back sooner.",
                   facts.held_granule_bytes ? facts.held_granule_bytes : bytes});
    return;
  }
  for (std::size_t i : a.unfreed) {
    const allocation& al = allocation_at(a, i);
    out.push_back({"unfreed_allocation", "warning",
                   describe(flat, al) +
                       " has no free node in the graph: the allocation outlives each launch, and "
                       "the graph cannot be launched again until it is freed. Add a free node for " +
                       hex(al.address) +
                       " to the graph, free it in a stream (cudaFreeAsync) after the launch, or "
                       "instantiate with cudaGraphInstantiateFlagAutoFreeOnLaunch.",
                   al.bytes});
  }
}

// What ordering i's free before j's alloc could save of the graph's bound: the heaviest set of
// allocations live together loses the smaller of the two, and the driver maps whole granules.
std::uint64_t pair_saving(const graph_analysis& a, const allocation& first, const allocation& second) {
  const std::uint64_t smaller = std::min(first.bytes, second.bytes);
  const std::uint64_t left = round_up(a.lower_bound_bytes - std::min(smaller, a.lower_bound_bytes), a.granularity);
  return a.lower_bound_rounded_bytes > left ? a.lower_bound_rounded_bytes - left : 0;
}

// Pairs that can be live together only because a free is not ordered before a later alloc
// (analysis: reuse_opportunities). Said only where it could matter: not when the
// graph already reserves its bound (measured: facts.reserved_high, 0 when not known), not for a
// pair whose ordering would not save a whole granule, and as one line when more than
// `listed_pairs` pairs say the same.
void missed_reuse(const flat_graph& flat, const graph_analysis& a, const runtime_facts& facts,
                  std::vector<diagnostic>& out) {
  if (facts.reserved_high > 0 && facts.reserved_high <= a.lower_bound_rounded_bytes) return;
  const std::uint64_t granule = std::max<std::uint64_t>(a.granularity, 1);
  struct pair_found {
    const allocation* first;
    const allocation* second;
    std::uint64_t saving;
  };
  std::vector<pair_found> pairs;
  for (const auto& [i, j] : a.reuse_opportunities) {
    const allocation& first = allocation_at(a, i);
    const allocation& second = allocation_at(a, j);
    if (!first.free_node) continue;  // not an opportunity analyse would list; nothing to order
    const std::uint64_t saving = pair_saving(a, first, second);
    if (saving >= granule) pairs.push_back({&first, &second, saving});
  }
  constexpr std::size_t listed_pairs = 3;
  const std::string creation_rule =
      "The driver chooses an allocation's memory when its alloc node is created, and shares "
      "memory only through dependencies that exist then: an edge added later with "
      "cudaGraphAddDependencies orders the work but saves nothing (measured, README).";
  if (pairs.size() > listed_pairs) {
    std::uint64_t most = 0;
    for (const pair_found& p : pairs) most = std::max(most, p.saving);
    const bool capped = a.reuse_opportunities.size() >= max_reuse_opportunities;
    const pair_found& e = pairs.front();
    const std::string& free_label = label_of(flat, *e.first->free_node);
    out.push_back({"missed_reuse", "warning",
                   (capped ? "At least " : "") + std::to_string(pairs.size()) +
                       " pairs of allocations of graph '" + facts.graph_name +
                       "' can be live at the same time only because a free node is not ordered "
                       "before a later alloc node; ordering one pair would save up to " +
                       size_text(most) + " of the " + size_text(a.lower_bound_rounded_bytes) +
                       " bound. The largest: " + describe(flat, *e.first) + " and " +
                       describe(flat, *e.second) + " (" + free_label + " before " +
                       label_of(flat, e.second->alloc_node) + "). " + creation_rule +
                       " The plan that orders them all, with its measured saving and its price in "
                       "launch time, is in the advice (`gmemprof replay`).",
                   most});
    return;
  }
  for (const pair_found& p : pairs) {
    const std::string& free_label = label_of(flat, *p.first->free_node);
    const std::string& alloc_label = label_of(flat, p.second->alloc_node);
    out.push_back({"missed_reuse", "warning",
                   describe(flat, *p.first) + " and " + describe(flat, *p.second) +
                       " can be live at the same time because " + free_label +
                       " is not ordered before " + alloc_label + ". " + creation_rule +
                       " If the work allows, pass " + free_label + " as a dependency when creating " +
                       alloc_label + "; what that saves on the driver is measured by `gmemprof "
                       "replay`, not promised here.",
                   p.saving});
  }
}

void separate_streams(const runtime_facts& facts, std::vector<diagnostic>& out) {
  std::vector<std::string> streams;
  std::vector<std::pair<std::string, std::string>> launches;
  for (const auto& launch : facts.launches) {
    if (std::find(streams.begin(), streams.end(), launch.second) == streams.end()) {
      streams.push_back(launch.second);
    }
    if (std::find(launches.begin(), launches.end(), launch) == launches.end()) {
      launches.push_back(launch);
    }
  }
  if (streams.size() < 2) return;
  std::string listed;
  for (const auto& [graph, stream] : launches) {
    if (!listed.empty()) listed += ", ";
    listed += "graph '" + graph + "' into stream '" + stream + "'";
  }
  out.push_back({"separate_streams", "warning",
                 "Graphs with memory nodes were launched into " + std::to_string(streams.size()) +
                     " different streams (" + listed +
                     "). Graphs launched into different streams may run concurrently, and graphs "
                     "that overlap cannot share physical memory. On an H100 (driver 580) two "
                     "graphs launched into two streams one after the other still shared it "
                     "(README): launching them into one stream (or ordering the streams with events) saves memory only where the graphs overlap.",
                 0});
}

void reservation_above_bound(const graph_analysis& a, const runtime_facts& facts,
                             std::vector<diagnostic>& out) {
  const std::uint64_t bound = a.lower_bound_rounded_bytes;
  if (bound == 0) return;
  const double ratio = static_cast<double>(facts.reserved_high) / static_cast<double>(bound);
  if (!(ratio > facts.excess_ratio_threshold)) return;
  const std::string granularity =
      a.granularity > 1 ? ", each allocation rounded up to the " + size_text(a.granularity) + " granularity"
                        : std::string();
  out.push_back(
      {"reservation_above_bound", "warning",
       "The driver reserved " + size_text(facts.reserved_high) + " at its high watermark for graph '" +
           facts.graph_name + "', " + fixed2(ratio) + " times the " + size_text(bound) +
           " the graph needs at least (the heaviest set of allocations that can be live together" +
           granularity +
           "). Order free nodes before later alloc nodes (see missed_reuse), launch graphs that "
           "share memory into one stream, and free or trim memory left from earlier graphs "
           "(cudaDeviceGraphMemTrim).",
       facts.reserved_high - bound});
}

void reserved_until_trim(const runtime_facts& facts, std::vector<diagnostic>& out) {
  if (!facts.graphs_destroyed || facts.reserved_after_destroy == 0) return;
  out.push_back({"reserved_until_trim", "info",
                 size_text(facts.reserved_after_destroy) +
                     " stayed reserved for graph memory after the graphs and executable graphs of '" +
                     facts.graph_name +
                     "' were destroyed: the driver keeps it for later graphs until "
                     "cudaDeviceGraphMemTrim is called on the device. Call cudaDeviceGraphMemTrim "
                     "when other allocators need that memory.",
                 facts.reserved_after_destroy});
}

}  // namespace

std::vector<diagnostic> diagnose(const flat_graph& flat, const graph_analysis& a,
                                 const runtime_facts& facts) {
  std::vector<diagnostic> out;
  unfreed_allocations(flat, a, facts, out);
  missed_reuse(flat, a, facts, out);
  separate_streams(facts, out);
  reservation_above_bound(a, facts, out);
  reserved_until_trim(facts, out);
  return out;
}

}  // namespace gmem::profiler
