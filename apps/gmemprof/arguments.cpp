#include "gmemprof/arguments.hpp"

#include <cerrno>
#include <climits>
#include <cstdlib>

namespace gmem::cli {

std::string arguments::value(const std::string& name, const std::string& fallback) const {
  const auto it = values.find(name);
  return it == values.end() || it->second.empty() ? fallback : it->second.back();
}

std::vector<std::string> arguments::all(const std::string& name) const {
  const auto it = values.find(name);
  return it == values.end() ? std::vector<std::string>{} : it->second;
}

arguments parse(const std::vector<std::string>& args, const std::vector<option>& options, bool takes_command) {
  arguments out;
  bool options_end = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (options_end || arg == "-" || arg.empty() || arg[0] != '-') {
      if (takes_command) {
        out.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
        return out;
      }
      out.positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      options_end = true;
      continue;
    }
    if (arg == "--help" || arg == "-h") {
      out.help = true;
      continue;
    }
    // "--name=value" as well as "--name value".
    std::string name = arg, inline_value;
    bool has_inline = false;
    const std::size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = arg.substr(0, eq);
      inline_value = arg.substr(eq + 1);
      has_inline = true;
    }
    const option* o = nullptr;
    for (const option& candidate : options) {
      if (candidate.name == name || (!candidate.alias.empty() && candidate.alias == name)) o = &candidate;
    }
    if (!o) throw usage_problem("unknown option '" + name + "'");
    if (!o->takes_value && has_inline) throw usage_problem("option '" + o->name + "' takes no value");
    if (!o->repeatable && out.values.count(o->name)) {
      throw usage_problem("option '" + o->name + "' is given twice");
    }
    std::string value;
    if (o->takes_value) {
      if (has_inline) {
        value = inline_value;
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        throw usage_problem("option '" + name + "' needs a value");
      }
    }
    out.values[o->name].push_back(value);
  }
  return out;
}

int whole_number(const std::string& name, const std::string& text, int min, int max) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || end == text.c_str() || *end != '\0' || errno == ERANGE || v < min || v > max) {
    throw usage_problem("option '" + name + "' takes a whole number" +
                        (max == INT_MAX ? " of at least " + std::to_string(min)
                                        : " from " + std::to_string(min) + " to " + std::to_string(max)) +
                        ", not '" + text + "'");
  }
  return static_cast<int>(v);
}

}  // namespace gmem::cli
