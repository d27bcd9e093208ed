// A graph skeleton (the model that travels in reports for `gmemprof replay`): a validated
// skeleton or std::invalid_argument, never a crash; what is accepted writes back to text that
// reads again to the same text.
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "fuzz_support.hpp"
#include "report/skeleton_json.hpp"

using namespace gmem::profiler;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  skeleton s;
  try {
    s = skeleton_from_json_text(text, "skeleton");
  } catch (const std::invalid_argument&) {
    return 0;
  }
  const std::string once = skeleton_to_json_text(s);
  const std::string twice = skeleton_to_json_text(skeleton_from_json_text(once, "written"));
  gmem::fuzz::require(once == twice, "a skeleton written and read back writes the same text");
  return 0;
}
