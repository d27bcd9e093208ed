#pragma once
// The pool model in its first, slower form: used() and shares() walked every
// graph ever added. The equivalence tests drive it and the library's side by side.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gmem/profiler/pool_model.hpp"

namespace gmem::profiler::reference {

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
    std::vector<std::vector<bool>> live;            ///< per device layout, per allocation: held and live
  };
  pool_step map(std::size_t g, std::uint64_t stream, bool run, std::uint64_t ordinal,
                std::optional<std::uint64_t> measured_growth);
  [[nodiscard]] std::vector<device_plan> plan(const graph_state& gs, std::uint64_t stream) const;
  [[nodiscard]] static bool holds_live(const graph_state& gs);
  [[nodiscard]] bool busy_for(const chunk& c, std::uint64_t stream) const {
    return c.busy_stream && *c.busy_stream != stream;
  }
  [[nodiscard]] bool exists(std::uint64_t id) const { return id != 0 && chunks_.count(id) != 0; }
  void unpin(graph_state& gs, std::size_t d, std::size_t a);

  std::uint64_t granularity_;
  std::uint64_t next_chunk_ = 1;
  std::map<std::uint64_t, chunk> chunks_;  ///< by id: ids rise with age
  std::vector<graph_state> graphs_;
};

}  // namespace gmem::profiler::reference
