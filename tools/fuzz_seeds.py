#!/usr/bin/env python3
"""Writes the seed corpus of one fuzz target (tools/fuzz.sh) from the committed reports: small
inputs that each take the reader somewhere real. Usage: fuzz_seeds.py NAME OUT_DIR

  report:   each committed report cut to one scenario (baselines, latest, recorded)
  check:    baseline and latest of one scenario, joined by the check target's separator line
  bench:    each gmem_bench JSON cut to its context and a few benchmarks
  skeleton: each skeleton found in a committed report
  recorded: each recorded report (reports/record/), with its "recorded" section
and, first, what the fuzzers once found (tests/fuzz/regressions/NAME/).
"""
import glob
import json
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SEPARATOR = "\n--gmem-fuzz-current--\n"


def load(path):
    with open(path) as f:
        return json.load(f)


def reports():
    for path in sorted(glob.glob(os.path.join(ROOT, "reports", "**", "*.json"), recursive=True)):
        try:
            d = load(path)
        except ValueError:
            continue
        if isinstance(d, dict) and "schema_version" in d and "scenarios" in d:
            yield path, d


def one_scenario(d, s):
    cut = {k: v for k, v in d.items() if k not in ("scenarios", "recorded")}
    cut["scenarios"] = [s]
    return cut


def seeds(name):
    if name == "report":
        for path, d in reports():
            for s in d["scenarios"]:
                yield json.dumps(one_scenario(d, s), indent=1)
    elif name == "check":
        base = load(os.path.join(ROOT, "reports", "baseline", "h100.json"))
        latest = {s["name"]: s for s in load(os.path.join(ROOT, "reports", "latest", "h100.json"))["scenarios"]}
        for s in base["scenarios"]:
            if s["name"] in latest:
                yield (json.dumps(one_scenario(base, s), indent=1) + SEPARATOR +
                       json.dumps(one_scenario(base, latest[s["name"]]), indent=1))
    elif name == "bench":
        for path in sorted(glob.glob(os.path.join(ROOT, "reports", "bench", "*.json"))):
            d = load(path)
            if isinstance(d, dict) and "benchmarks" in d:
                for start in range(0, min(len(d["benchmarks"]), 60), 12):
                    yield json.dumps({"context": d.get("context", {}),
                                      "benchmarks": d["benchmarks"][start:start + 12]}, indent=1)
    elif name == "skeleton":
        for path, d in reports():
            for s in d["scenarios"]:
                for sk in s.get("skeletons", []):
                    yield json.dumps(sk, indent=1)
    elif name == "recorded":
        for path in sorted(glob.glob(os.path.join(ROOT, "reports", "record", "*.json"))):
            d = load(path)
            if isinstance(d, dict) and "recorded" in d:
                yield json.dumps(d, indent=1)
    else:
        sys.exit("fuzz_seeds.py: unknown target %r (report, check, bench, skeleton, recorded)" % name)


def regressions(name):
    """Inputs the fuzzers once found (tests/fuzz/regressions/NAME/): every run starts from them."""
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "fuzz", "regressions", name, "*"))):
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            yield f.read()


def main():
    name, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    count = 0
    seen = set()
    for text in list(regressions(name)) + list(seeds(name)):
        if text in seen or len(text) > 262144:
            continue
        seen.add(text)
        with open(os.path.join(out, "seed-%04d.json" % count), "w", encoding="utf-8",
                  errors="surrogateescape") as f:
            f.write(text)
        count += 1
    if count == 0:
        sys.exit("fuzz_seeds.py: no seeds for %s: the committed reports were not found" % name)


if __name__ == "__main__":
    main()
