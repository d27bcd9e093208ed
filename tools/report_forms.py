"""A gmem report as gmemprof's reader sees it, for scripts that check reports without gmemprof.

A recording's compact forms are expanded back to the plain ones: counters written as
[used_current, used_high, reserved_current, reserved_high] become objects of four named members
(events' before/after, the counter timeline's points), each graph's stack index becomes its
instantiate_stack, a skeleton node's "node" word becomes its label, and a recorded scenario marked
phases_from_events gets the counters after each call and the launch costs of its calls that its
graph's events state (as add_event_phases in profiler/report/report.cpp derives them)."""
import json

COUNTERS = ("used_current", "used_high", "reserved_current", "reserved_high")


def counters(value):
    """The four counters as an object, whichever form the report wrote."""
    return dict(zip(COUNTERS, value)) if isinstance(value, list) else value


def _summary(samples):
    s = sorted(samples)
    n = len(s)
    median = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
    return {"count": n, "median_us": median, "min_us": s[0], "max_us": s[-1]}


def event_phases(graph):
    """(counters_after_phase, launch_costs) that a recorded graph's events state."""
    order, host, after = [], {}, []
    for e in graph.get("events", []):
        kind = e["kind"]
        if kind in ("free", "release", "capture"):
            continue
        phase = kind + "_failed" if e.get("result") else (e.get("class", "") if kind == "launch" else kind)
        if phase not in host:
            order.append(phase)
            host[phase] = []
        host[phase].append(e.get("host_us", 0.0))
        if "after" in e:
            after.append(dict(phase=phase, **counters(e["after"])))
    return after, [{"phase": p, "host": _summary(host[p])} for p in order]


def expand(report):
    """`report` (parsed JSON) with a recording's compact forms expanded in place; returns it."""
    rec = report.get("recorded")
    if not isinstance(rec, dict):
        return report
    stacks = rec.get("stacks", [])
    graphs = rec.get("graphs", [])
    for g in graphs:
        if "stack" in g:
            g["instantiate_stack"] = stacks[g["stack"]]
        for e in g.get("events", []):
            for key in ("before", "after"):
                if key in e:
                    e[key] = counters(e[key])
    for point in rec.get("timeline", []):
        if "counters" in point:
            point.update(counters(point.pop("counters")))
    for i, s in enumerate(report.get("scenarios", [])):
        if s.get("phases_from_events") and i < len(graphs):
            after, costs = event_phases(graphs[i])
            s["counters_after_phase"] = after
            s["launch_costs"] = costs + s.get("launch_costs", [])
        for sk in s.get("skeletons", []):
            for v, n in enumerate(sk.get("nodes", [])):
                if "node" in n and "label" not in n:
                    n["label"] = f"{n['node']} node #{v} in graph '{sk['graph']}'"
    return report


def load(path):
    """The report at `path`, expanded."""
    with open(path) as f:
        return expand(json.load(f))
