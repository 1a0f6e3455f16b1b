#!/usr/bin/python3
"""update_checks.py BUILD_DIR FILE... : regenerates the CHECK lines of golden
IR tests from the current output (as LLVM's update_test_checks.py does).

A test file holds `// RUN: aotc-opt %s ARGS | FileCheck %s`, the input IR,
and the expected output as `// CHECK:` / `// CHECK-NEXT:` lines, which this
script rewrites: every output line is checked, in order, with nothing between
(CHECK-NEXT), and `// -----` chunks get CHECK-LABEL lines.  Review the diff.
"""
import os
import re
import shlex
import subprocess
import sys


def main():
    build, files = sys.argv[1], sys.argv[2:]
    tool = os.path.join(build, "tools", "aotc-opt")
    for path in files:
        with open(path) as f:
            lines = f.read().splitlines()
        run = next((l for l in lines if l.startswith("// RUN: aotc-opt")), None)
        if run is None:
            print(f"{path}: no aotc-opt RUN line, skipped")
            continue
        args = shlex.split(run[len("// RUN: aotc-opt"):].split("|")[0].replace("%s", path))
        body = [l for l in lines if not re.match(r"^// CHECK(-[A-Z]+)?:", l)]
        while body and body[-1] == "":
            body.pop()
        out = subprocess.run([tool] + args, capture_output=True, text=True)
        if out.returncode != 0:
            print(f"{path}: aotc-opt failed:\n{out.stderr}")
            return 1
        checks = []
        for l in out.stdout.splitlines():
            if l.startswith("graph @") or l.startswith("fusion @"):
                checks.append(f"// CHECK-LABEL: {l}")
            elif l == "// -----":
                checks.append("// CHECK: // -----")
            else:
                checks.append(f"// CHECK-NEXT: {l}")
        with open(path, "w") as f:
            f.write("\n".join(body + [""] + checks) + "\n")
        print(f"{path}: {len(checks)} check lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
