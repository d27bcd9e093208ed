"""A gmem report as gmemprof's reader sees it, for scripts that check reports without gmemprof.

A recording's compact forms are expanded back to the plain ones: arrays written as rows (each
graph's events, the call sequence, the counter timeline, allocations, pools' attribution and
timeline: field names in recorded.row_fields) become objects again, counters written as
[used_current, used_high, reserved_current, reserved_high] (or one number where the four are equal)
become objects of four named members (events' before/after, the counter timeline's points), each
graph's stack index becomes its instantiate_stack, its flags (the names of those set) an object of
four booleans, a graph without own_footprint_method gets the recording's, a skeleton that names a
shape in recorded.skeleton_shapes is made whole with its sizes (their repeats, [[sizes...], times],
unfolded: number_runs), a skeleton node's "node" word
becomes its label, a recording marked timeline_from_events gets back the timeline points its
graphs' events state, each graph gets the values recorded.site_fields states for its site (its
own value wins), each scenario the values recorded.scenario_fields states (its own value wins), a
diagnostic's message_head its code's ending in recorded.message_tails (message), a skeleton that
names no graph its scenario's name, a scenario's allocation_addresses (or allocation_base plus each
of its allocation_offsets, in units of allocation_offset_unit bytes) become its allocations with the sizes
and steps its skeleton states (skeleton_lifetimes), and a recorded scenario marked
phases_from_events gets the counters after each call and the launch costs of its calls that its
graph's events state (as add_event_phases in profiler/report/report.cpp derives them)."""
import heapq
import json

COUNTERS = ("used_current", "used_high", "reserved_current", "reserved_high")


FLAGS = ("auto_free_on_launch", "upload", "device_launch", "use_node_priority")


def counters(value):
    """The four counters as an object, whichever form the report wrote."""
    if isinstance(value, int):
        return dict.fromkeys(COUNTERS, value)
    return dict(zip(COUNTERS, value)) if isinstance(value, list) else value


def _event_points(graphs):
    """The counter timeline's points that the graphs' events state, in time order."""
    points = []
    for g in graphs:
        for e in g.get("events", []):
            if "after" in e:
                event = e["kind"] + (":" + e["class"] if e.get("class") else "")
                points.append({"t_us": e["t_us"], "device": e.get("device", 0), "event": event,
                               "graph": g["name"], "counters": e["after"]})
    return sorted(points, key=lambda p: p["t_us"])  # stable, as the reader's


def _merge_points(from_events, others):
    """Both in time order, the others first at equal times (as the reader merges them)."""
    out, a, b = [], 0, 0
    while a < len(from_events) or b < len(others):
        if b < len(others) and (a == len(from_events) or others[b]["t_us"] <= from_events[a]["t_us"]):
            out.append(others[b])
            b += 1
        else:
            out.append(from_events[a])
            a += 1
    return out


def number_runs(values):
    """A list of numbers whose repeats are folded ([[elements...], times]) as a plain list."""
    out = []
    for v in values:
        if isinstance(v, list):
            out.extend(number_runs(v[0]) * v[1])
        else:
            out.append(v)
    return out


def _whole_skeleton(sk, shapes, name):
    """A skeleton that names a shared shape, made whole with its allocations' sizes (`name`: its
    scenario's, the graph's name where the skeleton states none)."""
    if "shape" not in sk:
        return sk
    whole = {"graph": sk.get("graph", name)}
    whole.update(json.loads(json.dumps(shapes[sk["shape"]])))
    sizes = iter(number_runs(sk.get("bytes", [])))
    for n in whole.get("nodes", []):
        if n.get("kind") == "alloc":
            n["bytes"] = next(sizes)
    return whole


def _whole_message(diagnostic, tails):
    """A diagnostic with its message whole: its message_head and its code's ending."""
    if "message_head" not in diagnostic:
        return diagnostic
    return {("message" if k == "message_head" else k): (v + tails[diagnostic["code"]] if k == "message_head" else v)
            for k, v in diagnostic.items()}


def skeleton_lifetimes(sk):
    """The allocations a whole skeleton states, as the reader's lifetimes(skeleton): its alloc nodes
    in the topological order that takes the lowest-indexed ready node first, with their sizes and
    the steps of their alloc and free nodes (free_step None: not freed in the graph)."""
    nodes = sk.get("nodes", [])
    after = [[] for _ in nodes]
    indegree = [0] * len(nodes)
    edges = [(d, v) for v, n in enumerate(nodes) for d in n.get("deps", [])] + [tuple(e) for e in sk.get("late_edges", [])]
    for a, b in edges:
        after[a].append(b)
        indegree[b] += 1
    ready = [v for v in range(len(nodes)) if indegree[v] == 0]
    heapq.heapify(ready)
    step, freed_at = {}, {}
    while ready:
        v = heapq.heappop(ready)
        if nodes[v].get("kind") == "free":
            freed_at[nodes[v]["frees"]] = len(step)
        step[v] = len(step)
        for b in after[v]:
            indegree[b] -= 1
            if indegree[b] == 0:
                heapq.heappush(ready, b)
    allocs = sorted((step[v], v) for v, n in enumerate(nodes) if n.get("kind") == "alloc")
    return [{"bytes": nodes[v]["bytes"], "alloc_step": at, "free_step": freed_at.get(v)} for at, v in allocs]


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


def _tables(report, rec):
    """(kind, array) for each array of rows a recording may write (see recorded.row_fields)."""
    for g in rec.get("graphs", []):
        yield "events", g.get("events", [])
    for s in report.get("scenarios", []):
        yield "allocations", s.get("allocations", [])
    for p in rec.get("pools", []):
        yield "attribution", p.get("attribution", [])
        yield "pool_timeline", p.get("timeline", [])
    yield "sequence", rec.get("sequence", [])
    yield "timeline", rec.get("timeline", [])


def _objects_from_rows(report, rec):
    """Rows back to objects: recorded.row_fields names each kind's fields ("name?": a null is absent)."""
    fields = rec.pop("row_fields", {})
    for kind, array in _tables(report, rec):
        names = fields.get(kind)
        if not names:
            continue
        for i, row in enumerate(array):
            if isinstance(row, list):
                array[i] = {n.rstrip("?"): v for n, v in zip(names, row) if not (n.endswith("?") and v is None)}


def expand(report):
    """`report` (parsed JSON) with a recording's compact forms expanded in place; returns it."""
    rec = report.get("recorded")
    if not isinstance(rec, dict):
        return report
    _objects_from_rows(report, rec)
    stacks = rec.get("stacks", [])
    graphs = rec.get("graphs", [])
    if rec.get("timeline_from_events"):
        rec["timeline"] = _merge_points(_event_points(graphs), rec.get("timeline", []))
        del rec["timeline_from_events"]
    method = rec.get("own_footprint_method", "")
    site_fields = rec.pop("site_fields", {})
    for g in graphs:
        for key, value in site_fields.get(g.get("site"), {}).items():
            g.setdefault(key, json.loads(json.dumps(value)))
        if "stack" in g:
            g["instantiate_stack"] = stacks[g["stack"]]
        if isinstance(g.get("flags"), list):
            g["flags"] = {f: f in g["flags"] for f in FLAGS}
        g.setdefault("own_footprint_method", method)
        for e in g.get("events", []):
            for key in ("before", "after"):
                if key in e:
                    e[key] = counters(e[key])
    for point in rec.get("timeline", []):
        if "counters" in point:
            point.update(counters(point.pop("counters")))
    scenario_fields, tails = rec.pop("scenario_fields", {}), rec.pop("message_tails", {})
    for s in report.get("scenarios", []):
        for key, value in scenario_fields.items():
            s.setdefault(key, json.loads(json.dumps(value)))
        s["diagnostics"] = [_whole_message(d, tails) for d in s.get("diagnostics", [])]
    for i, s in enumerate(report.get("scenarios", [])):
        if s.get("phases_from_events") and i < len(graphs):
            after, costs = event_phases(graphs[i])
            s["counters_after_phase"] = after
            s["launch_costs"] = costs + s.get("launch_costs", [])
        s["skeletons"] = [_whole_skeleton(sk, rec.get("skeleton_shapes", []), s.get("name", ""))
                          for sk in s.get("skeletons", [])]
        if "allocation_offsets" in s:
            base, unit = s.pop("allocation_base"), s.pop("allocation_offset_unit", 1)
            s["allocation_addresses"] = [base + o * unit for o in number_runs(s.pop("allocation_offsets"))]
        if "allocation_addresses" in s:
            lives = skeleton_lifetimes(s["skeletons"][0])
            s["allocations"] = [dict(address=a, **life) for a, life in zip(s.pop("allocation_addresses"), lives)]
        for sk in s.get("skeletons", []):
            for v, n in enumerate(sk.get("nodes", [])):
                if "node" in n and "label" not in n:
                    n["label"] = f"{n['node']} node #{v} in graph '{sk['graph']}'"
    return report


def load(path):
    """The report at `path`, expanded."""
    with open(path) as f:
        return expand(json.load(f))
