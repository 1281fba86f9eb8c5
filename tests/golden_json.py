"""Golden test of a command's JSON output: runs the command and compares
its output with the expected file, leaving out what is measured on the
machine (wall times, the cache manager's call times).

    golden_json.py EXPECTED.json -- COMMAND [ARG...]
    golden_json.py --update EXPECTED.json -- COMMAND [ARG...]

Exit code 0 when equal; 1 with the first differences otherwise.
"""
import json
import re
import subprocess
import sys

MEASURED_KEY = re.compile(r"^(wall_s|wall_time_s|manager_ns|lookup_ns|.*_(median|p99)_ns)$")


def strip_measured(value):
    if isinstance(value, dict):
        return {k: strip_measured(v) for k, v in value.items()
                if not MEASURED_KEY.match(k)}
    if isinstance(value, list):
        return [strip_measured(v) for v in value]
    return value


def differences(expected, actual, path="$"):
    if type(expected) is not type(actual):
        yield f"{path}: expected {expected!r}, got {actual!r}"
    elif isinstance(expected, dict):
        for key in sorted(set(expected) | set(actual)):
            if key not in actual:
                yield f"{path}.{key}: missing"
            elif key not in expected:
                yield f"{path}.{key}: not expected"
            else:
                yield from differences(expected[key], actual[key],
                                       f"{path}.{key}")
    elif isinstance(expected, list):
        if len(expected) != len(actual):
            yield f"{path}: {len(expected)} items expected, got {len(actual)}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            yield from differences(e, a, f"{path}[{i}]")
    elif expected != actual:
        yield f"{path}: expected {expected!r}, got {actual!r}"


def main(argv):
    update = argv[:1] == ["--update"]
    if update:
        argv = argv[1:]
    if len(argv) < 3 or argv[1] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    expected_path, command = argv[0], argv[2:]
    run = subprocess.run(command, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        print(run.stderr, file=sys.stderr)
        return 1
    actual = strip_measured(json.loads(run.stdout))
    if update:
        with open(expected_path, "w", encoding="utf-8") as f:
            json.dump(actual, f, indent=1, sort_keys=True)
            f.write("\n")
        return 0
    with open(expected_path, encoding="utf-8") as f:
        expected = json.load(f)
    found = list(differences(expected, actual))
    for line in found[:20]:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
