// `gmemprof html` and `gmemprof trace`: the report's views, written atomically.

#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>

#include "gmemprof/commands.hpp"
#include "gmem/profiler/report_io.hpp"
#include "views/views.hpp"

namespace gmem::profiler {
namespace {

std::string read_text(const std::string& path, const char* what) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw report_error(report_error::kind::missing,
                       std::string(what) + " " + path + " does not exist; check the path");
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (!in || !(text << in.rdbuf())) {
    throw report_error(report_error::kind::unreadable,
                       std::string(what) + " " + path + " cannot be read; check that it is a "
                       "readable file");
  }
  return text.str();
}

}  // namespace

int run_html(const std::string& report_path, const std::string& baseline_path,
             const std::string& bench_path, const std::string& out_path, std::ostream& out,
             std::ostream& err) {
  try {
    check_writable(out_path);
    const report current = read_report(report_path);
    html_inputs in;
    in.report_path = report_path;
    if (!baseline_path.empty()) {
      in.check = compare_reports(read_report(baseline_path), current, tolerances{});
      in.baseline_name = std::filesystem::path(baseline_path).filename().string();
    }
    if (!bench_path.empty()) {
      in.bench_json = read_text(bench_path, "benchmark JSON");
      in.bench_name = std::filesystem::path(bench_path).filename().string();
    }
    write_text_atomically(html_page(current, in), out_path);
    out << "wrote " << out_path << "\n";
    return 0;
  } catch (const report_error& e) {
    err << "gmemprof html: " << e.what() << "\n";
    return 2;
  }
}

int run_trace(const std::string& report_path, const std::string& out_path, std::ostream& out,
              std::ostream& err) {
  try {
    check_writable(out_path);
    write_text_atomically(trace_json(read_report(report_path)), out_path);
    out << "wrote " << out_path << " (open it in ui.perfetto.dev or chrome://tracing)\n";
    return 0;
  } catch (const report_error& e) {
    err << "gmemprof trace: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace gmem::profiler
