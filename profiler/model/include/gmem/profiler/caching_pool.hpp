#pragma once
// One graph pool of PyTorch's CUDA caching allocator (its "native" backend), the pool that
// torch.cuda.graph(pool=...) captures into: plain C++, no CUDA. The rules are PyTorch's
// (c10/cuda/CUDACachingAllocator.cpp), with its default configuration: no max_split_size, no
// rounding to powers of two, no expandable segments.
//  - A request is rounded up to 512 bytes. Up to 1 MiB it is a small block, else a large one;
//    each kind has its own free blocks.
//  - Each block belongs to the stream its segment was allocated for, and serves requests of that
//    stream only (a capture's side stream allocates into the same graph pool, from its own free
//    blocks and segments).
//  - The free block taken is the smallest of the request's kind and stream that is large enough
//    (the lowest address among equal sizes). Taking it splits off the rest as a free block where the
//    rest is at least 512 bytes (small) or more than 1 MiB (large).
//  - With no free block large enough a segment is allocated (cudaMalloc): 2 MiB for a small
//    request, 20 MiB for a large one under 10 MiB, else the request rounded up to 2 MiB.
//  - A freed block merges with free neighbours of its segment. A graph pool's segments are
//    released only with the pool, never during a warm-up: the pool's size only grows.

#include <cstdint>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

namespace gmem::profiler {

/// The allocator's constants (PyTorch's kMinBlockSize, kSmallSize, kSmallBuffer, kLargeBuffer,
/// kMinLargeAlloc, kRoundLarge).
struct caching_rules {
  std::uint64_t min_block = 512;
  std::uint64_t small_size = 1u << 20;
  std::uint64_t small_buffer = 2u << 20;
  std::uint64_t large_buffer = 20u << 20;
  std::uint64_t min_large_alloc = 10u << 20;
  std::uint64_t round_large = 2u << 20;
};

class caching_pool_model {
 public:
  explicit caching_pool_model(caching_rules rules = {}) : rules_(rules) {}

  /// A block for a request of `bytes` on `stream` (any label: the same label is the same
  /// stream); returns its id (for free), 0 for an empty request (no block). Throws
  /// std::invalid_argument beyond 2^48 bytes.
  std::uint64_t allocate(std::uint64_t bytes, std::uint64_t stream = 0);
  /// Frees the block `id` (an id allocate returned and not yet freed; others are ignored and
  /// counted in unknown_frees()).
  void free(std::uint64_t id);

  /// The size a request takes (rounded up to min_block).
  [[nodiscard]] std::uint64_t block_size(std::uint64_t bytes) const;
  /// The segment a request makes when no free block fits.
  [[nodiscard]] std::uint64_t segment_size(std::uint64_t bytes) const;

  [[nodiscard]] std::uint64_t reserved_bytes() const { return reserved_; }
  [[nodiscard]] std::uint64_t allocated_bytes() const { return allocated_; }
  /// Every segment's size, in the order they were made.
  [[nodiscard]] const std::vector<std::uint64_t>& segments() const { return segment_sizes_; }
  [[nodiscard]] std::uint64_t unknown_frees() const { return unknown_frees_; }

 private:
  struct block {
    std::uint64_t size = 0;
    std::uint64_t segment_end = 0;  ///< one past the segment's last byte
    std::uint64_t segment_start = 0;
    bool small = false;
    bool allocated = false;
    std::uint64_t stream = 0;
  };
  using free_set = std::set<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>>;  // (stream, size, address)
  free_set& frees_of(bool small) { return small ? small_free_ : large_free_; }

  caching_rules rules_;
  std::map<std::uint64_t, block> blocks_;  // by address
  std::map<std::uint64_t, std::uint64_t> id_address_;
  free_set small_free_, large_free_;
  std::vector<std::uint64_t> segment_sizes_;
  std::uint64_t next_address_ = 1ull << 40;
  std::uint64_t next_id_ = 1;
  std::uint64_t reserved_ = 0;
  std::uint64_t allocated_ = 0;
  std::uint64_t unknown_frees_ = 0;
};

}  // namespace gmem::profiler
