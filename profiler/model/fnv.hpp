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

/// Mixes bytes into `h`: a text made of pieces is their mix_bytes in turn, then end_text.
inline void mix_bytes(std::uint64_t& h, std::string_view bytes) {
  for (unsigned char c : bytes) h = (h ^ c) * prime;
}

/// The 0xff that ends a text (so "ab","c" differs from "a","bc").
inline void end_text(std::uint64_t& h) { h = (h ^ 0xff) * prime; }

/// Mixes a text's bytes into `h`, then the 0xff that ends it.
inline void mix_text(std::uint64_t& h, std::string_view text) {
  mix_bytes(h, text);
  end_text(h);
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
