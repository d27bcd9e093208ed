#pragma once
// The analysis and the reuse rule in their first, slower form:
// the equivalence tests assert that the library computes every figure exactly as these did.

#include <cstdint>
#include <optional>

#include "gmem/profiler/analysis.hpp"
#include "gmem/profiler/reuse_model.hpp"

namespace gmem::profiler::reference {

/// analyse(flat, granularity) in its first form: reachability bit matrices per component and the
/// heaviest antichain by max_weight_antichain on each. Throws as analyse.
[[nodiscard]] graph_analysis analyse(const flat_graph& flat, std::uint64_t granularity);

/// predict_reuse(s, granularity) in its first form: every available ancestor free looked at for
/// each alloc node. Throws as predict_reuse.
[[nodiscard]] reuse_prediction predict_reuse(const skeleton& s, std::uint64_t granularity);

/// The same without validating `s` first, as candidate_changes predicts the skeletons it makes.
[[nodiscard]] reuse_prediction predict_without_validating(const skeleton& s, std::uint64_t granularity);

/// plan_changes(s, granularity) in its first form (with the reuse rule above). Throws as
/// plan_changes.
[[nodiscard]] std::optional<plan_result> plan_changes(const skeleton& s, std::uint64_t granularity);

}  // namespace gmem::profiler::reference
