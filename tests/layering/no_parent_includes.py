"""Refuses `#include "../..."` in C++ sources: a relative include resolves
against the including file's own folder, past the layers' include roots
(src/CMakeLists.txt), so `#include "../sim/nnls.h"` from src/core would
build against the arrows. Usage: no_parent_includes.py ROOT... (folders
or files; tests/layering, whose files break the layers on purpose, is
skipped inside a folder). Exits 1 naming every such include."""
import pathlib
import re
import sys

PARENT = re.compile(r'^\s*#\s*include\s*"\.\./')
SOURCES = {".h", ".cc", ".hpp", ".cpp"}


def files(root):
    path = pathlib.Path(root)
    if path.is_file():
        yield path
        return
    for f in sorted(path.rglob("*")):
        if f.suffix in SOURCES and "layering" not in f.parts:
            yield f


def main():
    found = []
    for root in sys.argv[1:]:
        for f in files(root):
            for n, line in enumerate(f.read_text(errors="replace").splitlines(),
                                     1):
                if PARENT.match(line):
                    found.append(f"{f}:{n}: a parent-relative include "
                                 f"({line.strip()}): include through the "
                                 "layer's roots instead")
    print("\n".join(found) or "no parent-relative include")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
