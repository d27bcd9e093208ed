#!/usr/bin/env python3
"""Compares what a client read itself (SELF_JSON from tests/record/*.py or record_client) with
what `gmemprof record` recorded (REPORT). For each self point paired with a recorded event, the
event's counters after the call must equal the self-read ones (reserved current and high
exactly; used counters are printed). Usage: check_record.py SELF_JSON REPORT [--no-memory-nodes]
Exit 0 all equal, 1 a mismatch or a missing event."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import report_forms  # noqa: E402


def main():
    self_doc = json.load(open(sys.argv[1]))
    rep = report_forms.load(sys.argv[2])
    rec = rep.get("recorded")
    failures = 0
    if rec is None:
        print("FAIL: the report has no recorded section"); return 1
    if rec.get("partial"):
        print("FAIL: the report is partial:", rec.get("partial_reason")); failures += 1
    if "--no-memory-nodes" in sys.argv:
        ok = (not rec["graphs"] and rec["graphs_without_memory_nodes"] >= 1 and
              any("private memory pool" in n for n in rec["notes"]))
        zero = all(p["counters"]["reserved_high"] == 0 for p in self_doc["points"])
        print(("PASS" if ok and zero else "FAIL") +
              f": {rec['graphs_without_memory_nodes']} graph(s) without memory nodes, "
              f"notes {rec['notes']}, self-read reserved_high all zero: {zero}")
        return 0 if ok and zero else 1
    # The bounds are rounded to the granule gmemprof record measured before the command started
    # (32 MiB on H100/H200), not to cuMemGetAllocationGranularity's 2 MiB.
    env = rep["environment"]
    measured = "measured by gmemprof record" in env["granularity_method"]  # now or cached
    print(f"{'PASS' if measured else 'FAIL'} granularity {env['granularity_bytes']} bytes "
          f"({env['granularity_method']}); bound ratios: " +
          ", ".join(f"'{s['name']}' {s['analysis']['bound_ratio']}" for s in rep["scenarios"]))
    failures += not measured
    graphs = rec["graphs"]
    print(f"{self_doc['client']}: {len(graphs)} recorded graph(s):",
          ", ".join(f"'{g['name']}'" for g in graphs))
    for p in self_doc["points"]:
        ev = p.get("event")
        if not ev:
            continue
        if p["graph"] >= len(graphs):
            print(f"FAIL {p['label']}: no recorded graph #{p['graph']}"); failures += 1; continue
        events = graphs[p["graph"]]["events"]
        if ev == "launch@after_trim":
            # The first launch after the first trim, whatever it was classified as.
            trims = [i for i, e in enumerate(events) if e["kind"] == "trim"]
            cands = [e for e in events[trims[0] + 1:] if e["kind"] == "launch"] if trims else []
            cands = [e for e in cands if "after" in e]
        else:
            kind, _, cls = ev.partition(":")
            cands = [e for e in events
                     if e["kind"] == kind and "after" in e and
                     (not cls or e.get("class", "").startswith(cls))]
        if not cands:
            print(f"FAIL {p['label']}: no recorded {ev} event with counters"); failures += 1
            continue
        if "devices" in p and graphs[p["graph"]]["devices"] != p["devices"]:
            print(f"FAIL {p['label']}: graph '{graphs[p['graph']]['name']}' attributed to devices "
                  f"{graphs[p['graph']]['devices']}, expected {p['devices']}"); failures += 1
        if cands[0]["device"] != p["device"]:
            print(f"FAIL {p['label']}: recorded on device {cands[0]['device']}, read on {p['device']}")
            failures += 1
        after = cands[0]["after"]
        mine = p["counters"]
        same = all(after[k] == mine[k] for k in ("reserved_current", "reserved_high"))
        used = all(after[k] == mine[k] for k in ("used_current", "used_high"))
        print(f"{'PASS' if same else 'FAIL'} {p['label']} vs recorded {ev} "
              f"[{cands[0]['kind']}:{cands[0].get('class', '')}] "
              f"(host {cands[0]['host_us']:.1f} us): reserved {after['reserved_current']}/"
              f"{after['reserved_high']} recorded, {mine['reserved_current']}/"
              f"{mine['reserved_high']} self-read; used {'equal' if used else 'differs'} "
              f"({after['used_current']}/{after['used_high']} vs {mine['used_current']}/"
              f"{mine['used_high']}); device {p['device']}, graph devices "
              f"{graphs[p['graph']]['devices']} peers {graphs[p['graph']].get('peers')}")
        failures += not same
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
