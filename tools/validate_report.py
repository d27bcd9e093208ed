#!/usr/bin/python3
"""Validates gmem profiler reports against reports/schema/report.schema.json.

usage: validate_report.py SCHEMA FILE_OR_DIR...

A FILE is always validated (it must exist). A DIR is searched recursively for *.json files
that have a top-level "schema_version" key; other JSON there (e.g. reports/gpu-runs summaries)
is skipped. Prints one line per file: "ok PATH" or "FAIL PATH: at $.json.path: error".

Exit status: 0 when every report validated (and at least one did), 1 when one failed or
nothing was validated, 2 when the schema or a given file cannot be read. Needs Debian's
python3-jsonschema; run it with /usr/bin/python3.
"""

import json
import os
import sys

try:
    import jsonschema
    from jsonschema.exceptions import best_match
except ImportError:
    print("validate_report.py: needs the jsonschema module (apt-get install python3-jsonschema; "
          "run with /usr/bin/python3)", file=sys.stderr)
    sys.exit(2)


def json_path(error):
    """'$.scenarios[0].status' for an error's location in the instance."""
    path = "$"
    for part in error.absolute_path:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def load_json(path):
    """(document, None) or (None, (exit_status, message)); 2 = unreadable, 1 = not JSON."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        return None, (2, f"cannot be read: {e.strerror}")
    try:
        return json.loads(data), None
    except (ValueError, UnicodeDecodeError) as e:
        return None, (1, f"not JSON: {e}")


def main(argv):
    if len(argv) < 3 or argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr if len(argv) < 3 else sys.stdout)
        return 2 if len(argv) < 3 else 0

    schema, problem = load_json(argv[1])
    if problem:
        print(f"validate_report.py: schema {argv[1]}: {problem[1]}", file=sys.stderr)
        return 2
    validator_class = jsonschema.validators.validator_for(schema)
    try:
        validator_class.check_schema(schema)
    except jsonschema.exceptions.SchemaError as e:
        print(f"validate_report.py: schema {argv[1]} is not a valid JSON Schema: {e.message}",
              file=sys.stderr)
        return 2
    validator = validator_class(schema)

    status = 0
    validated = 0
    failed = 0

    def check(path, document):
        nonlocal validated, failed, status
        validated += 1
        error = best_match(validator.iter_errors(document))
        if error is None:
            print(f"ok {path}")
            return
        failed += 1
        status = max(status, 1)
        print(f"FAIL {path}: at {json_path(error)}: {error.message}")

    for arg in argv[2:]:
        if os.path.isdir(arg):
            found = skipped = 0
            for root, dirs, files in os.walk(arg):
                dirs.sort()
                for name in sorted(files):
                    if not name.endswith(".json"):
                        continue
                    path = os.path.join(root, name)
                    document, problem = load_json(path)
                    if problem:
                        # A broken file in a reports directory may be a broken report: say so.
                        print(f"FAIL {path}: {problem[1]}")
                        failed += 1
                        status = max(status, problem[0])
                        continue
                    if not isinstance(document, dict) or "schema_version" not in document:
                        skipped += 1
                        continue
                    found += 1
                    check(path, document)
            print(f"{arg}: {found} report files ({skipped} other JSON files skipped)")
            continue
        if not os.path.exists(arg):
            print(f"FAIL {arg}: does not exist")
            failed += 1
            status = 2
            continue
        document, problem = load_json(arg)
        if problem:
            print(f"FAIL {arg}: {problem[1]}")
            failed += 1
            status = max(status, problem[0])
            continue
        check(arg, document)

    if validated == 0 and status == 0:
        print("validate_report.py: no report was validated; pass at least one report FILE "
              "or a directory holding reports")
        status = 1
    print(f"{validated} validated, {failed} failed")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
