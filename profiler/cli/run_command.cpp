#include <ostream>

#include "cli/commands.hpp"
#include "gmem/profiler/report_io.hpp"
#include "gmem/usage_error.hpp"

namespace gmem::profiler {

int run_run(const run_options& options, const std::string& out_path,
            const std::string& command_line, std::ostream& out, std::ostream& err) {
  try {
    // Everything that can be checked is checked before minutes of measuring.
    check_writable(out_path);
    check_scenario_names(options.only);
    const report rep = run_suite(options, command_line);
    write_report(rep, out_path);
    int ok = 0, skipped = 0, failed = 0;
    for (const auto& s : rep.scenarios) {
      if (s.status == scenario_status::ok) ++ok;
      if (s.status == scenario_status::skipped) ++skipped;
      if (s.status == scenario_status::error) {
        ++failed;
        err << "gmemprof run: scenario " << s.key() << " failed: " << s.status_message << "\n";
      }
    }
    out << "wrote " << out_path << ": " << rep.scenarios.size() << " scenario results (" << ok
        << " ok, " << skipped << " skipped, " << failed << " error) on " << rep.env.device_name
        << "\n";
    return failed ? 1 : 0;
  } catch (const report_error& e) {
    err << "gmemprof run: " << e.what() << "\n";
    return 2;
  } catch (const usage_error& e) {
    err << "gmemprof run: " << e.what() << "\n";
    return 2;
  } catch (const unsupported_error& e) {
    err << "gmemprof run: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    // A CUDA failure outside any scenario (probing the device, measuring the granularity):
    // no report was written, which exit code 1 would wrongly suggest.
    err << "gmemprof run: " << e.what() << "; no report was written\n";
    return 2;
  }
}

}  // namespace gmem::profiler
