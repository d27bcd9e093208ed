// `gmemprof html`: the report as one self-contained page. C++ gathers the data (the report's
// JSON, the check's rows, gmem_bench's medians) into one JSON object embedded in the page; the
// page's inline script draws the charts as SVG. Nothing is loaded from anywhere.

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gmem/profiler/report_io.hpp"
#include "gmem/profiler/size_text.hpp"
#include "report/report_json.hpp"
#include "views/bench_summary.hpp"
#include "views/show.hpp"
#include "views/show_parts.hpp"
#include "views/views.hpp"

namespace gmem::profiler {
namespace {

using json = nlohmann::json;

// The page. @DATA@ is replaced by the JSON data object, @TITLE@ by the (escaped) title.
constexpr const char* page_template = R"GMEMHTML(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>@TITLE@</title>
<style>
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:24px auto;max-width:1180px;color:#1d2330;background:#fafbfc;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde2ea;padding-bottom:4px}
.meta{color:#5a6475;font-size:12.5px}.meta b{color:#1d2330;font-weight:600}
.card{background:#fff;border:1px solid #e1e5ec;border-radius:6px;padding:12px;margin:10px 0}
.legend span{display:inline-block;margin-right:16px;font-size:12.5px}.legend i{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:5px;vertical-align:-1px}
svg{display:block}svg text{font:11px system-ui,sans-serif;fill:#3b4456}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(270px,1fr));gap:10px}
#bills{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:0 10px}.bill-table td:nth-child(2){white-space:nowrap}
.mini{background:#fff;border:1px solid #e1e5ec;border-radius:6px;padding:6px 8px 2px 4px;overflow:hidden}.mini h3{font-size:12px;margin:0 0 2px;font-weight:600;overflow-wrap:anywhere}
table{border-collapse:collapse;width:100%;font-size:12.5px}th,td{padding:3px 8px;border-bottom:1px solid #edf0f4;text-align:right}th{background:#f2f4f8}td:first-child,td:nth-child(2),th:first-child,th:nth-child(2){text-align:left}
table.seg-legend td:nth-child(3),table.seg-legend th:nth-child(3){text-align:left}table.seg-legend i{display:inline-block;width:11px;height:11px;border-radius:2px;vertical-align:-1px}
tr.reached td{font-weight:600}
tr.verdict-pass td:last-child{color:#1a7f37;font-weight:600}tr.verdict-regression td,tr.verdict-missing td{background:#ffebe9}tr.verdict-regression td:last-child,tr.verdict-missing td:last-child{color:#cf222e;font-weight:700}tr.verdict-skipped td:last-child{color:#8c959f}
.badge{display:inline-block;padding:2px 8px;border-radius:10px;font-weight:600;font-size:12px}.ok{background:#dafbe1;color:#1a7f37}.bad{background:#ffebe9;color:#cf222e}
.note{color:#5a6475;font-size:12.5px}.conc{color:#b35900;font-weight:600}
code{font-size:12px;background:#f2f4f8;padding:0 3px;border-radius:3px}
#gmem-selfcheck{display:none}
</style></head><body>
<h1 id="title"></h1><div class="meta" id="meta"></div>
<div id="bill-section" style="display:none">
<h2>What the graphs cost the device</h2>
<div class="note">The bill, by kind, each in its own terms: the graph memory-node pool (what it retained, its high watermark), the framework's graph pools (what warm-up runs and captures took, what they retained, the framework's own figure), the executable graphs' state outside every pool, and the process's change (cuMemGetInfo), the rest of it not graph memory. A kind the recording did not see is not listed.</div>
<div id="bills"></div>
</div>
<div id="pool-section" style="display:none">
<h2 id="pool-title">Graph memory pool per device (recorded)</h2>
<div class="note" id="pool-note">The device's reservation over the recording: a point per call that changed it (and per trim), the high watermark the driver measured, and what the pool model says was mapped at that moment, by graph and why. These are the graphs' figures together; each graph's own are below.</div>
<div id="pools"></div>
<h2 id="growth-title">Pool growth each graph caused</h2>
<div class="note" id="gr-note">Growth: what the graph's own calls added to its device's pool (the driver's counters around each call; a private pool's graph: what its capture took). Alone: what the graph reserves by itself from a trimmed pool, predicted by the reuse model (gmemprof replay measures it). A small graph can cause no growth (it fits in what a larger one mapped) or more than it needs alone (remaps after others held memory).</div>
<div class="card"><div class="legend" id="gr-legend"></div><svg id="growth" width="1120"></svg></div>
</div>
<div id="footprint-section">
<h2 id="fp-title">Memory per scenario: requested, lower bound, reserved</h2>
<div class="note" id="fp-note">Requested: bytes all allocation nodes ask for. Lower bound: the heaviest set of allocations that can be live at once, each rounded up to the reservation granularity. Reserved: the driver's reserved-memory high watermark.</div>
<div class="card"><div class="legend" id="fp-legend"></div><svg id="footprint" width="1120"></svg></div>
</div>
<div id="memory-node-sections">
<h2>Allocation lifetimes</h2>
<div class="note" id="lt-note">Execution order across (a topological order of the graph's nodes), addresses down: one box per allocation, from its alloc node to its free node (to the end when the graph does not free it). Boxes in one row share a virtual address: that is reuse.</div>
<div class="grid" id="lifetimes"></div>
<h2 id="counters-title">Counters across phases</h2>
<div class="note" id="ct-note">The four cudaGraphMemAttr counters read after each phase of each scenario.</div>
<div class="legend" id="ct-legend"></div><div class="grid" id="counters"></div>
</div>
<div id="bench-section"><h2>Mapping cost against size</h2><div class="note" id="bench-note"></div>
<div class="card" id="bench-card"><div class="legend" id="bench-legend"></div><svg id="bench" width="1120" height="360"></svg></div></div>
<div id="check-section"><h2 id="check-title">Check against a baseline</h2><div id="check"></div></div>
<pre id="gmem-selfcheck"></pre>
<script>
"use strict";
const started = performance.now();
const errors = [];
window.addEventListener("error", e => { errors.push(String(e.message)); writeSelfcheck(); });
const origError = console.error;
console.error = function(...a) { errors.push(a.map(String).join(" ")); origError.apply(console, a); };
const DATA = @DATA@;
const counts = {bars: 0, lifetime_boxes: 0, lifetime_rows: 0, counter_points: 0, counter_charts: 0, bench_points: 0, verdict_rows: 0,
  pool_charts: 0, pool_points: 0, pool_high_bytes: 0, growth_bars: 0, others_rows: 0, attribution_segments: 0, attribution_bytes: 0,
  attribution_legend_rows: 0, attribution_min_width_px: 0, reached_segments: 0, concurrent_marks: 0, labels_dropped: 0,
  framework_charts: 0, framework_points: 0};
function writeSelfcheck() {
  document.getElementById("gmem-selfcheck").textContent = JSON.stringify(Object.assign({errors}, counts));
}
const NS = "http://www.w3.org/2000/svg";
function el(parent, tag, attrs, text) {
  const e = document.createElementNS(NS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  parent.appendChild(e); return e;
}
function h(parent, tag, attrs, text) {
  const e = document.createElement(tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  parent.appendChild(e); return e;
}
// One way to write a size, the same text as size_text (profiler/model/size_text.cpp): binary
// units, three significant digits. The digits are rounded exactly, ties to even, as printf rounds
// the exact quotient: toFixed rounds ties up (1.125 MiB would read "1.13 MiB", printf "1.12 MiB").
const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
function sizeText(bytes) {
  const b = Math.round(bytes);
  if (b < 0) return "-" + sizeText(-b);
  let v = b, u = 0;
  while (v >= 1024 && u + 1 < UNITS.length) { v /= 1024; u++; }
  if (u === 0) return b + " B";
  let f = v >= 99.95 ? 0 : v >= 9.995 ? 1 : 2;
  if (v >= 1023.5 && u + 1 < UNITS.length) { u++; f = 2; }
  const n = BigInt(b) * 10n ** BigInt(f), d = 1024n ** BigInt(u);
  let q = n / d;
  const twice = 2n * (n % d);
  if (twice > d || (twice === d && q % 2n === 1n)) q += 1n;
  const digits = q.toString().padStart(f + 1, "0");
  return (f ? digits.slice(0, digits.length - f) + "." + digits.slice(digits.length - f) : digits) + " " + UNITS[u];
}
function signedSizeText(b) { return b === 0 ? "0 B" : (b < 0 ? "-" : "+") + sizeText(Math.abs(b)); }
// The page's sizes against size_text's own text for the values C++ wrote beside the data.
(function sizeSelfcheck() {
  counts.size_text_checked = 0; counts.size_text_mismatches = [];
  for (const [b, want] of DATA.size_checks || []) {
    counts.size_text_checked++;
    if (sizeText(b) !== want) counts.size_text_mismatches.push(b + ": " + sizeText(b) + " != " + want);
  }
})();
function key(s) {
  const p = Object.entries(s.parameters || {}).filter(([k, v]) => !(R.recorded && k === "source")).map(([k, v]) => k + "=" + v);
  return p.length ? s.name + "[" + p.join(",") + "]" : s.name;
}
function legend(id, items) {
  const d = document.getElementById(id);
  for (const [name, color] of items) { const s = h(d, "span", {}); h(s, "i", {style: "background:" + color}); s.appendChild(document.createTextNode(name)); }
}
// Two decimals near 0% and 100%, where one would read "0.0%" or "100.0%" of a part that is not.
function percent(part, whole) { const v = 100 * part / whole; return whole ? v.toFixed(v < 0.1 || v > 99.9 ? 2 : 1) + "%" : "-"; }

// Labels. Every label is measured where the browser drew it: a label that would overlap one
// already there, or leave its chart, is moved or dropped, never drawn over another.
function box(e) { const r = e.getBoundingClientRect(); return {l: r.left, t: r.top, r: r.right, b: r.bottom}; }
function meets(a, b, pad) { return a.l < b.r + pad && b.l < a.r + pad && a.t < b.b + pad && b.t < a.b + pad; }
function within(a, o) { return a.l >= o.l - 0.5 && a.r <= o.r + 0.5 && a.t >= o.t - 0.5 && a.b <= o.b + 0.5; }
// A text cut (with "…") to at most `width` pixels; the whole text stays in its tooltip.
function fit(t, width) {
  const full = t.textContent;
  if (t.getComputedTextLength() <= width) return t;
  let lo = 0, hi = full.length;
  while (lo < hi) { const m = (lo + hi + 1) >> 1; t.textContent = full.slice(0, m) + "…"; if (t.getComputedTextLength() <= width) lo = m; else hi = m - 1; }
  t.textContent = lo ? full.slice(0, lo) + "…" : "";
  el(t, "title", {}, full);
  return t;
}
// Places labels next to their points, the first that fits of eight places (above left, where a
// rising step line leaves room, above right, below left, below right, then further off),
// in the order given (the most telling first), or of the item's own `places` (offsets from x, y);
// `taken` are boxes already used (other labels, points). Returns how many were placed.
function placeLabels(svg, items, taken) {
  const area = box(svg);
  let placed = 0;
  for (const it of items) {
    let ok = null;
    for (const [dx, dy, anchor] of it.places || [[-5, -7, "end"], [5, -7, "start"], [-5, 14, "end"], [5, 14, "start"], [5, 27, "start"], [-5, -20, "end"], [-13, -9, "end"], [-13, 20, "end"]]) {
      const t = el(svg, "text", {class: it.cls, x: it.x + dx, y: it.y + dy, "text-anchor": anchor, style: it.style || ""}, it.text);
      const b = box(t);
      if (within(b, area) && !taken.some(o => meets(b, o, 1))) { ok = t; taken.push(b); break; }
      t.remove();
    }
    if (ok) placed++; else counts.labels_dropped++;
  }
  return placed;
}
// The last word on a chart's axis and phase names: in order, one that overlaps a label kept
// before it (or any other text of the chart), or leaves the chart, is dropped (ticks that crowd,
// the phase names of many calls). Other labels were placed or fitted where they were drawn.
function thin(svg) {
  const area = box(svg), texts = [...svg.querySelectorAll("text")].filter(t => t.textContent);
  const thinned = t => t.classList.contains("axis-label") || t.classList.contains("phase-label");
  const kept = texts.filter(t => !thinned(t)).map(box);
  for (const t of texts.filter(thinned)) {
    const b = box(t);
    if (!within(b, area) || kept.some(o => meets(b, o, 1))) { t.remove(); counts.labels_dropped++; continue; }
    kept.push(b);
  }
}
// Linear size axis: steps of a power of two bytes (sizes read in binary units), 3 to 6 lines.
function sizeTicks(max) {
  let step = 1;
  while (max / step > 5) step *= 2;
  const out = [];
  for (let v = 0; v <= max * 1.0001; v += step) out.push(v);
  return out;
}
// Time axis in milliseconds: 1, 2 or 5 times a power of ten, about 8 ticks.
function timeTicks(t0, t1) {
  const span = Math.max(1e-3, t1 - t0);
  let step = Math.pow(10, Math.floor(Math.log10(span / 8)));
  for (const m of [1, 2, 5, 10]) if (span / (step * m) <= 8) { step *= m; break; }
  const out = [];
  for (let v = Math.ceil(t0 / step) * step; v <= t1 + 1e-9; v += step) out.push(v);
  const digits = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  return out.map(v => [v, v.toFixed(digits) + " ms"]);
}

const R = DATA.report, env = R.environment, VIEW = DATA.view || null;
document.title = "gmem report: " + env.device_name;
document.getElementById("title").textContent = "gmem report: " + env.device_name;
(function meta() {
  const m = document.getElementById("meta");
  const items = [["device", env.device_name + " (sm_" + env.compute_capability.replace(".", "") + ", " + sizeText(env.total_memory_bytes) + ")"],
    ["driver", env.driver_release || String(env.driver_version)], ["granularity", sizeText(env.granularity_bytes)],
    ["tool", env.tool_version], ["commit", env.git_commit], ["date", env.date], [R.recorded ? "graphs" : "scenarios", String(VIEW ? VIEW.graphs : R.scenarios.length)]];
  items.forEach(([k, v], i) => { if (i) m.appendChild(document.createTextNode(" · ")); m.appendChild(document.createTextNode(k + " ")); h(m, "b", {}, v); });
})();
// A recording's scenarios whose graphs have memory nodes: a graph of the framework's pool has no
// footprint, lifetimes or counters of its own (zeros are not drawn), its figure is what it added
// to its pool. A suite report's scenarios, all.
const KIND = new Map(((R.recorded || {}).graphs || []).map(g => [g.name, g.kind]));
const nodeScenarios = R.scenarios.filter(s => KIND.get(s.name) !== "private_pool");
if (R.recorded && !nodeScenarios.length) {
  for (const id of ["footprint-section", "memory-node-sections"]) document.getElementById(id).style.display = "none";
}
// Per-graph detail is drawn for the costliest graphs only; the rest are counted.
function shownNote(what) {
  if (!VIEW || VIEW.shown >= VIEW.graphs) return "";
  return " " + what + " the " + VIEW.shown + " costliest of " + VIEW.graphs + " graphs (as gmemprof show orders them); for any other, gmemprof show --graph NAME " + (VIEW.source || "REPORT") + ".";
}

// A recording's pools: per device the reservation over time, its high watermark and what held
// it; then the growth each graph caused. Nothing is drawn for a suite report.
const WHY = {working_set: ["working set of its call", "#4a6fa5"], held_outputs: ["outputs held between launches", "#f2b66d"],
             concurrent_launch: ["launch in another stream", "#d1495b"], idle: ["mapped, held by no graph", "#b7bec9"],
             held_before: ["held before the first call", "#7a7a7a"], private_pool: ["the framework's private pool", "#8e6c8a"]};
function why(w) { return WHY[w] || [w, "#8e6c8a"]; }
(function bills() {
  const rec = R.recorded;
  if (!rec || !(rec.bills || []).length) return;
  document.getElementById("bill-section").style.display = "";
  const host = document.getElementById("bills");
  for (const b of rec.bills) {
    const card = h(host, "div", {class: "card bill"});
    h(card, "h3", {style: "font-size:14px;margin:0 0 4px"}, "Device " + b.device + (b.process ? " of process " + b.process : "") + " (at " + b.end + ")");
    const rows = [];
    let graphs = 0;
    const np = b.memory_node_pool, fp = b.framework_pools, es = b.exec_state, pm = b.process_memory;
    if (np) { rows.push(["graph memory-node pool", np.retained_bytes, "retained; " + sizeText(np.high_bytes) + " at its high watermark"]); graphs += np.retained_bytes; }
    // Seen but holding nothing the framework can show (cudaMallocAsync): not a row of zeros.
    const fpEmpty = fp && !fp.retained_bytes && !fp.peak_bytes && !fp.warmup_bytes && !fp.capture_bytes && !(fp.snapshot_bytes > 0);
    if (fp && !fpEmpty) {
      const checked = fp.checked_captures ? (fp.differing_captures ? "; differs from the framework's figure after " + fp.differing_captures + " of " + fp.checked_captures + " captures"
        : "; equal to the framework's figure after each of " + fp.checked_captures + " captures") : "";
      rows.push(["framework graph pools", fp.retained_bytes, "retained" + (fp.snapshot_bytes !== undefined ? " (the framework's own figure " + sizeText(fp.snapshot_bytes) + ")" : "") +
        "; " + (fp.named ? "warm-up runs " + sizeText(fp.warmup_bytes) + ", " : "") + "captures " + sizeText(fp.capture_bytes) + ", at most " + sizeText(fp.peak_bytes) + " at once" + checked]);
      graphs += fp.retained_bytes;
    }
    const lib = b.libraries_at_capture;
    if (lib) {
      const by = (lib.by_library || []).map(t => t.library + " " + sizeText(t.bytes) + " (" +
        [t.allocations ? t.allocations + " allocation(s)" : "", t.streams ? t.streams + " stream(s) made in a capture" : ""].filter(x => x).join(" and ") + ")").join(", ");
      rows.push(["libraries at capture", lib.bytes, (by ? by + "; " : "") + "taken by warm-up runs and captures outside the framework's pools"]);
      graphs += lib.bytes;
    }
    if (es) { rows.push(["executable-graph state", es.bytes, es.instantiations + " instantiation(s) and upload(s), outside every pool"]); graphs += es.bytes; }
    if (rows.length) rows.push(["graph memory in all", graphs, ""]);
    const own = b.own;
    if (own && own.hook === "interpose") rows.push(["gmem's own", own.bytes || 0, "the recording makes no context, module, stream or allocation on the device"]);
    else if (own) rows.push(["gmem's own", null, "not told apart: CUPTI's own device memory shares the driver's pieces with the executable-graph state (the default hook takes none)"]);
    if (pm) {
      rows.push(["not graph memory", pm.not_graph_bytes, "the program's other allocations"]);
      rows.push(["the process's change", pm.delta_bytes, "cuMemGetInfo, from before its first allocation"]);
    }
    const table = h(card, "table", {class: "bill-table"});
    const head = h(table, "tr", {});
    for (const t of ["kind", "bytes", ""]) h(head, "th", {}, t);
    for (const [kind, bytes, what] of rows) {
      const tr = h(table, "tr", {});
      h(tr, "td", {}, kind);
      h(tr, "td", {}, bytes === null ? "—" : sizeText(bytes));
      h(tr, "td", {style: "text-align:left"}, what);
    }
    counts.bill_rows = (counts.bill_rows || 0) + rows.length;
  }
})();

// The pool's timeline as the page receives it: columns, graph and event names by index.
function points(p) {
  const T = p.timeline || {names: [], events: [], points: []};
  return T.points.map(([t_us, g, e, reserved, growth, concurrent]) =>
    ({t_us, graph: g < 0 ? "" : T.names[g], event: T.events[e], reserved_bytes: reserved, growth_bytes: growth, concurrent: !!concurrent}));
}
function poolChart(card, p, framework_only) {
  const T = points(p);
  const W = 1120, H = 300, L = 74, B = 36, Tp = 18, Rm = 24;
  const svg = el(card, "svg", {class: "pool-chart", width: W, height: H});
  const ts = T.map(t => t.t_us).concat([p.high_t_us]);
  const t0 = Math.min(...ts), t1 = Math.max(...ts);
  const span = t1 > t0 ? t1 - t0 : 1;
  const top = Math.max(1, p.high_bytes, p.model_high_bytes, ...T.map(t => t.reserved_bytes));
  const ticks = sizeTicks(top), ymax = Math.max(top, ticks[ticks.length - 1]) * 1.04;
  const X = t => L + (W - L - Rm) * (t - t0) / span;
  const Y = b => Tp + (H - Tp - B) * (1 - b / ymax);
  for (const b of ticks) {
    el(svg, "line", {x1: L, x2: W - Rm, y1: Y(b), y2: Y(b), stroke: "#e6e9ef"});
    el(svg, "text", {class: "axis-label", x: L - 6, y: Y(b) + 4, "text-anchor": "end"}, sizeText(b));
  }
  for (const [v, text] of timeTicks(t0 / 1000, t1 / 1000)) {
    el(svg, "line", {x1: X(v * 1000), x2: X(v * 1000), y1: H - B, y2: H - B + 4, stroke: "#9aa3b2"});
    el(svg, "text", {class: "axis-label", x: X(v * 1000), y: H - B + 17, "text-anchor": "middle"}, text);
  }
  el(svg, "text", {class: "axis-label", x: (W + L) / 2, y: H - 4, "text-anchor": "middle"}, "time in the program, the recording's clock (reserved after each call)");
  if (T.length) {
    let level = Math.max(0, T[0].reserved_bytes - T[0].growth_bytes);
    const pts = [X(t0) + "," + Y(level)];
    for (const t of T) { pts.push(X(t.t_us) + "," + Y(level)); level = t.reserved_bytes; pts.push(X(t.t_us) + "," + Y(level)); }
    pts.push(X(t1) + "," + Y(level));
    el(svg, "polyline", {class: "pool-line", fill: "none", stroke: "#4a6fa5", "stroke-width": 1.8, points: pts.join(" ")});
  }
  const hy = Y(p.high_bytes);
  thin(svg);  // the axes' crowded ticks go before the labels are placed: they must not block one
  const taken = [...svg.querySelectorAll("text")].map(box);
  if (!framework_only) el(svg, "line", {class: "pool-high-line", x1: L, x2: W - Rm, y1: hy, y2: hy, stroke: "#cf222e", "stroke-dasharray": "5 3"});
  const marks = el(svg, "g", {});
  T.forEach(t => {
    const color = t.growth_bytes > 0 ? "#d1495b" : t.growth_bytes < 0 ? "#2a9d8f" : "#8c959f";
    const c = el(marks, "circle", {class: "pool-point", cx: X(t.t_us), cy: Y(t.reserved_bytes), r: T.length > 200 ? 2 : 3.4, fill: color});
    el(c, "title", {}, (t.graph ? "'" + t.graph + "' " : "") + t.event + (t.concurrent ? " (concurrent)" : "") + ": " + signedSizeText(t.growth_bytes) +
       ", reserved " + sizeText(t.reserved_bytes) + " at " + (t.t_us / 1000).toFixed(3) + " ms");
    counts.pool_points++;
    if (t.concurrent) {
      el(marks, "circle", {class: "concurrent-mark", cx: X(t.t_us), cy: Y(t.reserved_bytes), r: 6.5, fill: "none", stroke: "#e07b00", "stroke-width": 1.6});
      counts.concurrent_marks++;
    }
  });
  if (!framework_only) {
    const hm = el(marks, "path", {class: "pool-high", d: "M" + X(p.high_t_us) + " " + (hy - 6) + "l6 6l-6 6l-6 -6z", fill: "#cf222e"});
    el(hm, "title", {}, "high watermark " + sizeText(p.high_bytes) + (p.high_graph ? ", reached by '" + p.high_graph + "' (" + p.high_event + ")" : "") + (p.high_concurrent ? "; calls of other threads overlapped it" : ""));
    if (p.high_concurrent) {
      el(marks, "circle", {class: "concurrent-mark", cx: X(p.high_t_us), cy: hy, r: 10, fill: "none", stroke: "#e07b00", "stroke-width": 2});
      counts.concurrent_marks++;
    }
  }
  for (const c of marks.children) taken.push(box(c));
  // The line's own label: left, where a program's points are fewest (it settles at the right),
  // above the line, else below it, else at its right end.
  if (!framework_only) {
    const text = "high watermark " + sizeText(p.high_bytes) + " (measured)" + (p.high_concurrent ? " *" : "");
    placeLabels(svg, [{cls: "pool-high-label", style: "fill:#cf222e", text, x: L, y: hy,
                       places: [[14, -5, "start"], [14, 14, "start"], [W - L - Rm - 14, -5, "end"], [W - L - Rm - 14, 14, "end"]]}], taken);
  }
  // The high watermark's point is labelled first, then the largest changes, equal ones spread
  // over the time axis (in bit-reversed order of their index: first, middle, quarters, ...), a
  // dozen where the points are many; a label that does not fit is dropped, its point keeps its
  // tooltip. Points are obstacles: a label never hides one.
  for (const c of marks.querySelectorAll("circle")) taken.push(box(c));
  const bits = Math.max(1, Math.ceil(Math.log2(T.length + 1)));
  const spread = i => { let r = 0; for (let k = 0; k < bits; k++) r = (r << 1) | ((i >> k) & 1); return r; };
  const isHigh = t => t.t_us === p.high_t_us && t.reserved_bytes === p.high_bytes;
  const order = T.map((t, i) => i).sort((a, b) =>
    (isHigh(T[b]) - isHigh(T[a])) || (Math.abs(T[b].growth_bytes) - Math.abs(T[a].growth_bytes)) || (spread(a) - spread(b))).slice(0, T.length > 40 ? 12 : 40);
  placeLabels(svg, order.map(i => ({cls: "pool-label", x: X(T[i].t_us), y: Y(T[i].reserved_bytes), style: "font-size:10px",
    text: (T[i].graph || T[i].event) + " " + signedSizeText(T[i].growth_bytes) + (T[i].concurrent ? " *" : "")})), taken);
  return T;
}
// What was mapped at the high watermark: one stacked bar, linear, a segment per share that can
// be seen (C++ grouped the rest by cause: "N others"), and a table that names each segment.
function attributionBar(card, p) {
  const S = (p.segments || []).filter(a => a.bytes > 0);
  if (!S.length) return;
  const total = S.reduce((s, a) => s + a.bytes, 0);
  h(card, "div", {class: "note"}, "Mapped at the high watermark, by graph and why (pool model, " + sizeText(total) + " in all, " + p.attribution_shares + " shares" +
    (p.attribution_shares > S.length ? "; the largest on their own, the rest grouped by cause" : "") + "; a segment under 0.5% is drawn 6 px wide, its share in the table):");
  const W = 1120, L = 74, Rm = 24, minW = 6, width = W - L - Rm;
  // Linear widths, the smallest widened to stay visible, taken from the others in proportion.
  let w = S.map(a => width * a.bytes / total);
  const small = w.filter(x => x < minW).length, rest = w.filter(x => x >= minW).reduce((s, x) => s + x, 0);
  if (small && rest) w = w.map(x => x < minW ? minW : x * (width - small * minW) / rest);
  const bar = el(card, "svg", {class: "attribution-bar", width: W, height: 50});
  let x = L;
  const label = a => a.graph ? a.graph : a.shares > 1 ? a.shares + " others" : why(a.why)[0];
  S.forEach((a, i) => {
    const r = el(bar, "rect", {class: "attribution-segment", x: x, y: 4, width: w[i], height: 26, fill: why(a.why)[1], stroke: "#fff", "stroke-width": 0.8});
    el(r, "title", {}, label(a) + ": " + why(a.why)[0] + ", " + sizeText(a.bytes) + " (" + percent(a.bytes, total) + ")");
    if (a.reached_high) {
      el(bar, "rect", {class: "reached-mark", x: x - 1, y: 3, width: w[i] + 2, height: 28, fill: "none", stroke: "#1d2330", "stroke-width": 2});
      counts.reached_segments++;
    }
    if (w[i] > 30) fit(el(bar, "text", {class: "segment-label", x: x + w[i] / 2, y: 21, "text-anchor": "middle", style: "fill:#fff;font-weight:600"}, label(a)), w[i] - 8);
    counts.attribution_segments++;
    counts.attribution_bytes += a.bytes;
    x += w[i];
  });
  el(bar, "text", {class: "axis-label", x: L, y: 44}, "0");
  el(bar, "text", {class: "axis-label", x: W - Rm, y: 44, "text-anchor": "end"}, sizeText(total));
  const widths = [...bar.querySelectorAll("rect.attribution-segment")].map(r => r.getBoundingClientRect().width);
  counts.attribution_min_width_px = Math.min(counts.attribution_min_width_px || Infinity, ...widths);
  const t = h(card, "table", {class: "seg-legend"});
  const hr = h(t, "tr", {});
  for (const c of ["", "graph", "why", "size", "share"]) h(hr, "th", {}, c);
  S.forEach(a => {
    const tr = h(t, "tr", {class: "attribution-legend-row" + (a.reached_high ? " reached" : "")});
    h(h(tr, "td", {}), "i", {style: "background:" + why(a.why)[1]});
    h(tr, "td", {}, a.graph ? "'" + a.graph + "'" + (a.reached_high ? " reached the high watermark" + (p.high_concurrent ? " *" : "") : "") : a.shares > 1 ? a.shares + " others" : "no graph");
    h(tr, "td", {}, why(a.why)[0]);
    h(tr, "td", {}, sizeText(a.bytes));
    h(tr, "td", {}, percent(a.bytes, total));
    counts.attribution_legend_rows++;
  });
}
// A graph's name as gmemprof show writes it in a table: its pid left out where its process label
// ("rank 0", "p1") is one process's, the label too where one process made every graph.
const PROCESS_PIDS = (() => {
  const m = new Map();
  for (const g of ((R.recorded || {}).graphs || [])) {
    const x = /^\[(.*) pid (\d+)\] /.exec(g.name);
    if (x) m.set(x[1], (m.get(x[1]) || new Set()).add(x[2]));
  }
  return m;
})();
function unlabelled(name) {
  const x = /^\[(.*) pid (\d+)\] (.*)$/.exec(name);
  if (!x || (PROCESS_PIDS.get(x[1]) || new Set()).size > 1) return name;
  return PROCESS_PIDS.size === 1 ? x[3] : "[" + x[1] + "] " + x[3];
}
// The framework's graph pools of one device, capture by capture: a step per capture to what the
// pool held after it (the framework's own figure, else the recording's), labelled with the graph
// and what it added; one line per pool.
function frameworkChart(card, fps) {
  const retained = fps.reduce((a, f) => a + f.retained_bytes, 0);
  h(card, "div", {class: "note framework-summary"}, "No graph memory nodes on this device: its graphs' memory is the framework's graph pools (" +
    fps.length + (fps.length > 1 ? " pools" : " pool") + ", " + sizeText(retained) + " retained at the end), drawn after each capture: what the pool held then, by the framework's own figure (warm-up runs included). Each point names the graph captured and what its pool grew by.");
  const W = 1120, H = 260, L = 74, B = 36, Tp = 18, Rm = 24;
  const svg = el(card, "svg", {class: "framework-chart", width: W, height: H});
  const held = c => c.framework_bytes !== undefined && c.framework_bytes >= 0 ? c.framework_bytes : c.retained_bytes;
  const n = Math.max(...fps.map(f => f.after_captures.length));
  const top = Math.max(1, ...fps.flatMap(f => f.after_captures.map(held)));
  const ticks = sizeTicks(top), ymax = Math.max(top, ticks[ticks.length - 1]) * 1.04;
  const X = i => L + (W - L - Rm) * (n === 1 ? 0.5 : i / (n - 1));
  const Y = b => Tp + (H - Tp - B) * (1 - b / ymax);
  for (const b of ticks) {
    el(svg, "line", {x1: L, x2: W - Rm, y1: Y(b), y2: Y(b), stroke: "#e6e9ef"});
    el(svg, "text", {class: "axis-label", x: L - 6, y: Y(b) + 4, "text-anchor": "end"}, sizeText(b));
  }
  el(svg, "text", {class: "axis-label", x: (W + L) / 2, y: H - 4, "text-anchor": "middle"}, "captures, in the order the program made them (the pool after each)");
  thin(svg);
  const taken = [...svg.querySelectorAll("text")].map(box);
  const palette = ["#8e6c8a", "#4a6fa5", "#2a9d8f", "#d1495b"];
  const labels = [];
  fps.forEach((f, k) => {
    const color = palette[k % palette.length];
    let level = 0;
    const pts = [];
    f.after_captures.forEach((c, i) => {
      const now = held(c);
      // Recordings that did not name the graph of each check list the pool's graphs in order.
      const graph = c.graph || (f.graphs.length === f.after_captures.length ? unlabelled(f.graphs[i]) : "a capture");
      pts.push(X(i) + "," + Y(level), X(i) + "," + Y(now));
      const pt = el(svg, "circle", {class: "framework-point", cx: X(i), cy: Y(now), r: 3.4, fill: now > level ? "#d1495b" : "#8c959f"});
      el(pt, "title", {}, "'" + graph + "': its pool held " + sizeText(now) + " after its capture (" + signedSizeText(now - level) + ")");
      taken.push(box(pt));
      labels.push({added: now - level, item: {cls: "framework-label", x: X(i), y: Y(now), style: "font-size:10px", text: graph.replace(/^.* \((\D.*)\)$/, "$1") + " " + signedSizeText(now - level)}});
      counts.framework_points++;
      level = now;
    });
    el(svg, "polyline", {class: "framework-line", fill: "none", stroke: color, "stroke-width": 1.8, points: pts.join(" ")});
  });
  labels.sort((a, b) => Math.abs(b.added) - Math.abs(a.added));
  placeLabels(svg, labels.slice(0, 24).map(l => l.item), taken);
  counts.framework_charts++;
}
(function pools() {
  const rec = R.recorded;
  if (!rec) return;
  document.getElementById("pool-section").style.display = "";
  const host = document.getElementById("pools");
  let framework = 0;
  if (!(rec.pools || []).length) h(host, "div", {class: "note"}, "No pool in this recording (an older gmemprof, or the device's granularity unknown): record the program again for the pool's high watermark and what held it.");
  for (const p of rec.pools || []) {
    const card = h(host, "div", {class: "card pool"});
    h(card, "h3", {style: "font-size:14px;margin:0 0 4px"}, "Device " + p.device + (p.process ? " of process " + p.process : ""));
    // No memory nodes on this device: its graphs' memory is the framework's pools', drawn capture
    // by capture (what the pool held after each, by the framework's own figure).
    const fps = (rec.framework_pools || []).filter(f => f.device === p.device && (f.after_captures || []).length &&
      (!p.process || f.id.startsWith("[" + p.process + " ") || f.id.startsWith("[" + p.process + "]")));
    if (p.high_bytes === 0 && fps.length) {
      frameworkChart(card, fps);
      ++framework;
      continue;
    }
    const diff = p.model_high_bytes - p.high_bytes;
    const framework_only = p.high_bytes === 0 && (p.private_pool_bytes || 0) > 0;
    const summary = h(card, "div", {class: "note pool-summary"});
    if (framework_only) {
      summary.textContent = "No graph memory nodes on this device: the curve is the framework's graph pools, " +
        sizeText(p.private_pool_bytes) + " taken by the application's allocator capture by capture (the bill above has their warm-ups and what they retain).";
    } else {
      summary.textContent = "High watermark " + sizeText(p.high_bytes) + " (measured)" +
        (p.high_graph ? ", reached by '" + p.high_graph + "' (" + p.high_event + ") at " + (p.high_t_us / 1000).toFixed(3) + " ms" : "") +
        "; " + sizeText(p.end_bytes) + " reserved at the end; the pool model's reservation at the high: " + sizeText(p.model_high_bytes) +
        (diff === 0 ? " (as measured)" : " (" + sizeText(Math.abs(diff)) + (diff > 0 ? " above" : " below") + " the measurement)") + ".";
      if (p.high_concurrent) h(summary, "span", {class: "conc high-concurrent"}, " * Concurrent: calls of other threads overlapped the one that reached it, and the counters cannot tell which of them did; the last to return is named, and the attribution is taken after it.");
    }
    counts.pool_charts++;
    const T = poolChart(card, p, framework_only);
    if (T.some(t => t.concurrent)) h(card, "div", {class: "note conc concurrent-legend"}, "◯ * concurrent: another thread's call overlapped this call's counter window; its growth is the pool model's share of what the calls grew the pool by together, and the readings of overlapping calls need not rise in time order.");
    counts.pool_high_bytes += p.high_bytes;
    attributionBar(card, p);
    for (const d of p.diagnostics || []) h(card, "div", {class: "note"}, "[" + d.severity + "] " + d.message + (d.bytes ? " (" + sizeText(d.bytes) + ")" : ""));
  }
  if (framework && framework === (rec.pools || []).length) {
    document.getElementById("pool-title").textContent = "The framework's graph pools per device";
    document.getElementById("pool-note").textContent = "What the framework's allocator held for the graphs after each capture (warm-up runs included), by its own figure; the bill above has what they retain at the end.";
  }
})();
// What the others' growth was for (growth_cause in views.hpp), short enough for a row's name.
const GROWTH_CAUSE = {none: "no growth", held_outputs: "for held outputs", working_set: "for working sets", capture: "private-pool captures"};
(function growth() {
  const rec = R.recorded;
  if (!rec) return;
  const C = [["growth it caused", "#d1495b"], ["alone (predicted)", "#8fb8de"]];
  document.getElementById("gr-note").textContent += shownNote(" The rows are") + (VIEW && VIEW.shown < VIEW.graphs ? " The others are counted by what their growth was for: none (each fitted in what others had mapped), held outputs (no more than the granules its outputs pin between launches), working sets (more), a private pool's capture; their growth summed, on the rows' one scale." : "");
  // A graph of the framework's pool: what its pool grew by from the previous capture into it
  // (warm-up runs and capture, PyTorch's figure), else what its capture took; no alone figure.
  const pooled = g => g.kind === "private_pool";
  const grown = g => !pooled(g) ? g.growth_bytes : g.framework_pool_added_bytes !== undefined ? Math.max(0, g.framework_pool_added_bytes) : (g.capture_pool_growth_bytes || 0);
  const rows = (rec.graphs || []).map(g => ({name: g.name, title: "'" + g.name + "'", growth: grown(g), alone: pooled(g) ? null : g.own_footprint_bytes, cls: "growth-bar"}))
    .concat((rec.others || []).map(o => ({name: o.graphs + " others: " + (GROWTH_CAUSE[o.cause] || o.cause), title: o.graphs + " other graphs", growth: o.growth_bytes,
      alone: null, other: true, largest: o.largest_alone_bytes, cls: "others-bar"})));
  const pooledOnly = rows.length && rows.every(r => r.alone === null && !r.other);
  if (pooledOnly) {
    document.getElementById("growth-title").textContent = "What each graph added to its framework pool";
    document.getElementById("gr-note").textContent = "What the pool grew by from the previous capture into it: the graph's warm-up runs and its capture, by the framework's own figure after each capture. In a shared pool a graph made after a larger one may add nothing." + shownNote(" The rows are");
  }
  legend("gr-legend", pooledOnly ? [["added to its pool", C[0][1]]] : C);
  // Names as gmemprof show writes them: without a process label where one process made every
  // graph, and without a site every graph shares (said once, in the note).
  const parts = rows.filter(r => !r.other).map(r => unlabelled(r.name).match(/^(.*) \((.*)\)$/));
  const site = parts.length > 1 && parts.every(m => m && m[1] === parts[0][1]) ? parts[0][1] : "";
  for (const r of rows) {
    if (r.other) continue;
    r.name = unlabelled(r.name);
    if (site) r.name = r.name.slice(site.length + 2, -1);
  }
  if (site) document.getElementById("gr-note").textContent += " Every graph was made at " + site + ".";
  const svg = document.getElementById("growth");
  const rowH = 24, left = 330, width = 1120 - left - 260;
  svg.setAttribute("height", rows.length * rowH + 26);
  const max = Math.max(1, ...rows.map(r => Math.max(r.growth, r.alone || 0)));
  const ticks = sizeTicks(max), top = Math.max(max, ticks[ticks.length - 1]);
  for (const t of ticks) {
    el(svg, "line", {x1: left + width * t / top, x2: left + width * t / top, y1: 0, y2: rows.length * rowH, stroke: "#eef0f4"});
    el(svg, "text", {class: "axis-label", x: left + width * t / top, y: rows.length * rowH + 14, "text-anchor": "middle"}, sizeText(t));
  }
  rows.forEach((g, i) => {
    const y = i * rowH + 3;
    fit(el(svg, "text", {class: "row-label", x: left - 8, y: y + 13, "text-anchor": "end"}, g.name), left - 16);
    const r = el(svg, "rect", {class: g.cls, x: left, y: y, width: Math.max(1, width * g.growth / top), height: 10, fill: C[0][1], "fill-opacity": g.other ? 0.55 : 1});
    el(r, "title", {}, g.title + " grew the pool by " + sizeText(g.growth));
    if (g.alone !== null) {
      const o = el(svg, "rect", {class: "own-bar", x: left, y: y + 11, width: Math.max(1, width * g.alone / top), height: 7, fill: C[1][1]});
      el(o, "title", {}, g.title + " alone (predicted): " + sizeText(g.alone));
    }
    el(svg, "text", {class: "value-label", x: left + width * Math.max(g.growth, g.alone || 0) / top + 6, y: y + 13},
       signedSizeText(g.growth) + (g.alone !== null ? " · alone " + sizeText(g.alone) : g.other ? " in all · each alone ≤ " + sizeText(g.largest) : ""));
    if (g.other) counts.others_rows++; else counts.growth_bars++;
  });
})();

// Footprint: three bars per scenario that ran, on one linear scale: sizes compared side by side
// must look as different as they are (a log scale made 32 MiB and 768 MiB look alike).
(function footprint() {
  // A recording's per-graph figure is the graph's own (alone, predicted), not the device's
  // watermark, which holds every graph's memory: that one is the pool's, above.
  const C = [["requested", "#8fb8de"], ["lower bound (rounded)", "#f2b66d"], [R.recorded ? "alone (predicted)" : "reserved high", "#4a6fa5"]];
  if (R.recorded) {
    document.getElementById("fp-title").textContent = "Memory per graph, each alone: requested, lower bound, reserved alone (predicted)";
    document.getElementById("fp-note").textContent = "Requested: bytes all allocation nodes ask for. Lower bound: the heaviest set of allocations that can be live at once, each rounded up to the reservation granularity. Alone (predicted): what the graph reserves by itself from a trimmed pool, by the reuse model; the device's high watermark is the pool's, above." + shownNote(" The rows are");
  }
  legend("fp-legend", C);
  const ok = nodeScenarios.filter(s => s.status === "ok" && s.analysis);
  const svg = document.getElementById("footprint");
  const rowH = 30, left = 360, width = 1120 - left - 150;
  svg.setAttribute("height", ok.length * rowH + 24);
  const max = Math.max(1, ...ok.map(s => Math.max(s.analysis.requested_bytes, s.analysis.lower_bound_rounded_bytes, s.analysis.reserved_high_bytes)));
  const ticks = sizeTicks(max), top = Math.max(max, ticks[ticks.length - 1]);
  const scale = v => v <= 0 ? 0 : width * v / top;
  for (const t of ticks) {
    const x = left + scale(t);
    el(svg, "line", {x1: x, x2: x, y1: 0, y2: ok.length * rowH, stroke: "#e6e9ef"});
    el(svg, "text", {class: "axis-label", x: x, y: ok.length * rowH + 14, "text-anchor": "middle"}, sizeText(t));
  }
  ok.forEach((s, i) => {
    const y = i * rowH + 3;
    fit(el(svg, "text", {class: "row-label", x: left - 8, y: y + 15, "text-anchor": "end"}, key(s)), left - 16);
    const vals = [s.analysis.requested_bytes, s.analysis.lower_bound_rounded_bytes, s.analysis.reserved_high_bytes];
    vals.forEach((v, j) => {
      const r = el(svg, "rect", {class: "bar", x: left, y: y + j * 8, width: Math.max(1, scale(v)), height: 7, fill: C[j][1]});
      el(r, "title", {}, C[j][0] + ": " + sizeText(v));
      counts.bars++;
    });
    el(svg, "text", {class: "value-label", x: left + Math.max(scale(vals[0]), scale(vals[1]), scale(vals[2])) + 6, y: y + 15}, sizeText(vals[2]) +
       (s.analysis.bound_ratio ? "  ×" + Number(s.analysis.bound_ratio).toFixed(2) : ""));
  });
})();

// Lifetimes: one box per allocation, one row per distinct address.
(function lifetimes() {
  const grid = document.getElementById("lifetimes");
  const withAllocs = nodeScenarios.filter(s => (s.allocations || []).length);
  if (!withAllocs.length) {
    // Running the suite again is no help for a recording: the program's graphs are not the suite's.
    document.getElementById("lt-note").textContent = R.recorded
      ? "This recording holds no allocation lifetimes: gmemprof record reads each graph's memory nodes at instantiation and keeps them as the graph's skeleton (gmemprof replay measures it alone); how the pool grew over the program's calls is the pool chart above."
      : "This report holds no allocation lifetimes: they are recorded since gmem 0.2 (run gmemprof run again).";
    return;
  }
  document.getElementById("lt-note").textContent += shownNote(" The charts are");
  const palette = ["#4a6fa5", "#d1495b", "#2a9d8f", "#f2b66d", "#8e6c8a", "#6c8ebf"];
  for (const s of withAllocs) {
    const A = s.allocations;
    const addrs = [...new Set(A.map(a => a.address))].sort((x, y) => x - y);
    const row = new Map(addrs.map((a, i) => [a, i]));
    const end = Math.max(...A.map(a => Math.max(a.alloc_step, a.free_step === null ? 0 : a.free_step))) + 1;
    const W = 260, L = 6, T = 4, rh = Math.max(2, Math.min(14, Math.floor(150 / addrs.length)));
    const H = T + addrs.length * rh + 18;
    const bx = h(grid, "div", {class: "mini"});
    h(bx, "h3", {}, key(s) + " · " + A.length + " allocations, " + addrs.length + " addresses");
    const svg = el(bx, "svg", {class: "lifetime-chart", width: W, height: H});
    const X = t => L + (W - 2 * L) * t / end;
    addrs.forEach((a, i) => { if (i % 2) el(svg, "rect", {x: L, y: T + i * rh, width: W - 2 * L, height: rh, fill: "#f4f6f9"}); });
    A.forEach(a => {
      const stop = a.free_step === null ? end : a.free_step;
      const r = el(svg, "rect", {class: "lifetime-box", x: X(a.alloc_step), y: T + row.get(a.address) * rh + 0.5,
        width: Math.max(1.5, X(stop) - X(a.alloc_step)), height: Math.max(1, rh - 1), rx: rh > 5 ? 2 : 0,
        fill: palette[row.get(a.address) % palette.length], "fill-opacity": a.free_step === null ? 0.45 : 0.85});
      el(r, "title", {}, "0x" + a.address.toString(16) + " " + sizeText(a.bytes) + ": steps " + a.alloc_step + " to " + (a.free_step === null ? "end (not freed)" : a.free_step));
      counts.lifetime_boxes++;
    });
    counts.lifetime_rows += addrs.length;
    el(svg, "text", {class: "axis-label", x: L, y: H - 4}, "step 0");
    el(svg, "text", {class: "axis-label", x: W - L, y: H - 4, "text-anchor": "end"}, "step " + end);
  }
})();

// Counters: a small chart per scenario, four lines over its phases, sizes on a linear axis.
(function counters() {
  const C = [["used_current", "#4a6fa5"], ["used_high", "#8fb8de"], ["reserved_current", "#d1495b"], ["reserved_high", "#f2b66d"]];
  if (R.recorded) document.getElementById("ct-note").textContent = "The device's four cudaGraphMemAttr counters after each of the graph's recorded calls that read them: the device's, holding every graph's memory, not the graph's own." + shownNote(" The charts are");
  legend("ct-legend", C);
  const grid = document.getElementById("counters");
  for (const s of nodeScenarios) {
    const ph = s.counters_after_phase || [];
    const bx = h(grid, "div", {class: "mini"});
    h(bx, "h3", {}, key(s));
    if (!ph.length) { h(bx, "div", {class: "note"}, s.status + (s.status_message ? ": " + s.status_message : "")); continue; }
    const W = 260, H = 118, L = 58, B = 22, Rm = 14;
    const svg = el(bx, "svg", {class: "counter-chart", width: W, height: H});
    counts.counter_charts++;
    const max = Math.max(1, ...ph.flatMap(p => C.map(([k]) => p[k])));
    const x = i => L + (ph.length === 1 ? (W - L - Rm) / 2 : i * (W - L - Rm) / (ph.length - 1));
    const y = v => 8 + (H - B - 8) * (1 - v / max);
    el(svg, "line", {x1: L, x2: W - Rm, y1: y(0), y2: y(0), stroke: "#c9ced8"});
    el(svg, "text", {class: "axis-label", x: L - 4, y: y(max) + 4, "text-anchor": "end"}, sizeText(max));
    el(svg, "text", {class: "axis-label", x: L - 4, y: y(0) + 4, "text-anchor": "end"}, "0 B");
    ph.forEach((p, i) => {
      // Centred under its point; where names crowd, thin() keeps every other one that fits.
      const anchor = ph.length === 1 ? "middle" : i === 0 ? "start" : i === ph.length - 1 ? "end" : "middle";
      el(svg, "text", {class: "phase-label", x: x(i), y: H - 6, "text-anchor": anchor, style: "font-size:9.5px"}, p.phase.replace(/_/g, " ").replace("first launch", "1st launch"));
    });
    C.forEach(([k, color], j) => {
      el(svg, "polyline", {fill: "none", stroke: color, "stroke-width": 1.6, "stroke-dasharray": j % 2 ? "4 2" : "", points: ph.map((p, i) => x(i) + "," + y(p[k])).join(" ")});
      ph.forEach((p, i) => {
        const c = el(svg, "circle", {class: "cpt", cx: x(i), cy: y(p[k]), r: 2.2, fill: color});
        el(c, "title", {}, p.phase + " " + k + ": " + sizeText(p[k]));
        counts.counter_points++;
      });
    });
  }
})();

// Mapping cost against size, from gmem_bench (one allocation per graph).
(function bench() {
  const note = document.getElementById("bench-note");
  // Without a benchmark (--bench) or a baseline (--baseline) their sections are left out.
  if (!DATA.bench) { document.getElementById("bench-section").style.display = "none"; return; }
  note.textContent = "Median time per call from " + DATA.bench.name + " (gmem_bench), one allocation per graph; both axes logarithmic (times, not sizes compared: each size doubles the last).";
  const want = [["graph/first_launch_no_upload", "#d1495b"], ["graph/upload", "#4a6fa5"], ["graph/launch_after_trim", "#f2b66d"], ["floor/map", "#2a9d8f"], ["graph/steady_launch", "#8c959f"]];
  const series = want.map(([f, c]) => [f, c, DATA.bench.points.filter(p => p.family === f && (p.allocs === null || p.allocs === 1) && p.bytes > 0 && p.us > 0).sort((a, b) => a.bytes - b.bytes)]).filter(s => s[2].length);
  legend("bench-legend", series.map(([f, c]) => [f, c]));
  const svg = document.getElementById("bench");
  const W = 1120, H = 360, L = 70, B = 40, T = 10, Rm = 30;
  const all = series.flatMap(s => s[2]);
  if (!all.length) { document.getElementById("bench-section").style.display = "none"; return; }
  const lx = Math.log2, ly = Math.log10;
  const x0 = lx(Math.min(...all.map(p => p.bytes))), x1 = lx(Math.max(...all.map(p => p.bytes)));
  const y0 = Math.floor(ly(Math.min(...all.map(p => p.us)))), y1 = Math.ceil(ly(Math.max(...all.map(p => p.us))));
  const X = b => L + (W - L - Rm) * (lx(b) - x0) / Math.max(1, x1 - x0);
  const Y = u => T + (H - T - B) * (1 - (ly(u) - y0) / Math.max(1, y1 - y0));
  for (let e = y0; e <= y1; e++) {
    el(svg, "line", {x1: L, x2: W - Rm, y1: Y(10 ** e), y2: Y(10 ** e), stroke: "#e6e9ef"});
    el(svg, "text", {class: "axis-label", x: L - 6, y: Y(10 ** e) + 4, "text-anchor": "end"}, e >= 3 ? (10 ** (e - 3)) + " ms" : (10 ** e) + " µs");
  }
  for (let b = Math.ceil(x0); b <= x1; b += 1) {
    el(svg, "text", {class: "axis-label", x: X(2 ** b), y: H - B + 16, "text-anchor": "middle"}, sizeText(2 ** b));
  }
  el(svg, "text", {class: "axis-label", x: (W + L) / 2, y: H - 6, "text-anchor": "middle"}, "allocation size");
  for (const [f, color, pts] of series) {
    el(svg, "polyline", {fill: "none", stroke: color, "stroke-width": 1.8, points: pts.map(p => X(p.bytes) + "," + Y(p.us)).join(" ")});
    for (const p of pts) {
      const c = el(svg, "circle", {class: "bpt", cx: X(p.bytes), cy: Y(p.us), r: 3.2, fill: color});
      el(c, "title", {}, f + " " + sizeText(p.bytes) + ": " + p.us.toFixed(1) + " µs");
      counts.bench_points++;
    }
  }
})();

// The check's verdicts: regressions first; a long check shows its first rows and counts the rest.
(function check() {
  const d = document.getElementById("check");
  if (!DATA.check) { document.getElementById("check-section").style.display = "none"; return; }
  const rows = DATA.check.rows, C = DATA.check;
  const head = h(d, "div", {});
  h(head, "span", {class: "badge " + (C.regressed ? "bad" : "ok")}, C.regressed ? C.regressed + " regressed" : "no regression");
  head.appendChild(document.createTextNode(" " + C.compared + " compared against " + C.baseline + " (default tolerances; regressions first)" +
    (C.compared > rows.length ? "; the first " + rows.length + " rows below, gmemprof check BASELINE REPORT prints them all" : "")));
  counts.verdict_rows_total = C.compared;
  for (const n of C.notes) h(d, "div", {class: "note"}, n);
  if (C.notes_total > C.notes.length) h(d, "div", {class: "note"}, "and " + (C.notes_total - C.notes.length) + " more notes (gmemprof check prints them all)");
  const t = h(h(d, "div", {class: "card"}), "table", {});
  const hr = h(t, "tr", {});
  for (const c of ["scenario", "metric", "baseline", "current", "change", "tolerance", "verdict"]) h(hr, "th", {}, c);
  const num = (m, v) => v === null ? "–" : /_bytes$/.test(m) ? sizeText(v) : Number(v).toFixed(2);
  for (const r of rows) {
    const tr = h(t, "tr", {class: "verdict-" + r.verdict});
    counts.verdict_rows++;
    for (const v of [r.scenario, r.metric, num(r.metric, r.baseline), num(r.metric, r.current),
                     r.change === null ? "–" : (r.change * 100).toFixed(1) + "%", (r.tolerance * 100).toFixed(0) + "%", r.verdict]) h(tr, "td", {}, v);
  }
})();
for (const svg of document.querySelectorAll("svg")) thin(svg);
// What a reader would see of the labels, measured as the browser laid them out: pairs that
// overlap within one chart, and labels cut by their chart's edge.
(function labelSelfcheck() {
  let overlaps = 0, clipped = 0, labels = 0;
  for (const svg of document.querySelectorAll("svg")) {
    const area = box(svg);
    if (area.r - area.l === 0) continue;  // a hidden chart
    const B = [...svg.querySelectorAll("text")].filter(t => t.textContent).map(box);
    labels += B.length;
    for (let i = 0; i < B.length; i++) {
      if (!within(B[i], area)) clipped++;
      for (let j = i + 1; j < B.length; j++) if (meets(B[i], B[j], -0.5)) overlaps++;
    }
  }
  Object.assign(counts, {labels, label_overlaps: overlaps, labels_clipped: clipped, render_ms: Math.round(performance.now() - started)});
})();
writeSelfcheck();
// The time to the load event, from the navigation's start: what a reader waits for.
window.addEventListener("load", () => { counts.load_ms = Math.round(performance.now()); writeSelfcheck(); });
</script></body></html>
)GMEMHTML";

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

/// gmem_bench's median rows: family (the name before "/bytes:" or "/iterations:"), bytes,
/// allocs (null when the benchmark has none) and the real time in microseconds.
json bench_points(const std::string& text, const std::string& source) {
  const json doc = parse_benchmark_json(text, source);
  json points = json::array();
  for (const auto& b : doc["benchmarks"]) {
    if (benchmark_string(b, "aggregate_name", "") != "median") continue;
    const double us = benchmark_real_time_us(b);
    if (!b.contains("bytes") || !b["bytes"].is_number() || !std::isfinite(us)) continue;
    const std::string name = benchmark_string(b, "name", "");
    std::string family = name.substr(0, name.find("/bytes:"));
    points.push_back({{"family", family},
                      {"bytes", b["bytes"].get<double>()},
                      {"allocs", b.contains("allocs") && b["allocs"].is_number()
                                     ? json(b["allocs"].get<double>())
                                     : json()},
                      {"us", us}});
  }
  return points;
}

// The page draws per-graph detail for this many graphs of a recording, the costliest (as
// `gmemprof show` lists them by default); the others are counted by cause. The page's size then
// grows with the calls the program made (the pool's timeline), not with its graphs' detail.
constexpr std::size_t page_graphs = 10;
// A share of the high watermark gets a segment of its own from 1% of the bar (11 px) up.
constexpr double segment_fraction = 0.01;
// The check's rows and notes the page lists, regressions first: gmemprof check prints them all
// (a recording of 1000 graphs checked against itself: 8004 rows, 3000 notes).
constexpr std::size_t page_check_rows = 100;
constexpr std::size_t page_check_notes = 20;

// The pool's timeline as columns: [t_us, graph (index into names, -1 none), event (index), reserved,
// growth, concurrent], names once each. A point was ~130 bytes as an object, is ~50 here.
json timeline_columns(const recorded_pool& p) {
  json names = json::array(), events = json::array(), points = json::array();
  std::map<std::string, int> name_at, event_at;
  const auto index = [](std::map<std::string, int>& at, json& list, const std::string& v) {
    const auto [it, fresh] = at.emplace(v, static_cast<int>(list.size()));
    if (fresh) list.push_back(v);
    return it->second;
  };
  for (const auto& t : p.timeline) {
    points.push_back(json::array({finite_or_null(t.t_us), t.graph.empty() ? -1 : index(name_at, names, t.graph),
                                  index(event_at, events, t.event), t.reserved_bytes, t.growth_bytes,
                                  t.concurrent ? 1 : 0}));
  }
  return json{{"names", names}, {"events", events}, {"points", points}};
}

json segments_json(const recorded_pool& p) {
  json out = json::array();
  for (const auto& s : attribution_segments(p, page_graphs, segment_fraction)) {
    out.push_back({{"graph", s.graph}, {"why", s.why}, {"bytes", s.bytes}, {"shares", s.shares},
                   {"reached_high", s.reached_high}});
  }
  return out;
}

// A recording's report as the page needs it: the costliest graphs' scenarios and figures, the
// others counted by cause, each pool's attribution as segments and its timeline as columns; the
// recording's raw calls (graph events, counter readings, the call sequence) stay in the report.
json recording_view(const report& r, json& doc, const std::string& source) {
  const recording& rec = *r.recorded;
  const graph_selection chosen = select_graphs(rec, page_graphs);
  json scenarios = json::array(), graphs = json::array();
  for (std::size_t gi : chosen.top) {
    json g = doc["recorded"]["graphs"][gi];
    for (const char* k : {"events", "instantiate_stack", "identity"}) g.erase(k);
    g["cost"] = graph_cost(rec.graphs[gi]);
    graphs.push_back(std::move(g));
    if (const scenario_result* s = scenario_of(r, gi)) {
      json sj = doc["scenarios"][static_cast<std::size_t>(s - r.scenarios.data())];
      sj.erase("skeletons");
      scenarios.push_back(std::move(sj));
    }
  }
  json others = json::array();
  for (const auto& o : chosen.others) {
    others.push_back({{"cause", o.cause}, {"graphs", o.graphs}, {"cost", o.cost},
                      {"growth_bytes", o.growth_bytes}, {"largest_alone_bytes", o.largest_alone_bytes}});
  }
  json& out = doc["recorded"];
  for (const char* k : {"timeline", "sequence"}) out.erase(k);
  out["graphs"] = std::move(graphs);
  out["others"] = std::move(others);
  doc["scenarios"] = std::move(scenarios);
  for (std::size_t k = 0; k < rec.pools.size(); ++k) {
    const recorded_pool& p = rec.pools[k];
    json& pj = out["pools"][k];
    std::size_t shares = 0;
    for (const auto& a : p.attribution) shares += a.bytes > 0;
    pj.erase("attribution");
    pj["segments"] = segments_json(p);
    pj["attribution_shares"] = shares;
    pj["timeline"] = timeline_columns(p);
  }
  return json{{"graphs", rec.graphs.size()}, {"shown", chosen.top.size()}, {"source", source}};
}

// The check's rows, regressions and missing ones first (in their order), then the rest, at most
// page_check_rows of them; the counts are of all.
json check_rows(const comparison& c, const std::string& baseline) {
  const auto bad = [](const std::string& v) { return v == "regression" || v == "missing"; };
  std::vector<const comparison_row*> order;
  for (const auto& row : c.rows) order.push_back(&row);
  std::stable_sort(order.begin(), order.end(), [&](const comparison_row* a, const comparison_row* b) {
    const int ra = bad(a->verdict) ? 0 : a->verdict == "pass" ? 1 : 2;
    const int rb = bad(b->verdict) ? 0 : b->verdict == "pass" ? 1 : 2;
    return ra < rb;
  });
  json rows = json::array();
  std::size_t regressed = 0;
  for (const comparison_row* row : order) {
    regressed += bad(row->verdict);
    if (rows.size() >= page_check_rows) continue;
    rows.push_back({{"scenario", row->scenario}, {"metric", row->metric},
                    {"category", row->category}, {"baseline", finite_or_null(row->baseline)},
                    {"current", finite_or_null(row->current)},
                    {"change", finite_or_null(row->change)},
                    {"tolerance", finite_or_null(row->tolerance)}, {"verdict", row->verdict}});
  }
  json notes = json::array();
  for (std::size_t k = 0; k < c.notes.size() && k < page_check_notes; ++k) notes.push_back(c.notes[k]);
  return json{{"baseline", baseline}, {"rows", rows}, {"notes", notes}, {"notes_total", c.notes.size()},
              {"compared", c.rows.size()}, {"regressed", regressed}};
}

// Sizes the page writes itself, with size_text's text for them: the page checks its own
// formatter against these (ties that printf rounds to even, unit boundaries, the largest units).
json size_checks() {
  constexpr std::uint64_t KiB = 1024, MiB = KiB * KiB, GiB = MiB * KiB;
  const std::uint64_t values[] = {0, 1, 1023, 1024, 1536, 10 * KiB - 6, 102348, 1048064, MiB - 1,
                                  MiB + MiB / 8, MiB + 3 * MiB / 8, 2 * MiB + MiB / 8 * 5,
                                  32 * MiB, 255 * MiB, 768 * MiB, 1023 * MiB + 600 * KiB,
                                  2 * GiB + GiB / 8 * 5, 68149051392ull, 66571993088ull,
                                  (1ull << 50) * 3, 9007199254740991ull};
  json out = json::array();
  for (std::uint64_t v : values) out.push_back(json::array({v, size_text(v)}));
  return out;
}

}  // namespace

std::string html_page(const report& r, const html_inputs& in) {
  json data;
  data["report"] = report_to_json(r, false);
  if (r.recorded) {
    data["view"] = recording_view(r, data["report"], in.report_path);
  } else {
    data["view"] = nullptr;
  }
  data["check"] = in.check ? check_rows(*in.check, in.baseline_name) : json();
  if (!in.bench_json.empty()) {
    data["bench"] = {{"name", in.bench_name},
                     {"points", bench_points(in.bench_json, in.bench_name)}};
  } else {
    data["bench"] = nullptr;
  }
  data["size_checks"] = size_checks();
  // Inside <script>, "</" could close the element: write it as "<\\/" (the same string in JSON).
  std::string embedded = data.dump(-1, ' ', false, json::error_handler_t::replace);
  for (std::size_t at = 0; (at = embedded.find("</", at)) != std::string::npos; at += 3) {
    embedded.replace(at, 2, "<\\/");
  }
  std::string page = page_template;
  const auto put = [&page](const std::string& marker, const std::string& value) {
    const auto at = page.find(marker);
    if (at != std::string::npos) page.replace(at, marker.size(), value);
  };
  put("@DATA@", embedded);  // first: the title's marker comes earlier in the page
  put("@TITLE@", html_escape("gmem report: " + r.env.device_name));
  return page;
}

}  // namespace gmem::profiler
