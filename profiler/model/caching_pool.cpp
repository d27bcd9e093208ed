#include "gmem/profiler/caching_pool.hpp"

#include <stdexcept>
#include <tuple>

namespace gmem::profiler {

namespace {
std::uint64_t round_up(std::uint64_t v, std::uint64_t to) { return (v + to - 1) / to * to; }
}  // namespace

std::uint64_t caching_pool_model::block_size(std::uint64_t bytes) const {
  return bytes < rules_.min_block ? rules_.min_block : round_up(bytes, rules_.min_block);
}

std::uint64_t caching_pool_model::segment_size(std::uint64_t bytes) const {
  if (bytes <= rules_.small_size) return rules_.small_buffer;
  if (bytes < rules_.min_large_alloc) return rules_.large_buffer;
  return round_up(bytes, rules_.round_large);
}

std::uint64_t caching_pool_model::allocate(std::uint64_t bytes, std::uint64_t stream) {
  // PyTorch makes no block for an empty request; bytes beyond 2^48 are no device's.
  if (bytes == 0) return 0;
  if (bytes > (std::uint64_t{1} << 48)) throw std::invalid_argument("a request of more than 2^48 bytes");
  const std::uint64_t size = block_size(bytes);
  const bool small = size <= rules_.small_size;
  free_set& frees = frees_of(small);
  std::uint64_t address = 0;
  auto it = frees.lower_bound({stream, size, 0});
  if (it != frees.end() && std::get<0>(*it) == stream) {
    address = std::get<2>(*it);
    frees.erase(it);
  } else {
    const std::uint64_t seg = segment_size(size);
    address = next_address_;
    // Segments apart, so that blocks of two segments never merge.
    next_address_ += round_up(seg, rules_.round_large) + rules_.round_large;
    blocks_[address] = block{seg, address + seg, address, small, false, stream};
    segment_sizes_.push_back(seg);
    reserved_ += seg;
  }
  block& b = blocks_[address];
  const std::uint64_t rest = b.size - size;
  if (small ? rest >= rules_.min_block : rest > rules_.small_size) {
    blocks_[address + size] = block{rest, b.segment_end, b.segment_start, small, false, stream};
    frees.insert({stream, rest, address + size});
    b.size = size;
  }
  b.allocated = true;
  allocated_ += b.size;
  const std::uint64_t id = next_id_++;
  id_address_[id] = address;
  return id;
}

void caching_pool_model::free(std::uint64_t id) {
  if (id == 0) return;  // an empty request's
  auto found = id_address_.find(id);
  if (found == id_address_.end()) {
    ++unknown_frees_;
    return;
  }
  std::uint64_t address = found->second;
  id_address_.erase(found);
  auto it = blocks_.find(address);
  if (it == blocks_.end() || !it->second.allocated) {
    ++unknown_frees_;
    return;
  }
  block merged = it->second;
  merged.allocated = false;
  allocated_ -= merged.size;
  free_set& frees = frees_of(merged.small);
  // The free neighbours in the same segment merge into it.
  auto next = std::next(it);
  if (next != blocks_.end() && next->first == address + merged.size && !next->second.allocated &&
      next->first < merged.segment_end) {
    frees.erase({merged.stream, next->second.size, next->first});
    merged.size += next->second.size;
    blocks_.erase(next);
  }
  it = blocks_.find(address);
  if (it != blocks_.begin() && address > merged.segment_start) {
    auto prev = std::prev(it);
    if (!prev->second.allocated && prev->first + prev->second.size == address) {
      frees.erase({merged.stream, prev->second.size, prev->first});
      prev->second.size += merged.size;
      blocks_.erase(it);
      frees.insert({merged.stream, prev->second.size, prev->first});
      return;
    }
  }
  it->second = merged;
  frees.insert({merged.stream, merged.size, address});
}

}  // namespace gmem::profiler
