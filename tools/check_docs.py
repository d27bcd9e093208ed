#!/usr/bin/env python3
"""The user docs hold: README.md and every docs/*.md page.

- Links: every relative link and #anchor resolves (the file exists; the anchor is a heading's
  GitHub slug in it).
- Paths: a repository path shown in a ```sh block or as inline code (tools/..., tests/...,
  reports/..., python/...) exists, unless it holds a wildcard.
- gmemprof commands, in ```sh blocks and in inline code: the command exists (`gmemprof help`
  lists it) and every option it is given appears in the command's usage (`gmemprof help
  COMMAND`; -o and --out are one option). Those that need no GPU run as written and exit 0:
  `help`, `--version`, `run --list`, and show, check, html, trace, bench-summary of committed
  files (the output of -o/--out goes into a temporary folder). A ```text block right after such
  a ```sh block shows output: each of its lines (but a line "...") is a line the commands
  printed, so the numbers shown are the committed report's.
- Python, in ```python blocks: each block compiles; it loads no name that it never binds
  (assigns, imports, defines, takes as an argument) and that is no builtin, anywhere in the
  block (scopes are not told apart); and every gmem.X, gmem.testing.X (or gmem.bill.X) it
  uses, in the block or as inline code in the prose, is defined by the package's sources under
  python/ (read with ast, nothing imported; a name gmem takes from its extension module must
  be registered in python/src/*.cpp).
- No issue numbers: the docs are for users; the word issue followed by a number, or an anchor ending so, is refused.

Usage: check_docs.py [-v] GMEMPROF SOURCE_DIR    exit 0 when all hold, 1 otherwise (naming
each); -v lists the commands run.
"""
import ast
import builtins
import os
import re
import shlex
import subprocess
import sys
import tempfile

LINK = re.compile(r"\]\(([^)\s]+)\)")  # every link target, an image inside a link too
FENCE = re.compile(r"```(\w*)\n(.*?)```", re.S)
INLINE = re.compile(r"`([^`]+)`")  # inline code, a span wrapped over two lines too
ISSUE = re.compile(r"\bissues?[ -]#?\d+", re.I)
REPO_PATH = re.compile(r"^(tools|tests|reports|python|profiler|alloc|record|cli|benchmarks|docs)/[\w./-]*$")
GMEM_ATTR = re.compile(r"(?<![\w./:<-])gmem((?:\.[A-Za-z_]\w*)+)")
# Names a block may load without binding them. Keep it short; say why for each.
PYTHON_ALLOWED = set()

failures = []
ran = []  # the commands run


def fail(page, root, what):
    failures.append(f"{os.path.relpath(page, root)}: {what}")


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


# ---- gmemprof's commands and options, as its help says ----

class Cli:
    def __init__(self, gmemprof):
        self.gmemprof = gmemprof
        overview = self.run(["help"]).stdout
        section = overview.split("commands:", 1)[1].split("\n\n", 1)[0]
        self.commands = [line.split()[0] for line in section.splitlines() if line.strip()]
        if not self.commands:
            raise SystemExit("check_docs: `gmemprof help` lists no commands:\n" + overview)
        self.usage = {}  # command -> {option: takes a value}
        for c in self.commands:
            text = self.run(["help", c]).stdout.split("\n\n", 1)[0]  # the usage lines
            opts = {"--help": False, "-h": False}
            for m in re.finditer(r"(?<![\w-])(--?[A-Za-z][\w-]*)(?:( |=)([\[\]]?)([A-Za-z]\S*))?", text):
                name, value = m.group(1), m.group(4) is not None and m.group(3) != "["
                opts[name] = opts.get(name, False) or value
            if "-o" in opts:  # -o and --out are one option
                opts["--out"] = opts["-o"]
            self.usage[c] = opts

    def run(self, args, cwd=None):
        return subprocess.run([self.gmemprof] + args, cwd=cwd, capture_output=True, text=True)


def gmemprof_words(line):
    """The words after 'gmemprof' of a shell line that runs it (env assignments and a path before
    the binary allowed), or None."""
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        return None
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        words = words[1:]
    if not words or os.path.basename(words[0]) != "gmemprof":
        return None
    return words[1:]


def synopsis_words(text):
    """A usage synopsis ('[--out PATH]', 'N|all', 'NAME=VALUE]...') as plain words."""
    return [w for w in re.sub(r"[\[\]]|\.\.\.", " ", text).split() if w]


def check_command(cli, page, root, words, shown, tmp, synopsis=False):
    """Validates one gmemprof command line; returns its output when it was run, else None."""
    if not words:
        return None
    if synopsis:
        words = synopsis_words(" ".join(words))
    name = words[0]
    if name in ("--version", "--help", "-h", "help"):
        if name == "help" and len(words) > 1 and words[1] not in cli.commands and not (
                synopsis and words[1].isupper()):
            fail(page, root, f"`{shown}`: gmemprof has no command '{words[1]}' (it has {', '.join(cli.commands)})")
            return None
        return None if synopsis else run_command(cli, page, root, words, shown)
    if synopsis and re.match(r"^[A-Z][A-Z_]*$", name):
        return None  # 'gmemprof COMMAND --help': a placeholder for any command
    if name not in cli.commands:
        fail(page, root, f"`{shown}`: gmemprof has no command '{name}' (it has {', '.join(cli.commands)})")
        return None
    opts = cli.usage[name]
    positional, outputs, inputs = [], [], []
    i = 1
    args = list(words)
    while i < len(words):
        w = words[i]
        if w == "--" or (name == "record" and positional):
            break  # the recorded COMMAND's own words
        if w.startswith("-") and len(w) > 1 and not re.match(r"^-\d", w):
            opt, eq, value = w.partition("=")
            if opt not in opts:
                fail(page, root, f"`{shown}`: 'gmemprof {name}' has no option '{opt}' "
                                 f"(its usage: {' '.join(sorted(o for o in opts if o not in ('-h', '--help')))})")
                return None
            if opts[opt] and not eq:
                i += 1
                value = words[i] if i < len(words) else ""
            if opt in ("-o", "--out"):
                outputs.append((i, opt + "=" if eq else "", value))
            elif value and opt in ("--baseline", "--bench"):
                inputs.append(value)
        else:
            positional.append(w)
        i += 1
    if synopsis:
        return None
    if words[1:] == ["--list"] and name == "run":
        pass
    elif name in ("show", "check", "html", "trace", "bench-summary"):
        files = positional + inputs
        if not files or not all(f.startswith("reports/") and os.path.isfile(os.path.join(root, f)) for f in files):
            return None  # a placeholder or the user's own file: validated, not run
    else:
        return None
    for k, prefix, value in outputs:  # outputs go to the temporary folder
        args[k] = prefix + os.path.join(tmp, os.path.basename(value))
    return run_command(cli, page, root, args, shown)


def run_command(cli, page, root, args, shown):
    """Runs gmemprof with `args` in the source folder; its output when it exits 0."""
    run = cli.run(args, cwd=root)
    ran.append(f"{os.path.relpath(page, root)}: gmemprof {' '.join(args)}")
    if run.returncode != 0:
        fail(page, root, f"`{shown}` exited {run.returncode}: {run.stderr.strip()[:300]}")
        return None
    return run.stdout + run.stderr


def check_commands(cli, page, root, text, tmp):
    """gmemprof in ```sh blocks (and the ```text blocks showing their output) and in inline code."""
    commands = 0
    fences = list(FENCE.finditer(text))
    for n, fence in enumerate(fences):
        if fence.group(1) != "sh":
            continue
        output, ran = [], False
        lines = fence.group(2).split("\n")
        k = 0
        while k < len(lines):
            line = lines[k]
            while line.rstrip().endswith("\\") and k + 1 < len(lines):  # a continued line
                k += 1
                line = line.rstrip()[:-1] + " " + lines[k]
            k += 1
            code = line.split("  #")[0]
            try:
                for w in shlex.split(code, comments=True):
                    check_path(page, root, w)
            except ValueError:
                pass  # not one shell line (an unclosed quote): no paths to check
            words = gmemprof_words(code)
            if words is None:
                continue
            synopsis = "[" in code or re.search(r"\b[A-Z][A-Z_]{2,}\b", code) is not None
            # a synopsis goes on over lines that start with options in brackets
            while synopsis and k < len(lines) and re.match(r"^\s+\[", lines[k]):
                words += synopsis_words(lines[k].split("  #")[0])
                k += 1
            commands += 1
            out = check_command(cli, page, root, words, line.strip(), tmp, synopsis)
            if out is not None:
                ran = True
                output += [l.rstrip() for l in out.splitlines()]
        after = fences[n + 1] if n + 1 < len(fences) else None
        if ran and after and after.group(1) == "text" and not text[fence.end():after.start()].strip():
            for line in after.group(2).splitlines():
                if line.strip() and line.strip() != "..." and line.rstrip() not in output:
                    fail(page, root, f"the output shown after `{lines[0].strip()}` has a line the "
                                     f"command does not print: {line.strip()[:120]!r}")
    prose = FENCE.sub("", text)
    for m in INLINE.finditer(prose):
        span = " ".join(m.group(1).split())
        words = gmemprof_words(span) if span.startswith("gmemprof ") else None
        if words is not None:
            commands += 1
            check_command(cli, page, root, words, span, tmp, synopsis=True)
        elif " " not in span:
            check_path(page, root, span)
    return commands


def check_path(page, root, word):
    if REPO_PATH.match(word) and not re.search(r"[*?<>{}]|\.\.\.", word):
        if not os.path.exists(os.path.join(root, word.rstrip(".,:;"))):
            fail(page, root, f"path `{word}` does not exist")


# ---- Python ----

def top_level_statements(body):
    """A module's statements, those inside its top-level try and if blocks too (gmem binds its
    API in a try block's else, for when its extension module does not import)."""
    for node in body:
        if isinstance(node, ast.Try):
            for part in (node.body, node.orelse, node.finalbody, *[h.body for h in node.handlers]):
                yield from top_level_statements(part)
        elif isinstance(node, ast.If):
            yield from top_level_statements(node.body)
            yield from top_level_statements(node.orelse)
        else:
            yield node


def top_level_names(path):
    """The names a module binds at its top level (defs, classes, assignments, imports)."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    names, from_core = set(), set()
    for node in top_level_statements(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names.add((alias.asname or alias.name).split(".")[0])
                if isinstance(node, ast.ImportFrom) and node.module == "_core" and node.level == 1:
                    from_core.add(alias.name)
    return names, from_core


class PythonApi:
    """gmem's modules and their names, from python/gmem/*.py and python/src/*.cpp."""

    def __init__(self, root):
        package = os.path.join(root, "python", "gmem")
        self.modules = {}
        core = set()
        for src in os.listdir(os.path.join(root, "python", "src")):
            if src.endswith(".cpp"):
                text = open(os.path.join(root, "python", "src", src), encoding="utf-8").read()
                core |= set(re.findall(r"\(\s*m\s*,\s*\"(\w+)\"", text))
                core |= set(re.findall(r"\bm\.def\(\s*\"(\w+)\"", text))
        self.core_missing = []
        for f in sorted(os.listdir(package)):
            if not f.endswith(".py"):
                continue
            module = "gmem" if f == "__init__.py" else "gmem." + f[:-3]
            names, from_core = top_level_names(os.path.join(package, f))
            self.modules[module] = names
            self.core_missing += [f"python/gmem/{f} imports '{n}' from _core, which python/src does not "
                                  f"register" for n in sorted(from_core - core)]
        self.modules["gmem"] |= {m.split(".", 1)[1] for m in self.modules if "." in m} | {"_core"}

    def missing(self, dotted):
        """Why `gmem.a.b...` does not exist, or None: its first name below a module is checked."""
        parts = dotted.split(".")
        module = "gmem"
        for p in parts[1:]:
            if p not in self.modules.get(module, set()):
                return f"'{module}' has no '{p}'"
            if module + "." + p not in self.modules:
                return None  # an object; its own attributes are not checked here
            module += "." + p
        return None


def dotted_name(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id] + parts[::-1])
    return None


def check_python_block(api, page, root, code, where):
    try:
        tree = compile(code, where, "exec", ast.PyCF_ONLY_AST)
        compile(tree, where, "exec")
    except SyntaxError as e:
        fail(page, root, f"{where} does not compile: {e.msg} (line {e.lineno} of the block)")
        return
    bound, loaded = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                loaded.append(node)
            else:
                bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound.add((alias.asname or alias.name).split(".")[0])
                if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "gmem":
                    why = api.missing(node.module + "." + alias.name)
                    if why:
                        fail(page, root, f"{where}: `from {node.module} import {alias.name}`: {why}")
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    known = bound | set(dir(builtins)) | PYTHON_ALLOWED
    for name in sorted({n.id for n in loaded if n.id not in known}):
        line = min(n.lineno for n in loaded if n.id == name)
        fail(page, root, f"{where} uses '{name}' (line {line} of the block), which it never defines or imports")
    seen = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            name = dotted_name(node)
            if name and name.startswith("gmem.") and name not in seen:
                seen.add(name)
                why = api.missing(name)
                if why:
                    fail(page, root, f"{where} uses {name}: {why} in python/gmem")


def check_python(api, page, root, text):
    blocks = 0
    for fence in FENCE.finditer(text):
        if fence.group(1) == "python":
            blocks += 1
            line = text.count("\n", 0, fence.start()) + 1
            check_python_block(api, page, root, fence.group(2), f"the python block at line {line}")
    prose = FENCE.sub("", text)
    for m in INLINE.finditer(prose):
        for a in GMEM_ATTR.finditer(" ".join(m.group(1).split())):
            why = api.missing("gmem" + a.group(1))
            if why:
                fail(page, root, f"`{m.group(1)}`: {why} in python/gmem")
    return blocks


# ---- the pages ----

def check_links(page, root, text):
    links = 0
    prose = FENCE.sub("", text)
    for m in LINK.finditer(prose):
        target = m.group(1)
        if re.match(r"^(https?|mailto):", target):
            continue
        links += 1
        path, _, anchor = target.partition("#")
        file = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        if not os.path.exists(file):
            fail(page, root, f"link to {target}: {os.path.relpath(file, root)} does not exist")
            continue
        if anchor and file.endswith(".md") and anchor not in anchors(file):
            fail(page, root, f"link to {target}: no heading '#{anchor}' in {os.path.relpath(file, root)}")
    return links


def check_issue_numbers(page, root, text):
    for m in ISSUE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        fail(page, root, f"line {line}: an issue number ('{m.group(0)}'): say the fact, not where it was tracked")


def main():
    flags = [a for a in sys.argv[1:] if a.startswith("-")]
    args = [a for a in sys.argv[1:] if not a.startswith("-")]
    if len(args) != 2:
        print(__doc__[__doc__.index("Usage:"):].strip())
        return 2
    gmemprof, root = args
    pages = [os.path.join(root, "README.md")] + sorted(
        os.path.join(root, "docs", f) for f in os.listdir(os.path.join(root, "docs")) if f.endswith(".md"))
    cli = Cli(gmemprof)
    api = PythonApi(root)
    failures.extend(api.core_missing)
    links = commands = blocks = 0
    with tempfile.TemporaryDirectory() as tmp:
        for page in pages:
            text = open(page, encoding="utf-8").read()
            links += check_links(page, root, text)
            commands += check_commands(cli, page, root, text, tmp)
            blocks += check_python(api, page, root, text)
            check_issue_numbers(page, root, text)
    for f in failures:
        print("FAIL " + f)
    if "-v" in flags:
        print("\n".join("ran " + r for r in ran))
    print(f"{len(pages)} pages, {links} relative links, {commands} gmemprof commands checked "
          f"({len(ran)} run), {blocks} python blocks: "
          f"{'all hold' if not failures else str(len(failures)) + ' failure(s)'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
