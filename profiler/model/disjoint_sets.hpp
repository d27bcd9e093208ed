#pragma once
// Union-find over indices 0..n-1, for the model's component splits (analysis, reuse rule): two
// vectors, no recursion, near-linear in all. Private to the profiler's model code.

#include <cstddef>
#include <utility>
#include <vector>

namespace gmem::profiler {

class disjoint_sets {
 public:
  /// n singletons. Throws std::bad_alloc only.
  explicit disjoint_sets(std::size_t n) : parent_(n), size_(n, 1) {
    for (std::size_t v = 0; v < n; ++v) parent_[v] = v;
  }
  /// The representative of v's set (v < n); halves the path on the way. Throws nothing.
  std::size_t find(std::size_t v) {
    while (parent_[v] != v) {
      parent_[v] = parent_[parent_[v]];
      v = parent_[v];
    }
    return v;
  }
  /// Joins the sets of u and v (the smaller under the larger). Throws nothing.
  void unite(std::size_t u, std::size_t v) {
    u = find(u);
    v = find(v);
    if (u == v) return;
    if (size_[u] < size_[v]) std::swap(u, v);
    parent_[v] = u;
    size_[u] += size_[v];
  }

 private:
  std::vector<std::size_t> parent_, size_;
};

}  // namespace gmem::profiler
