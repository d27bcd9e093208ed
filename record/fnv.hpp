#pragma once
// FNV-1a, as the recorder hashes a graph's site and structure (recorder_fold.cpp) and its
// identity across runs (recording_report.cpp): one definition, so that a call stack's own hash
// (call_stack::hash) is the state both start from after its frames.

#include <cstdint>
#include <string>

namespace gmem::record::fnv {

inline constexpr std::uint64_t basis = 0xcbf29ce484222325ull;
inline constexpr std::uint64_t prime = 0x100000001b3ull;

/// Mixes a text's bytes into `h`, then a 0xff that ends it (so "ab","c" differs from "a","bc").
inline void mix_text(std::uint64_t& h, const std::string& text) {
  for (unsigned char c : text) h = (h ^ c) * prime;
  h = (h ^ 0xff) * prime;
}

/// Mixes a number's eight bytes into `h`, lowest first.
inline void mix_number(std::uint64_t& h, std::uint64_t v) {
  for (int k = 0; k < 8; ++k, v >>= 8) h = (h ^ (v & 0xff)) * prime;
}

}  // namespace gmem::record::fnv
