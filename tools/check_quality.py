#!/usr/bin/env python3
"""Measures how often `gmemprof check` cries wolf and how often it catches injected regressions.

Usage: tools/check_quality.py GMEMPROF RESULTS_DIR
RESULTS_DIR holds clean1..N.json (back-to-back `gmemprof run --trials K` of one binary) and
inj-NAME-I.json (runs with GMEM_SUITE_INJECT=NAME over the scenarios it touches). Prints, as JSON:
- for each k <= K, the false regressions, unstable rows and rows per pair over every ordered
  pair (i < j) of clean runs, each
  report cut to its first k trials (k = 1 is a report of one sample, as before trials); and
  ordered_pairs_failed over both orders (every clean run as the baseline of every other: a
  baseline made in a fast period of the host is as likely as one made in a slow one);
- for each injection, how many of its runs `check` (baseline: clean1 cut to the same scenarios,
  by name and parameters) failed with exit 1, and against_every_baseline: the same with every
  clean run as the baseline.
"""
import glob, itertools, json, os, re, subprocess, sys, tempfile

gmemprof, d = sys.argv[1], sys.argv[2]
tmp = tempfile.mkdtemp()

def load(p):
    with open(p) as f:
        return json.load(f)

def scenario_key(s):
    """A scenario's key, as the check matches scenarios: its name and parameters."""
    return s["name"] + json.dumps(s.get("parameters", {}), sort_keys=True)

def cut(rep, k, keep=None):
    """The report as a run of k trials would be: each scenario's first k trials, and for a
    scenario that got extra trials (its trials disagreed on memory: gmemprof run gives it 2K
    more), the same share of them (k = K: the report as it was run)."""
    rep = json.loads(json.dumps(rep))
    if keep is not None:
        rep["scenarios"] = [s for s in rep["scenarios"] if scenario_key(s) in keep]
    counts = [len(s["trials"]) for s in rep["scenarios"] if "trials" in s]
    base = min(counts) if counts else 1
    for s in rep["scenarios"]:
        if "trials" not in s:
            continue
        s["trials"] = s["trials"][:k * len(s["trials"]) // base]
        if k == 1:  # a one-sample report: the first trial's values, no trials section
            t = s.pop("trials")[0]
            for l in s["launch_costs"]:
                for tl in t["launches"]:
                    if tl["phase"] == l["phase"]:
                        l["host"]["median_us"] = tl["host_median_us"]
                        l["wall"]["median_us"] = tl["wall_median_us"]
    return rep

def write(rep, name):
    p = os.path.join(tmp, name)
    with open(p, "w") as f:
        json.dump(rep, f)
    return p

def check(b, c):
    r = subprocess.run([gmemprof, "check", b, c, "--format", "json", "--all"],
                       capture_output=True, text=True)
    out = json.loads(r.stdout) if r.stdout.strip().startswith("{") else {"rows": []}
    return r.returncode, out

clean = sorted(glob.glob(os.path.join(d, "clean*.json")),
               key=lambda p: int(re.findall(r"(\d+)\.json$", p)[0]))
reps = [load(p) for p in clean]
K = min(len(s["trials"]) for s in reps[0]["scenarios"] if "trials" in s)  # as run: --trials K
result = {"clean_runs": len(reps), "trials": K, "false_alarms": {}, "injected": {}}
for k in sorted({1, 2, 3, K} | set(range(1, K + 1))):
    paths = [write(cut(r, k), f"k{k}-{i}.json") for i, r in enumerate(reps)]
    failed, rows, unstable, detail, per_pair, ordered_failed = 0, 0, 0, {}, [], 0
    for i, j in itertools.combinations(range(len(paths)), 2):
        ordered_failed += check(paths[j], paths[i])[0] == 1  # the other order
        rc, out = check(paths[i], paths[j])
        failed += rc == 1
        ordered_failed += rc == 1
        per_pair.append(len(out["rows"]))
        for row in out["rows"]:
            if row["verdict"] in ("regression", "missing"):
                rows += 1
                key = row["scenario"] + " " + row["metric"]
                detail[key] = detail.get(key, 0) + 1
            unstable += row["verdict"] == "unstable"
    result["false_alarms"][k] = {"pairs": len(paths) * (len(paths) - 1) // 2,
                                 "pairs_failed": failed,
                                 "ordered_pairs": len(paths) * (len(paths) - 1),
                                 "ordered_pairs_failed": ordered_failed,
                                 "regression_rows": rows,
                                 "unstable_rows": unstable,
                                 "rows_per_pair": round(sum(per_pair) / max(len(per_pair), 1), 1),
                                 "by_metric": detail}
for name in sorted({re.findall(r"inj-(.+)-\d+\.json$", p)[0]
                    for p in glob.glob(os.path.join(d, "inj-*.json"))}):
    runs = sorted(glob.glob(os.path.join(d, f"inj-{name}-*.json")))
    caught, metrics, every, bases_of = 0, {}, 0, {}
    for p in runs:
        cur = load(p)
        keep = frozenset(scenario_key(s) for s in cur["scenarios"])
        if keep not in bases_of:  # the clean runs cut to these scenarios, written once
            bases_of[keep] = [write(cut(r, K, keep), f"base-{name}-{len(bases_of)}-{i}.json")
                              for i, r in enumerate(reps)]
        bases = bases_of[keep]
        every += sum(check(b, p)[0] == 1 for b in bases[1:])
        rc, out = check(bases[0], p)
        caught += rc == 1
        every += rc == 1
        for row in out["rows"]:
            if row["verdict"] in ("regression", "missing"):
                key = row["scenario"] + " " + row["metric"]
                metrics[key] = metrics.get(key, 0) + 1
    result["injected"][name] = {"runs": len(runs), "caught": caught,
                                "against_every_baseline": {"checks": len(runs) * len(reps),
                                                           "caught": every},
                                "by_metric": metrics}
print(json.dumps(result, indent=1))
