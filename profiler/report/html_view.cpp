// `gmemprof html`: the report as one self-contained page. C++ gathers the data (the report's
// JSON, the check's rows, gmem_bench's medians) into one JSON object embedded in the page; the
// page's inline script draws the charts as SVG. Nothing is loaded from anywhere.

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "gmem/profiler/report_io.hpp"
#include "report/bench_summary.hpp"
#include "report/views.hpp"

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
svg text{font:11px system-ui,sans-serif;fill:#3b4456}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(270px,1fr));gap:10px}
.mini{background:#fff;border:1px solid #e1e5ec;border-radius:6px;padding:6px 8px 2px 4px;overflow:hidden}.mini h3{font-size:12px;margin:0 0 2px;font-weight:600;word-break:break-all}
table{border-collapse:collapse;width:100%;font-size:12.5px}th,td{padding:3px 8px;border-bottom:1px solid #edf0f4;text-align:right}th{background:#f2f4f8}td:first-child,td:nth-child(2),th:first-child,th:nth-child(2){text-align:left}
tr.verdict-pass td:last-child{color:#1a7f37;font-weight:600}tr.verdict-regression td,tr.verdict-missing td{background:#ffebe9}tr.verdict-regression td:last-child,tr.verdict-missing td:last-child{color:#cf222e;font-weight:700}tr.verdict-skipped td:last-child{color:#8c959f}
.badge{display:inline-block;padding:2px 8px;border-radius:10px;font-weight:600;font-size:12px}.ok{background:#dafbe1;color:#1a7f37}.bad{background:#ffebe9;color:#cf222e}
.note{color:#5a6475;font-size:12.5px}
#gmem-selfcheck{display:none}
</style></head><body>
<h1 id="title"></h1><div class="meta" id="meta"></div>
<div id="bill-section" style="display:none">
<h2>What the graphs cost the device</h2>
<div class="note">The bill, by kind, each in its own terms: the graph memory-node pool (what it retained, its high watermark), the framework's graph pools (what warm-up runs and captures took, what they retained, the framework's own figure), the executable graphs' state outside every pool, and the process's change (cuMemGetInfo), the rest of it not graph memory. A kind the recording did not see is not listed.</div>
<div id="bills"></div>
</div>
<div id="pool-section" style="display:none">
<h2>Graph memory pool per device (recorded)</h2>
<div class="note">The device's reservation over the recording: a point per call that changed it (and per trim), the high watermark the driver measured, and what the pool model says was mapped at that moment, by graph and why. These are the graphs' figures together; each graph's own are below.</div>
<div id="pools"></div>
<h2>Pool growth each graph caused</h2>
<div class="note">Growth: what the graph's own calls added to its device's pool (the driver's counters around each call; a private pool's graph: what its capture took). Alone: what the graph reserves by itself from a trimmed pool, predicted by the reuse model (gmemprof replay measures it). A small graph can cause no growth (it fits in what a larger one mapped) or more than it needs alone (remaps after others held memory).</div>
<div class="card"><div class="legend" id="gr-legend"></div><svg id="growth" width="1140"></svg></div>
</div>
<h2 id="fp-title">Memory per scenario: requested, lower bound, reserved</h2>
<div class="note" id="fp-note">Requested: bytes all allocation nodes ask for. Lower bound: the heaviest set of allocations that can be live at once, each rounded up to the reservation granularity. Reserved: the driver's reserved-memory high watermark.</div>
<div class="card"><div class="legend" id="fp-legend"></div><svg id="footprint" width="1140"></svg></div>
<h2>Allocation lifetimes</h2>
<div class="note" id="lt-note">Execution order across (a topological order of the graph's nodes), addresses down: one box per allocation, from its alloc node to its free node (to the end when the graph does not free it). Boxes in one row share a virtual address: that is reuse.</div>
<div class="grid" id="lifetimes"></div>
<h2>Counters across phases</h2>
<div class="note" id="ct-note">The four cudaGraphMemAttr counters read after each phase of each scenario (MiB).</div>
<div class="legend" id="ct-legend"></div><div class="grid" id="counters"></div>
<h2>Mapping cost against size</h2><div class="note" id="bench-note"></div>
<div class="card" id="bench-card"><div class="legend" id="bench-legend"></div><svg id="bench" width="1140" height="360"></svg></div>
<h2>Check against a baseline</h2><div id="check"></div>
<pre id="gmem-selfcheck"></pre>
<script>
"use strict";
const errors = [];
window.addEventListener("error", e => { errors.push(String(e.message)); writeSelfcheck(); });
const origError = console.error;
console.error = function(...a) { errors.push(a.map(String).join(" ")); origError.apply(console, a); };
const DATA = @DATA@;
const counts = {bars: 0, lifetime_boxes: 0, lifetime_rows: 0, counter_points: 0, counter_charts: 0, bench_points: 0, verdict_rows: 0,
  pool_charts: 0, pool_points: 0, pool_high_bytes: 0, growth_bars: 0, attribution_segments: 0, attribution_bytes: 0};
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
function mib(b) { return b / 1048576; }
function fmtBytes(b) {
  if (b >= 1073741824) return (b / 1073741824).toFixed(b % 1073741824 ? 2 : 0) + " GiB";
  if (b >= 1048576) return (b / 1048576).toFixed(b % 1048576 ? 1 : 0) + " MiB";
  if (b >= 1024) return (b / 1024).toFixed(0) + " KiB";
  return b + " B";
}
function key(s) {
  const p = Object.entries(s.parameters || {}).map(([k, v]) => k + "=" + v);
  return p.length ? s.name + "[" + p.join(",") + "]" : s.name;
}
function legend(id, items) {
  const d = document.getElementById(id);
  for (const [name, color] of items) { const s = h(d, "span", {}); h(s, "i", {style: "background:" + color}); s.appendChild(document.createTextNode(name)); }
}
const R = DATA.report, env = R.environment;
document.title = "gmem report: " + env.device_name;
document.getElementById("title").textContent = "gmem report: " + env.device_name;
document.getElementById("meta").innerHTML = "";
(function meta() {
  const m = document.getElementById("meta");
  const items = [["device", env.device_name + " (sm_" + env.compute_capability.replace(".", "") + ", " + fmtBytes(env.total_memory_bytes) + ")"],
    ["driver", env.driver_release || String(env.driver_version)], ["granularity", fmtBytes(env.granularity_bytes)],
    ["tool", env.tool_version], ["commit", env.git_commit], ["date", env.date], [R.recorded ? "graphs" : "scenarios", String(R.scenarios.length)]];
  items.forEach(([k, v], i) => { if (i) m.appendChild(document.createTextNode(" · ")); m.appendChild(document.createTextNode(k + " ")); h(m, "b", {}, v); });
})();

// A recording's pools: per device the reservation over time, its high watermark and what held
// it; then the growth each graph caused. Nothing is drawn for a suite report.
const WHY = {working_set: ["working set of its call", "#4a6fa5"], held_outputs: ["outputs held between launches", "#f2b66d"],
             concurrent_launch: ["launch in another stream", "#d1495b"], idle: ["mapped, held by no graph", "#b7bec9"],
             held_before: ["held before the first call", "#7a7a7a"]};
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
    if (np) { rows.push(["graph memory-node pool", np.retained_bytes, "retained; " + fmtBytes(np.high_bytes) + " at its high watermark"]); graphs += np.retained_bytes; }
    if (fp) {
      rows.push(["framework graph pools", fp.retained_bytes, "retained" + (fp.snapshot_bytes !== undefined ? " (the framework's own figure " + fmtBytes(fp.snapshot_bytes) + ")" : "") +
        "; " + (fp.named ? "warm-up runs " + fmtBytes(fp.warmup_bytes) + ", " : "") + "captures " + fmtBytes(fp.capture_bytes) + ", at most " + fmtBytes(fp.peak_bytes) + " at once"]);
      graphs += fp.retained_bytes;
    }
    if (es) { rows.push(["executable-graph state", es.bytes, es.instantiations + " instantiation(s) and upload(s), outside every pool"]); graphs += es.bytes; }
    if (rows.length) rows.push(["graph memory in all", graphs, ""]);
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
      h(tr, "td", {}, (bytes < 0 ? "-" : "") + fmtBytes(Math.abs(bytes)));
      h(tr, "td", {style: "text-align:left"}, what);
    }
    counts.bill_rows = (counts.bill_rows || 0) + rows.length;
  }
})();

(function pools() {
  const rec = R.recorded;
  if (!rec) return;
  document.getElementById("pool-section").style.display = "";
  const host = document.getElementById("pools");
  if (!(rec.pools || []).length) h(host, "div", {class: "note"}, "No pool in this recording (an older gmemprof, or the device's granularity unknown): record the program again for the pool's high watermark and what held it.");
  for (const p of rec.pools || []) {
    const card = h(host, "div", {class: "card pool"});
    h(card, "h3", {style: "font-size:14px;margin:0 0 4px"}, "Device " + p.device);
    const diff = p.model_high_bytes - p.high_bytes;
    const framework_only = p.high_bytes === 0 && (p.private_pool_bytes || 0) > 0;
    if (framework_only) {
      h(card, "div", {class: "note pool-summary"}, "No graph memory nodes on this device: the curve is the framework's graph pools, " +
        fmtBytes(p.private_pool_bytes) + " taken by the application's allocator capture by capture (the bill above has their warm-ups and what they retain).");
    } else h(card, "div", {class: "note pool-summary"}, "High watermark " + fmtBytes(p.high_bytes) + " (measured)" +
      (p.high_graph ? ", reached by '" + p.high_graph + "' (" + p.high_event + ") at " + (p.high_t_us / 1000).toFixed(3) + " ms" : "") +
      "; " + fmtBytes(p.end_bytes) + " reserved at the end; the pool model's reservation at the high: " + fmtBytes(p.model_high_bytes) +
      (diff === 0 ? " (as measured)" : " (" + fmtBytes(Math.abs(diff)) + (diff > 0 ? " above" : " below") + " the measurement)") + ".");
    counts.pool_charts++;
    // Reserved bytes over time: a step line (the reservation holds between calls), a point per
    // call that changed it, labelled by graph, and the high watermark.
    const T = p.timeline || [];
    const W = 1100, H = 280, L = 70, B = 34, Tp = 16, Rm = 30;
    const svg = el(card, "svg", {class: "pool-chart", width: W, height: H});
    const ts = T.map(t => t.t_us).concat([p.high_t_us]);
    const t0 = Math.min(...ts), t1 = Math.max(...ts);
    const span = t1 > t0 ? t1 - t0 : 1;
    const top = Math.max(1, p.high_bytes, p.model_high_bytes, ...T.map(t => t.reserved_bytes)) * 1.12;
    const X = t => L + (W - L - Rm) * (t - t0) / span;
    const Y = b => Tp + (H - Tp - B) * (1 - b / top);
    for (let i = 0; i <= 4; i++) {
      const b = top / 1.12 * i / 4;
      el(svg, "line", {x1: L, x2: W - Rm, y1: Y(b), y2: Y(b), stroke: "#e6e9ef"});
      el(svg, "text", {x: L - 6, y: Y(b) + 4, "text-anchor": "end"}, fmtBytes(Math.round(b)));
    }
    el(svg, "text", {x: L, y: H - 6}, (t0 / 1000).toFixed(1) + " ms");
    el(svg, "text", {x: W - Rm, y: H - 6, "text-anchor": "end"}, (t1 / 1000).toFixed(1) + " ms");
    el(svg, "text", {x: (W + L) / 2, y: H - 6, "text-anchor": "middle"}, "time in the program (reserved after each call)");
    if (T.length) {
      let level = Math.max(0, T[0].reserved_bytes - T[0].growth_bytes);
      const pts = [X(t0) + "," + Y(level)];
      for (const t of T) { pts.push(X(t.t_us) + "," + Y(level)); level = t.reserved_bytes; pts.push(X(t.t_us) + "," + Y(level)); }
      pts.push(X(t1) + "," + Y(level));
      el(svg, "polyline", {class: "pool-line", fill: "none", stroke: "#4a6fa5", "stroke-width": 1.8, points: pts.join(" ")});
    }
    const hy = Y(p.high_bytes);
    if (!framework_only) {
      el(svg, "line", {class: "pool-high-line", x1: L, x2: W - Rm, y1: hy, y2: hy, stroke: "#cf222e", "stroke-dasharray": "5 3"});
      // Left of the line: the points' labels crowd its right end, where a program settles.
      el(svg, "text", {x: L + 4, y: hy - 5, style: "fill:#cf222e"}, "high watermark " + fmtBytes(p.high_bytes) + " (measured)");
    }
    // Labels on every point only while they fit; past that the points keep their tooltips.
    const labelled = T.length <= 40;
    T.forEach((t, i) => {
      const color = t.growth_bytes > 0 ? "#d1495b" : t.growth_bytes < 0 ? "#2a9d8f" : "#8c959f";
      const c = el(svg, "circle", {class: "pool-point", cx: X(t.t_us), cy: Y(t.reserved_bytes), r: 3.4, fill: color});
      el(c, "title", {}, (t.graph ? "'" + t.graph + "' " : "") + t.event + ": " + (t.growth_bytes >= 0 ? "+" : "-") +
         fmtBytes(Math.abs(t.growth_bytes)) + ", reserved " + fmtBytes(t.reserved_bytes) + " at " + (t.t_us / 1000).toFixed(3) + " ms");
      counts.pool_points++;
      if (labelled) {
        const x = X(t.t_us) + 3, y = Y(t.reserved_bytes) - 6 - (i % 2) * 10;
        el(svg, "text", {class: "pool-label", x: x, y: y, style: "font-size:9.5px"}, t.graph || t.event);
      }
    });
    if (!framework_only) {
      const hm = el(svg, "path", {class: "pool-high", d: "M" + X(p.high_t_us) + " " + (hy - 6) + "l6 6l-6 6l-6 -6z", fill: "#cf222e"});
      el(hm, "title", {}, "high watermark " + fmtBytes(p.high_bytes) + (p.high_graph ? ", reached by '" + p.high_graph + "' (" + p.high_event + ")" : ""));
    }
    counts.pool_high_bytes += p.high_bytes;
    // What was mapped at the high watermark: one stacked bar, a segment per (graph, why).
    const A = (p.attribution || []).filter(a => a.bytes > 0);
    if (A.length) {
      h(card, "div", {class: "note"}, "Mapped at the high watermark, by graph and why (pool model, " + fmtBytes(A.reduce((s, a) => s + a.bytes, 0)) + " in all):");
      const lg = h(card, "div", {class: "legend"});
      for (const w of [...new Set(A.map(a => a.why))]) { const s = h(lg, "span", {}); h(s, "i", {style: "background:" + why(w)[1]}); s.appendChild(document.createTextNode(why(w)[0])); }
      const total = A.reduce((s, a) => s + a.bytes, 0);
      const bar = el(card, "svg", {class: "attribution-bar", width: W, height: 46});
      let x = L;
      for (const a of A) {
        const w = (W - L - Rm) * a.bytes / total;
        const r = el(bar, "rect", {class: "attribution-segment", x: x, y: 4, width: Math.max(1, w), height: 24, fill: why(a.why)[1], stroke: "#fff"});
        el(r, "title", {}, (a.graph ? "'" + a.graph + "'" : "no graph") + ": " + why(a.why)[0] + ", " + fmtBytes(a.bytes) + " (" + (100 * a.bytes / total).toFixed(1) + "%)");
        if (w > 34) el(bar, "text", {x: x + w / 2, y: 20, "text-anchor": "middle", style: "fill:#fff;font-weight:600"}, a.graph || "idle");
        counts.attribution_segments++;
        counts.attribution_bytes += a.bytes;
        x += w;
      }
      el(bar, "text", {x: L, y: 42}, "0");
      el(bar, "text", {x: W - Rm, y: 42, "text-anchor": "end"}, fmtBytes(total));
    }
    for (const d of p.diagnostics || []) h(card, "div", {class: "note"}, "[" + d.severity + "] " + d.message + (d.bytes ? " (" + fmtBytes(d.bytes) + ")" : ""));
  }
})();
(function growth() {
  const rec = R.recorded;
  if (!rec) return;
  const C = [["growth it caused", "#d1495b"], ["alone (predicted)", "#8fb8de"]];
  legend("gr-legend", C);
  const G = rec.graphs || [];
  const svg = document.getElementById("growth");
  const rowH = 24, left = 260, width = 1140 - left - 210;
  svg.setAttribute("height", G.length * rowH + 8);
  const grown = g => g.kind === "private_pool" ? (g.capture_pool_growth_bytes || 0) : g.growth_bytes;
  const max = Math.max(1, ...G.map(g => Math.max(grown(g), g.own_footprint_bytes)));
  G.forEach((g, i) => {
    const y = i * rowH + 3;
    el(svg, "text", {x: left - 8, y: y + 13, "text-anchor": "end"}, g.name.length > 40 ? g.name.slice(0, 39) + "…" : g.name);
    const r = el(svg, "rect", {class: "growth-bar", x: left, y: y, width: Math.max(1, width * grown(g) / max), height: 10, fill: C[0][1]});
    el(r, "title", {}, "'" + g.name + "' grew its pool by " + fmtBytes(grown(g)));
    const o = el(svg, "rect", {class: "own-bar", x: left, y: y + 11, width: Math.max(1, width * g.own_footprint_bytes / max), height: 7, fill: C[1][1]});
    el(o, "title", {}, "'" + g.name + "' alone (predicted): " + fmtBytes(g.own_footprint_bytes));
    el(svg, "text", {x: left + width * Math.max(grown(g), g.own_footprint_bytes) / max + 6, y: y + 13}, "+" + fmtBytes(grown(g)) + " · alone " + fmtBytes(g.own_footprint_bytes));
    counts.growth_bars++;
  });
})();

// Footprint: three bars per scenario that ran.
(function footprint() {
  // A recording's per-graph figure is the graph's own (alone, predicted), not the device's
  // watermark, which holds every graph's memory: that one is the pool's, above.
  const C = [["requested", "#8fb8de"], ["lower bound (rounded)", "#f2b66d"], [R.recorded ? "alone (predicted)" : "reserved high", "#4a6fa5"]];
  if (R.recorded) {
    document.getElementById("fp-title").textContent = "Memory per graph, each alone: requested, lower bound, reserved alone (predicted)";
    document.getElementById("fp-note").textContent = "Requested: bytes all allocation nodes ask for. Lower bound: the heaviest set of allocations that can be live at once, each rounded up to the reservation granularity. Alone (predicted): what the graph reserves by itself from a trimmed pool, by the reuse model; the device's high watermark is the pool's, above.";
  }
  legend("fp-legend", C);
  const ok = R.scenarios.filter(s => s.status === "ok" && s.analysis);
  const svg = document.getElementById("footprint");
  const rowH = 30, left = 360, width = 1140 - left - 110;
  svg.setAttribute("height", ok.length * rowH + 24);
  const max = Math.max(1, ...ok.map(s => Math.max(s.analysis.requested_bytes, s.analysis.lower_bound_rounded_bytes, s.analysis.reserved_high_bytes)));
  const scale = v => v <= 0 ? 0 : width * Math.log2(1 + v / 1048576) / Math.log2(1 + max / 1048576);
  for (const t of [1, 16, 256, 4096, 65536]) {
    if (t * 1048576 > max * 1.01) break;
    const x = left + scale(t * 1048576);
    el(svg, "line", {x1: x, x2: x, y1: 0, y2: ok.length * rowH, stroke: "#e6e9ef"});
    el(svg, "text", {x: x, y: ok.length * rowH + 14, "text-anchor": "middle"}, fmtBytes(t * 1048576));
  }
  ok.forEach((s, i) => {
    const y = i * rowH + 3;
    const label = key(s);
    const t = el(svg, "text", {x: left - 8, y: y + 15, "text-anchor": "end"}, label.length > 50 ? label.slice(0, 49) + "…" : label);
    el(t, "title", {}, label);
    const vals = [s.analysis.requested_bytes, s.analysis.lower_bound_rounded_bytes, s.analysis.reserved_high_bytes];
    vals.forEach((v, j) => {
      const r = el(svg, "rect", {class: "bar", x: left, y: y + j * 8, width: Math.max(1, scale(v)), height: 7, fill: C[j][1]});
      el(r, "title", {}, C[j][0] + ": " + fmtBytes(v));
      counts.bars++;
    });
    el(svg, "text", {x: left + Math.max(scale(vals[0]), scale(vals[1]), scale(vals[2])) + 6, y: y + 15}, fmtBytes(vals[2]) +
       (s.analysis.bound_ratio ? "  ×" + Number(s.analysis.bound_ratio).toFixed(2) : ""));
  });
})();

// Lifetimes: one box per allocation, one row per distinct address.
(function lifetimes() {
  const grid = document.getElementById("lifetimes");
  const withAllocs = R.scenarios.filter(s => (s.allocations || []).length);
  if (!withAllocs.length) {
    // Running the suite again is no help for a recording: the program's graphs are not the suite's.
    document.getElementById("lt-note").textContent = R.recorded
      ? "This recording holds no allocation lifetimes: gmemprof record reads each graph's memory nodes at instantiation and keeps them as the graph's skeleton (gmemprof replay measures it alone); how the pool grew over the program's calls is the pool chart above."
      : "This report holds no allocation lifetimes: they are recorded since gmem 0.2 (run gmemprof run again).";
    return;
  }
  const palette = ["#4a6fa5", "#d1495b", "#2a9d8f", "#f2b66d", "#8e6c8a", "#6c8ebf"];
  for (const s of withAllocs) {
    const A = s.allocations;
    const addrs = [...new Set(A.map(a => a.address))].sort((x, y) => x - y);
    const row = new Map(addrs.map((a, i) => [a, i]));
    const end = Math.max(...A.map(a => Math.max(a.alloc_step, a.free_step === null ? 0 : a.free_step))) + 1;
    const W = 260, L = 6, T = 4, rh = Math.max(2, Math.min(14, Math.floor(150 / addrs.length)));
    const H = T + addrs.length * rh + 18;
    const box = h(grid, "div", {class: "mini"});
    h(box, "h3", {}, key(s) + " · " + A.length + " allocations, " + addrs.length + " addresses");
    const svg = el(box, "svg", {class: "lifetime-chart", width: W, height: H});
    const X = t => L + (W - 2 * L) * t / end;
    addrs.forEach((a, i) => { if (i % 2) el(svg, "rect", {x: L, y: T + i * rh, width: W - 2 * L, height: rh, fill: "#f4f6f9"}); });
    A.forEach((a, i) => {
      const stop = a.free_step === null ? end : a.free_step;
      const r = el(svg, "rect", {class: "lifetime-box", x: X(a.alloc_step), y: T + row.get(a.address) * rh + 0.5,
        width: Math.max(1.5, X(stop) - X(a.alloc_step)), height: Math.max(1, rh - 1), rx: rh > 5 ? 2 : 0,
        fill: palette[row.get(a.address) % palette.length], "fill-opacity": a.free_step === null ? 0.45 : 0.85});
      el(r, "title", {}, "0x" + a.address.toString(16) + " " + fmtBytes(a.bytes) + ": steps " + a.alloc_step + " to " + (a.free_step === null ? "end (not freed)" : a.free_step));
      counts.lifetime_boxes++;
    });
    counts.lifetime_rows += addrs.length;
    el(svg, "text", {x: L, y: H - 4}, "step 0");
    el(svg, "text", {x: W - L, y: H - 4, "text-anchor": "end"}, "step " + end);
  }
})();

// Counters: a small chart per scenario, four lines over its phases.
(function counters() {
  const C = [["used_current", "#4a6fa5"], ["used_high", "#8fb8de"], ["reserved_current", "#d1495b"], ["reserved_high", "#f2b66d"]];
  if (R.recorded) document.getElementById("ct-note").textContent = "The device's four cudaGraphMemAttr counters after each of the graph's recorded calls that read them (MiB): the device's, holding every graph's memory, not the graph's own.";
  legend("ct-legend", C);
  const grid = document.getElementById("counters");
  for (const s of R.scenarios) {
    const ph = s.counters_after_phase || [];
    const box = h(grid, "div", {class: "mini"});
    h(box, "h3", {}, key(s));
    if (!ph.length) { h(box, "div", {class: "note"}, s.status + (s.status_message ? ": " + s.status_message : "")); continue; }
    const W = 260, H = 132, L = 38, B = 44;
    const svg = el(box, "svg", {class: "counter-chart", width: W, height: H});
    counts.counter_charts++;
    const max = Math.max(1, ...ph.flatMap(p => C.map(([k]) => p[k])));
    const x = i => L + (ph.length === 1 ? 0 : i * (W - L - 10) / (ph.length - 1));
    const y = v => 6 + (H - B - 6) * (1 - v / max);
    el(svg, "line", {x1: L, x2: W - 10, y1: y(0), y2: y(0), stroke: "#c9ced8"});
    el(svg, "text", {x: L - 4, y: y(max) + 4, "text-anchor": "end"}, mib(max).toFixed(mib(max) < 10 ? 1 : 0));
    el(svg, "text", {x: L - 4, y: y(0) + 4, "text-anchor": "end"}, "0");
    ph.forEach((p, i) => {
      const t = el(svg, "text", {x: x(i) + 3, y: H - B + 10, "text-anchor": "end", transform: "rotate(-35 " + (x(i) + 3) + " " + (H - B + 10) + ")", style: "font-size:8.5px"}, p.phase.replace(/_/g, " ").replace("first launch", "1st launch").slice(0, 18));
      t.setAttribute("class", "phase-label");
    });
    C.forEach(([k, color], j) => {
      el(svg, "polyline", {fill: "none", stroke: color, "stroke-width": 1.6, "stroke-dasharray": j % 2 ? "4 2" : "", points: ph.map((p, i) => x(i) + "," + y(p[k])).join(" ")});
      ph.forEach((p, i) => {
        const c = el(svg, "circle", {class: "cpt", cx: x(i), cy: y(p[k]), r: 2.2, fill: color});
        el(c, "title", {}, p.phase + " " + k + ": " + fmtBytes(p[k]));
        counts.counter_points++;
      });
    });
  }
})();

// Mapping cost against size, from gmem_bench (one allocation per graph).
(function bench() {
  const note = document.getElementById("bench-note");
  if (!DATA.bench) { note.textContent = "No benchmark given (gmemprof html REPORT --bench reports/bench/<machine>.json)."; document.getElementById("bench-card").style.display = "none"; return; }
  note.textContent = "Median time per call from " + DATA.bench.name + " (gmem_bench), one allocation per graph; both axes logarithmic.";
  const want = [["graph/first_launch_no_upload", "#d1495b"], ["graph/upload", "#4a6fa5"], ["graph/launch_after_trim", "#f2b66d"], ["floor/map", "#2a9d8f"], ["graph/steady_launch", "#8c959f"]];
  const series = want.map(([f, c]) => [f, c, DATA.bench.points.filter(p => p.family === f && (p.allocs === null || p.allocs === 1) && p.bytes > 0 && p.us > 0).sort((a, b) => a.bytes - b.bytes)]).filter(s => s[2].length);
  legend("bench-legend", series.map(([f, c]) => [f, c]));
  const svg = document.getElementById("bench");
  const W = 1140, H = 360, L = 70, B = 40, T = 10, Rm = 20;
  const all = series.flatMap(s => s[2]);
  if (!all.length) { note.textContent += " It holds no graph mapping benchmarks."; return; }
  const lx = Math.log2, ly = Math.log10;
  const x0 = lx(Math.min(...all.map(p => p.bytes))), x1 = lx(Math.max(...all.map(p => p.bytes)));
  const y0 = Math.floor(ly(Math.min(...all.map(p => p.us)))), y1 = Math.ceil(ly(Math.max(...all.map(p => p.us))));
  const X = b => L + (W - L - Rm) * (lx(b) - x0) / Math.max(1, x1 - x0);
  const Y = u => T + (H - T - B) * (1 - (ly(u) - y0) / Math.max(1, y1 - y0));
  for (let e = y0; e <= y1; e++) {
    el(svg, "line", {x1: L, x2: W - Rm, y1: Y(10 ** e), y2: Y(10 ** e), stroke: "#e6e9ef"});
    el(svg, "text", {x: L - 6, y: Y(10 ** e) + 4, "text-anchor": "end"}, e >= 3 ? (10 ** (e - 3)) + " ms" : (10 ** e) + " µs");
  }
  for (let b = Math.ceil(x0); b <= x1; b += 1) {
    if ((b - Math.ceil(x0)) % 2) continue;
    el(svg, "text", {x: X(2 ** b), y: H - B + 16, "text-anchor": "middle"}, fmtBytes(2 ** b));
  }
  el(svg, "text", {x: (W + L) / 2, y: H - 6, "text-anchor": "middle"}, "allocation size");
  for (const [f, color, pts] of series) {
    el(svg, "polyline", {fill: "none", stroke: color, "stroke-width": 1.8, points: pts.map(p => X(p.bytes) + "," + Y(p.us)).join(" ")});
    for (const p of pts) {
      const c = el(svg, "circle", {class: "bpt", cx: X(p.bytes), cy: Y(p.us), r: 3.2, fill: color});
      el(c, "title", {}, f + " " + fmtBytes(p.bytes) + ": " + p.us.toFixed(1) + " µs");
      counts.bench_points++;
    }
  }
})();

// The check's verdicts.
(function check() {
  const d = document.getElementById("check");
  if (!DATA.check) { h(d, "div", {class: "note"}, "No baseline given (gmemprof html REPORT --baseline BASELINE)."); return; }
  const rows = DATA.check.rows, bad = rows.filter(r => r.verdict === "regression" || r.verdict === "missing").length;
  const head = h(d, "div", {});
  h(head, "span", {class: "badge " + (bad ? "bad" : "ok")}, bad ? bad + " regressed" : "no regression");
  head.appendChild(document.createTextNode(" " + rows.length + " compared against " + DATA.check.baseline + " (default tolerances; regressions first)"));
  for (const n of DATA.check.notes) h(d, "div", {class: "note"}, n);
  const t = h(h(d, "div", {class: "card"}), "table", {});
  const hr = h(t, "tr", {});
  for (const c of ["scenario", "metric", "baseline", "current", "change", "tolerance", "verdict"]) h(hr, "th", {}, c);
  const num = (m, v) => v === null ? "–" : /_bytes$/.test(m) ? (v / 1048576).toFixed(2) + " MiB" : Number(v).toFixed(2);
  const rank = v => (v === "regression" || v === "missing") ? 0 : v === "pass" ? 1 : 2;
  for (const r of rows.slice().sort((a, b) => rank(a.verdict) - rank(b.verdict))) {  // stable: regressions first
    const tr = h(t, "tr", {class: "verdict-" + r.verdict});
    counts.verdict_rows++;
    for (const v of [r.scenario, r.metric, num(r.metric, r.baseline), num(r.metric, r.current),
                     r.change === null ? "–" : (r.change * 100).toFixed(1) + "%", (r.tolerance * 100).toFixed(0) + "%", r.verdict]) h(tr, "td", {}, v);
  }
})();
writeSelfcheck();
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

}  // namespace

std::string html_page(const report& r, const html_inputs& in) {
  json data;
  data["report"] = json::parse(to_json_string(r));
  if (in.check) {
    json rows = json::array();
    for (const auto& row : in.check->rows) {
      rows.push_back({{"scenario", row.scenario}, {"metric", row.metric},
                      {"category", row.category}, {"baseline", finite_or_null(row.baseline)},
                      {"current", finite_or_null(row.current)},
                      {"change", finite_or_null(row.change)},
                      {"tolerance", finite_or_null(row.tolerance)}, {"verdict", row.verdict}});
    }
    data["check"] = {{"baseline", in.baseline_name}, {"rows", rows}, {"notes", in.check->notes}};
  } else {
    data["check"] = nullptr;
  }
  if (!in.bench_json.empty()) {
    data["bench"] = {{"name", in.bench_name},
                     {"points", bench_points(in.bench_json, in.bench_name)}};
  } else {
    data["bench"] = nullptr;
  }
  // Inside <script>, "</" could close the element: write it as "<\/" (the same string in JSON).
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
