#!/usr/bin/env python3
"""The same programs recorded through CUPTI and through gmem's own interception
(`gmemprof record --hook interpose`) must give the same recordings, but for times: this compares
two tools/record_corpus.py output folders (or --bill ones), one per hook, program by program.

Each recording's `recorded` section is compared with what depends on the run's clock masked
(numbers that are not whole, keys ending in _us, _ms or _s, the process id, the recording's own
cost), and with the interception's note taken out of the notes. Everything else (every graph's
identity, site, call stack, name, nodes, events' kinds and bytes, counters, the pool, the bill)
must be equal. Programs whose figures depend on timing name the keys they may differ in (TIMED).
Prints one line per program and writes OUT (JSON: the pairs, their differences, the device).

Usage: compare_hooks.py CUPTI_DIR INTERPOSE_DIR OUT.json"""

import glob
import json
import os
import sys

INTERPOSE_NOTE = "driver calls were taken by gmem's own interception"
# Keys whose values depend on when the driver was asked (they differ between two recordings of
# one program through the same hook): what each is.
TIMED = {
    "remap_contention_events": "a launch's remap met another's (timing)",
}


def masked(o, key=""):
    if isinstance(o, dict):
        out = {}
        for k, v in o.items():
            if k in ("pid", "record_cost", "date") or k.endswith(("_us", "_ms", "_s")) or k in TIMED:
                continue
            if k == "notes" and isinstance(v, list):
                v = [n for n in v if not (isinstance(n, str) and n.startswith(INTERPOSE_NOTE))]
            out[k] = masked(v, k)
        return out
    if isinstance(o, list):
        return [masked(x, key) for x in o]
    if isinstance(o, float) and not o.is_integer():
        return "<time>"
    return o


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
        if ".self" in name or name.endswith(".trace.json") or name.endswith("-summary.json"):
            continue
        try:
            doc = json.load(open(p))
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
            d = differences(masked(cupti[name]), masked(interpose[name]))
            seen = INTERPOSE_NOTE in json.dumps(interpose[name].get("notes", []))
            if not seen:
                d.append("the interposed recording lacks the interception's note: was it recorded through CUPTI?")
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
