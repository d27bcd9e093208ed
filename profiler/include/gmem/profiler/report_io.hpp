#pragma once
// Reports to and from JSON files. The JSON layout (and nlohmann) stays in report_json.cpp; the
// layout is described by reports/schema/report.schema.json, checked by tools/validate_report.py.
//
// Doubles that are not finite (a ratio with nothing to divide by) are written as JSON null and
// read back as NaN, so that a report can always be written after a long run.

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "gmem/profiler/parallel_for.hpp"
#include "gmem/profiler/report.hpp"

namespace gmem::profiler {

/// A report that cannot be read or used; error_kind() tells the regression check which exit
/// code applies.
class report_error : public std::runtime_error {
 public:
  enum class kind {
    missing,               ///< the file does not exist
    unreadable,            ///< it exists but cannot be read (a directory, no permission)
    not_json,              ///< it is not JSON
    wrong_schema_version,  ///< written with another report format version
    invalid,               ///< JSON, but a field is missing or has the wrong type or value
    different_gpu,         ///< two reports measured on different GPUs cannot be compared
    different_kinds,       ///< a recording and a suite report cannot be compared
    unwritable             ///< a report cannot be written to the path asked for
  };

  /// An error of kind `k`; `message` names the file and says what to do.
  report_error(kind k, const std::string& message);

  [[nodiscard]] kind error_kind() const noexcept { return kind_; }

 private:
  kind kind_;
};

/// "missing", "unreadable", ... (for messages and logs).
[[nodiscard]] const char* to_string(report_error::kind k) noexcept;

/// How deeply a report's arrays and objects may nest (the top-level object is level 1). Reports
/// gmemprof writes nest 8 levels; deeper text is refused before it is parsed, because parsing
/// and copying a document nested ~100,000 levels deep overflows the stack.
inline constexpr std::size_t report_max_depth = 256;

/// The JSON trees a report's text was made from or read into, handed to a caller that keeps them
/// instead of freeing them: record mode writes its report as the program ends, where freeing a
/// recording's trees took a tenth of that end (16,000 rounds on the build machine).
struct kept_trees {
  std::vector<std::shared_ptr<void>> trees;
};

/// The report as pretty JSON (2-space indent) with a stable key order; throws nothing but
/// std::bad_alloc. Invalid UTF-8 in strings is replaced by U+FFFD. `each`, where given, makes the
/// scenarios' JSON and the text of long arrays (for_each_index: parallel_for.hpp); the text is the
/// same. `keep`, where given, takes the tree the text was made from.
[[nodiscard]] std::string to_json_string(const report& r, const for_each_index& each = {},
                                         kept_trees* keep = nullptr);

/// Parses a report from JSON text; throws report_error (not_json, wrong_schema_version or
/// invalid) whose message names `source` and the offending field. Text nested deeper than
/// report_max_depth is refused (invalid) before it is parsed. Every string and key read is
/// printable: C0 controls (tab and newline too), DEL and the C1 controls are replaced by the
/// text `\xHH` (C1: `\u00HH`), so a report cannot drive the terminal that shows it; printable
/// text is unchanged, so a report read, written and read again is the same. `each`, where given,
/// parses the text's long arrays in pieces and reads the scenarios and their skeletons; the report
/// and any error are the same as without (the error is the first a reading in order meets).
/// `keep`, where given, takes the tree the text was parsed into.
[[nodiscard]] report from_json_string(const std::string& text, const std::string& source,
                                      const for_each_index& each = {}, kept_trees* keep = nullptr);

/// Writes atomically: a temporary file in the same directory, fsync, then rename over `path`; on
/// any failure the temp file is removed and an existing report at `path` is untouched. Throws
/// report_error(unwritable).
void write_report(const report& r, const std::string& path);

/// Writes `text` to `path` atomically, as write_report does (temporary file, fsync, rename);
/// on failure an existing file at `path` is untouched. Throws report_error(unwritable).
void write_text_atomically(const std::string& text, const std::string& path);

/// Throws report_error(unwritable) unless a report could be written to `path` (its directory
/// exists and a file can be created there); leaves nothing behind and does not touch an
/// existing file at `path`. Call it before a long run starts.
void check_writable(const std::string& path);

/// Reads and validates a report file as from_json_string does; throws report_error (missing,
/// unreadable, not_json, wrong_schema_version, invalid) whose message names the file and what
/// to do. Its scenarios are read on up to 8 threads (parallel_for.hpp).
[[nodiscard]] report read_report(const std::string& path);

}  // namespace gmem::profiler
