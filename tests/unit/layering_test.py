"""Checks every #include "..." line of the tree against the allowed-dependency
table in docs/architecture.md ("## Layering").

Cases: a component including a component its row does not name (reported as
file:line with the include and what the row allows); a source folder with no
row; an include that names no component and is no file beside the includer;
a table that cannot be read (no rows, a row naming an unknown component).
A folder below a component (server/pg, backends/odbc) is part of it.

Run: /usr/bin/python3 tests/unit/layering_test.py [SOURCE_ROOT]
"""

import os
import re
import sys

SOURCE_EXTENSIONS = (".cpp", ".hpp", ".h", ".inc", ".c")
# Headers the build generates, and the component that includes them.
GENERATED = {"wirepool_version.hpp": "session"}
SKIP_DIRS = {".git", "build", "node_modules", "deploy", "docs"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def read_table(doc_path):
    """The Layering table: {component: set of components it may include}."""
    with open(doc_path, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^## Layering\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    if not m:
        raise SystemExit(f"{doc_path}: no '## Layering' section")
    table = {}
    everything = set()
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or not cells[0].startswith("`"):
            continue
        name = cells[0].strip("`")
        allowed = cells[1]
        if allowed == "every component":
            table[name] = None
        else:
            table[name] = set(re.findall(r"`([^`]+)`", allowed))
    if not table:
        raise SystemExit(f"{doc_path}: the Layering table has no rows")
    for name, allowed in table.items():
        for a in allowed or ():
            if a not in table:
                raise SystemExit(f"{doc_path}: row {name} names {a}, which has no row")
        everything.add(name)
    for name in table:
        if table[name] is None:
            table[name] = everything - {name}
    return table


def component_of(path, components):
    """The component a relative path belongs to: the longest row name it starts with."""
    best = None
    for c in components:
        if path == c or path.startswith(c + "/"):
            if best is None or len(c) > len(best):
                best = c
    return best


def check(root, table):
    violations = []
    files = lines = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for fn in sorted(filenames):
            if not fn.endswith(SOURCE_EXTENSIONS):
                continue
            full = os.path.join(dirpath, fn)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            owner = component_of(rel, table)
            if owner is None:
                violations.append(f"{rel}:1: {os.path.dirname(rel) or '.'} has no row in the Layering table")
                continue
            files += 1
            with open(full, encoding="utf-8", errors="replace") as f:
                for n, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    lines += 1
                    inc = m.group(1)
                    target = component_of(inc, table)
                    if target is None:
                        if inc in GENERATED:
                            target = GENERATED[inc]
                        elif os.path.exists(os.path.join(dirpath, inc)):
                            target = component_of(
                                os.path.relpath(os.path.join(dirpath, inc), root).replace(os.sep, "/"), table)
                        if target is None:
                            violations.append(f"{rel}:{n}: #include \"{inc}\" names no component")
                            continue
                    if target != owner and target not in table[owner]:
                        allowed = ", ".join(sorted(table[owner])) or "nothing"
                        violations.append(
                            f"{rel}:{n}: {owner} includes {target} (\"{inc}\"); {owner} may include: {allowed}")
    return files, lines, violations


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), "..", ".."))
    table = read_table(os.path.join(root, "docs", "architecture.md"))
    files, lines, violations = check(root, table)
    for v in violations:
        print(v)
    print(f"layering: {len(table)} components, {files} files, {lines} include lines, "
          f"{len(violations)} violations")
    return 1 if violations or files == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
