// JSON text to a tree whose objects are filled once, at their end (json_tree.hpp).
#include "report/json_tree.hpp"

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

}  // namespace

json parse_json_tree(const std::string& text) {
  tree_builder b;
  json::sax_parse(text, &b);
  return std::move(b.root);
}

json object_with_room(std::size_t members) {
  json o(json::value_t::object);
  o.get_ref<json::object_t&>().reserve(members);
  return o;
}

}  // namespace gmem::profiler
