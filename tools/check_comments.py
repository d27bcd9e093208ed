#!/usr/bin/env python3
"""Comments say what and why, never when: no issue numbers and no commit hashes in gmem's code,
tests, scripts and build files (git log and reports/ hold history). Reports, docs' measured
results and file names of committed runs are not code and are not read.

Usage: tools/check_comments.py SOURCE_DIR    exit 0 when all hold, 1 naming each line otherwise."""
import re
import subprocess
import sys

root = sys.argv[1]
CODE = re.compile(r"\.(cpp|hpp|cu|cuh|h|c|py|sh|cmake|map)$|(^|/)CMakeLists\.txt$")
ISSUE = re.compile(r"\bissues? #?\d+\b", re.I)
# A word of 7 to 12 hex digits with a letter and a digit, not part of a longer name or a 0x number.
COMMIT = re.compile(r"(?<![0-9A-Za-z_/.-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,12}(?![0-9A-Za-z_-])")
COMMENT = re.compile(r"(//|#|/\*|^\s*\*|\"\"\"|''')")

files = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True, check=True).stdout.split()
problems = []
for path in files:
    if not CODE.search(path) or path.startswith(("reports/", "docs/")):
        continue
    try:
        lines = open(f"{root}/{path}", encoding="utf-8", errors="replace").read().splitlines()
    except OSError:
        continue
    in_docstring = False
    for number, line in enumerate(lines, 1):
        quotes = line.count('"""') + line.count("'''")
        commented = in_docstring or bool(COMMENT.search(line))
        if quotes % 2:
            in_docstring = not in_docstring
        if ISSUE.search(line):
            problems.append(f"{path}:{number}: an issue number: say the fact, not where it was tracked")
        elif commented and COMMIT.search(line.split("//", 1)[-1] if "//" in line else line):
            problems.append(f"{path}:{number}: a commit hash in a comment ({COMMIT.search(line).group(0)}): "
                            "git log holds history")
for p in problems:
    print(p)
print(f"{len(files)} files tracked, {len(problems)} lines with history in code")
sys.exit(1 if problems else 0)
