#!/usr/bin/env python3
"""Checks that the README's C++ example is, line for line, the body of
main() in examples/consumer/main.cc, which CI builds against an installed
tree (scripts/check-install): the snippet then compiles and links as
written.

    readme_snippet.py README.md examples/consumer/main.cc
"""
import re
import sys


def readme_snippet(text):
    match = re.search(r"```cpp\n(.*?)```", text, re.S)
    if not match:
        raise SystemExit("README.md has no ```cpp block")
    return match.group(1).rstrip("\n").split("\n")


def main_body(text):
    match = re.search(r"\nint main\(\) \{\n(.*)\n\}\n?$", text, re.S)
    if not match:
        raise SystemExit("main.cc has no `int main() {` ... `}` at its end")
    lines = match.group(1).split("\n")
    if lines and lines[-1].strip() == "return 0;":
        lines = lines[:-1]
    return [line[2:] if line.startswith("  ") else line for line in lines]


def main(argv):
    if len(argv) != 2:
        raise SystemExit(__doc__)
    with open(argv[0], encoding="utf-8") as f:
        snippet = readme_snippet(f.read())
    with open(argv[1], encoding="utf-8") as f:
        body = main_body(f.read())
    if snippet == body:
        print(f"README's C++ example is main() of {argv[1]} ({len(body)} lines)")
        return 0
    for i, (a, b) in enumerate(zip(snippet, body)):
        if a != b:
            print(f"line {i + 1} differs:\n  README:  {a}\n  main.cc: {b}")
            break
    else:
        print(f"lengths differ: README {len(snippet)}, main.cc {len(body)}")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
