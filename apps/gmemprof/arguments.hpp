#pragma once
// gmemprof's argument parser: each command declares its options; the parser applies the
// conventions of the tools gmemprof's users run (git, nsys): long options with a value as
// "--out FILE" or "--out=FILE", short aliases ("-o FILE"), "--" ending the options, and a usage
// error that names the one thing wrong.

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace gmem::cli {

struct option {
  std::string name;         ///< "--out"
  std::string alias;        ///< "-o", or empty
  bool takes_value = false;
  bool repeatable = false;  ///< may be given more than once (values kept in order)
};

/// What a command was given.
struct arguments {
  std::map<std::string, std::vector<std::string>> values;  ///< by option name; flags hold ""
  std::vector<std::string> positional;
  /// After the first positional argument or "--" when the command takes a command line
  /// (`record`): that command line, untouched.
  std::vector<std::string> command;
  bool help = false;  ///< --help or -h

  [[nodiscard]] bool has(const std::string& name) const { return values.count(name) != 0; }
  /// The option's value; `fallback` when it was not given.
  [[nodiscard]] std::string value(const std::string& name, const std::string& fallback = "") const;
  [[nodiscard]] std::vector<std::string> all(const std::string& name) const;
};

/// A usage error: what() is the one line that says what is wrong.
class usage_problem : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Parses `args` (the command's own, after its name). `takes_command`: the first positional
/// argument, or what follows "--", starts a command line of its own. Throws usage_problem for an
/// unknown option, a missing value, or a repeated option that is not repeatable.
[[nodiscard]] arguments parse(const std::vector<std::string>& args, const std::vector<option>& options,
                              bool takes_command = false);

/// A whole number from `text` for option `name` within [min, max]; throws usage_problem naming
/// the option otherwise.
[[nodiscard]] int whole_number(const std::string& name, const std::string& text, int min, int max);

}  // namespace gmem::cli
