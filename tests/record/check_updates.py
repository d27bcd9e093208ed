#!/usr/bin/env python3
"""Compares what tests/record/update_client read and counted itself (SELF_JSON) with what
`gmemprof record` recorded of it (REPORT): one recorded graph with memory nodes; its updates,
refused updates (failed calls), node parameter calls and frees as the client counted them; after
each update and each graph's first launch, the recorded event's counters equal the client's
own reading (reserved current and high exactly; used printed); the pool's high watermark and
what it holds at the end equal the client's final reading, and the pool model's high equals it;
the graph's skeleton is the last graph's (its allocations at the client's last addresses); the
call sequence holds an "update" step per update. With --unrecorded SELF_JSON2, the same client run
unrecorded read the same reserved figures at every point (recording changes no figure).
Usage: check_updates.py SELF_JSON REPORT [--unrecorded SELF_JSON2]
Exit 0 all hold, 1 one does not."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import report_forms  # noqa: E402

RESERVED = ("reserved_current", "reserved_high")
MIB = 1 << 20


class checks:
    def __init__(self):
        self.failures = 0

    def __call__(self, ok, text):
        print(("PASS " if ok else "FAIL ") + text)
        self.failures += not ok
        return ok


def mib(v):
    return f"{v / MIB:.1f} MiB"


def events_of(graph, kind, cls=None):
    """The graph's events of `kind` (and class `cls`) that the driver took, with counters after."""
    return [e for e in graph.get("events", [])
            if e["kind"] == kind and not e.get("result") and "after" in e and
            (cls is None or e.get("class", "") == cls)]


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    own = json.load(open(argv[1]))
    rep = report_forms.load(argv[2])
    check = checks()
    rec = rep.get("recorded")
    if not check(rec is not None, "the report has a recorded section"):
        return 1
    check(not rec.get("partial"), f"the report is whole ({rec.get('partial_reason', '')})")
    graphs = [g for g in rec["graphs"] if g.get("kind", "memory_nodes") == "memory_nodes"]
    if not check(len(graphs) == 1, f"{own['client']}: one recorded graph with memory nodes "
                 f"({', '.join(repr(g['name']) for g in graphs)})"):
        return 1
    g = graphs[0]
    gi = rec["graphs"].index(g)
    print(f"graph '{g['name']}', identity {g.get('identity')}, {g['launches']} launches")
    check(g.get("updates", 0) == own["updates"],
          f"updates in place: recorded {g.get('updates', 0)}, the client's {own['updates']}")
    check(g.get("failed_calls", 0) == own["refused"],
          f"refused updates as failed calls: recorded {g.get('failed_calls', 0)}, the client's {own['refused']}")
    refused = [e for e in g["events"] if e["kind"] == "update" and e.get("result")]
    check(len(refused) == own["refused"] and
          all(e["result"] == "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE" for e in refused),
          f"refused update events: {[e['result'] for e in refused]}")
    check(g.get("node_param_sets", 0) == own["node_param_sets"],
          f"node parameter calls: recorded {g.get('node_param_sets', 0)}, the client's {own['node_param_sets']}")
    check(g["launches"] == 2 * (own["updates"] + 1),
          f"launches: recorded {g['launches']}, the client's {2 * (own['updates'] + 1)}")
    frees = [st for st in rec["sequence"] if st["op"] == "free" and st.get("graph") == gi]
    check(len(frees) == own["frees"] and all(st.get("held", -1) == 0 for st in frees),
          f"frees of its output: recorded {len(frees)} (held {sorted({st.get('held', -1) for st in frees})}), "
          f"the client's {own['frees']}")
    steps = sum(1 for st in rec["sequence"] if st["op"] == "update" and st.get("graph") == gi)
    check(steps == own["updates"], f"update steps in the call sequence: {steps}")

    # Each reading against its event: the k-th update, the k-th first launch.
    for p in own["points"]:
        kind, _, cls = p["event"].partition(":")
        cands = events_of(g, kind, cls or None)
        if not check(p["index"] < len(cands), f"{p['label']}: a recorded {p['event']} event #{p['index']} "
                     f"({len(cands)} recorded)"):
            continue
        e, mine = cands[p["index"]], p["counters"]
        after = e["after"]
        same = all(after[k] == mine[k] for k in RESERVED)
        used = all(after[k] == mine[k] for k in ("used_current", "used_high"))
        check(same, f"{p['label']} vs recorded {e['kind']}:{e.get('class', '')} (host {e['host_us']:.1f} us, growth "
              f"{mib(e.get('growth_bytes', 0))}): reserved {mib(after['reserved_current'])}/{mib(after['reserved_high'])} "
              f"recorded, {mib(mine['reserved_current'])}/{mib(mine['reserved_high'])} read; used "
              f"{'equal' if used else 'differs'} ({mib(after['used_current'])} vs {mib(mine['used_current'])})")

    final = own["final"]
    pools = [p for p in rec.get("pools", []) if p["device"] == 0]
    if check(len(pools) == 1, "one pool, device 0's"):
        pool = pools[0]
        check(pool["high_bytes"] == final["reserved_high"],
              f"the pool's high watermark {mib(pool['high_bytes'])} = the client's {mib(final['reserved_high'])}")
        # The recording ends at the exit, after the client let its graphs go and trimmed the pool.
        end = own.get("after_trim", final)
        check(pool["end_bytes"] == end["reserved_current"],
              f"the pool at the end {mib(pool['end_bytes'])} = the client's after its trim {mib(end['reserved_current'])}")
        check(pool["model_high_bytes"] == pool["high_bytes"],
              f"the pool model's high {mib(pool['model_high_bytes'])} = the measured {mib(pool['high_bytes'])} "
              f"(attribution: {[(a['graph'], a['why'], mib(a['bytes'])) for a in pool.get('attribution', [])]})")
    check(g["growth_bytes"] == final["reserved_high"],
          f"the graph's growth {mib(g['growth_bytes'])} = the client's high {mib(final['reserved_high'])} (its only graph)")
    unexplained = [e for e in g["events"] if e.get("class") in ("remap_unexplained", "remap_contention")]
    check(not unexplained, f"no remap the pool model finds unexplained or contended: "
          f"{[(e.get('class'), e['host_us']) for e in unexplained]}")

    scenario = next((s for s in rep.get("scenarios", []) if s["name"] == g["name"]), None)
    if check(scenario is not None, f"a scenario for '{g['name']}'"):
        addresses = sorted(a["address"] for a in scenario.get("allocations", []))
        check(addresses == sorted(own["last_addresses"]),
              f"its skeleton is the last graph's: allocations at {[hex(a) for a in addresses]}, the client's last "
              f"{[hex(a) for a in own['last_addresses']]}")

    if "--unrecorded" in argv:
        plain = json.load(open(argv[argv.index("--unrecorded") + 1]))
        same = len(plain["points"]) == len(own["points"]) and all(
            all(a["counters"][k] == b["counters"][k] for k in RESERVED) for a, b in zip(plain["points"], own["points"]))
        same = same and all(plain["final"][k] == final[k] for k in RESERVED)
        check(same, "unrecorded, the client read the same reserved figures at every point and at the end")
    return 1 if check.failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
