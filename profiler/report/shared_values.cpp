#include "report/shared_values.hpp"

#include "report/fields.hpp"

#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace gmem::profiler {
namespace {

using json = nlohmann::ordered_json;

constexpr std::size_t min_tail = 40;  // shorter endings are left in their messages

using fields::at;
using fields::fail;

// The ending `a` and `b` share, from its start in `b`.
std::size_t common_ending(const std::string& a, const std::string& b, std::size_t from) {
  std::size_t n = b.size() - from;
  if (n > a.size()) n = a.size();
  std::size_t same = 0;
  while (same < n && a[a.size() - 1 - same] == b[b.size() - 1 - same]) ++same;
  return b.size() - same;
}

// Where a message's shared ending (from `from` on) may begin for a reader: at a sentence's or
// clause's start (". ", ": ", "; ") outside parentheses, so that the head reads as the message's
// own words, its parentheses closed; npos where none.
std::size_t clause_start(const std::string& text, std::size_t from) {
  int depth = 0;
  for (std::size_t i = 0; i + 1 < text.size(); ++i) {
    depth += text[i] == '(' ? 1 : text[i] == ')' ? -1 : 0;
    if (i >= from && depth == 0 && (text[i] == '.' || text[i] == ':' || text[i] == ';') && text[i + 1] == ' ') return i;
  }
  return std::string::npos;
}

// The scenarios' diagnostics by code, in the order they come.
std::map<std::string, std::vector<json*>> diagnostics_by_code(json& scenarios) {
  std::map<std::string, std::vector<json*>> out;
  for (auto& s : scenarios) {
    const auto d = s.find("diagnostics");
    if (d == s.end() || !d->is_array()) continue;
    for (auto& diag : *d) {
      if (diag.is_object() && diag.contains("code") && diag["code"].is_string() && diag.contains("message") &&
          diag["message"].is_string()) {
        out[diag["code"].get<std::string>()].push_back(&diag);
      }
    }
  }
  return out;
}

json share_message_tails(json& scenarios) {
  json tails = json::object();
  for (auto& [code, diags] : diagnostics_by_code(scenarios)) {
    if (diags.size() < 2) continue;
    const std::string& first = (*diags.front())["message"].get_ref<const std::string&>();
    std::size_t from = 0;  // where the shared ending starts in `first`
    for (std::size_t k = 1; k < diags.size() && first.size() - from >= min_tail; ++k) {
      from = common_ending((*diags[k])["message"].get_ref<const std::string&>(), first, from);
    }
    const std::size_t start = clause_start(first, from);
    if (start == std::string::npos || first.size() - start < min_tail) continue;
    const std::string tail = first.substr(start);
    for (json* diag : diags) {
      json whole = std::move(*diag);
      json head = json::object();
      for (auto& [key, value] : whole.items()) {
        if (key != "message") {
          head[key] = std::move(value);
          continue;
        }
        std::string text = value.get<std::string>();
        text.resize(text.size() - tail.size());
        head["message_head"] = std::move(text);
      }
      *diag = std::move(head);
    }
    tails[code] = tail;
  }
  return tails;
}

void expand_message_tails(json& scenarios, const json& tails) {
  if (!tails.is_object()) fail("recorded.message_tails", "must be an object: by diagnostic code, its messages' ending");
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    const auto d = scenarios[i].find("diagnostics");
    if (d == scenarios[i].end() || !d->is_array()) continue;
    for (std::size_t k = 0; k < d->size(); ++k) {
      json& diag = (*d)[k];
      if (!diag.is_object() || !diag.contains("message_head")) continue;
      const std::string p = at(at("scenarios", i) + ".diagnostics", k);
      if (diag.contains("message")) fail(p + ".message_head", "is given beside message: a diagnostic states its message in one of the two forms");
      const json& head = diag["message_head"];
      if (!head.is_string()) fail(p + ".message_head", "must be a string, is " + fields::kind_of(head));
      const auto code = diag.find("code");
      const auto tail = code != diag.end() && code->is_string() ? tails.find(code->get<std::string>()) : tails.end();
      if (tail == tails.end() || !tail->is_string()) {
        fail(p + ".message_head", "needs its code's ending in recorded.message_tails, which has none for it");
      }
      json whole = json::object();
      for (auto& [key, value] : diag.items()) {
        if (key == "message_head") {
          whole["message"] = value.get<std::string>() + tail->get<std::string>();
        } else {
          whole[key] = std::move(value);
        }
      }
      diag = std::move(whole);
    }
  }
}

}  // namespace

json take_shared_fields(json& objects, const std::vector<std::size_t>& members,
                        const std::function<bool(const std::string&)>& own) {
  json common = json::object();
  if (members.size() < 2) return common;
  for (const auto& [key, value] : objects[members.front()].items()) {
    if (own(key)) continue;
    bool shared = true;
    for (std::size_t k = 1; k < members.size() && shared; ++k) {
      const auto it = objects[members[k]].find(key);
      shared = it != objects[members[k]].end() && *it == value;
    }
    if (shared) common[key] = value;
  }
  for (const std::size_t m : members) {
    for (const auto& [key, value] : common.items()) objects[m].erase(key);
  }
  return common;
}

void share_scenario_values(json& scenarios, json& recorded) {
  if (!scenarios.is_array()) return;
  std::vector<std::size_t> all(scenarios.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (!scenarios[i].is_object()) return;
    all[i] = i;
  }
  json shared = take_shared_fields(scenarios, all, [](const std::string& key) { return key == "name"; });
  // A scenario's allocation offsets (and their unit) are stated where its base is: shared only
  // with it (identical graphs at one address), else given back to each scenario, so that every
  // scenario with a base states its offsets too (the schema asks for both together).
  if (!shared.contains("allocation_base")) {
    for (const char* key : {"allocation_offsets", "allocation_offset_unit"}) {
      const auto it = shared.find(key);
      if (it == shared.end()) continue;
      for (json& s : scenarios) s[key] = *it;
      shared.erase(key);
    }
  }
  if (!shared.empty()) {
    recorded["scenario_fields"] = std::move(shared);
  }
  if (json tails = share_message_tails(scenarios); !tails.empty()) recorded["message_tails"] = std::move(tails);
}

void expand_scenario_values(json& root) {
  const auto rec = root.find("recorded");
  const auto scenarios = root.find("scenarios");
  if (rec == root.end() || !rec->is_object() || scenarios == root.end() || !scenarios->is_array()) return;
  if (const auto fields = rec->find("scenario_fields"); fields != rec->end()) {
    if (!fields->is_object()) fail("recorded.scenario_fields", "must be an object: the values every scenario states alike");
    if (fields->contains("name")) fail("recorded.scenario_fields.name", "is stated by each scenario itself");
    for (auto& s : *scenarios) {
      if (!s.is_object()) continue;  // the reader says what is wrong
      for (const auto& [key, value] : fields->items()) {
        if (!s.contains(key)) s[key] = value;
      }
    }
  }
  if (const auto tails = rec->find("message_tails"); tails != rec->end()) expand_message_tails(*scenarios, *tails);
}

}  // namespace gmem::profiler
