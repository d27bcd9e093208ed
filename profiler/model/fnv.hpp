#pragma once
// FNV-1a, as the recorder hashes a graph's site and structure (record/recorder_fold.cpp) and its
// identity across runs (record/recording_report.cpp), and a recording's writer a skeleton's shape
// (report/skeleton_json.cpp): one definition, so that a call stack's own hash (call_stack::hash)
// is the state the recorder's hashes start from after its frames.

#include <cstdint>
#include <string_view>

namespace gmem::profiler::fnv {

inline constexpr std::uint64_t basis = 0xcbf29ce484222325ull;
inline constexpr std::uint64_t prime = 0x100000001b3ull;

/// Mixes a text's bytes into `h`, then a 0xff that ends it (so "ab","c" differs from "a","bc").
inline void mix_text(std::uint64_t& h, std::string_view text) {
  for (unsigned char c : text) h = (h ^ c) * prime;
  h = (h ^ 0xff) * prime;
}

/// Mixes a number in whole: one multiply in the hash's chain, not FNV's eight (a model-sized graph
/// of 331 nodes mixes about 1,800 numbers at each instantiation). Its bits are spread first, so
/// that its high ones reach the hash's low ones. Two sequences that differ in one number hash
/// apart (each step is a bijection of the state). Not FNV: for graph and skeleton shapes, which
/// never leave the recording.
inline void mix_whole(std::uint64_t& h, std::uint64_t v) {
  v ^= v >> 33;
  v *= 0xff51afd7ed558ccdull;
  v ^= v >> 33;
  h = (h ^ v) * prime;
}

}  // namespace gmem::profiler::fnv
