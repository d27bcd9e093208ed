#include "views/text_layout.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <utility>

namespace gmem::profiler {
namespace {

// Stands for a space inside a name that wrap() must not break at (a control character, which
// the report reader never lets into a name).
constexpr char unbroken_space = '\x1f';

}  // namespace

std::string table(const std::vector<std::vector<std::string>>& rows, const std::string& indent,
                  const std::string& align) {
  std::vector<std::size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()));
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line = indent;
    for (std::size_t i = 0; i < row.size(); ++i) {
      const std::string pad(width[i] - row[i].size(), ' ');
      if (i != 0) line += "  ";
      line += i < align.size() && align[i] == 'l' ? row[i] + pad : pad + row[i];
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string wrap(const std::string& text, const std::string& first, const std::string& rest, std::size_t width) {
  std::string out, line = first;
  bool empty = true;  // no word on the line yet
  for (std::size_t at = 0; at < text.size();) {
    // The spaces before a word separate it from the last (kept as written: "key  ok" stays);
    // at a break they go.
    const std::size_t gap = at;
    while (at < text.size() && text[at] == ' ') ++at;
    if (at >= text.size()) break;
    const std::string separator = text.substr(gap, at - gap);
    std::size_t end = text.find(' ', at);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(at, end - at);
    at = end;
    if (!empty && line.size() + separator.size() + word.size() > width) {
      out += line + "\n";
      line = rest;
      empty = true;
    }
    line += (empty ? "" : separator) + word;
    empty = false;
  }
  out += line + "\n";
  std::replace(out.begin(), out.end(), unbroken_space, ' ');
  return out;
}

void append_lines(std::vector<std::string>& out, const std::string& text) {
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(at, end - at));
    at = end + 1;
  }
}

std::string clip(const std::string& text, std::size_t width) {
  if (text.size() <= width) return text;
  if (width <= 3) return text.substr(0, width);
  return text.substr(0, width - 3) + "...";
}

bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  const auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      std::size_t ie = i, je = j;
      while (ie < a.size() && digit(a[ie])) ++ie;
      while (je < b.size() && digit(b[je])) ++je;
      // Compare the runs as numbers: without leading zeros, the longer is larger.
      std::size_t is = i, js = j;
      while (is + 1 < ie && a[is] == '0') ++is;
      while (js + 1 < je && b[js] == '0') ++js;
      if (ie - is != je - js) return ie - is < je - js;
      const int c = a.compare(is, ie - is, b, js, je - js);
      if (c != 0) return c < 0;
      if (ie - i != je - j) return ie - i < je - j;  // "01" after "1": fewer leading zeros first
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

std::string listed(const std::vector<std::string>& names, std::size_t shown, bool unbroken) {
  std::string out;
  const std::size_t n = std::min(shown, names.size());
  for (std::size_t k = 0; k < n; ++k) {
    std::string name = names[k];
    if (unbroken) std::replace(name.begin(), name.end(), ' ', unbroken_space);
    out += (k == 0 ? "" : k + 1 == names.size() ? " and " : ", ") + ("'" + name + "'");
  }
  if (names.size() > n) out += " and " + std::to_string(names.size() - n) + " more";
  return out;
}

std::string plural(std::size_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string clip_middle(const std::string& text, std::size_t width) {
  if (text.size() <= width) return text;
  if (width <= 3) return text.substr(0, width);
  // A third before the cut, the rest after it: names of one site differ at their ends.
  const std::size_t keep = width - 3, head = keep / 3;
  return text.substr(0, head) + "..." + text.substr(text.size() - (keep - head));
}

void fit_first_column(std::vector<std::vector<std::string>>& rows, std::size_t indent, std::size_t width,
                      std::size_t least) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (std::size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  if (widths.empty()) return;
  std::size_t others = 0;
  for (std::size_t i = 1; i < widths.size(); ++i) others += widths[i] + 2;
  const std::size_t room = width > indent + others ? width - indent - others : 0;
  const std::size_t fit = std::max(least, room);
  for (auto& row : rows) {
    if (!row.empty()) row[0] = clip_middle(row[0], fit);
  }
}

namespace {

// "[rank 0 pid 667] x" -> ("rank 0", "667"); ("", "") for a name without that prefix.
std::pair<std::string, std::string> process_of_name(const std::string& name) {
  if (name.empty() || name[0] != '[') return {};
  const std::size_t close = name.find("] ");
  const std::size_t pid = name.rfind(" pid ", close);
  if (close == std::string::npos || pid == std::string::npos || pid == 0) return {};
  return {name.substr(1, pid - 1), name.substr(pid + 5, close - pid - 5)};
}

}  // namespace

std::set<std::string> labels_of_several_processes(const std::vector<std::string>& names) {
  std::map<std::string, std::string> pid_of;
  std::set<std::string> shared;
  for (const std::string& name : names) {
    const auto [label, pid] = process_of_name(name);
    if (label.empty()) continue;
    const auto [it, made] = pid_of.emplace(label, pid);
    if (!made && it->second != pid) shared.insert(label);
  }
  return shared;
}

std::string without_lone_pid(const std::string& name, const std::set<std::string>& shared) {
  const auto [label, pid] = process_of_name(name);
  if (label.empty() || shared.count(label)) return name;
  return "[" + label + "]" + name.substr(name.find("] ") + 1);
}

}  // namespace gmem::profiler
