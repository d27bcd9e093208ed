#!/usr/bin/env python3
"""The same programs recorded through CUPTI and through gmem's own interception
(`gmemprof record --hook interpose`) must see the same graphs: this compares two
tools/record_corpus.py output folders, one per hook, program by program.

Compared: what a recording says of each graph that does not depend on when the driver was asked
(GRAPH_FIELDS: its name, identity, site, kind, NVTX range, stream, nodes, devices, peers, flags,
capture site and framework label), the graphs' order, their call stacks, the devices' pools, the
framework's pools and their graphs, and that the interception's note is in the interposed
recording. Figures read from the
driver around calls (a pool's growth, the driver's state, launches' kinds) may differ between two
recordings through one hook (a free completed before a launch or after it, a 2 MiB block the
driver took): those are held by tools/record_corpus.py's checks, each against the program's own
reading, run through each hook. Prints one line per program and writes OUT (JSON).

Usage: compare_hooks.py CUPTI_DIR INTERPOSE_DIR OUT.json"""

import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import report_forms  # noqa: E402

INTERPOSE_NOTE = "driver calls were taken by gmem's own interception"
GRAPH_FIELDS = ("name", "identity", "site", "kind", "nvtx", "stream", "sequence", "nodes", "devices", "peers",
                "flags", "python_site", "framework_label", "instantiate_stack")


def structure(recorded):
    """What the recording (as report_forms reads it: site fields and stacks in each graph) says
    that the hook must not change."""
    graphs = [{k: g.get(k) for k in GRAPH_FIELDS if k in g} for g in recorded.get("graphs", [])]
    # Each device's graph memory pool (which exists where a graph allocated), and each framework
    # pool (PyTorch's) with the graphs captured into it.
    pools = [p.get("device") for p in recorded.get("pools", [])]
    framework = [{k: p.get(k) for k in ("id", "device", "graphs") if k in p}
                 for p in recorded.get("framework_pools", [])]
    shown = {"graphs": graphs, "pools": pools, "framework_pools": framework,
             "graphs_without_memory_nodes": recorded.get("graphs_without_memory_nodes"),
             "partial": recorded.get("partial")}
    # A recording of several processes names each graph by its process ("[p1 pid 5344] ..."): the
    # pid is the run's, not the hook's.
    return json.loads(re.sub(r"\bpid [0-9]+", "pid N", json.dumps(shown)))


def differences(a, b, path="", out=None, limit=8):
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if type(a) is not type(b):
        out.append(f"{path}: {json.dumps(a)[:120]} vs {json.dumps(b)[:120]}")
    elif isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{path}/{k}: only in {'cupti' if k in a else 'interpose'}")
            else:
                differences(a[k], b[k], f"{path}/{k}", out, limit)
    elif isinstance(a, list):
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} vs {len(b)} elements")
        for k, (x, y) in enumerate(zip(a, b)):
            differences(x, y, f"{path}[{k}]", out, limit)
    elif a != b:
        out.append(f"{path}: {json.dumps(a)[:120]} vs {json.dumps(b)[:120]}")
    return out


def recordings(folder):
    found = {}
    for p in sorted(glob.glob(os.path.join(folder, "*.json"))):
        name = os.path.basename(p)
        # A process's own report (PATH.<pid>.json) is kept beside a merged one: compared through it.
        if ".self" in name or name.endswith(".trace.json") or name.endswith("-summary.json") or \
                name.count(".json") > 1:
            continue
        try:
            doc = report_forms.load(p)
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and isinstance(doc.get("recorded"), dict):
            found[name] = doc["recorded"]
    return found


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    cupti, interpose = recordings(sys.argv[1]), recordings(sys.argv[2])
    results = []
    for name in sorted(set(cupti) | set(interpose)):
        if name not in cupti or name not in interpose:
            results.append({"program": name, "passed": False,
                            "differences": [f"recorded only through {'cupti' if name in cupti else 'interpose'}"]})
        else:
            d = differences(structure(cupti[name]), structure(interpose[name]))
            # Each bill names the hook that took its calls (recordings made before said it in a note).
            hooks = {b.get("own", {}).get("hook") for b in interpose[name].get("bills", [])}
            seen = hooks == {"interpose"} or INTERPOSE_NOTE in json.dumps(interpose[name].get("notes", []))
            if not seen:
                d.append(f"the interposed recording's bills name the hook {sorted(map(str, hooks))}: was it recorded through CUPTI?")
            results.append({"program": name, "passed": not d, "differences": d})
        r = results[-1]
        print(("PASS " if r["passed"] else "FAIL ") + name + ("" if r["passed"] else ": " + "; ".join(r["differences"])))
    summary = {"what": __doc__.split("\n\n")[0], "pairs": len(results),
               "passed": sum(r["passed"] for r in results), "results": results}
    with open(sys.argv[3], "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps({k: summary[k] for k in ("pairs", "passed")}))
    sys.exit(0 if results and summary["passed"] == len(results) else 1)


if __name__ == "__main__":
    main()
