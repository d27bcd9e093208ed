// A recording of the sampled captures as the prediction's input, and the choice between it and
// a sample file.

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "gmem/profiler/predict_io.hpp"
#include "gmem/profiler/report_io.hpp"

namespace gmem::profiler {

predict_sample sample_from_recording(const report& r, const std::vector<std::int64_t>& sampled_sizes) {
  if (!r.recorded) {
    throw std::invalid_argument("it is a suite report, not a recording: record the program that captures the sampled "
                                "sizes with gmemprof record, or sample them with gmem.predict.sample");
  }
  const recording& rec = *r.recorded;
  if (sampled_sizes.empty()) {
    throw std::invalid_argument("a recording does not say which batch size each graph was captured at: give "
                                "--sampled-sizes, the sizes the program captured in its order (512,64,8,1)");
  }
  for (std::size_t k = 0; k < sampled_sizes.size(); ++k) {
    if (std::count(sampled_sizes.begin(), sampled_sizes.end(), sampled_sizes[k]) > 1) {
      throw std::invalid_argument("--sampled-sizes names batch size " + std::to_string(sampled_sizes[k]) + " twice");
    }
  }
  std::vector<const recorded_graph*> graphs;
  std::set<long> processes;
  for (const recorded_graph& g : rec.graphs) {
    if (g.kind == "private_pool") {
      throw std::invalid_argument("graph '" + g.name + "' took its memory from the application's allocator" +
                                  (g.pool_id.empty() ? "" : " (pool " + g.pool_id + ")") +
                                  ": a recording holds that pool's growth, not the allocator's calls the prediction "
                                  "replays; sample the captures with gmem.predict.sample in the program instead");
    }
    if (g.instances > 1) {
      throw std::invalid_argument("graph '" + g.name + "' was made " + std::to_string(g.instances) +
                                  " times and recorded as one: record a program that captures each sampled size once");
    }
    graphs.push_back(&g);
    processes.insert(g.pid);
  }
  if (graphs.empty()) {
    throw std::invalid_argument("it recorded no graph with memory nodes (" + std::to_string(rec.graphs_without_memory_nodes) +
                                " without): there is nothing a recording can predict");
  }
  if (processes.size() > 1) {
    throw std::invalid_argument("it holds the graphs of " + std::to_string(processes.size()) +
                                " processes: predict from one process's own report (recorded.processes names each)");
  }
  if (graphs.size() % sampled_sizes.size() != 0) {
    throw std::invalid_argument(std::to_string(graphs.size()) + " graphs with memory nodes do not split evenly among the " +
                                std::to_string(sampled_sizes.size()) + " sampled sizes: give every size the program captured, "
                                "in its order");
  }
  std::stable_sort(graphs.begin(), graphs.end(),
                   [](const recorded_graph* a, const recorded_graph* b) { return a->sequence < b->sequence; });

  predict_sample s;
  s.source = "recording";
  s.device = r.env.device_name;
  s.allocator = "graph memory nodes";
  s.copies = 1;  // one instantiation of each graph read
  const std::size_t per = graphs.size() / sampled_sizes.size();
  std::size_t elsewhere = 0;  // graphs made where the first size's graph at their place was not
  for (std::size_t k = 0; k < sampled_sizes.size(); ++k) {
    sampled_size z;
    z.size = sampled_sizes[k];
    if (z.size < 1) throw std::invalid_argument("--sampled-sizes holds " + std::to_string(z.size) + ", not a batch size");
    z.graphs = per;
    bool every_state = true;
    double state = 0;
    for (std::size_t j = 0; j < per; ++j) {
      const recorded_graph& g = *graphs[k * per + j];
      const recorded_graph& first = *graphs[j];
      if (!g.site.empty() && !first.site.empty() && g.site != first.site) ++elsewhere;
      sampled_graph sg;
      sg.node_pool_change = static_cast<std::int64_t>(g.growth_bytes);
      if (g.exec_state_bytes >= 0) sg.exec_state_bytes = static_cast<double>(g.exec_state_bytes);
      every_state = every_state && sg.exec_state_bytes.has_value();
      state += sg.exec_state_bytes.value_or(0);
      z.node_pool_change += sg.node_pool_change;
      z.used_change += sg.node_pool_change + std::max<std::int64_t>(g.exec_state_bytes, 0) +
                       static_cast<std::int64_t>(g.libraries_at_capture_bytes);
      z.each_graph.push_back(sg);
    }
    if (every_state) z.exec_state_bytes = state;
    s.sizes.push_back(std::move(z));
  }
  s.notes.push_back("from a recording: " + std::to_string(graphs.size()) + " graphs with memory nodes, " +
                    std::to_string(per) + " a sampled size in the order they were instantiated; outside the pools is "
                    "what libraries took while the graphs were captured (a recording does not read the device memory in "
                    "use around each capture: the eager runs' cache and workspaces are not in it, a sample's are)");
  if (elsewhere) {
    s.notes.push_back(std::to_string(elsewhere) + " graph(s) were made elsewhere than the first sampled size's graph at "
                      "their place (their sites differ): check that --sampled-sizes names every size in its order");
  }
  if (rec.graphs_without_memory_nodes) {
    s.notes.push_back(std::to_string(rec.graphs_without_memory_nodes) + " executable graph(s) without memory nodes are not "
                      "in the prediction (the recording counts them, without their state)");
  }
  return s;
}

predict_sample read_predict_input(const std::string& path, const std::vector<std::int64_t>& sampled_sizes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw report_error(report_error::kind::missing, path + " cannot be opened: write a sample with gmem.predict.sample(), "
                                                           "or a recording with gmemprof record");
  }
  std::ostringstream text;
  text << in.rdbuf();
  bool is_sample = true;
  try {
    const nlohmann::json j = nlohmann::json::parse(text.str());
    is_sample = !j.is_object() || j.contains("format") || !j.contains("schema_version");
  } catch (const nlohmann::json::exception&) {
    is_sample = true;  // the sample reader says what is wrong
  }
  if (is_sample) {
    if (!sampled_sizes.empty()) {
      throw report_error(report_error::kind::invalid, path + ": --sampled-sizes is for recordings; a sample names its sizes");
    }
    return predict_sample_from_json(text.str(), path);
  }
  const report r = from_json_string(text.str(), path);
  try {
    return sample_from_recording(r, sampled_sizes);
  } catch (const std::invalid_argument& e) {
    throw report_error(report_error::kind::invalid, path + ": " + e.what());
  }
}

}  // namespace gmem::profiler
