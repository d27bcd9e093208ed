#!/usr/bin/env python3
"""Checks gmemprof's views of a report, independently of the C++ that wrote them.

  check_views.py trace GMEMPROF REPORT WORKDIR
      runs `gmemprof trace` and validates the file against the Trace Event Format (the JSON
      object form: {"traceEvents": [...]}, every event with name, ph, ts in microseconds, pid,
      tid; "X" with a non-negative dur; "C" with numeric args; "M" process_name / thread_name
      with args.name; "i" with scope g/p/t) and against the report (one track per scenario,
      the four counter tracks with one sample per phase; a suite report: one phase slice per
      phase; a recording, on one clock: a slice per recorded call at its recorded time, every
      event within the recording's span, each first launch at the time of the pool growth it
      caused, the medians only as one annotation per graph; per pool a process with the
      reservation's samples, a mapping event per point of the pool's timeline and its high
      watermark, concurrent ones marked as the report flags them).
  check_views.py html GMEMPROF REPORT BENCH WORKDIR [--screenshot PNG]
      runs `gmemprof html` (with the report as its own baseline and the bench JSON), loads the
      page in headless Chromium (--dump-dom), and reads the counts the page's script wrote into
      <pre id="gmem-selfcheck">: no script error, and as many bars, counter points, bench points
      and verdict rows as the inputs call for (counted here from the JSON); for a recording
      (a report with "recorded") also its pools' points, high watermarks and attribution
      segments, and a growth bar per graph, and no advice to run the suite again.
"""
import html
import json
import os
import re
import shutil
import subprocess
import sys

import report_forms  # noqa: E402 (beside this file)

COUNTERS = ["used_current", "used_high", "reserved_current", "reserved_high"]


def fail(msg):
    print("check_views: FAIL: " + msg)
    sys.exit(1)


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        fail(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p


def check_trace(gmemprof, report_path, work):
    out = os.path.join(work, "trace.json")
    run([gmemprof, "trace", report_path, "-o", out])
    report = report_forms.load(report_path)
    doc = json.load(open(out))
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        fail("the trace is not an object with a traceEvents array")
    events = doc["traceEvents"]
    for i, e in enumerate(events):
        for field, kind in (("name", str), ("ph", str), ("pid", int), ("tid", int)):
            if not isinstance(e.get(field), kind):
                fail(f"event {i} has no {field} of type {kind.__name__}: {e}")
        if not isinstance(e.get("ts"), (int, float)) or e["ts"] < 0:
            fail(f"event {i} has no non-negative ts: {e}")
        ph = e["ph"]
        if ph not in ("X", "C", "M", "i"):
            fail(f"event {i} has an unexpected ph {ph!r}")
        if ph == "X" and (not isinstance(e.get("dur"), (int, float)) or e["dur"] < 0):
            fail(f"complete event {i} has no non-negative dur: {e}")
        if ph == "C" and (not isinstance(e.get("args"), dict) or not e["args"] or
                          not all(isinstance(v, (int, float)) for v in e["args"].values())):
            fail(f"counter event {i} needs numeric args: {e}")
        if ph == "M" and (e["name"] not in ("process_name", "thread_name") or
                          not isinstance(e.get("args", {}).get("name"), str)):
            fail(f"metadata event {i} is not process_name/thread_name with args.name: {e}")
        if ph == "i" and e.get("s") not in ("g", "p", "t"):
            fail(f"instant event {i} needs scope s in g/p/t: {e}")
    scenarios = report["scenarios"]
    # A recording's pools are processes of their own (recorded times), apart from the scenarios.
    pool_pids = {e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name"
                 and e["args"]["name"].startswith("graph memory pool")}
    threads = [e for e in events if e["ph"] == "M" and e["name"] == "thread_name"
               and e["pid"] not in pool_pids]
    if len(threads) != len(scenarios):
        fail(f"{len(threads)} scenario tracks for {len(scenarios)} scenarios")
    if not any(e["ph"] == "M" and e["name"] == "process_name" for e in events):
        fail("no process (device) track name")
    phases = sum(len(s.get("counters_after_phase", [])) for s in scenarios)
    recorded = report.get("recorded")
    if recorded:
        check_recorded_tracks(report, events)
    else:
        slices = [e for e in events if e["ph"] == "X" and e.get("cat") == "phase"]
        if len(slices) != phases:
            fail(f"{len(slices)} phase slices for {phases} phases")
        # A launch slice inside each phase that has a launch cost (a suite report samples every
        # cost's phase once).
        launches = sum(1 for s in scenarios for p in s.get("counters_after_phase", [])
                       if any(c["phase"] == p["phase"] for c in s.get("launch_costs", [])))
        got = len([e for e in events if e["ph"] == "X" and e.get("cat") == "launch"])
        if got != launches:
            fail(f"{got} launch slices for {launches} timed phases")
    for c in COUNTERS:
        samples = [e for e in events if e["ph"] == "C" and e["name"] == c]
        if len(samples) != phases:
            fail(f"counter track {c} has {len(samples)} samples for {phases} phases")
    # The samples carry the report's values, in order.
    want = [p["reserved_high"] for s in scenarios for p in s.get("counters_after_phase", [])]
    got = [e["args"]["bytes"] for e in events if e["ph"] == "C" and e["name"] == "reserved_high"]
    if got != want:
        fail("reserved_high samples differ from the report's values")
    pools = (report.get("recorded") or {}).get("pools", [])
    if len(pool_pids) != len(pools):
        fail(f"{len(pool_pids)} pool processes for {len(pools)} pools")
    for pool in pools:
        pid = 1000 + pool["device"]
        want = [t["reserved_bytes"] for t in pool.get("timeline", [])]
        got = [e["args"]["bytes"] for e in events
               if e["ph"] == "C" and e["pid"] == pid and e["name"] == "pool reserved"]
        if got != want:
            fail(f"device {pool['device']}'s pool reserved samples {got} differ from its "
                 f"timeline {want}")
        marks = [e for e in events if e["ph"] == "i" and e["pid"] == pid and e.get("cat") == "mapping"]
        if len(marks) != len(want):
            fail(f"{len(marks)} mapping events for {len(want)} points of device "
                 f"{pool['device']}'s pool timeline")
        # A concurrent call is marked as one (the report's flag, in args and name).
        for m, t in zip(marks, pool.get("timeline", [])):
            if bool(m["args"].get("concurrent")) != bool(t.get("concurrent")) or \
                    ("(concurrent)" in m["name"]) != bool(t.get("concurrent")):
                fail(f"mapping event {m['name']!r} at {m['ts']} us is marked concurrent "
                     f"{bool(m['args'].get('concurrent'))}, the report says {bool(t.get('concurrent'))}")
        high = [e for e in events if e["ph"] == "i" and e["pid"] == pid and e.get("cat") == "pool_high"]
        if len(high) != 1 or high[0]["args"]["bytes"] != pool["high_bytes"]:
            fail(f"device {pool['device']}'s pool needs one high watermark of "
                 f"{pool['high_bytes']} bytes, has {[e['args'] for e in high]}")
        if bool(high[0]["args"].get("concurrent")) != bool(pool.get("high_concurrent")):
            fail(f"device {pool['device']}'s high watermark is marked concurrent "
                 f"{bool(high[0]['args'].get('concurrent'))}, the report says "
                 f"{bool(pool.get('high_concurrent'))}")
    print(f"check_views: trace ok: {len(events)} events, {len(scenarios)} tracks, "
          f"{phases} phases, {len(pools)} pools")


def check_recorded_tracks(report, events):
    """A recording's tracks are on one clock, the recording's: a slice per recorded call of each
    graph at the time the program made it, all within the span of the recording's counter
    readings; each first launch at the time of the pool growth it caused; medians only as args
    of one 'launch medians' instant per graph, never as slices."""
    recorded, scenarios = report["recorded"], report["scenarios"]
    by_name = {}
    for g in recorded.get("graphs", []):
        by_name.setdefault(g["name"], g)
    tids = {e["args"]["name"]: e["tid"] for e in events if e["ph"] == "M" and
            e["name"] == "thread_name" and e["pid"] == report["environment"].get("device_index", 0)}
    want_calls = sum(len(by_name.get(s["name"], {}).get("events", [])) for s in scenarios)
    calls = [e for e in events if e["ph"] == "X" and e.get("cat") == "call"]
    if len(calls) != want_calls:
        fail(f"{len(calls)} call slices for the recording's {want_calls} recorded calls")
    if any(e.get("cat") == "launch" for e in events):
        fail("a recording's trace lays out a slice from a median ('launch' slices)")
    # The recording's span: its counter readings (every recorded call that read them) and its
    # pools' points, the longest call's host time past the last.
    times = [t["t_us"] for t in recorded.get("timeline", [])]
    for p in recorded.get("pools", []):
        times += [t["t_us"] for t in p.get("timeline", [])] + [p["high_t_us"]]
    longest = max([e.get("host_us", 0) for g in recorded.get("graphs", []) for e in g.get("events", [])] + [0])
    if times:
        t0, t1 = min(times), max(times) + longest
        for e in events:
            if e["pid"] >= 1000 or e["ph"] == "M":
                continue
            end = e["ts"] + e.get("dur", 0)
            if e["ts"] < t0 - 1 or end > t1 + 1:
                fail(f"{e['name']!r} ({e.get('cat')}) at {e['ts']} to {end} us lies outside the "
                     f"recording's span {t0} to {t1} us: a second clock?")
    calls_of, medians_of = {}, {}  # by track: a recording has thousands
    for e in calls:
        calls_of.setdefault(e["tid"], []).append(e)
    for e in events:
        if e.get("cat") == "medians" and e["pid"] < 1000:
            medians_of.setdefault(e["tid"], []).append(e)
    for s in scenarios:
        g = by_name.get(s["name"])
        tid = tids.get(key(s))
        mine = calls_of.get(tid, [])
        if g and [e["ts"] for e in mine] != [e["t_us"] for e in g.get("events", [])]:
            fail(f"graph {g['name']!r}'s calls at {[e['ts'] for e in mine][:5]} us, recorded at "
                 f"{[e['t_us'] for e in g.get('events', [])][:5]} us")
        medians = medians_of.get(tid, [])
        costs = s.get("launch_costs", [])
        if len(medians) != (1 if costs else 0):
            fail(f"graph {s['name']!r} has {len(medians)} 'launch medians' annotations")
        for c in costs:
            if medians[0]["args"].get(c["phase"], {}).get("host_median_us") != c["host"]["median_us"]:
                fail(f"graph {s['name']!r}'s {c['phase']} median is not in its annotation: "
                     f"{medians[0]['args']}")
    # A first launch and the pool growth it caused: one time (within the call).
    tid_of_graph = {}
    for s in scenarios:
        if key(s) in tids:
            tid_of_graph.setdefault(s["name"], tids[key(s)])
    matched = 0
    for p in recorded.get("pools", []):
        for t in p.get("timeline", []):
            if t["event"] != "launch:first_launch" or t["graph"] not in by_name:
                continue
            tid = tid_of_graph.get(t["graph"])
            launch = [e for e in calls_of.get(tid, []) if e["name"].startswith("first_launch")]
            if not any(e["ts"] - 1 <= t["t_us"] <= e["ts"] + e["dur"] + 1 for e in launch):
                fail(f"{t['graph']!r}'s pool growth at {t['t_us']} us, its first launch at "
                     f"{[e['ts'] for e in launch]} us")
            matched += 1
    print(f"check_views: one clock: {len(calls)} calls within the recording's span, "
          f"{matched} first launches at the time of their pool growth")


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    fail("no chromium on PATH; install Debian's chromium package (tools/setup.sh does)")


def browser(args, work):
    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-extensions", "--user-data-dir=" + os.path.join(work, "chromium-profile")]
    return subprocess.run(cmd + args, capture_output=True, text=True, timeout=120)


def with_lifetimes(report_path, work):
    """A copy of the report with an allocation-lifetime section (gmem 0.2) in its first ok
    scenario, when it has none: a known set of boxes (3 allocations, 2 addresses, one reused)
    for the lifetime chart."""
    report = report_forms.load(report_path)
    if any(s.get("allocations") for s in report["scenarios"]):
        return report_path
    first = next(s for s in report["scenarios"] if s["status"] == "ok")
    first["allocations"] = [
        {"address": 0x7f0000000000, "bytes": 2097152, "alloc_step": 0, "free_step": 2},
        {"address": 0x7f0000000000, "bytes": 2097152, "alloc_step": 3, "free_step": 5},
        {"address": 0x7f0000200000, "bytes": 1048576, "alloc_step": 1, "free_step": None}]
    path = os.path.join(work, "report-with-lifetimes.json")
    json.dump(report, open(path, "w"), indent=1)
    return path


def key(s):
    """A scenario's key as the report code writes it: name[k=v,...]."""
    p = ",".join(f"{k}={v}" for k, v in s.get("parameters", {}).items())
    return f"{s['name']}[{p}]" if p else s["name"]


# What the page draws of a recording (html_view.cpp): per-graph detail for the 10 costliest graphs,
# a share of the high watermark of its own from 1% of it, at most 100 of the check's rows; and
# what it must keep to: 2 MB, a load in about a second (twice that here, where CI compiles
# beside the browser).
PAGE_GRAPHS = 10
SEGMENT_FRACTION = 0.01
PAGE_CHECK_ROWS = 100
MAX_PAGE_BYTES = 2_000_000
MAX_LOAD_MS = 2000


def natural(name):
    """Natural order, as the report code's natural_less: digit runs compare as numbers."""
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", name) if p]


def graph_cost(g):
    """What a recorded graph cost the device (show's graph_cost)."""
    pool = g.get("capture_pool_growth_bytes", 0) if g.get("kind") == "private_pool" else g["growth_bytes"]
    return pool + max(0, g.get("exec_state_bytes", 0))


def growth_cause(g):
    if g.get("kind") == "private_pool":
        return "capture"
    if g["growth_bytes"] == 0:
        return "none"
    return "held_outputs" if g["growth_bytes"] <= g.get("held_granule_bytes", 0) else "working_set"


def segments_of(pool):
    """The bar's segments as the page's rule has them: the 10 largest shares of at least 1% on
    their own, the share of the graph that reached the high always, the rest one per cause."""
    shares = sorted((a for a in pool.get("attribution", []) if a["bytes"] > 0),
                    key=lambda a: (-a["bytes"], natural(a["graph"])))
    total = sum(a["bytes"] for a in shares)
    single, causes = 0, set()
    for a in shares:
        reacher = a["graph"] == pool.get("high_graph") and a["why"] == "working_set"
        if reacher or (single < PAGE_GRAPHS and a["bytes"] >= SEGMENT_FRACTION * total):
            single += 1
        else:
            causes.add(a["why"])
    return [None] * (single + len(causes))


def size_text(b):
    """size_text (profiler/model/size_text.cpp) written again: binary units, three significant
    digits, the quotient rounded exactly, ties to even (as printf)."""
    from decimal import Decimal, ROUND_HALF_EVEN
    units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
    v, u = float(b), 0
    while v >= 1024 and u + 1 < len(units):
        v /= 1024
        u += 1
    if u == 0:
        return f"{b} B"
    digits = 0 if v >= 99.95 else 1 if v >= 9.995 else 2
    if v >= 1023.5 and u + 1 < len(units):
        u, digits = u + 1, 2
    q = (Decimal(b) / (Decimal(1024) ** u)).quantize(Decimal(1).scaleb(-digits), ROUND_HALF_EVEN)
    return f"{q} {units[u]}"


def check_pool_text(dom, pools):
    """What a reader sees of each pool: its high watermark in size_text's words, reached by the
    graph whose working set the attribution names, that graph marked in the legend."""
    summaries = re.findall(r'<div class="note pool-summary">(.*?)</div>', dom, re.S)
    reached = re.findall(r'<tr class="attribution-legend-row reached">(.*?)</tr>', dom, re.S)
    for i, p in enumerate(pools):
        if p["high_bytes"] == 0:
            continue
        text = summaries[i] if i < len(summaries) else ""
        want = "High watermark " + size_text(p["high_bytes"]) + " (measured)"
        if want not in text:
            fail(f"device {p['device']}'s summary does not read {want!r}: {text[:200]!r}")
        working = [a["graph"] for a in p.get("attribution", []) if a["why"] == "working_set" and a["bytes"] > 0]
        if working and p.get("high_graph") not in working:
            fail(f"device {p['device']}'s high watermark names {p.get('high_graph')!r}, its "
                 f"attribution's working set is {working}'s")
        if p.get("high_graph") and f"reached by '{html.escape(p['high_graph'], quote=True)}'" not in text \
                and f"reached by '{p['high_graph']}'" not in text:
            fail(f"device {p['device']}'s summary does not name {p['high_graph']!r}: {text[:200]!r}")
        if working and not any(f"'{p['high_graph']}' reached" in r or
                               f"'{html.escape(p['high_graph'], quote=True)}' reached" in r for r in reached):
            fail(f"the attribution's legend does not mark {p['high_graph']!r} as the graph that "
                 "reached the high watermark")
        if p.get("high_concurrent") and 'class="conc high-concurrent"' not in text:
            fail(f"device {p['device']}'s concurrent high watermark is not marked")


def check_html(gmemprof, report_path, bench_path, work, screenshot):
    out = os.path.join(work, "report.html")
    recorded = report_forms.load(report_path).get("recorded")
    # A recording is checked as it is: its page must say what record mode knows in place of
    # lifetimes, not to run the suite again.
    if not recorded:
        report_path = with_lifetimes(report_path, work)
    run([gmemprof, "html", report_path, "--baseline", report_path, "--bench", bench_path,
         "-o", out])
    page = open(out, encoding="utf-8").read()
    # Self-contained: nothing fetched (the SVG namespace is a name, not a fetch).
    stripped = page.replace("http://www.w3.org/2000/svg", "")
    for bad in ("http://", "https://", "<link", " src=", "@import", "url("):
        if bad in stripped:
            fail(f"the page refers to something outside it ({bad!r})")
    p = browser(["--virtual-time-budget=5000", "--dump-dom", "file://" + os.path.abspath(out)],
                work)
    m = re.search(r'<pre id="gmem-selfcheck">(.*?)</pre>', p.stdout, re.S)
    if not m or not m.group(1).strip():
        fail("the page did not write its self-check (script did not run?):\n" + p.stderr[-3000:])
    got = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&")
                     .replace("&lt;", "<").replace("&gt;", ">"))
    if got["errors"]:
        fail(f"script errors on the page: {got['errors']}")
    report = report_forms.load(report_path)
    bench = json.load(open(bench_path))
    scen = report["scenarios"]
    families = {"graph/first_launch_no_upload", "graph/upload", "graph/launch_after_trim",
                "floor/map", "graph/steady_launch"}
    bench_points = 0
    for b in bench["benchmarks"]:
        if b.get("aggregate_name") != "median" or "bytes" not in b or "real_time" not in b:
            continue
        fam = b["name"].split("/bytes:")[0]
        if fam in families and b.get("allocs", 1) == 1 and b["bytes"] > 0 and b["real_time"] > 0:
            bench_points += 1
    check = subprocess.run([gmemprof, "check", report_path, report_path], capture_output=True,
                           text=True)
    compared = re.search(r"(\d+) compared", check.stdout)
    if not compared:
        fail("gmemprof check printed no 'N compared' line:\n" + check.stdout)
    compared = int(compared.group(1))
    # A recording's page draws the costliest graphs only (as show lists them), the rest counted.
    shown = scen
    graphs = []
    if recorded:
        graphs = sorted(recorded.get("graphs", []), key=lambda g: (-graph_cost(g), natural(g["name"])))
        names = [g["name"] for g in graphs[:PAGE_GRAPHS]]
        shown = [next(s for s in scen if s["name"] == n) for n in names
                 if any(s["name"] == n for s in scen)]
    # A graph of the framework's pool has no footprint, lifetimes or counters drawn (its figure
    # is what it added to its pool).
    if recorded:
        kinds = {g["name"]: g.get("kind") for g in recorded.get("graphs", [])}
        shown = [s for s in shown if kinds.get(s["name"]) != "private_pool"]
    want = {
        "bars": 3 * sum(1 for s in shown if s["status"] == "ok" and s.get("analysis")),
        "lifetime_boxes": sum(len(s.get("allocations", [])) for s in shown),
        "lifetime_rows": sum(len({a["address"] for a in s.get("allocations", [])}) for s in shown),
        "counter_charts": sum(1 for s in shown if s.get("counters_after_phase")),
        "counter_points": 4 * sum(len(s.get("counters_after_phase", [])) for s in shown),
        "bench_points": bench_points,
        "verdict_rows": min(compared, PAGE_CHECK_ROWS),
        "verdict_rows_total": compared,
        "label_overlaps": 0,
        "labels_clipped": 0,
        "size_text_mismatches": [],
    }
    pools = recorded.get("pools", []) if recorded else []
    # A device without memory nodes whose framework pools were read after captures is drawn as
    # those pools, capture by capture, not as a pool of nothing.
    def framework_of(p):
        return [f for f in recorded.get("framework_pools", []) if f["device"] == p["device"] and
                f.get("after_captures") and (not p.get("process") or f["id"].startswith("[" + p["process"] + " ")
                                              or f["id"].startswith("[" + p["process"] + "]"))]
    framework = [p for p in pools if p["high_bytes"] == 0 and framework_of(p)]
    pools = [p for p in pools if p not in framework]
    shares = [a for p in pools for a in p.get("attribution", []) if a["bytes"] > 0]
    segments = sum(len(segments_of(p)) for p in pools)
    want.update({
        "pool_charts": len(pools),
        "pool_points": sum(len(p.get("timeline", [])) for p in pools),
        "pool_high_bytes": sum(p["high_bytes"] for p in pools),
        "growth_bars": len(graphs[:PAGE_GRAPHS]),
        "others_rows": len({growth_cause(g) for g in graphs[PAGE_GRAPHS:]}),
        "attribution_segments": segments,
        "attribution_legend_rows": segments,
        "attribution_bytes": sum(a["bytes"] for a in shares),
        "reached_segments": sum(1 for p in pools if any(
            a["graph"] == p.get("high_graph") and a["why"] == "working_set" and a["bytes"] > 0
            for a in p.get("attribution", []))),
        "concurrent_marks": sum(sum(1 for t in p.get("timeline", []) if t.get("concurrent")) +
                                (1 if p.get("high_concurrent") else 0) for p in pools),
        "framework_charts": len(framework),
        "framework_points": sum(len(f["after_captures"]) for p in framework for f in framework_of(p)),
    })
    for k, v in want.items():
        if got.get(k) != v:
            fail(f"the page drew {got.get(k)} {k}, expected {v}")
    if got.get("size_text_checked", 0) < 10:
        fail(f"the page checked its size formatter on {got.get('size_text_checked')} values")
    if shares and got.get("attribution_min_width_px", 0) < 5.5:
        fail(f"an attribution segment is {got.get('attribution_min_width_px')} px wide: too thin "
             "to see")
    size = os.path.getsize(out)
    if size > MAX_PAGE_BYTES:
        fail(f"the page is {size} bytes, more than {MAX_PAGE_BYTES}")
    if got.get("load_ms") is None or got["load_ms"] > MAX_LOAD_MS:
        fail(f"the page took {got.get('load_ms')} ms to its load event (at most {MAX_LOAD_MS})")
    check_pool_text(p.stdout, pools)
    # The page's script holds both texts; what it wrote into the note is what a reader sees.
    note = re.search(r'<div class="note" id="lt-note">(.*?)</div>', p.stdout, re.S)
    if recorded and (not note or "gmemprof run" in note.group(1)):
        fail("the page of a recording advises running the suite again: " +
             (note.group(1) if note else "(no lifetime note)"))
    if recorded and pools and 'id="pool-section" style="display:none"' in p.stdout:
        fail("the page of a recording hides its pool section")
    bad = re.findall(r'<tr class="verdict-(?:regression|missing)"><td>(.*?)</td><td>(.*?)</td>',
                     p.stdout)
    # A recording can time one phase twice in a scenario (a slow launch classified steady, and
    # the steady launches' summary); the check pairs the baseline's second with the current's
    # first, so such a row is not the page's fault: named, not failed.
    def twice(scenario, metric):
        phase = metric.split(".", 1)[-1]
        for s in scen:
            if key(s) == scenario:
                return sum(c["phase"] == phase for c in s.get("launch_costs", [])) > 1
        return False
    known = [b for b in bad if recorded and twice(*b)]
    if len(known) != len(bad):
        fail(f"a report checked against itself shows a regression: {bad}")
    for scenario, metric in known:
        print(f"check_views: note: {scenario} {metric} regressed against itself: the "
              f"scenario times phase {metric.split('.', 1)[-1]} twice")
    if screenshot:
        s = browser(["--window-size=1400,2600", "--hide-scrollbars", "--virtual-time-budget=5000",
                     "--screenshot=" + os.path.abspath(screenshot),
                     "file://" + os.path.abspath(out)], work)
        if not os.path.exists(screenshot):
            fail("no screenshot written:\n" + s.stderr[-2000:])
    print(f"check_views: html ok: {size} bytes, {got['load_ms']} ms to load "
          f"({got['render_ms']} ms drawing), {got['labels']} labels ({got['labels_dropped']} "
          f"dropped, {got['label_overlaps']} overlapping, {got['labels_clipped']} clipped): "
          f"{json.dumps(want)}")


def main():
    if len(sys.argv) >= 5 and sys.argv[1] == "trace":
        os.makedirs(sys.argv[4], exist_ok=True)
        check_trace(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) >= 6 and sys.argv[1] == "html":
        os.makedirs(sys.argv[5], exist_ok=True)
        shot = sys.argv[7] if len(sys.argv) >= 8 and sys.argv[6] == "--screenshot" else None
        check_html(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], shot)
    else:
        print(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
