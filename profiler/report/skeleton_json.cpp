#include "report/skeleton_json.hpp"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "gmem/profiler/reuse_model.hpp"
#include "model/fnv.hpp"

namespace gmem::profiler {
namespace {

using json = nlohmann::ordered_json;

// The recorder's label for node `v` of the skeleton named `graph`, told by its first word.
std::string default_label(const std::string& word, std::size_t v, const std::string& graph) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, v).ptr;
  std::string label;
  label.reserve(word.size() + graph.size() + 24 + static_cast<std::size_t>(end - digits));
  label.append(word).append(" node #").append(digits, end).append(" in graph '").append(graph).append(1, '\'');
  return label;
}

// The word of `label` where it is the recorder's label for node `v` of the skeleton named `graph`
// (default_label(word, v, graph)), without making that label; nothing where it is not.
std::optional<std::string_view> recorder_word(const std::string& label, std::size_t v, const std::string& graph) {
  const std::size_t space = label.find(' ');
  if (space == std::string::npos) return std::nullopt;
  std::string_view rest = std::string_view(label).substr(space);
  const auto take = [&rest](std::string_view part) {
    if (rest.substr(0, part.size()) != part) return false;
    rest.remove_prefix(part.size());
    return true;
  };
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, v).ptr;
  if (!take(" node #") || !take(std::string_view(digits, static_cast<std::size_t>(end - digits))) ||
      !take(" in graph '") || !take(graph) || rest != "'") {
    return std::nullopt;
  }
  return std::string_view(label).substr(0, space);
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::invalid_argument(path + ": " + what);
}

std::size_t index_of(const json& j, const std::string& path) {
  if (!j.is_number_unsigned()) fail(path, "must be a node index (an unsigned integer)");
  return j.get<std::size_t>();
}

}  // namespace

json skeleton_to_json(const skeleton& s) {
  json j;
  j["graph"] = s.name;
  json nodes = json::array();
  for (std::size_t v = 0; v < s.nodes.size(); ++v) {
    const skeleton_node& n = s.nodes[v];
    json o;
    o["kind"] = to_string(n.kind);
    if (n.kind == skeleton_kind::alloc) {
      o["bytes"] = n.bytes;
      o["device"] = n.device;
      if (!n.peers.empty()) o["peers"] = n.peers;
    }
    if (n.kind == skeleton_kind::free) o["frees"] = n.frees;
    if (!n.deps.empty()) o["deps"] = n.deps;
    if (!n.label.empty()) {
      if (const auto word = recorder_word(n.label, v, s.name)) {
        o["node"] = std::string(*word);
      } else {
        o["label"] = n.label;
      }
    }
    nodes.push_back(std::move(o));
  }
  j["nodes"] = std::move(nodes);
  json late = json::array();
  for (const auto& [from, to] : s.late_edges) late.push_back(json::array({from, to}));
  j["late_edges"] = std::move(late);
  return j;
}

bool same_shape(const skeleton& a, const skeleton& b) {
  if (a.nodes.size() != b.nodes.size() || a.late_edges != b.late_edges) return false;
  for (std::size_t v = 0; v < a.nodes.size(); ++v) {
    const skeleton_node &x = a.nodes[v], &y = b.nodes[v];
    if (x.kind != y.kind || x.deps != y.deps || x.label.empty() != y.label.empty()) return false;
    if (x.kind == skeleton_kind::alloc && (x.device != y.device || x.peers != y.peers)) return false;
    if (x.kind == skeleton_kind::free && x.frees != y.frees) return false;
    if (x.label.empty()) continue;
    const auto wx = recorder_word(x.label, v, a.name), wy = recorder_word(y.label, v, b.name);
    if (wx.has_value() != wy.has_value() || (wx ? *wx != *wy : x.label != y.label)) return false;
  }
  return true;
}

std::uint64_t shape_hash(const skeleton& s) {
  std::uint64_t h = fnv::basis;
  fnv::mix_whole(h, s.nodes.size());
  for (std::size_t v = 0; v < s.nodes.size(); ++v) {
    const skeleton_node& n = s.nodes[v];
    fnv::mix_whole(h, static_cast<std::uint64_t>(n.kind));
    if (n.kind == skeleton_kind::alloc) fnv::mix_whole(h, static_cast<std::uint64_t>(n.device));
    if (n.kind == skeleton_kind::free) fnv::mix_whole(h, n.frees);
    fnv::mix_whole(h, n.deps.size());
    for (const std::size_t d : n.deps) fnv::mix_whole(h, d);
    const auto word = n.label.empty() ? std::nullopt : recorder_word(n.label, v, s.name);
    fnv::mix_text(h, word ? *word : std::string_view(n.label));
  }
  for (const auto& [from, to] : s.late_edges) {
    fnv::mix_whole(h, from);
    fnv::mix_whole(h, to);
  }
  return h;
}

std::string skeleton_to_json_text(const skeleton& s) { return skeleton_to_json(s).dump(); }

skeleton skeleton_from_json_text(const std::string& text, const std::string& path) {
  return skeleton_from_json(json::parse(text, nullptr, false), path);
}

skeleton skeleton_from_json(const json& j, const std::string& path) {
  if (!j.is_object()) fail(path, "must be an object");
  skeleton s;
  if (!j.contains("graph") || !j["graph"].is_string()) fail(path + ".graph", "must be a string");
  s.name = j["graph"].get<std::string>();
  if (!j.contains("nodes") || !j["nodes"].is_array()) fail(path + ".nodes", "must be an array");
  const json& nodes = j["nodes"];
  for (std::size_t v = 0; v < nodes.size(); ++v) {
    const std::string p = path + ".nodes[" + std::to_string(v) + "]";
    const json& o = nodes[v];
    if (!o.is_object() || !o.contains("kind") || !o["kind"].is_string()) fail(p + ".kind", "must be \"alloc\", \"free\" or \"empty\"");
    skeleton_node n;
    const std::string kind = o["kind"].get<std::string>();
    if (kind == "alloc") {
      n.kind = skeleton_kind::alloc;
      if (!o.contains("bytes") || !o["bytes"].is_number_unsigned()) fail(p + ".bytes", "must be an unsigned integer");
      n.bytes = o["bytes"].get<std::size_t>();
      if (!o.contains("device") || !o["device"].is_number_integer()) fail(p + ".device", "must be an integer");
      n.device = o["device"].get<int>();
      if (o.contains("peers")) {
        if (!o["peers"].is_array()) fail(p + ".peers", "must be an array of device indices");
        for (const json& d : o["peers"]) {
          if (!d.is_number_integer()) fail(p + ".peers", "must be an array of device indices");
          n.peers.push_back(d.get<int>());
        }
      }
    } else if (kind == "free") {
      n.kind = skeleton_kind::free;
      if (!o.contains("frees")) fail(p + ".frees", "is missing");
      n.frees = index_of(o["frees"], p + ".frees");
    } else if (kind == "empty") {
      n.kind = skeleton_kind::empty;
    } else {
      fail(p + ".kind", "must be \"alloc\", \"free\" or \"empty\", is \"" + kind + "\"");
    }
    if (o.contains("deps")) {
      if (!o["deps"].is_array()) fail(p + ".deps", "must be an array of node indices");
      for (std::size_t k = 0; k < o["deps"].size(); ++k) {
        n.deps.push_back(index_of(o["deps"][k], p + ".deps[" + std::to_string(k) + "]"));
      }
    }
    if (o.contains("label")) {
      if (!o["label"].is_string()) fail(p + ".label", "must be a string");
      n.label = o["label"].get<std::string>();
    } else if (o.contains("node")) {
      const json& word = o["node"];
      if (!word.is_string() || word.get<std::string>().empty() ||
          word.get<std::string>().find(' ') != std::string::npos) {
        fail(p + ".node", "must be one word (the node's kind, as its label names it)");
      }
      n.label = default_label(word.get<std::string>(), v, s.name);
    }
    s.nodes.push_back(std::move(n));
  }
  if (!j.contains("late_edges") || !j["late_edges"].is_array()) fail(path + ".late_edges", "must be an array");
  for (std::size_t e = 0; e < j["late_edges"].size(); ++e) {
    const std::string p = path + ".late_edges[" + std::to_string(e) + "]";
    const json& pair = j["late_edges"][e];
    if (!pair.is_array() || pair.size() != 2) fail(p, "must be [from, to]");
    s.late_edges.emplace_back(index_of(pair[0], p + "[0]"), index_of(pair[1], p + "[1]"));
  }
  try {
    validate(s);
  } catch (const std::invalid_argument& e) {
    fail(path, e.what());
  }
  return s;
}

std::vector<std::string> shape_label_words(const json& shape) {
  std::vector<std::string> words;
  if (!shape.contains("nodes") || !shape["nodes"].is_array()) return words;
  for (const json& o : shape["nodes"]) {
    const bool word = o.is_object() && !o.contains("label") && o.contains("node") && o["node"].is_string();
    words.push_back(word ? o["node"].get<std::string>() : std::string());
  }
  return words;
}

skeleton blank_word_labels(skeleton first, const std::vector<std::string>& words) {
  for (std::size_t v = 0; v < first.nodes.size() && v < words.size(); ++v) {
    if (!words[v].empty()) first.nodes[v].label.clear();
  }
  return first;
}

skeleton skeleton_of_shape(const skeleton& first, const std::vector<std::string>& words, const json& graph,
                           const json& bytes, const std::string& path) {
  if (!graph.is_string()) fail(path + ".graph", "must be a string");
  skeleton s = first;
  s.name = graph.get<std::string>();
  std::size_t b = 0;
  for (std::size_t v = 0; v < s.nodes.size(); ++v) {
    skeleton_node& n = s.nodes[v];
    if (n.kind == skeleton_kind::alloc) {
      const json& size = bytes[b++];
      if (!size.is_number_unsigned()) fail(path + ".nodes[" + std::to_string(v) + "].bytes", "must be an unsigned integer");
      n.bytes = size.get<std::size_t>();
    }
    if (v < words.size() && !words[v].empty()) n.label = default_label(words[v], v, s.name);
  }
  return s;
}

}  // namespace gmem::profiler
