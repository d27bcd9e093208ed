#include "gmem/profiler/predict.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "gmem/profiler/caching_pool.hpp"

namespace gmem::profiler {

namespace {

constexpr std::uint64_t MiB = 1ull << 20;

/// A size's calls with blocks named by where they were made: `back` sizes earlier in the order
/// (0: this size), its `index`-th allocation.
struct call {
  bool alloc = true;
  std::uint64_t bytes = 0;
  std::size_t back = 0, index = 0;
  std::uint64_t stream = 0;
};

struct sampled_calls {
  std::int64_t size = 0;
  std::vector<call> calls;
  std::size_t allocs = 0;
  std::vector<std::size_t> ends;  ///< each graph's calls end here in `calls` (the last graph's: all); empty where not read
};

std::vector<sampled_calls> name_blocks(const predict_sample& s, std::vector<std::string>& notes) {
  std::vector<sampled_calls> out;
  std::map<std::uint64_t, std::pair<std::size_t, std::size_t>> live;  // address -> (size's position, index)
  std::uint64_t strangers = 0;
  for (std::size_t k = 0; k < s.sizes.size(); ++k) {
    sampled_calls t;
    t.size = s.sizes[k].size;
    std::vector<std::size_t> kept_by;  // calls kept before each of the sample's calls
    for (const sampled_call& c : s.sizes[k].calls) {
      kept_by.push_back(t.calls.size());
      if (c.what == sampled_call::kind::alloc) {
        live[c.address] = {k, t.allocs++};
        t.calls.push_back({true, c.bytes, 0, 0, c.stream});
      } else if (c.what == sampled_call::kind::free) {
        auto it = live.find(c.address);
        if (it == live.end()) {
          ++strangers;
          continue;
        }
        t.calls.push_back({false, 0, k - it->second.first, it->second.second});
        live.erase(it);
      }
    }
    kept_by.push_back(t.calls.size());
    const std::vector<sampled_graph>& graphs = s.sizes[k].each_graph;
    if (!graphs.empty() && graphs.size() == s.sizes[k].graphs) {
      for (const sampled_graph& g : graphs) t.ends.push_back(kept_by[std::min(g.calls, kept_by.size() - 1)]);
      t.ends.back() = t.calls.size();  // frees after the last capture end are its graph's
    }
    out.push_back(std::move(t));
  }
  if (strangers) {
    notes.push_back(std::to_string(strangers) + " free(s) of blocks allocated before the sample were left out");
  }
  return out;
}

/// The bytes of allocation `index` at batch size `b`, from the sampled sizes with as many
/// allocations: linear between the two nearest, and beyond them along the nearest two.
std::uint64_t fitted_bytes(const std::vector<const sampled_calls*>& like, std::size_t index, std::int64_t b) {
  std::vector<std::pair<double, double>> points;
  for (const sampled_calls* t : like) {
    std::size_t seen = 0;
    for (const call& c : t->calls) {
      if (!c.alloc) continue;
      if (seen++ == index) {
        points.push_back({static_cast<double>(t->size), static_cast<double>(c.bytes)});
        break;
      }
    }
  }
  std::sort(points.begin(), points.end());
  const double x = static_cast<double>(b);
  for (const auto& p : points) {
    if (p.first == x) return static_cast<std::uint64_t>(p.second);
  }
  if (points.size() == 1) return static_cast<std::uint64_t>(points[0].second);
  std::size_t hi = 0;
  while (hi < points.size() && points[hi].first < x) ++hi;
  if (hi == 0) hi = 1;
  if (hi == points.size()) hi = points.size() - 1;
  const auto& p0 = points[hi - 1];
  const auto& p1 = points[hi];
  if (p1.first == p0.first) return static_cast<std::uint64_t>(p1.second);
  const double y = p0.second + (p1.second - p0.second) * (x - p0.first) / (p1.first - p0.first);
  return static_cast<std::uint64_t>(std::max(1.0, std::llround(y) * 1.0));
}

/// The sampled size whose calls `b` takes: the nearest on a log scale (the larger on a tie),
/// among the sizes after the sample's first unless `b` is the first of the order.
const sampled_calls* calls_for(const std::vector<sampled_calls>& t, std::int64_t b, bool first) {
  const sampled_calls* best = nullptr;
  double best_d = 0;
  for (std::size_t k = (first || t.size() < 2) ? 0 : 1; k < t.size(); ++k) {
    const double d = std::fabs(std::log(static_cast<double>(t[k].size)) - std::log(static_cast<double>(b)));
    if (!best || d < best_d || (d == best_d && t[k].size > best->size)) {
      best = &t[k];
      best_d = d;
    }
  }
  return best;
}

struct replayed {
  const sampled_calls* from = nullptr;   ///< the sampled size whose calls it took
  std::uint64_t pool_after = 0;          ///< the pool after it
  std::vector<std::uint64_t> graph_growth;  ///< the pool's growth over each of its graphs' calls (where `first` has ends)
};

/// The pool after each size of `order`, every size's calls from `t`.
std::vector<replayed> simulate(const std::vector<sampled_calls>& t, const std::vector<std::int64_t>& order) {
  caching_pool_model pool;
  std::vector<std::vector<std::uint64_t>> ids;
  std::vector<replayed> out;
  for (std::size_t p = 0; p < order.size(); ++p) {
    const sampled_calls* from = calls_for(t, order[p], p == 0);
    std::vector<const sampled_calls*> like;
    for (const sampled_calls& s : t) {
      if (s.allocs == from->allocs) like.push_back(&s);
    }
    ids.emplace_back();
    std::size_t index = 0;
    replayed r{from, 0, std::vector<std::uint64_t>(from->ends.size(), 0)};
    std::size_t g = 0;
    std::uint64_t graph_start = pool.reserved_bytes();
    const auto close_graphs = [&](std::size_t upto, std::size_t next_call) {
      while (g < upto && next_call >= from->ends[g]) {
        r.graph_growth[g++] = pool.reserved_bytes() - graph_start;
        graph_start = pool.reserved_bytes();
      }
    };
    for (std::size_t i = 0; i < from->calls.size(); ++i) {
      const call& c = from->calls[i];
      if (!from->ends.empty()) close_graphs(from->ends.size() - 1, i);
      if (c.alloc) {
        const std::uint64_t bytes = from->size == order[p] ? c.bytes : fitted_bytes(like, index, order[p]);
        ids.back().push_back(pool.allocate(bytes, c.stream));
        ++index;
      } else if (c.back <= p && c.index < ids[p - c.back].size()) {
        pool.free(ids[p - c.back][c.index]);
      }
    }
    close_graphs(from->ends.size(), from->calls.size());
    r.pool_after = pool.reserved_bytes();
    out.push_back(std::move(r));
  }
  return out;
}

std::uint64_t distance(std::uint64_t a, std::uint64_t b) { return a > b ? a - b : b - a; }

/// `whole` split in the proportions of `weights` (equally where none is positive), each share
/// rounded and what rounding leaves on the last.
std::vector<double> split(double whole, const std::vector<double>& weights, bool round) {
  double sum = 0;
  for (double w : weights) sum += std::max(0.0, w);
  std::vector<double> out(weights.size(), 0);
  double given = 0;
  for (std::size_t k = 0; k < weights.size(); ++k) {
    const double share = sum > 0 ? std::max(0.0, weights[k]) / sum : 1.0 / static_cast<double>(weights.size());
    out[k] = k + 1 == weights.size() ? whole - given : round ? std::round(whole * share) : whole * share;
    given += out[k];
  }
  return out;
}

/// The graphs of predicted size `ps`, whose calls come from sampled size `from`: the pool's
/// growth over each graph's calls (`growth`), and the size's state and memory-node pool split in
/// the proportions `from` read for its graphs (the state in equal shares where each graph's was
/// read once: `copies` 1, one reading in the driver's 2 MiB pieces, does not tell its share).
void add_graphs(const predicted_size& ps, const std::vector<std::uint64_t>& growth, const sampled_size& from,
                std::uint64_t copies, std::vector<predicted_graph>& out) {
  std::vector<double> exec, node;
  bool every_state = true;
  for (const sampled_graph& g : from.each_graph) {
    exec.push_back(g.exec_state_bytes.value_or(0));
    node.push_back(static_cast<double>(g.node_pool_change));
    every_state = every_state && g.exec_state_bytes.has_value();
  }
  if (!every_state || copies <= 1) exec.assign(exec.size(), 0);  // equal shares
  if (std::none_of(node.begin(), node.end(), [](double v) { return v > 0; }) && !node.empty()) {
    node.assign(node.size(), 0);
    node[0] = 1;  // none grew it: the size's figure is its first graph's
  }
  const std::vector<double> exec_shares = split(ps.exec_state_bytes, exec, false);
  const std::vector<double> node_shares = split(static_cast<double>(ps.node_pool_bytes), node, true);
  for (std::size_t k = 0; k < growth.size(); ++k) {
    out.push_back({ps.size, k, growth[k], exec_shares[k], static_cast<std::int64_t>(std::llround(node_shares[k]))});
  }
}

}  // namespace

warmup_prediction predict_warmup(const predict_sample& sample, const std::vector<std::int64_t>& order) {
  if (sample.sizes.empty()) throw std::invalid_argument("the sample has no sampled size: capture at least one");
  if (order.empty()) throw std::invalid_argument("no batch size to predict: give the warm-up's sizes");
  for (std::int64_t b : order) {
    if (b < 1) throw std::invalid_argument("batch size " + std::to_string(b) + " is not positive");
  }
  warmup_prediction out;
  out.order = order;
  out.notes = sample.notes;
  const std::vector<sampled_calls> calls = name_blocks(sample, out.notes);
  if (sample.sizes.size() == 1) {
    out.notes.push_back("one sampled size: every size takes its allocations' bytes unchanged; sample two or more");
  }

  // The allocator model on the sample's own calls, against the pool PyTorch listed.
  {
    std::vector<std::int64_t> sampled_order;
    for (const sampled_calls& t : calls) sampled_order.push_back(t.size);
    const auto own = simulate(calls, sampled_order);
    for (std::size_t k = 0; k < calls.size(); ++k) {
      const std::uint64_t measured = sample.sizes[k].pool_bytes_after >= sample.pool_bytes_before
                                         ? sample.sizes[k].pool_bytes_after - sample.pool_bytes_before
                                         : 0;
      out.checks.push_back({calls[k].size, own[k].pool_after, measured});
    }
  }
  std::uint64_t model_error = 0;
  for (const model_check& c : out.checks) model_error = std::max(model_error, distance(c.simulated_bytes, c.measured_bytes));

  std::vector<std::int64_t> growth;  // of the graph pools, over each sampled size
  std::uint64_t previous_pool = sample.pool_bytes_before;
  for (const sampled_size& s : sample.sizes) {
    growth.push_back(static_cast<std::int64_t>(s.pool_bytes_after) - static_cast<std::int64_t>(previous_pool));
    previous_pool = s.pool_bytes_after;
  }

  // The executable graphs' state, per graph: read from copies; else (graphs with memory nodes
  // cannot be copied) what the captures after the second took besides the pools.
  double exec_total = 0, exec_graphs = 0;
  for (const sampled_size& s : sample.sizes) {
    if (s.exec_state_bytes && s.graphs) {
      exec_total += *s.exec_state_bytes;
      exec_graphs += static_cast<double>(s.graphs);
    }
  }
  bool exec_from_copies = exec_graphs > 0;
  if (!exec_from_copies) {
    // The rate of the sampled sizes after the second: the second capture released what the
    // first one's eager runs left cached (the cache is emptied before each capture), which
    // goes to the outside's net instead.
    for (std::size_t k = sample.sizes.size() >= 3 ? 2 : 1; k < sample.sizes.size(); ++k) {
      const sampled_size& s = sample.sizes[k];
      exec_total += static_cast<double>(s.used_change - growth[k] - s.node_pool_change);
      exec_graphs += static_cast<double>(s.graphs);
    }
    out.notes.push_back(exec_graphs > 0 ? "the executable-graph state is what the sampled captures after the second "
                                          "took besides the pools (no copies of the graphs could be read)"
                                        : "no executable-graph state was read: it is predicted as 0");
  }
  const double exec_per_graph = exec_graphs > 0 ? std::max(0.0, exec_total / exec_graphs) : 0;

  // What captures take outside the pools: the sample's net (one-time costs such as library
  // workspaces and the eager runs' cache, less what later captures released of it: the cache is
  // emptied before each capture) on the first size of the order, and for each size not sampled
  // what every capture takes (`each`). The memory-node pool's reservation likewise, except that
  // each sampled size keeps its own reading (below).
  std::vector<std::int64_t> outside, node;
  for (std::size_t k = 0; k < sample.sizes.size(); ++k) {
    const sampled_size& s = sample.sizes[k];
    const double exec = exec_from_copies ? s.exec_state_bytes.value_or(exec_per_graph * static_cast<double>(s.graphs))
                                         : exec_per_graph * static_cast<double>(s.graphs);
    outside.push_back(s.used_change - growth[k] - s.node_pool_change - static_cast<std::int64_t>(std::llround(exec)));
    node.push_back(s.node_pool_change);
  }
  const auto net = [](const std::vector<std::int64_t>& v) {
    std::int64_t sum = 0;
    for (std::int64_t x : v) sum += x;
    return sum;
  };
  // A cost every capture has: the mean of the sampled sizes after the second (the second
  // capture releases what the first, largest size's eager runs left cached; docs/driver-facts.md),
  // kept where it exceeds what the readings' 2 MiB pieces leave unresolved over that many sizes
  // and every one of those readings shows it (a one-off, such as a workspace one size's shapes
  // need, shows in one reading only). `mean` is the mean either way: the uncertainty counts it.
  const auto each = [](const std::vector<std::int64_t>& v, double* mean_out) {
    const std::size_t from = v.size() >= 3 ? 2 : 1;
    if (v.size() <= from) return std::int64_t{0};
    double sum = 0;
    for (std::size_t k = from; k < v.size(); ++k) sum += static_cast<double>(v[k]);
    const double n = static_cast<double>(v.size() - from);
    const double mean = sum / n;
    if (mean_out) *mean_out = mean;
    bool everywhere = true;
    for (std::size_t k = from; k < v.size(); ++k) everywhere = everywhere && (v[k] > 0) == (mean > 0) && v[k] != 0;
    return std::fabs(mean) < 2.0 * MiB / n || !everywhere ? std::int64_t{0} : static_cast<std::int64_t>(std::llround(mean));
  };
  double outside_mean = 0;
  const std::int64_t outside_net = net(outside), outside_each = each(outside, &outside_mean);
  const std::int64_t node_net = net(node), node_each = each(node, nullptr);

  // The memory-node pool's reservation only grows while captures are made: a sampled size takes
  // its own reading, the first size of the order the sampled sizes' others, and each size not
  // sampled what every capture takes.
  std::int64_t node_in_order = 0;
  for (std::size_t k = 0; k < sample.sizes.size(); ++k) {
    if (std::find(order.begin(), order.end(), sample.sizes[k].size) != order.end()) node_in_order += node[k];
  }
  const auto simulated = simulate(calls, order);
  bool by_graph = true;  // every sampled size read each of its graphs
  for (const sampled_calls& t : calls) by_graph = by_graph && !t.ends.empty();
  std::uint64_t previous = 0;
  double exec_sum = 0;
  std::int64_t outside_sum = 0, node_sum = 0;
  std::uint64_t outside_each_sizes = 0;  // the sizes that take what every capture takes
  std::uint64_t graphs_sum = 0;
  for (std::size_t p = 0; p < order.size(); ++p) {
    predicted_size ps;
    ps.size = order[p];
    ps.calls_from = simulated[p].from->size;
    const sampled_size& from = sample.sizes[static_cast<std::size_t>(simulated[p].from - calls.data())];
    ps.graphs = from.graphs;
    const auto itself = std::find_if(sample.sizes.begin(), sample.sizes.end(),
                                     [&](const sampled_size& z) { return z.size == ps.size; });
    ps.sampled = itself != sample.sizes.end();
    ps.pool_bytes_after = simulated[p].pool_after;
    ps.pool_growth = ps.pool_bytes_after - previous;
    previous = ps.pool_bytes_after;
    ps.exec_state_bytes = exec_per_graph * static_cast<double>(ps.graphs);
    ps.outside_bytes = p == 0 ? outside_net : ps.sampled ? 0 : outside_each;
    ps.node_pool_bytes = ps.sampled ? node[static_cast<std::size_t>(itself - sample.sizes.begin())]
                                    : p == 0 ? node_net - node_in_order : node_each;
    node_sum += ps.node_pool_bytes;
    exec_sum += ps.exec_state_bytes;
    outside_sum += ps.outside_bytes;
    outside_each_sizes += p != 0 && !ps.sampled;
    graphs_sum += ps.graphs;
    if (by_graph) add_graphs(ps, simulated[p].graph_growth, from, sample.copies, out.graphs);
    out.sizes.push_back(ps);
  }
  if (!by_graph) out.notes.push_back("the sample did not read each graph apart (gmem.predict before it did): the bill is per size");

  // The fit without each sampled size after the first (with three or more sampled): how far
  // the pool moves.
  std::uint64_t fit_spread = 0;
  if (calls.size() >= 3) {
    for (std::size_t drop = 1; drop < calls.size(); ++drop) {
      std::vector<sampled_calls> fewer;
      for (std::size_t k = 0; k < calls.size(); ++k) {
        if (k != drop) fewer.push_back(calls[k]);
      }
      // Blocks the dropped size made are not named by the others' frees: left as they are.
      fit_spread = std::max(fit_spread, distance(simulate(fewer, order).back().pool_after, previous));
    }
  }
  const double per_graph_reading =
      exec_graphs > 0 ? 2.0 * MiB / (static_cast<double>(exec_from_copies ? std::max<std::uint64_t>(sample.copies, 1) : 1) * exec_graphs) : 0;

  out.kinds.push_back({"framework_pool", static_cast<std::int64_t>(previous), model_error + fit_spread});
  out.kinds.push_back({"exec_state", static_cast<std::int64_t>(std::llround(exec_sum)),
                       static_cast<std::uint64_t>(std::llround(per_graph_reading * static_cast<double>(graphs_sum)))});
  // Each reading of the device memory in use moves in pieces of 2 MiB; and what every capture
  // takes is a mean of few such readings, where a one-off (a library's workspace, a new segment
  // of the eager cache) reads as a cost of each size: it is as uncertain as it is large.
  const std::uint64_t outside_reading = 2 * MiB * sample.sizes.size() +
                                        static_cast<std::uint64_t>(std::llround(std::fabs(outside_mean))) * outside_each_sizes;
  out.kinds.push_back({"outside", outside_sum, outside_reading});
  out.kinds.push_back({"node_pool", node_sum, 0});
  out.total.kind = "total";
  for (const predicted_kind& k : out.kinds) {
    out.total.bytes += k.bytes;
    out.total.uncertainty_bytes += k.uncertainty_bytes;
  }

  // Linear extrapolation from the largest and the smallest sampled size.
  const auto [lo, hi] = std::minmax_element(sample.sizes.begin(), sample.sizes.end(),
                                            [](const sampled_size& a, const sampled_size& b) { return a.size < b.size; });
  out.linear_from_large = hi->size;
  out.linear_from_small = lo->size;
  for (std::int64_t b : order) {
    double y = static_cast<double>(hi->used_change);
    if (hi->size != lo->size) {
      y = static_cast<double>(lo->used_change) + static_cast<double>(hi->used_change - lo->used_change) *
                                                     static_cast<double>(b - lo->size) /
                                                     static_cast<double>(hi->size - lo->size);
    }
    out.linear_bytes += std::max<std::int64_t>(0, std::llround(y));
  }
  return out;
}

}  // namespace gmem::profiler
