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
#include "report/fields.hpp"

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
  // A label that opens with its space has no word: it is written whole (a word is never empty).
  if (space == std::string::npos || space == 0) return std::nullopt;
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

using fields::at;
using fields::fail;
using fields::kind_of;

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

// A node's own fields: by its kind, where it frees or what it allocates.
void read_node_kind(const json& o, const std::string& p, skeleton_node& n) {
  const std::string kind = fields::text(o, "kind", p);
  if (kind == "alloc") {
    n.kind = skeleton_kind::alloc;
    n.bytes = fields::size(o, "bytes", p);
    n.device = fields::integer(o, "device", p);
    n.peers = fields::devices(o, "peers", p);
  } else if (kind == "free") {
    n.kind = skeleton_kind::free;
    n.frees = fields::index(fields::need(o, "frees", p), fields::join(p, "frees"));
  } else if (kind == "empty") {
    n.kind = skeleton_kind::empty;
  } else {
    fail(fields::join(p, "kind"), "must be \"alloc\", \"free\" or \"empty\", is \"" + kind + "\"");
  }
}

skeleton skeleton_from_json(const json& j, const std::string& path) {
  if (!j.is_object()) fail(path, "must be an object, is " + kind_of(j));
  skeleton s;
  s.name = fields::text(j, "graph", path);
  const json& nodes = fields::array(j, "nodes", path);
  const std::string nodes_path = fields::join(path, "nodes");
  for (std::size_t v = 0; v < nodes.size(); ++v) {
    const std::string p = at(nodes_path, v);
    const json& o = fields::object_at(nodes, v, nodes_path);
    skeleton_node n;
    read_node_kind(o, p, n);
    const json& deps = fields::array(o, "deps", p, fields::optional);
    for (std::size_t k = 0; k < deps.size(); ++k) n.deps.push_back(fields::index(deps[k], at(fields::join(p, "deps"), k)));
    if (o.contains("label")) {
      n.label = fields::text(o, "label", p);
    } else if (o.contains("node")) {
      const std::string word = fields::text(o, "node", p);
      if (word.empty() || word.find(' ') != std::string::npos) {
        fail(fields::join(p, "node"), "must be one word (the node's kind, as its label names it)");
      }
      n.label = default_label(word, v, s.name);
    }
    s.nodes.push_back(std::move(n));
  }
  const json& late = fields::array(j, "late_edges", path);
  for (std::size_t e = 0; e < late.size(); ++e) {
    const std::string p = at(fields::join(path, "late_edges"), e);
    const json& pair = late[e];
    if (!pair.is_array() || pair.size() != 2) fail(p, "must be [from, to]");
    s.late_edges.emplace_back(fields::index(pair[0], p + "[0]"), fields::index(pair[1], p + "[1]"));
  }
  try {
    validate(s);
  } catch (const std::invalid_argument& e) {
    fail(path, std::string("is not a valid skeleton: ") + e.what());
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
  if (!graph.is_string()) fail(path + ".graph", "must be a string, is " + kind_of(graph));
  skeleton s = first;
  s.name = graph.get<std::string>();
  std::size_t b = 0;
  for (std::size_t v = 0; v < s.nodes.size(); ++v) {
    skeleton_node& n = s.nodes[v];
    if (n.kind == skeleton_kind::alloc) {
      const json& size = bytes[b++];
      if (!size.is_number_unsigned()) fail(path + ".nodes[" + std::to_string(v) + "].bytes", "must be an integer >= 0, is " + kind_of(size));
      n.bytes = size.get<std::size_t>();
    }
    if (v < words.size() && !words[v].empty()) n.label = default_label(words[v], v, s.name);
  }
  return s;
}

}  // namespace gmem::profiler
