#pragma once
// A skeleton: what the driver sees of a graph (memory nodes, empty nodes for every other node,
// dependencies at creation, edges added later), in creation order. Plain data, carried in
// reports (scenario_result::skeletons) so that `gmemprof replay` can re-measure it on any GPU.
// The rule that predicts its reservation is in reuse_model.hpp; the replay in skeleton_replay.hpp.

#include <cstddef>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace gmem::profiler {

enum class skeleton_kind { alloc, free, empty };

/// "alloc", "free", "empty" (the names used in reports).
[[nodiscard]] const char* to_string(skeleton_kind k) noexcept;

inline constexpr std::size_t no_node = std::numeric_limits<std::size_t>::max();

struct skeleton_node {
  skeleton_kind kind = skeleton_kind::empty;
  std::size_t bytes = 0;      ///< alloc: bytes requested
  int device = 0;             ///< alloc: resident device
  std::vector<int> peers;     ///< alloc: devices given access besides the resident one
  std::size_t frees = no_node;  ///< free: index of the alloc node whose memory it frees
  std::vector<std::size_t> deps;  ///< dependencies given at creation (indices below this one)
  std::string label;          ///< where it came from, for advice ("alloc node #3 in graph 'g'")
};

/// Invariants (validate() checks them): deps and `frees` name earlier nodes; a free frees an
/// alloc node, each alloc node at most once; late_edges name existing nodes; deps and late edges
/// together are acyclic.
struct skeleton {
  std::string name;
  std::vector<skeleton_node> nodes;  ///< in creation order
  /// (from, to) added after both nodes existed (cudaGraphAddDependencies).
  std::vector<std::pair<std::size_t, std::size_t>> late_edges;
};

}  // namespace gmem::profiler
