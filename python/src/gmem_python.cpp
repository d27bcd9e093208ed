// gmem._core: the profiler's C++ API bound for Python with pybind11. Thin on purpose: the
// structs are exposed as read-only views, the calls as they are in C++, and the errors as
// Python exceptions carrying the same messages. Handle conversion (PyTorch, CuPy, cuda-python)
// and the pytest helpers are pure Python, in gmem/__init__.py and gmem/testing.py.

#include <cuda_runtime_api.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "gmem/error.hpp"
#include "gmem/profiler/compare.hpp"
#include "gmem/profiler/phase_driver.hpp"
#include "gmem/profiler/profile.hpp"
#include "gmem/profiler/profile_set.hpp"
#include "gmem/profiler/report.hpp"
#include "gmem/profiler/report_io.hpp"
#include "gmem/profiler/size_text.hpp"
#include "gmem/usage_error.hpp"

namespace py = pybind11;
namespace gp = gmem::profiler;

namespace {

// A scenario parameter as the Python value it holds.
py::object param_to_python(const gp::param_value& v) {
  return std::visit([](const auto& x) -> py::object { return py::cast(x); }, v);
}

gp::report single_result_report(const gp::scenario_result& r) {
  gp::report rep;
  rep.scenarios.push_back(r);
  return rep;
}

gp::scenario_result profile(std::uintptr_t handle, const std::string& name, int device,
                            int reps, int warmups, const std::vector<std::string>& phases,
                            bool auto_free_on_launch, double excess_ratio_threshold,
                            bool price_advice) {
  if (handle == 0) {
    throw gmem::usage_error("profiling graph '" + name +
                            "': the graph handle is 0 (null); pass the cudaGraph_t of a captured "
                            "graph (PyTorch: torch.cuda.CUDAGraph(keep_graph=True), then "
                            "raw_cuda_graph(); CuPy: Graph.graph)");
  }
  gp::profile_options o;
  o.device = device;
  o.reps = reps;
  o.warmups = warmups;
  o.phases = phases;
  o.auto_free_on_launch = auto_free_on_launch;
  o.excess_ratio_threshold = excess_ratio_threshold;
  o.price_advice = price_advice;
  py::gil_scoped_release unlocked;  // the driver work takes milliseconds to seconds
  return gp::profile_graph(reinterpret_cast<cudaGraph_t>(handle), name, o);
}

gp::report profile_set(const std::vector<std::uintptr_t>& handles, const std::vector<std::string>& names,
                       int device, int rounds, bool auto_free_on_launch) {
  if (handles.size() != names.size()) {
    throw gmem::usage_error("profile_graphs: " + std::to_string(handles.size()) + " graphs but " +
                            std::to_string(names.size()) + " names");
  }
  std::vector<std::pair<cudaGraph_t, std::string>> set;
  for (std::size_t i = 0; i < handles.size(); ++i) {
    if (handles[i] == 0) {
      throw gmem::usage_error("profile_graphs: the handle of graph '" + names[i] +
                              "' is 0 (null); pass the cudaGraph_t of a captured graph");
    }
    set.emplace_back(reinterpret_cast<cudaGraph_t>(handles[i]), names[i]);
  }
  gp::set_profile_options o;
  o.device = device;
  o.rounds = rounds;
  o.auto_free_on_launch = auto_free_on_launch;
  py::gil_scoped_release unlocked;
  return gp::profile_graphs(set, o);
}

int device_count() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) {
    (void)cudaGetLastError();
    return 0;
  }
  GMEM_CUDA_TRY(e);
  return n;
}

// gmem's errors as Python exceptions with the same messages (str(e) is what()).
void bind_errors(py::module_& m) {
  static py::exception<gmem::usage_error> usage_exc(m, "UsageError", PyExc_ValueError);
  static py::exception<gmem::unsupported_error> unsupported_exc(m, "UnsupportedError",
                                                                PyExc_RuntimeError);
  static py::exception<gmem::cuda_error> cuda_exc(m, "CudaError", PyExc_RuntimeError);
  static py::exception<gp::report_error> report_exc(m, "ReportError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const gmem::usage_error& e) {
      PyErr_SetString(usage_exc.ptr(), e.what());
    } catch (const gmem::unsupported_error& e) {
      PyErr_SetString(unsupported_exc.ptr(), e.what());
    } catch (const gmem::cuda_error& e) {
      py::object inst = py::reinterpret_borrow<py::object>(cuda_exc.ptr())(e.what());
      inst.attr("code") = static_cast<int>(e.code());
      inst.attr("name") = cudaGetErrorName(e.code());
      PyErr_SetObject(cuda_exc.ptr(), inst.ptr());
    } catch (const gp::report_error& e) {
      py::object inst = py::reinterpret_borrow<py::object>(report_exc.ptr())(e.what());
      inst.attr("kind") = gp::to_string(e.error_kind());
      PyErr_SetObject(report_exc.ptr(), inst.ptr());
    }
  });
}

// What a profiled graph gives: counters, launch costs, diagnostics, the analysis, a scenario.
void bind_results(py::module_& m) {
  py::class_<gp::counters>(m, "Counters")
      .def_readonly("used_current", &gp::counters::used_current)
      .def_readonly("used_high", &gp::counters::used_high)
      .def_readonly("reserved_current", &gp::counters::reserved_current)
      .def_readonly("reserved_high", &gp::counters::reserved_high);
  py::class_<gp::phase_counters>(m, "PhaseCounters")
      .def_readonly("phase", &gp::phase_counters::phase)
      .def_readonly("values", &gp::phase_counters::values);
  py::class_<gp::stats>(m, "Stats")
      .def_readonly("count", &gp::stats::count)
      .def_readonly("median_us", &gp::stats::median_us)
      .def_readonly("min_us", &gp::stats::min_us)
      .def_readonly("max_us", &gp::stats::max_us);
  py::class_<gp::launch_cost>(m, "LaunchCost")
      .def_readonly("phase", &gp::launch_cost::phase)
      .def_readonly("warmups", &gp::launch_cost::warmups)
      .def_readonly("host", &gp::launch_cost::host)
      .def_readonly("wall", &gp::launch_cost::wall)
      // The reference launch timed beside every sample (count 0: not measured)
      .def_readonly("reference_host", &gp::launch_cost::reference_host)
      .def_readonly("reference_wall", &gp::launch_cost::reference_wall);
  py::class_<gp::diagnostic>(m, "Diagnostic")
      .def_readonly("code", &gp::diagnostic::code)
      .def_readonly("severity", &gp::diagnostic::severity)
      .def_readonly("message", &gp::diagnostic::message)
      .def_readonly("bytes", &gp::diagnostic::bytes)
      .def("__repr__", [](const gp::diagnostic& d) {
        return "[" + d.severity + "] " + d.code + ": " + d.message;
      });
  py::class_<gp::analysis_summary>(m, "Analysis")
      .def_readonly("alloc_nodes", &gp::analysis_summary::alloc_nodes)
      .def_readonly("free_nodes", &gp::analysis_summary::free_nodes)
      .def_readonly("unfreed_allocations", &gp::analysis_summary::unfreed_allocations)
      .def_readonly("requested_bytes", &gp::analysis_summary::requested_bytes)
      .def_readonly("distinct_addresses", &gp::analysis_summary::distinct_addresses)
      .def_readonly("va_reuse_ratio", &gp::analysis_summary::va_reuse_ratio)
      .def_readonly("lower_bound_bytes", &gp::analysis_summary::lower_bound_bytes)
      .def_readonly("lower_bound_rounded_bytes",
                    &gp::analysis_summary::lower_bound_rounded_bytes)
      .def_readonly("used_high_bytes", &gp::analysis_summary::used_high_bytes)
      .def_readonly("reserved_high_bytes", &gp::analysis_summary::reserved_high_bytes)
      .def_readonly("physical_reuse_ratio", &gp::analysis_summary::physical_reuse_ratio)
      .def_readonly("bound_ratio", &gp::analysis_summary::bound_ratio);
  py::class_<gp::environment>(m, "Environment")
      .def_readonly("device_name", &gp::environment::device_name)
      .def_readonly("device_index", &gp::environment::device_index)
      .def_readonly("cc_major", &gp::environment::cc_major)
      .def_readonly("cc_minor", &gp::environment::cc_minor)
      .def_readonly("total_memory_bytes", &gp::environment::total_memory_bytes)
      .def_readonly("driver_version", &gp::environment::driver_version)
      .def_readonly("driver_release", &gp::environment::driver_release)
      .def_readonly("runtime_version", &gp::environment::runtime_version)
      .def_readonly("device_count", &gp::environment::device_count)
      .def_readonly("granularity_bytes", &gp::environment::granularity_bytes)
      .def_readonly("granularity_method", &gp::environment::granularity_method)
      .def_readonly("tool_version", &gp::environment::tool_version)
      .def_readonly("git_commit", &gp::environment::git_commit)
      .def_readonly("command_line", &gp::environment::command_line)
      .def_readonly("date", &gp::environment::date);
  py::class_<gp::scenario_result>(m, "ScenarioResult")
      .def_readonly("name", &gp::scenario_result::name)
      .def_property_readonly("params",
                             [](const gp::scenario_result& r) {
                               py::dict d;
                               for (const auto& [k, v] : r.params) d[py::str(k)] = param_to_python(v);
                               return d;
                             })
      .def_property_readonly("status",
                             [](const gp::scenario_result& r) { return gp::to_string(r.status); })
      .def_readonly("status_message", &gp::scenario_result::status_message)
      .def_readonly("counters_after_phase", &gp::scenario_result::counters_after_phase)
      .def_readonly("launch_costs", &gp::scenario_result::launch_costs)
      .def_readonly("analysis", &gp::scenario_result::analysis)
      .def_readonly("diagnostics", &gp::scenario_result::diagnostics)
      .def("key", &gp::scenario_result::key)
      .def("to_json", [](const gp::scenario_result& r) {
        return gp::to_json_string(single_result_report(r));
      });
}

// A recording: its events, graphs, pools, and the report that holds it.
void bind_recordings(py::module_& m) {
  py::class_<gp::recorded_event>(m, "RecordedEvent")
      .def_readonly("t_us", &gp::recorded_event::t_us)
      .def_readonly("kind", &gp::recorded_event::kind)
      .def_readonly("cls", &gp::recorded_event::cls)
      .def_readonly("device", &gp::recorded_event::device)
      .def_readonly("host_us", &gp::recorded_event::host_us)
      .def_readonly("stream", &gp::recorded_event::stream)
      .def_readonly("result", &gp::recorded_event::result)
      .def_readonly("concurrent", &gp::recorded_event::concurrent)
      .def_readonly("growth_bytes", &gp::recorded_event::growth_bytes)
      .def_readonly("before", &gp::recorded_event::before)
      .def_readonly("after", &gp::recorded_event::after);
  py::class_<gp::recorded_graph>(m, "RecordedGraph")
      .def_readonly("name", &gp::recorded_graph::name)
      .def_readonly("identity", &gp::recorded_graph::identity)
      .def_readonly("kind", &gp::recorded_graph::kind)
      .def_readonly("launches", &gp::recorded_graph::launches)
      .def_readonly("growth_bytes", &gp::recorded_graph::growth_bytes)
      .def_readonly("own_footprint_bytes", &gp::recorded_graph::own_footprint_bytes)
      .def_readonly("held_requested_bytes", &gp::recorded_graph::held_requested_bytes)
      .def_readonly("held_granule_bytes", &gp::recorded_graph::held_granule_bytes)
      .def_readonly("capture_pool_growth_bytes", &gp::recorded_graph::capture_pool_growth_bytes)
      .def_readonly("events", &gp::recorded_graph::events);
  py::class_<gp::recorded_pool::share>(m, "PoolShare")
      .def_readonly("graph", &gp::recorded_pool::share::graph)
      .def_readonly("why", &gp::recorded_pool::share::why)
      .def_readonly("bytes", &gp::recorded_pool::share::bytes)
      .def("__repr__", [](const gp::recorded_pool::share& s) {
        return "PoolShare('" + s.graph + "', " + s.why + ", " + std::to_string(s.bytes) + ")";
      });
  py::class_<gp::recorded_pool>(m, "Pool")
      .def_readonly("device", &gp::recorded_pool::device)
      .def_readonly("high_bytes", &gp::recorded_pool::high_bytes)
      .def_readonly("end_bytes", &gp::recorded_pool::end_bytes)
      .def_readonly("start_bytes", &gp::recorded_pool::start_bytes)
      .def_readonly("model_high_bytes", &gp::recorded_pool::model_high_bytes)
      .def_readonly("high_graph", &gp::recorded_pool::high_graph)
      .def_readonly("high_event", &gp::recorded_pool::high_event)
      .def_readonly("attribution", &gp::recorded_pool::attribution)
      .def_readonly("diagnostics", &gp::recorded_pool::diagnostics);
  py::class_<gp::recording>(m, "Recording")
      .def_readonly("partial", &gp::recording::partial)
      .def_readonly("command", &gp::recording::command)
      .def_readonly("notes", &gp::recording::notes)
      .def_readonly("graphs", &gp::recording::graphs)
      .def_readonly("pools", &gp::recording::pools);
  py::class_<gp::report>(m, "Report")
      .def_readonly("version", &gp::report::version)
      .def_readonly("environment", &gp::report::env)
      .def_readonly("scenarios", &gp::report::scenarios)
      .def_readonly("recorded", &gp::report::recorded)
      .def("to_json", [](const gp::report& r) { return gp::to_json_string(r); })
      .def("write", [](const gp::report& r, const std::string& path) { gp::write_report(r, path); },
           py::arg("path"), "Writes the report atomically (temporary file, fsync, rename).");
}

// The check of two reports: tolerances, rows, the comparison.
void bind_checks(py::module_& m) {
  py::class_<gp::tolerances>(m, "Tolerances")
      .def(py::init<>())
      .def_readwrite("memory", &gp::tolerances::memory)
      .def_readwrite("reuse", &gp::tolerances::reuse)
      .def_readwrite("time", &gp::tolerances::time)
      .def_readwrite("time_floor_us", &gp::tolerances::time_floor_us)
      .def_readwrite("per_metric", &gp::tolerances::per_metric)
      .def("set", &gp::set_tolerance, py::arg("assignment"),
           "Parses NAME=FRACTION as gmemprof compare --tolerance does.");
  py::class_<gp::comparison_row>(m, "ComparisonRow")
      .def_readonly("scenario", &gp::comparison_row::scenario)
      .def_readonly("metric", &gp::comparison_row::metric)
      .def_readonly("category", &gp::comparison_row::category)
      .def_readonly("baseline", &gp::comparison_row::baseline)
      .def_readonly("current", &gp::comparison_row::current)
      .def_readonly("change", &gp::comparison_row::change)
      .def_readonly("tolerance", &gp::comparison_row::tolerance)
      .def_readonly("verdict", &gp::comparison_row::verdict);
  py::class_<gp::comparison>(m, "Comparison")
      .def_readonly("rows", &gp::comparison::rows)
      .def_readonly("notes", &gp::comparison::notes)
      .def("regressed", &gp::comparison::regressed)
      .def("exit_code", [](const gp::comparison& c) { return gp::exit_code(c); })
      .def("__str__", [](const gp::comparison& c) { return gp::format_comparison(c); });
}

// The module's functions: profile, read, compare, sizes.
void bind_functions(py::module_& m) {
  m.def("profile_graph", &profile, py::arg("handle"), py::arg("name"), py::arg("device"),
        py::arg("reps"), py::arg("warmups"), py::arg("phases"), py::arg("auto_free_on_launch"),
        py::arg("excess_ratio_threshold"), py::arg("price_advice"));
  m.def("profile_graphs", &profile_set, py::arg("handles"), py::arg("names"), py::arg("device"),
        py::arg("rounds"), py::arg("auto_free_on_launch"));
  m.def("make_report", &gp::make_report, py::arg("scenarios"), py::arg("device"),
        py::arg("command_line"), py::call_guard<py::gil_scoped_release>());
  m.def("read_report", &gp::read_report, py::arg("path"));
  m.def("report_from_json", [](const std::string& text, const std::string& source) { return gp::from_json_string(text, source); },
        py::arg("text"), py::arg("source"));
  m.def("compare_reports", &gp::compare_reports, py::arg("baseline"), py::arg("current"),
        py::arg("tolerances"));
  m.def("all_phases", &gp::all_phases);
  m.def("device_count", &device_count);
  // gmem's one way to write a size (binary units, three significant digits), signed below 0.
  m.def("size_text", [](std::int64_t bytes) {
    return bytes < 0 ? gp::signed_size_text(bytes) : gp::size_text(static_cast<std::uint64_t>(bytes));
  }, py::arg("bytes"));
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "gmem's profiler for CUDA graph memory nodes (C++ core; use the gmem package)";
  bind_errors(m);
  bind_results(m);
  bind_recordings(m);
  bind_checks(m);
  bind_functions(m);
}
