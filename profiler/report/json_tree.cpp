// JSON text to a tree whose objects are filled once, at their end (json_tree.hpp).
#include "report/json_tree.hpp"

#include <algorithm>
#include <exception>
#include <utility>
#include <vector>

namespace gmem::profiler {
namespace {

using json = nlohmann::ordered_json;

// nlohmann's SAX interface. An array grows in place (a json moves without copying); an object's
// members wait in a vector of pairs whose keys can move, and go into the object at its end.
class tree_builder {
 public:
  json root;

  bool null() { return put(json(nullptr)); }
  bool boolean(bool v) { return put(json(v)); }
  bool number_integer(json::number_integer_t v) { return put(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return put(json(v)); }
  bool number_float(json::number_float_t v, const json::string_t& /*text*/) { return put(json(v)); }
  bool string(json::string_t& v) { return put(json(std::move(v))); }
  bool binary(json::binary_t& v) { return put(json(std::move(v))); }

  bool start_object(std::size_t /*members: unknown in text*/) {
    open_.emplace_back();
    open_.back().object = true;
    return true;
  }

  bool key(json::string_t& k) {
    open_.back().key = std::move(k);
    return true;
  }

  bool end_object() {
    std::vector<std::pair<std::string, json>> members = std::move(open_.back().members);
    open_.pop_back();
    json o = object_with_room(members.size());
    auto& m = o.get_ref<json::object_t&>();
    // As json::parse: a key said twice keeps its first place and its last value.
    for (auto& [k, v] : members) m[k] = std::move(v);
    return put(std::move(o));
  }

  bool start_array(std::size_t /*elements: unknown in text*/) {
    open_.emplace_back();
    open_.back().array = json::array();
    return true;
  }

  bool end_array() {
    json a = std::move(open_.back().array);
    open_.pop_back();
    return put(std::move(a));
  }

  // json::parse's exceptions, of their own types (parse_error, out_of_range).
  template <class Exception>
  bool parse_error(std::size_t /*position*/, const std::string& /*token*/, const Exception& e) {
    throw e;
  }

 private:
  struct open_value {
    bool object = false;
    json array;                                         // an open array: its elements so far
    std::vector<std::pair<std::string, json>> members;  // an open object: its members so far
    std::string key;                                    // and the key of the value to come
  };
  std::vector<open_value> open_;

  bool put(json&& v) {
    if (open_.empty()) {
      root = std::move(v);
    } else if (open_value& in = open_.back(); in.object) {
      in.members.emplace_back(std::move(in.key), std::move(v));
    } else {
      in.array.get_ref<json::array_t&>().push_back(std::move(v));
    }
    return true;
  }
};

// An array that opens within the first split_depth levels of a text: where it opens and closes
// and its own separators (not those of what it holds).
struct array_span {
  std::size_t open = 0, close = 0;
  std::ptrdiff_t parent = -1;  // the array of this list it is in, -1 for none
  std::vector<std::size_t> commas;
};

constexpr std::size_t split_depth = 3;
constexpr std::size_t split_elements = 16;

// The arrays opening within the first split_depth levels, in the text's order; false where the
// text does not balance or ends in a string (parsed whole, it gives json::parse's error).
bool scan_arrays(const std::string& text, std::vector<array_span>& arrays) {
  std::vector<std::ptrdiff_t> open;     // each open value: its array's place in `arrays`, or -1
  std::vector<std::ptrdiff_t> tracked;  // the open arrays of `arrays`
  const char* s = text.data();
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n; ++i) {
    switch (s[i]) {
      case '"':
        for (++i; i < n && s[i] != '"'; ++i) {
          if (s[i] == '\\') ++i;
        }
        if (i >= n) return false;
        break;
      case '[':
        if (open.size() < split_depth) {
          arrays.push_back({i, 0, tracked.empty() ? -1 : tracked.back(), {}});
          tracked.push_back(static_cast<std::ptrdiff_t>(arrays.size() - 1));
          open.push_back(tracked.back());
        } else {
          open.push_back(-1);
        }
        break;
      case '{':
        open.push_back(-1);
        break;
      case ']':
      case '}':
        if (open.empty()) return false;
        if (open.back() >= 0) {
          arrays[static_cast<std::size_t>(open.back())].close = i;
          tracked.pop_back();
        }
        open.pop_back();
        break;
      case ',':
        if (!open.empty() && open.back() >= 0) arrays[static_cast<std::size_t>(open.back())].commas.push_back(i);
        break;
      default:
        break;
    }
  }
  return open.empty();
}

// Where a split array stands in the skeleton: an array of one string, a NUL and this prefix
// before its number. Text holding any escaped NUL is parsed whole, so no string of its own can
// look like one.
const std::string marker_prefix = std::string(1, '\0') + "gmem-split-";

// A run of a split array's elements, parsed as an array of its own.
struct piece {
  std::size_t array = 0;  // which split array (its number among them)
  std::size_t from = 0, to = 0;
};

// The skeleton's markers replaced by their arrays; false where a marker is not where it should be
// (a key said twice drops one) or is met twice.
bool place(json& v, std::vector<json>& arrays, std::vector<bool>& placed) {
  if (v.is_array()) {
    if (v.size() == 1 && v[0].is_string()) {
      const std::string& s = v[0].get_ref<const std::string&>();
      if (s.compare(0, marker_prefix.size(), marker_prefix) == 0) {
        const std::size_t k = std::stoul(s.substr(marker_prefix.size()));
        if (k >= arrays.size() || placed[k]) return false;
        placed[k] = true;
        v = std::move(arrays[k]);
        return true;
      }
    }
    for (json& e : v) {
      if (!place(e, arrays, placed)) return false;
    }
  } else if (v.is_object()) {
    for (auto& [key, member] : v.items()) {
      if (!place(member, arrays, placed)) return false;
    }
  }
  return true;
}

}  // namespace

json parse_json_tree(const std::string& text) {
  tree_builder b;
  json::sax_parse(text, &b);
  return std::move(b.root);
}

json parse_json_tree(const std::string& text, const for_each_index& each, std::size_t split_from_bytes,
                     std::size_t* pieces) {
  if (pieces) *pieces = 0;
  std::vector<array_span> arrays;
  if (!each || text.size() < split_from_bytes || text.find("\\u0000") != std::string::npos ||
      !scan_arrays(text, arrays)) {
    return parse_json_tree(text);
  }
  // The outermost arrays large enough, and their runs of elements.
  std::vector<std::size_t> split;
  std::vector<bool> within(arrays.size(), false);
  std::size_t split_bytes = 0;
  for (std::size_t k = 0; k < arrays.size(); ++k) {
    const array_span& a = arrays[k];
    if (a.parent >= 0 && within[static_cast<std::size_t>(a.parent)]) {
      within[k] = true;
    } else if (a.close - a.open >= split_from_bytes && a.commas.size() + 1 >= split_elements) {
      within[k] = true;
      split.push_back(k);
      split_bytes += a.close - a.open;
    }
  }
  if (split.empty()) return parse_json_tree(text);
  const std::size_t piece_bytes = std::max(split_from_bytes / 16, split_bytes / 64);
  std::vector<piece> runs;
  for (std::size_t s = 0; s < split.size(); ++s) {
    const array_span& a = arrays[split[s]];
    const std::size_t elements = a.commas.size() + 1;
    const auto start = [&a](std::size_t e) { return e == 0 ? a.open + 1 : a.commas[e - 1] + 1; };
    const auto end = [&a, elements](std::size_t e) { return e + 1 == elements ? a.close : a.commas[e]; };
    std::size_t first = 0;
    for (std::size_t e = 0; e < elements; ++e) {
      const bool last = e + 1 == elements;
      // At least two elements a run: an empty element then fails its run's parse ("[1,,2]").
      if (!last && (e - first < 1 || end(e) - start(first) < piece_bytes || elements - e - 1 < 2)) continue;
      runs.push_back({s, start(first), end(e)});
      first = e + 1;
    }
  }
  // The skeleton: the text with each split array's elements replaced by its marker.
  std::string skeleton;
  std::size_t at = 0;
  for (std::size_t s = 0; s < split.size(); ++s) {
    const array_span& a = arrays[split[s]];
    skeleton.append(text, at, a.open + 1 - at);
    skeleton += "\"\\u0000gmem-split-" + std::to_string(s) + "\"";
    at = a.close;
  }
  skeleton.append(text, at, std::string::npos);
  json root;
  std::vector<json> parsed(runs.size());
  const std::vector<std::exception_ptr> failed = run_each_keeping_errors(each, runs.size() + 1, [&](std::size_t i) {
    if (i == 0) {
      root = parse_json_tree(skeleton);
      return;
    }
    const piece& r = runs[i - 1];
    std::string t;
    t.reserve(r.to - r.from + 2);
    t += '[';
    t.append(text, r.from, r.to - r.from);
    t += ']';
    parsed[i - 1] = parse_json_tree(t);
  });
  for (const std::exception_ptr& e : failed) {
    if (e) return parse_json_tree(text);  // its error, where the whole text is refused
  }
  std::vector<json> whole(split.size(), json::array());
  for (std::size_t i = 0; i < runs.size(); ++i) {
    auto& into = whole[runs[i].array].get_ref<json::array_t&>();
    auto& from = parsed[i].get_ref<json::array_t&>();
    into.insert(into.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
  }
  std::vector<bool> placed(split.size(), false);
  if (!place(root, whole, placed) || std::find(placed.begin(), placed.end(), false) != placed.end()) {
    return parse_json_tree(text);
  }
  if (pieces) *pieces = runs.size();
  return root;
}

json object_with_room(std::size_t members) {
  json o(json::value_t::object);
  o.get_ref<json::object_t&>().reserve(members);
  return o;
}

const nlohmann::ordered_json& empty_json_array() {
  static const nlohmann::ordered_json& empty = *new nlohmann::ordered_json(nlohmann::ordered_json::array());
  return empty;
}

}  // namespace gmem::profiler
