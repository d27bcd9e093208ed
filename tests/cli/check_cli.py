#!/usr/bin/env python3
"""gmemprof's command line keeps the conventions of the tools its users run (git, nsys), checked on
the built binary without a GPU: `gmemprof help [COMMAND]`; an unknown option named with the
command's usage line only (the whole help on --help); -o/--out for every command that writes;
--opt=value; exit 0 done, 1 a regression (check only), 2 usage or bad input, 3 no usable GPU;
hints that fit the report's kind; no source path in a message.

Usage: check_cli.py GMEMPROF SOURCE_DIR    exit 0 when all hold, 1 otherwise (naming each)."""
import json
import os
import re
import subprocess
import sys
import tempfile

gmemprof, root = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
failures = []
tmp = tempfile.mkdtemp()
recording = os.path.join(root, "reports", "record", "serving-h100.json")
suite = os.path.join(root, "reports", "latest", "h100.json")
baseline = os.path.join(root, "reports", "baseline", "h100.json")


def run(*args):
    p = subprocess.run([gmemprof, *args], capture_output=True, text=True, cwd=tmp)
    return p.returncode, p.stdout, p.stderr


def expect(name, ok, detail=""):
    if not ok:
        failures.append(f"{name}: {detail}")


def case(name, args, code, has=(), lacks=(), stream="both"):
    rc, out, err = run(*args)
    text = {"out": out, "err": err, "both": out + err}[stream]
    expect(name, rc == code, f"exit {rc}, expected {code}\n{out}{err}")
    for h in has:
        expect(name, h in text, f"no {h!r} in:\n{text}")
    for l in lacks:
        expect(name, l not in text, f"{l!r} in:\n{text}")
    # No message names gmem's own sources.
    expect(name, not re.search(r"\b(alloc|profiler|record|cli)/[a-z_]+\.(cpp|hpp|cu)\b", out + err),
           f"a source path in:\n{out}{err}")
    return out, err


# help, and help COMMAND
case("help", ["help"], 0, has=["usage: gmemprof <command>", "record", "exit status"])
case("help check", ["help", "check"], 0, has=["usage: gmemprof check", "Mann-Whitney"])
case("check --help", ["check", "--help"], 0, has=["usage: gmemprof check", "Mann-Whitney"])
case("help of an unknown command", ["help", "nosuch"], 2, has=["'nosuch'"])
case("unknown command", ["nosuch"], 2, has=["'nosuch'", "gmemprof help"])
case("no command", [], 2, has=["usage: gmemprof"])
# A usage error: its one line, the command's usage, where to read more; not the whole help.
case("unknown option of show", ["show", "--foo", recording], 2,
     has=["unknown option '--foo'", "usage: gmemprof show", "See 'gmemprof help show'"],
     lacks=["the same for scripts"], stream="err")
case("unknown option of check", ["check", "--foo", baseline, suite], 2,
     has=["unknown option '--foo'", "usage: gmemprof check"], lacks=["Mann-Whitney"], stream="err")
case("missing value", ["show", recording, "--top"], 2, has=["--top"], stream="err")
case("value out of range", ["show", recording, "--top", "0"], 2, has=["--top"], stream="err")
case("show without a report", ["show"], 2, has=["usage: gmemprof show"], stream="err")
# --opt=value and the short alias
out, _ = case("--top=3", ["show", "--top=3", recording], 0)
expect("--top=3 lists three graphs", "the top 3 of 9 graphs" in out, out[:2000])
# -o / --out for each command that writes, both spellings
for cmd, extra in (("html", []), ("trace", [])):
    for flag in ("-o", "--out", "--out="):
        path = os.path.join(tmp, f"{cmd}{flag.strip('-=')}{len(flag)}.out")
        args = [cmd, recording] + ([flag + path] if flag.endswith("=") else [flag, path]) + extra
        case(f"{cmd} {flag}", args, 0)
        expect(f"{cmd} {flag} wrote", os.path.getsize(path) > 0 if os.path.exists(path) else False, path)
bench = os.path.join(root, "reports", "bench", "h100.json")
path = os.path.join(tmp, "bench.md")
case("bench-summary -o", ["bench-summary", bench, "-o", path], 0)
expect("bench-summary -o wrote", os.path.exists(path), path)
case("run -o --list", ["run", "-o", os.path.join(tmp, "r.json"), "--list"], 0, has=["single_alloc"])
rc, out, err = run("record", "-o", os.path.join(tmp, "rec.json"), "--", "true")
expect("record -o runs COMMAND and exits with its status", rc == 0, f"exit {rc}\n{out}{err}")
rc, _, err = run("record", "-o", os.path.join(tmp, "rec.json"), "--", "sh", "-c", "exit 7")
expect("record exits with COMMAND's status", rc == 7, f"exit {rc}\n{err}")
case("record with an unknown option", ["record", "--foo", "--", "true"], 2, has=["unknown option '--foo'"])
# 3: no usable GPU (where there is none; on a machine with one, info exits 0)
if run("info")[0] == 0:
    print("check_cli: a GPU is present: the no-GPU exit status (3) is not checked here")
else:
    case("info without a GPU", ["info"], 3, has=["no usable CUDA GPU"])
    case("replay without a GPU", ["replay", recording, "--set"], 3, has=["no usable CUDA GPU"],
         lacks=["cudaSetDevice"])
# 2: inputs that cannot be used, with a hint fitting the report's kind
case("a missing report", ["show", os.path.join(tmp, "none.json")], 2, has=["none.json"])
case("a recording against a suite report", ["check", baseline, recording], 2,
     has=["cannot compare a recording with a suite report"], lacks=["regressed"])
broken = os.path.join(tmp, "broken-recording.json")
doc = json.load(open(recording))
doc["recorded"]["graphs"][0]["devices"] = ["zero"]
json.dump(doc, open(broken, "w"))
case("a broken recording says to record it again", ["show", broken], 2, has=["gmemprof record"],
     lacks=["gmemprof run --out"], stream="err")
# 0 and 1: check of two reports of one kind; 1 only for a regression
case("check of a suite report against its baseline", ["check", baseline, suite], 0)
case("check of a recording against itself", ["check", recording, recording], 0)
worse = os.path.join(tmp, "worse.json")
doc = json.load(open(suite))
for s in doc["scenarios"]:
    if s.get("status") == "ok":
        s["analysis"]["reserved_high_bytes"] *= 4
        for t in s.get("trials", []):
            t["reserved_high_bytes"] *= 4
        break
json.dump(doc, open(worse, "w"))
case("a regression exits 1", ["check", baseline, worse], 1, has=["regression"])
case("--version", ["--version"], 0, has=["gmem ", "commit "])

for f in failures:
    print("check_cli: FAIL: " + f)
print(f"check_cli: {'all hold' if not failures else f'{len(failures)} failed'}")
sys.exit(1 if failures else 0)
