#pragma once
// Text layout for the terminal views (show, record's summary): tables, wrapping to a width,
// names clipped to a column, natural name order, "a, b and N more" lists. Plain C++.

#include <cstddef>
#include <set>
#include <string>
#include <vector>

namespace gmem::profiler {

/// The width lines are wrapped and clipped to: a view's lines never need more.
constexpr std::size_t text_width = 100;

/// Rows as columns, each line indented by `indent`; column i left-aligned where align[i] is
/// 'l' (names, words), else right-aligned (numbers); by default the first column only.
[[nodiscard]] std::string table(const std::vector<std::vector<std::string>>& rows, const std::string& indent,
                                const std::string& align = "l");

/// `text` wrapped at spaces to lines of at most `width` characters (a word longer than a line
/// stands alone; names listed unbroken stay whole), the first line starting with `first`, the
/// others with `rest`; ends in "\n".
[[nodiscard]] std::string wrap(const std::string& text, const std::string& first, const std::string& rest,
                               std::size_t width = text_width);

/// Appends each line of `text` (as wrap() and table() write it, "\n"-ended) to `out`.
void append_lines(std::vector<std::string>& out, const std::string& text);

/// `text` cut to `width` characters, "..." marking the cut.
[[nodiscard]] std::string clip(const std::string& text, std::size_t width);

/// `text` cut to `width` characters, "..." marking the cut a third of the way in: its start and,
/// longer, its end (where names of one site differ: "(2)", "batch 8") both kept.
[[nodiscard]] std::string clip_middle(const std::string& text, std::size_t width);

/// The first column of `rows` (names) cut in the middle (clip_middle) just enough that the table,
/// indented by `indent` characters, fits `width`; never to fewer than `least` characters.
void fit_first_column(std::vector<std::vector<std::string>>& rows, std::size_t indent, std::size_t width = text_width,
                      std::size_t least = 24);

/// The process labels ("rank 0", "p1") that more than one pid carries in a merged recording's
/// graph names ("[rank 0 pid 667] x").
[[nodiscard]] std::set<std::string> labels_of_several_processes(const std::vector<std::string>& names);

/// A graph's name for a table: "[rank 0 pid 667] x" as "[rank 0] x" unless `shared` (from
/// labels_of_several_processes) holds "rank 0": the pid then tells nothing apart.
[[nodiscard]] std::string without_lone_pid(const std::string& name, const std::set<std::string>& shared);

/// "1 graph", "3 graphs": a count and the word for it.
[[nodiscard]] std::string plural(std::size_t n, const std::string& one, const std::string& many);

/// Names in natural order: digit runs compare as numbers ("#2" before "#10").
[[nodiscard]] bool natural_less(const std::string& a, const std::string& b);

/// "'a', 'b', 'c' and 7 more": the first `shown` of `names` quoted, then a count. `unbroken`:
/// each name marked so that wrap() never breaks a line inside it.
[[nodiscard]] std::string listed(const std::vector<std::string>& names, std::size_t shown, bool unbroken = false);

}  // namespace gmem::profiler
