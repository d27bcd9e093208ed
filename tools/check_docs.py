#!/usr/bin/env python3
"""The docs hold (issue 23): every relative link and #anchor in README.md and docs/*.md
resolves (the file exists; the anchor is a heading's GitHub slug in it), and the gmemprof
commands they show for a machine without a GPU (show, check, html, trace of committed reports,
in ```sh blocks) run as written, exiting 0; html and trace write into a temporary folder.

Usage: check_docs.py GMEMPROF SOURCE_DIR    exit 0 when all hold, 1 otherwise (naming each)."""
import os
import re
import shlex
import subprocess
import sys
import tempfile

LINK = re.compile(r"\]\(([^)\s]+)\)")  # every link target, an image inside a link too
FENCE = re.compile(r"```(\w*)\n(.*?)```", re.S)


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        text = open(path, encoding="utf-8").read()
        text = FENCE.sub("", text)  # a "# comment" in a code block is no heading
        cache[path] = {slug(m.group(2)) for m in re.finditer(r"^(#+)\s+(.*)$", text, re.M)}
    return cache[path]


def main():
    gmemprof, root = sys.argv[1], sys.argv[2]
    pages = [os.path.join(root, "README.md")] + sorted(
        os.path.join(root, "docs", f) for f in os.listdir(os.path.join(root, "docs")) if f.endswith(".md"))
    failures, links, commands = [], 0, 0
    for page in pages:
        text = open(page, encoding="utf-8").read()
        prose = FENCE.sub("", text)
        for m in LINK.finditer(prose):
            target = m.group(1)
            if re.match(r"^(https?|mailto):", target):
                continue
            links += 1
            path, _, anchor = target.partition("#")
            file = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            rel = os.path.relpath(page, root)
            if not os.path.exists(file):
                failures.append(f"{rel}: link to {target}: {os.path.relpath(file, root)} does not exist")
                continue
            if anchor and file.endswith(".md") and anchor not in anchors(file):
                failures.append(f"{rel}: link to {target}: no heading '#{anchor}' in {os.path.relpath(file, root)}")
        with tempfile.TemporaryDirectory() as tmp:
            for fence in FENCE.finditer(text):
                if fence.group(1) != "sh":
                    continue
                for line in fence.group(2).splitlines():
                    if not line.startswith("gmemprof "):
                        continue
                    try:
                        words = shlex.split(line.split("  #")[0], comments=True)
                    except ValueError:
                        continue  # a line continued with a backslash: not one of these
                    if len(words) < 3 or words[0] != "gmemprof" or words[1] not in ("show", "check", "html", "trace"):
                        continue
                    reports = [w for w in words[2:] if w.endswith(".json") and not w.startswith("-")]
                    if not reports or not all(r.startswith("reports/") for r in reports if not r.endswith("trace.json")):
                        continue
                    args = list(words[1:])
                    for i, w in enumerate(args):  # outputs go to the temporary folder
                        if i > 0 and args[i - 1] == "-o":
                            args[i] = os.path.join(tmp, os.path.basename(w))
                    commands += 1
                    run = subprocess.run([gmemprof] + args, cwd=root, capture_output=True, text=True)
                    if run.returncode != 0:
                        failures.append(f"{os.path.relpath(page, root)}: `{line.strip()}` exited "
                                        f"{run.returncode}: {run.stderr.strip()[:300]}")
    for f in failures:
        print("FAIL " + f)
    print(f"{len(pages)} pages, {links} relative links, {commands} commands run: "
          f"{'all hold' if not failures else str(len(failures)) + ' failure(s)'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
