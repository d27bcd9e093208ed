#include <exception>
#include <ostream>

#include "views/bench_summary.hpp"
#include "views/check_view.hpp"
#include "gmemprof/commands.hpp"
#include "gmem/profiler/report_io.hpp"
#include "views/show.hpp"

namespace gmem::profiler {

int run_check(const std::string& baseline_path, const std::string& current_path,
              const tolerances& t, std::ostream& out, std::ostream& err, bool all,
              const std::string& format) {
  try {
    const report baseline = read_report(baseline_path);
    const report current = read_report(current_path);
    const comparison c = compare_reports(baseline, current, t);
    if (format != "text") {
      out << (format == "markdown" ? format_markdown(c, all) : format_comparison_json(c, all));
      return exit_code(c);
    }
    if (baseline.recorded && current.recorded) {
      out << format_recorded_check(baseline, baseline_path, current, current_path, c, all);
      return exit_code(c);
    }
    out << "baseline: " << baseline_path << " (" << baseline.env.device_name << ", "
        << baseline.env.date << ", commit " << baseline.env.git_commit << ")\n"
        << "current:  " << current_path << " (" << current.env.device_name << ", "
        << current.env.date << ", commit " << current.env.git_commit << ")\n\n"
        << format_summary(c, all);
    return exit_code(c);
  } catch (const report_error& e) {
    err << "gmemprof check: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {  // never let an internal failure read as a regression
    err << "gmemprof check: " << e.what() << "\n";
    return 2;
  }
}

int run_bench_summary(const std::string& in_path, const std::string& out_path, std::ostream& out,
                      std::ostream& err) {
  try {
    if (!out_path.empty()) check_writable(out_path);
    const std::string md = bench_summary_of_file(in_path);
    if (out_path.empty()) {
      out << md;
    } else {
      write_text_atomically(md, out_path);
      out << "wrote " << out_path << "\n";
    }
    return 0;
  } catch (const std::exception& e) {
    err << "gmemprof bench-summary: " << e.what() << "\n";
    return 2;
  }
}

int run_show(const std::string& path, const show_options& options, const std::string& format, std::ostream& out,
             std::ostream& err) {
  try {
    const report r = read_report(path);
    show_options o = options;
    if (o.source.empty()) o.source = path;
    out << (format == "json" ? show_json(r, o) : format_report(r, o));
    return 0;
  } catch (const report_error& e) {
    err << "gmemprof show: " << e.what() << "\n";
    return 2;
  } catch (const std::invalid_argument& e) {
    err << "gmemprof show: " << path << ": " << e.what() << "\n";
    return 2;
  }
}

}  // namespace gmem::profiler
