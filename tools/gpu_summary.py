#!/usr/bin/env python3
"""Summarises a tools/gpu-suite.sh run as JSON (stdout): commit, date, device, driver and
runtime versions, test counts, and sanitizer errors."""
import datetime
import json
import os
import re
import sys


def read(path, default=""):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default


def skip_reasons(log):
    """test name -> the message GTEST_SKIP printed (GoogleTest's JSON leaves it out)."""
    reasons = {}
    for m in re.finditer(r"^\[ RUN      \] (\S+)\n(.*?)^\[  SKIPPED \] \1", log, re.M | re.S):
        lines = [l for l in m.group(2).splitlines() if l and not l.endswith(": Skipped")]
        reasons[m.group(1)] = " ".join(lines).strip()
    return reasons


def test_counts(path, log=""):
    """passed / failed / skipped from a GoogleTest JSON report; None when it is missing."""
    reasons = skip_reasons(log)
    try:
        with open(path) as f:
            report = json.load(f)
    except (OSError, ValueError):
        return None
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    failed_names, skipped = [], []
    for suite in report.get("testsuites", []):
        for t in suite.get("testsuite", []):
            name = f'{suite["name"]}.{t["name"]}'
            if t.get("failures"):
                counts["failed"] += 1
                failed_names.append(name)
            elif t.get("result") == "SKIPPED":
                counts["skipped"] += 1
                skipped.append({"test": name, "reason": reasons.get(name, "")})
            else:
                counts["passed"] += 1
    counts["failed_tests"] = failed_names
    counts["skipped_tests"] = skipped
    return counts


def sanitizer_run(out_dir, tool):
    log = read(os.path.join(out_dir, f"sanitizer-{tool}.log"))
    m = re.search(r"ERROR SUMMARY: (\d+) error|RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) error",
                  log)
    errors = int(m.group(1) or m.group(2)) if m else None
    excluded = []
    for line in read(os.path.join(out_dir, f"sanitizer-{tool}-excluded.txt")).splitlines():
        test, _, reason = line.partition("\t")
        excluded.append({"test": test, "reason": reason})
    return {
        "tool": tool,
        "excluded_tests": excluded,
        "errors": errors,
        "completed": m is not None,
        "tests": test_counts(os.path.join(out_dir, f"sanitizer-{tool}-tests.json"), log),
    }


def main():
    build_dir, out_dir = sys.argv[1], sys.argv[2]
    info = read(os.path.join(out_dir, "info.txt"))
    smi = read(os.path.join(out_dir, "nvidia-smi.txt")).strip().splitlines()
    name = re.search(r"^device 0: (.+)$", info, re.M)
    cuda_driver = re.search(r"driver version:\s+(\S+)", info)
    runtime = re.search(r"runtime version:\s+(\S+)", info)
    runs = [sanitizer_run(out_dir, t) for t in ("memcheck", "racecheck")]
    errors = [r["errors"] for r in runs]
    summary = {
        "commit": read(os.path.join(build_dir, "COMMIT")).strip() or "unknown",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device_name": name.group(1) if name else None,
        "device_count": len(smi),
        "driver_version": smi[0].split(",")[-1].strip() if smi else None,
        "cuda_driver_version": cuda_driver.group(1) if cuda_driver else None,
        "runtime_version": runtime.group(1) if runtime else None,
        "tests": test_counts(os.path.join(out_dir, "tests.json"),
                             read(os.path.join(out_dir, "tests.log"))),
        "sanitizer": {
            "tool": "+".join(r["tool"] for r in runs),
            "errors": None if None in errors else sum(errors),
            "runs": runs,
        },
        # Figures the GPU tests print ("sampler: ..."), kept with the run that measured them.
        "measurements": [l for l in read(os.path.join(out_dir, "tests.log")).splitlines()
                         if l.startswith("sampler:")],
        "command": "tools/device-build.sh && tools/gpu-suite.sh (on the GPU machine)",
    }
    json.dump(summary, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
