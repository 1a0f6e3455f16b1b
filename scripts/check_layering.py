#!/usr/bin/python3
"""check_layering.py [ROOT]: the library layering, checked from the sources.

Reads every aotc_library(NAME SOURCES ... LINKS ...) and aotc_test(...) in
src/CMakeLists.txt and fails (exit 1, one line per violation) when
  - a library's sources span more than one folder of src/ (one folder is one
    library), or two libraries share a folder;
  - a file in src/F/ or include/aotc/F/ includes "aotc/G/..." where G is
    neither F nor a folder of a library F's library links, directly or
    through the libraries it links (a test may include what its LINKS reach).
So `ir` including `ops` (the op table) fails here, not just at link time.

The front ends are three rooms of one library, src/frontend/fx/,
src/frontend/onnx/ and src/frontend/pt2/ (Note [FX converter tables], Note
[ONNX converter tables], Note [pt2 front end]); it also fails when
  - a file in one room includes a private header ("x.h", not "aotc/...") that
    is not in its own room (the rooms share only the public headers);
  - src/frontend/ holds code outside the rooms other than the entry
    (frontend.cpp), or a room is missing;
  - a file of the front ends is longer than FRONTEND_MAX_LINES (a long
    converter is a decomposition and lives with the ops).
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FRONTEND_ROOMS = ("fx", "onnx", "pt2")
FRONTEND_ENTRY = ("frontend.cpp",)
FRONTEND_MAX_LINES = 800


def calls(text, fn):
    for m in re.finditer(rf"\b{fn}\(([^)]*)\)", text):
        words = m.group(1).split()
        name, sections, key = words[0], {"SOURCES": [], "LINKS": []}, None
        for w in words[1:]:
            if w in ("SOURCES", "LINKS", "SHARDS"):
                key = w
            elif key in sections:
                sections[key].append(w)
        yield name, sections["SOURCES"], [l for l in sections["LINKS"] if l.startswith("aotc_")]


def frontend_rooms():
    errors, base = [], os.path.join(ROOT, "src", "frontend")
    private = re.compile(r'^\s*#\s*include\s+"((?!aotc/)[^"]+)"', re.M)
    for f in sorted(os.listdir(base)):
        if os.path.isfile(os.path.join(base, f)) and f not in FRONTEND_ENTRY:
            errors.append(f"src/frontend/{f}: front-end code lives in src/frontend/{{{','.join(FRONTEND_ROOMS)}}}/ "
                          "(a loader, readers and one converter table per op family)")
    for room in FRONTEND_ROOMS:
        d = os.path.join(base, room)
        if not os.path.isdir(d):
            errors.append(f"src/frontend/{room}/: missing (the {room} front end's room)")
            continue
        for f in sorted(os.listdir(d)):
            path = os.path.join(d, f)
            text = open(path, errors="replace").read()
            n = text.count("\n")
            if n > FRONTEND_MAX_LINES:
                errors.append(f"src/frontend/{room}/{f}: {n} lines, more than {FRONTEND_MAX_LINES}: split the family, "
                              "or move a long converter to the ops layer as a decomposition")
            for m in private.finditer(text):
                if "/" in m.group(1) or not os.path.isfile(os.path.join(d, m.group(1))):
                    line = text.count("\n", 0, m.start()) + 1
                    errors.append(f"src/frontend/{room}/{f}:{line}: includes \"{m.group(1)}\", which is not a header "
                                  f"of src/frontend/{room}/ (the front ends share only aotc/ headers)")
    return errors


def main():
    cmake = open(os.path.join(ROOT, "src", "CMakeLists.txt")).read()
    errors, folder_of, links = [], {}, {}
    for name, sources, deps in calls(cmake, "aotc_library"):
        folders = {s.split("/")[0] for s in sources}
        if len(folders) != 1:
            errors.append(f"src/CMakeLists.txt: library {name} compiles sources of folders {sorted(folders)}; "
                          "one folder is one library")
            continue
        folder = folders.pop()
        other = [n for n, f in folder_of.items() if f == folder]
        if other:
            errors.append(f"src/CMakeLists.txt: libraries {other[0]} and {name} share the folder src/{folder}")
        folder_of[name], links[name] = folder, deps

    def reach(names):
        seen, todo = set(), list(names)
        while todo:
            n = todo.pop()
            if n in links and n not in seen:
                seen.add(n)
                todo += links[n]
        return {folder_of[n] for n in seen}

    allowed = {folder_of[n]: reach([n]) for n in links}
    tests = {}
    for name, sources, deps in calls(cmake, "aotc_test"):
        for s in sources:
            tests[s] = reach(deps) | {s.split("/")[0]}
    include = re.compile(r'^\s*#\s*include\s+"aotc/([a-z_]+)/', re.M)
    # A header in src/ that tests include (op_samples.h) may reach what every
    # one of those tests reaches.
    header_users = {}
    for t in tests:
        text = open(os.path.join(ROOT, "src", t)).read()
        for h in re.findall(r'#\s*include\s+"([^"]+\.h)"', text):
            header_users.setdefault(os.path.basename(h), []).append(t)
    for base in ("src", os.path.join("include", "aotc")):
        for folder in sorted(os.listdir(os.path.join(ROOT, base))):
            d = os.path.join(ROOT, base, folder)
            if not os.path.isdir(d):
                continue
            if folder not in allowed:
                errors.append(f"{base}/{folder}: folder of no library in src/CMakeLists.txt")
                continue
            for dirpath, _, files in os.walk(d):
                for f in sorted(files):
                    path = os.path.join(dirpath, f)
                    rel = os.path.relpath(path, ROOT)
                    ok = tests.get(os.path.relpath(path, os.path.join(ROOT, "src")), allowed[folder])
                    if base == "src" and f in header_users:
                        ok = ok | set.intersection(*(tests[t] for t in header_users[f]))
                    for n, line in enumerate(open(path, errors="replace").read().splitlines(), 1):
                        m = include.match(line)
                        if m and m.group(1) not in ok:
                            errors.append(f"{rel}:{n}: includes aotc/{m.group(1)}/, which the {folder} library "
                                          f"does not link (it reaches {', '.join(sorted(ok))})")
    errors += frontend_rooms()
    for e in errors:
        print(e)
    if not errors:
        print(f"layering ok: {len(folder_of)} libraries, one folder each")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
