// gmemprof: the command line over gmem's profiler. Parsing only; the work is in the library.

#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <optional>
#include <string>

#include "gmem/profiler/device_info.hpp"

namespace {

constexpr const char* usage =
    "usage: gmemprof <command> [options]\n"
    "\n"
    "commands:\n"
    "  info [--device N]   the GPU(s): name, compute capability, memory, driver and runtime\n"
    "                      versions, and whether graph memory nodes are supported\n"
    "  --version           the tool version and git commit\n"
    "  --help              this text (also: gmemprof <command> --help)\n";

constexpr const char* info_usage =
    "usage: gmemprof info [--device N]\n"
    "\n"
    "Describes device N (every device when omitted). Without a GPU, says so in one line and\n"
    "exits 0.\n";

std::optional<int> parse_int(const char* text) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0') return std::nullopt;
  return static_cast<int>(v);
}

int info_command(int argc, char** argv) {
  std::optional<int> device;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << info_usage;
      return 0;
    }
    if (arg == "--device" && i + 1 < argc) {
      device = parse_int(argv[++i]);
      if (!device) {
        std::cerr << "gmemprof info: --device takes a device index, got '" << argv[i] << "'\n";
        return 2;
      }
      continue;
    }
    std::cerr << "gmemprof info: unknown argument '" << arg << "'\n" << info_usage;
    return 2;
  }
  return gmem::profiler::run_info(std::cout, std::cerr, device);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::cout << usage;
    return argc < 2 ? 2 : 0;
  }
  const std::string command = argv[1];
  try {
    if (command == "--version") {
      std::cout << gmem::profiler::tool_version() << "\n";
      return 0;
    }
    if (command == "info") return info_command(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "gmemprof " << command << ": " << e.what() << "\n";
    return 1;
  }
  std::cerr << "gmemprof: unknown command '" << command << "'\n" << usage;
  return 2;
}
