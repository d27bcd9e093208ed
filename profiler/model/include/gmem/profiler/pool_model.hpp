#pragma once
// Several graphs sharing one device's graph memory pool, as measured (README, "Many graphs, one
// pool"; tools/pool_probe.cu, 18 cases on an H100). Plain C++ (no CUDA).
//
// What the driver does, and this model with it (every step of the 18 probe cases: the
// reservation, the used memory and whether each of 159 launches and uploads mapped memory):
//  - The pool holds physical memory in granules (32 MiB on H100 and H200). A graph maps its
//    footprint (what the reuse model says its pools map, reuse_model.hpp) in granule-sized
//    slots, each backed by one granule of the pool.
//  - Graphs alias: a launch backs a slot with a granule that no live allocation of another
//    graph occupies and that no launch in another stream may still be using; only when none is
//    left does the pool grow. It fills the slots it must map from its last to its first: the
//    last slots take the granules already in the pool, the first ones new granules (mapping in
//    the other direction predicts remaps the driver did not make, P2). A graph keeps its mapping
//    between launches: a relaunch remaps only the slots whose granule another graph's live
//    allocation now occupies (P1, P18), and grows the pool only when no other granule is free.
//  - An allocation a graph leaves allocated (an output) occupies every granule its bytes touch
//    until it is freed: by the graph's next launch with AutoFreeOnLaunch, or outside the graph
//    (cudaFreeAsync, cudaFree). So each held output costs whole granules (P1: 512 + 6 x 32 MiB).
//  - A launch in another stream may run at the same time: its granules are not shared while its
//    work runs (P6, P14). The driver shares them once that work has completed, whether or not the
//    program waited for it (tools/completion_cases.sh on an H100: after an event synchronize, an
//    event or stream query that reported done, a synchronous copy behind a blocking stream, and
//    after a host sleep with no CUDA call at all, C1-C3, C6, C7). A stream waiting on an event
//    recorded after the launch orders the work but does not let the driver share (C4). The model
//    takes the completions the program saw (synchronize, with the stream's launch ordinal for an
//    event) and, where a call's growth was measured, the completions the driver saw unseen: a
//    launch that grew the pool less than the model predicts with other streams' work running
//    had that work complete (launch's measured_growth). The same stream orders them.
//  - cudaDeviceGraphMemTrim returns every granule no live allocation occupies (P1, P9); the
//    graphs that mapped them map again at their next launch, except a slot no allocation of
//    the graph touches (the end of a mapping step, P3, P17), which only the first launch maps.
//    A destroyed executable graph's granules stay in the pool, free (P8).
//  - ReservedMemCurrent counts the pool's granules; UsedMemCurrent the granules some graph's
//    allocation covers in a mapping that was not trimmed away (P17: a graph whose last mapped
//    granule no allocation reaches reserves it and does not use it).
// Which free granule a slot takes (oldest or newest) changed nothing in any probe case.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gmem/profiler/budget.hpp"
#include "gmem/profiler/skeleton.hpp"

namespace gmem::profiler {

/// One allocation of a graph as the pool sees it: the slots (granules of the graph's mapping
/// on its device) its bytes touch, [first_slot, end_slot).
struct pool_allocation {
  std::size_t first_slot = 0;
  std::size_t end_slot = 0;
  std::uint64_t bytes = 0;
  bool held = false;  ///< left allocated by a launch: the graph does not free it
  std::string label;  ///< "alloc node #3 in graph 'g'"
  std::size_t node = 0;  ///< its alloc node in the skeleton
};

/// A graph's mapping on one device.
struct pool_device_layout {
  int device = 0;
  std::size_t slots = 0;
  std::vector<pool_allocation> allocations;
};

/// One graph as the pool sees it.
struct pool_graph {
  std::string name;
  bool auto_free_on_launch = false;
  std::vector<pool_device_layout> devices;  ///< ascending device
};

/// A skeleton's mapping: the reuse model's placement of each alloc node (its pools laid one
/// after the other, in slots of `granularity`); allocations without a free node are held.
/// Throws std::invalid_argument when `s` is not valid or granularity is 0, budget_exceeded when
/// `until` passes first.
[[nodiscard]] pool_graph pool_graph_of(const skeleton& s, std::uint64_t granularity,
                                       bool auto_free_on_launch, const deadline& until = {});

/// The granules of `g` its held allocations occupy after a launch, on all its devices (a
/// granule shared by two held allocations counted once).
[[nodiscard]] std::uint64_t held_granule_bytes(const pool_graph& g, std::uint64_t granularity);

/// What a launch or upload did to the pool.
struct pool_step {
  bool refused = false;           ///< a relaunch without AutoFreeOnLaunch while its outputs live
  std::size_t mapped_slots = 0;   ///< slots (re)mapped: 0 = nothing mapped (a steady launch)
  std::uint64_t grown_bytes = 0;  ///< the pool's growth, all devices
  /// The measured growth said that other streams' work had completed unseen (see the header).
  bool others_completed = false;
};

/// Who holds a part of a device's pool at one moment, and why.
struct pool_share {
  std::string graph;  ///< a graph's name, or "" for memory no graph holds
  std::string why;    ///< "working_set", "held_outputs", "concurrent_launch", "idle"
  std::uint64_t bytes = 0;
};

/// Physical memory of the devices' graph memory pools, launch by launch. Graph indices are
/// those add() returned; streams are any labels (the same label is the same stream).
class pool_model {
 public:
  /// Throws std::invalid_argument when granularity is 0.
  explicit pool_model(std::uint64_t granularity);

  /// Adds a graph (an executable graph: instantiated). Returns its index.
  std::size_t add(pool_graph g);
  [[nodiscard]] const pool_graph& graph(std::size_t g) const { return graphs_.at(g).layout; }
  [[nodiscard]] std::size_t graphs() const { return graphs_.size(); }

  /// A launch into `stream`: frees the graph's held allocations first with AutoFreeOnLaunch,
  /// maps every slot that has no granule or whose granule another graph's live allocation or a
  /// launch in another stream occupies, then the allocations it leaves allocated occupy their
  /// granules. `ordinal` numbers the stream's launches and uploads (synchronize(stream, upto)
  /// completes those up to one). `measured_growth`, where the driver's counters were read
  /// around the call: when the model would grow the pool more than that while other streams'
  /// work is running, that work had completed (the driver shares it, seen or not) and is taken
  /// as complete first. Throws std::out_of_range for an unknown graph, std::invalid_argument for
  /// a destroyed one.
  pool_step launch(std::size_t g, std::uint64_t stream, std::uint64_t ordinal = 0,
                   std::optional<std::uint64_t> measured_growth = std::nullopt);
  /// An upload into `stream`: maps as a launch would, runs nothing and holds nothing.
  pool_step upload(std::size_t g, std::uint64_t stream, std::uint64_t ordinal = 0,
                   std::optional<std::uint64_t> measured_growth = std::nullopt);
  /// The pool growth a launch (`run`) or upload of `g` into `stream` would cause now, changing
  /// nothing. Throws as launch.
  [[nodiscard]] std::uint64_t growth_if_mapped(std::size_t g, std::uint64_t stream, bool run) const;
  /// A destroyed graph made again (an executable graph of the same structure instantiated
  /// after it was destroyed): it has no mapping, as a new executable graph has none; its live
  /// allocations stay live. Throws std::out_of_range for an unknown graph.
  void instantiate(std::size_t g);
  /// The executable graph updated in place with a graph of its layout (cuGraphExecUpdate): the
  /// new graph's allocations have addresses of their own, so it has no mapping, as a new
  /// executable graph has none; its live allocations stay live, on their granules, until freed
  /// (free_held, or AutoFreeOnLaunch at its next launch). Throws std::out_of_range for an
  /// unknown graph.
  void update(std::size_t g);
  /// The graph's held allocations freed outside it (cudaFreeAsync / cudaFree): all of them, or
  /// the one whose index in the graph's device layout is `allocation` on `device`.
  void free_held(std::size_t g, std::optional<std::size_t> allocation = std::nullopt,
                 int device = -1);
  /// The executable graph destroyed: its granules stay in the pool, free; its live allocations
  /// stay live until freed.
  void destroy(std::size_t g);
  /// Every launch so far is complete (cudaDeviceSynchronize), or every launch into `stream`,
  /// or those into `stream` whose ordinal is `upto` or less (an event recorded after them).
  void synchronize();
  void synchronize(std::uint64_t stream);
  void synchronize(std::uint64_t stream, std::uint64_t upto);
  /// Whether a launch in another stream than `stream` may still use a granule.
  [[nodiscard]] bool others_running(std::uint64_t stream) const;
  /// cudaDeviceGraphMemTrim: returns the granules of `device` no live allocation occupies and
  /// no running launch uses. Linear in the pool's granules: a graph finds out at its next call
  /// that a granule of its mapping is gone.
  void trim(int device);

  // Every operation costs the graph it names and the pool's granules, and shares() the graphs
  // holding live allocations: none walks every graph ever added (16,000 graphs made, launched,
  // destroyed and trimmed one after another).

  [[nodiscard]] std::uint64_t reserved(int device) const;
  [[nodiscard]] std::uint64_t used(int device) const;
  /// The device's pool now, by holder: the working set of `launching` (the granules it maps),
  /// the granules other graphs' live allocations occupy, those a launch in another stream may
  /// still use, and those nobody holds. Sums to reserved(device). Largest first.
  [[nodiscard]] std::vector<pool_share> shares(int device,
                                               std::optional<std::size_t> launching) const;
  /// Requested bytes and granules of the live allocations graph g leaves, on `device`.
  struct held_summary {
    std::size_t allocations = 0;
    std::uint64_t requested_bytes = 0;
    std::uint64_t granule_bytes = 0;  ///< the granules only its held allocations occupy
  };
  [[nodiscard]] held_summary held(std::size_t g, int device) const;
  [[nodiscard]] std::uint64_t granularity() const { return granularity_; }

 private:
  struct chunk {
    int device = 0;
    std::size_t pins = 0;             ///< live allocations occupying it
    std::size_t covering = 0;         ///< graphs' slots mapped to it that an allocation touches
    std::optional<std::uint64_t> busy_stream;  ///< a launch into this stream may still use it
    std::uint64_t busy_ordinal = 0;   ///< that launch's ordinal in its stream
    std::size_t last_graph = static_cast<std::size_t>(-1);  ///< the graph that last ran on it
  };
  /// What mapping graph g now takes, per device layout: the slots to map, the free granules the
  /// last of them take (the rest are new granules), and the slots it gives up.
  struct device_plan {
    std::vector<std::size_t> need;
    std::vector<std::uint64_t> reuse;
    std::vector<std::size_t> drop;  ///< mapped slots no allocation touches whose granule is gone
  };
  struct graph_state {
    pool_graph layout;
    bool destroyed = false;
    std::uint64_t last_stream = 0;  ///< of its last launch
    bool mapped_once = false;       ///< launched or uploaded before
    std::vector<std::vector<std::uint64_t>> slots;  ///< per device layout: chunk id per slot, 0 = none
    std::vector<std::vector<bool>> covered;         ///< per device layout, per slot: an allocation touches it
    std::vector<std::vector<bool>> live;            ///< per device layout, per allocation: held and live
    std::size_t live_count = 0;                     ///< of `live`, those true
  };
  pool_step map(std::size_t g, std::uint64_t stream, bool run, std::uint64_t ordinal,
                std::optional<std::uint64_t> measured_growth);
  [[nodiscard]] std::vector<device_plan> plan(const graph_state& gs, std::uint64_t stream) const;
  [[nodiscard]] static bool holds_live(const graph_state& gs) { return gs.live_count > 0; }
  /// Maps slot `slot` of device layout d of graph g to chunk `id` (0: none), keeping the
  /// chunks' `covering` counts.
  void set_slot(graph_state& gs, std::size_t d, std::size_t slot, std::uint64_t id);
  void set_live(std::size_t g, std::size_t d, std::size_t a);
  [[nodiscard]] bool busy_for(const chunk& c, std::uint64_t stream) const {
    return c.busy_stream && *c.busy_stream != stream;
  }
  /// Marks chunk c busy in `stream` (nullopt: idle), keeping the counts by stream.
  void set_busy(chunk& c, std::optional<std::uint64_t> stream);
  [[nodiscard]] bool exists(std::uint64_t id) const { return id != 0 && chunks_.count(id) != 0; }
  void unpin(std::size_t g, std::size_t d, std::size_t a);

  std::uint64_t granularity_;
  std::uint64_t next_chunk_ = 1;
  std::map<std::uint64_t, chunk> chunks_;  ///< by id: ids rise with age
  // Kept as chunks are made, trimmed and marked busy, so that the reservation before and after
  // each call, and whether other streams run, are not a walk over every chunk.
  std::map<int, std::uint64_t> chunks_on_;            ///< chunks by device
  std::map<std::uint64_t, std::uint64_t> busy_in_;    ///< busy chunks by stream (none: no entry)
  std::vector<graph_state> graphs_;
  std::set<std::size_t> holding_;  ///< graphs with a live allocation
};

}  // namespace gmem::profiler
