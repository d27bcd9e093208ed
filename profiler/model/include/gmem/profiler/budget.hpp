#pragma once
// A deadline for analysis that runs where the time is not its own (a recording's analysis at
// exit runs inside the user's program): an analysis given one checks it inside its loops and
// stops with budget_exceeded once it has passed, instead of overrunning it by a whole graph.
// Its figures are then not computed at all, never partly. Plain C++ (no CUDA).

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace gmem::profiler {

/// Thrown by an analysis whose deadline passed while it ran: nothing it would have computed is
/// valid (the caller keeps the graph's skeleton for a later analysis without a deadline).
class budget_exceeded : public std::runtime_error {
 public:
  explicit budget_exceeded(const std::string& what) : std::runtime_error(what) {}
};

/// When an analysis must stop. Default-constructed: never (every analysis runs to its end).
/// Not thread-safe: one deadline object per thread of analysis.
class deadline {
 public:
  using clock = std::chrono::steady_clock;

  deadline() = default;
  explicit deadline(clock::time_point at) noexcept : at_(at), set_(true) {}

  /// `seconds` from now. Throws nothing.
  [[nodiscard]] static deadline after(double seconds) noexcept {
    return deadline(clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(seconds)));
  }

  [[nodiscard]] bool is_set() const noexcept { return set_; }

  /// Whether it has passed (reads the clock). Throws nothing.
  [[nodiscard]] bool passed() const noexcept { return set_ && clock::now() >= at_; }

  /// Counts `work` units of work (a node, an edge, a word of a bit row) done in `stage`; every
  /// 16,384 units it reads the clock and throws budget_exceeded naming the stage when the
  /// deadline has passed. Costs a compare where no deadline is set.
  void step(const char* stage, std::uint64_t work = 1) const {
    if (!set_) return;
    done_ += work;
    if (done_ < 16384) return;
    done_ = 0;
    check(stage);
  }

  /// Throws budget_exceeded naming `stage` when the deadline has passed.
  void check(const char* stage) const {
    if (passed()) {
      throw budget_exceeded(std::string("the analysis budget ran out during ") + stage +
                            ": not computed (budget)");
    }
  }

 private:
  clock::time_point at_{};
  bool set_ = false;
  mutable std::uint64_t done_ = 0;
};

}  // namespace gmem::profiler
