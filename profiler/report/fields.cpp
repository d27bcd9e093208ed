#include "report/fields.hpp"

#include <cmath>
#include <limits>

#include "report/json_tree.hpp"

namespace gmem::profiler::fields {

field_error::field_error(const std::string& path, const std::string& problem)
    : std::invalid_argument(path + " " + problem), path_(path) {}

void fail(const std::string& path, const std::string& problem) { throw field_error(path, problem); }

std::string join(const std::string& path, const char* key) { return path.empty() ? std::string(key) : path + "." + key; }

std::string at(const std::string& path, std::size_t index) { return path + "[" + std::to_string(index) + "]"; }

namespace {

// An integer >= 0, also one a writer stored from a signed type (read back, it is unsigned).
std::optional<std::uint64_t> as_u64(const json& j) {
  if (j.is_number_unsigned()) return j.get<std::uint64_t>();
  if (j.is_number_integer() && j.get<std::int64_t>() >= 0) return static_cast<std::uint64_t>(j.get<std::int64_t>());
  return std::nullopt;
}

}  // namespace

std::string kind_of(const json& j) {
  if (as_u64(j)) return j.dump();
  if (j.is_number_integer()) return "the negative integer " + j.dump();
  if (j.is_number()) return "the number " + j.dump();
  if (j.is_null()) return "null";
  return (j.is_object() || j.is_array() ? "an " : "a ") + std::string(j.type_name());
}

const json* find(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

const json& need(const json& object, const char* key, const std::string& path) {
  const json* j = find(object, key);
  if (!j) fail(join(path, key), "is missing");
  return *j;
}

namespace {

// The field if present; missing is an error only where it is required.
const json* get(const json& parent, const char* key, const std::string& path, presence p) {
  return p == required ? &need(parent, key, path) : find(parent, key);
}

}  // namespace

const json& object(const json& parent, const char* key, const std::string& path) {
  const json& j = need(parent, key, path);
  if (!j.is_object()) fail(join(path, key), "must be an object, is " + kind_of(j));
  return j;
}

const json* optional_object(const json& parent, const char* key, const std::string& path) {
  const json* j = find(parent, key);
  if (j && !j->is_object()) fail(join(path, key), "must be an object, is " + kind_of(*j));
  return j;
}

const json& array(const json& parent, const char* key, const std::string& path, presence p) {
  const json* j = get(parent, key, path, p);
  if (!j) return empty_json_array();
  if (!j->is_array()) fail(join(path, key), "must be an array, is " + kind_of(*j));
  return *j;
}

const json& object_at(const json& array_, std::size_t i, const std::string& path) {
  if (!array_[i].is_object()) fail(at(path, i), "must be an object, is " + kind_of(array_[i]));
  return array_[i];
}

bool flag(const json& parent, const char* key, const std::string& path, bool fallback) {
  const json* j = find(parent, key);
  if (!j) return fallback;
  if (!j->is_boolean()) fail(join(path, key), "must be true or false, is " + kind_of(*j));
  return j->get<bool>();
}

std::string text(const json& parent, const char* key, const std::string& path, presence p, const std::string& fallback) {
  const json* j = get(parent, key, path, p);
  if (!j) return fallback;
  if (!j->is_string()) fail(join(path, key), "must be a string, is " + kind_of(*j));
  return j->get<std::string>();
}

std::string name(const json& parent, const char* key, const std::string& path) {
  std::string s = text(parent, key, path);
  if (s.empty()) fail(join(path, key), "must not be empty");
  return s;
}

std::uint64_t u64(const json& parent, const char* key, const std::string& path, presence p) {
  const json* j = get(parent, key, path, p);
  if (!j) return 0;
  const std::optional<std::uint64_t> v = as_u64(*j);
  if (!v) fail(join(path, key), "must be an integer >= 0, is " + kind_of(*j));
  return *v;
}

std::int64_t i64(const json& parent, const char* key, const std::string& path, presence p) {
  const json* j = get(parent, key, path, p);
  if (!j) return 0;
  if (!j->is_number_integer()) fail(join(path, key), "must be an integer, is " + kind_of(*j));
  const std::optional<std::int64_t> v = as_int64(*j);
  if (!v) {
    fail(join(path, key), "is out of range: " + j->dump() + " (at most " +
                              std::to_string(std::numeric_limits<std::int64_t>::max()) + ")");
  }
  return *v;
}

std::size_t size(const json& parent, const char* key, const std::string& path) {
  const std::uint64_t v = u64(parent, key, path);
  if (v > std::numeric_limits<std::size_t>::max()) {
    fail(join(path, key), "is too large: " + std::to_string(v) + " (at most " +
                              std::to_string(std::numeric_limits<std::size_t>::max()) + ")");
  }
  return static_cast<std::size_t>(v);
}

int integer(const json& parent, const char* key, const std::string& path, presence p) {
  const std::uint64_t v = u64(parent, key, path, p);
  if (v > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) {
    fail(join(path, key), "is out of range: " + std::to_string(v) + " (0 to " +
                              std::to_string(std::numeric_limits<int>::max()) + ")");
  }
  return static_cast<int>(v);
}

double real(const json& parent, const char* key, const std::string& path) {
  const json& j = need(parent, key, path);
  if (j.is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (!j.is_number()) fail(join(path, key), "must be a number, is " + kind_of(j));
  return j.get<double>();
}

double time_us(const json& parent, const char* key, const std::string& path, presence p) {
  const json* j = get(parent, key, path, p);
  if (!j) return 0;
  if (!j->is_number() && !j->is_null()) fail(join(path, key), "must be a number, is " + kind_of(*j));
  const double v = j->is_null() ? std::numeric_limits<double>::quiet_NaN() : j->get<double>();
  if (!std::isfinite(v) || v < 0) {
    fail(join(path, key), "is " + (j->is_null() ? std::string("null (not finite)") : j->dump()) +
                              ": a time must be a finite number of microseconds >= 0");
  }
  return v;
}

std::optional<std::int64_t> as_int64(const json& j) {
  if (j.is_number_unsigned()) {
    const auto u = j.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
    return static_cast<std::int64_t>(u);
  }
  if (j.is_number_integer()) return j.get<std::int64_t>();
  return std::nullopt;
}

std::vector<int> devices(const json& parent, const char* key, const std::string& path) {
  std::vector<int> out;
  const json& a = array(parent, key, path, optional);
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::optional<std::uint64_t> d = as_u64(a[i]);
    if (!d || *d > 1024) fail(at(join(path, key), i), "must be a device index from 0 to 1024, is " + kind_of(a[i]));
    out.push_back(static_cast<int>(*d));
  }
  return out;
}

std::vector<std::string> strings(const json& parent, const char* key, const std::string& path) {
  std::vector<std::string> out;
  const json& a = array(parent, key, path, optional);
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_string()) fail(at(join(path, key), i), "must be a string, is " + kind_of(a[i]));
    out.push_back(a[i].get<std::string>());
  }
  return out;
}

std::size_t index(const json& j, const std::string& path) {
  const std::optional<std::uint64_t> v = as_u64(j);
  if (!v) fail(path, "must be a node index (an unsigned integer), is " + kind_of(j));
  return static_cast<std::size_t>(*v);
}

}  // namespace gmem::profiler::fields
