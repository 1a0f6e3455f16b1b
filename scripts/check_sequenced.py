#!/usr/bin/python3
"""check_sequenced.py [ROOT]: Note [Sequenced operands], checked from the sources.

C++ leaves the order in which a call's arguments are evaluated to the
compiler (GCC evaluates them right to left, clang left to right).  A
converter, decomposition or gradient rule that builds two graph nodes inside
one call's argument list, `c.add(c.mul(a, b), c.mul(d, e))`, appends them in
a different order under each compiler, and the artifact's bytes then depend
on which compiler built aotc (compare_compilers catches it only for the
fixtures it compiles).  Braced lists are sequenced left to right and are
fine: `c.op(K, {c.mul(a, b), c.mul(d, e)})`.

This lint reads src/**/*.cpp and fails (exit 1, one line each) on a call
with two or more arguments that each build a node: a call on a builder
(`c.`, `g.`, `b.` other than its readers: type, f, i, in, GO, I, O, ...), a
helper taking the builder first (`bin(c, ...)`), or a node-building local
lambda (the names in LAMBDAS).  ALLOWED lists the calls whose arguments
only read (attribute readers) by file and callee.
"""
import glob
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
READERS = {"type", "f", "i", "in", "GO", "I", "O", "s", "sizes", "fail", "wantsOutput", "ints", "has", "attr", "numel", "rank",
           "dtype", "str", "size", "at", "get", "value", "name", "input", "output", "ins", "outs", "node", "graph", "floats",
           "strings", "tensor", "loc", "nIn", "nOut", "hasIn", "inputs", "shape", "number", "boolean", "integer", "env",
           "noGrad", "intList", "optional", "list", "scalarType", "device", "kw", "arg", "args"}
LAMBDAS = ("repeat|addBias|slice|cache|scalarOf|permuteTo|coord|clipTo|place|extreme|initial|peep|join|red|apply|side|tap|sc2|"
           "outer|inner|pool|gate|bcast|sc|update|factor|opt|small|large")
BUILDER_CALL = re.compile(r"\b(?:c|g|b|B)\s*(?:\.|->)\s*(\w+)\s*\(")
HELPER_CALL = re.compile(r"\b\w+\(\s*(?:c|g|b|B)\s*,")
LAMBDA_CALL = re.compile(r"(?<![.\w])(?:" + LAMBDAS + r")\s*\(")
# (file suffix, callee): argument lists that only read attributes or options.
ALLOWED = {
    ("frontend/fx/attention.cpp", "attention"),  # optScale reads a number; causalSquare/optMask read
}
SKIP = re.compile(r"_test\.cpp$|/ir/unify\.cpp$|/plan/|/runtime/|/driver/|/support/")


def builds(arg):
    if arg.lstrip().startswith("{"):
        return False
    if any(m.group(1) not in READERS for m in BUILDER_CALL.finditer(arg)):
        return True
    if HELPER_CALL.search(arg) and not re.search(r"\b(?:opt\w*|causalSquare|optNumber|optScale|optMask|dtypeArg)\(\s*c\s*,", arg):
        return True
    return bool(LAMBDA_CALL.search(arg))


def arguments(s, i):
    """The top-level arguments of the call whose '(' is s[i]."""
    depth, args, cur, j = 0, [], "", i
    while j < len(s):
        ch = s[j]
        if ch == '"':
            k = j + 1
            while k < len(s) and s[k] != '"':
                k += 2 if s[k] == "\\" else 1
            cur += s[j:k + 1]
            j = k + 1
            continue
        if ch in "([{":
            depth += 1
            if depth > 1:
                cur += ch
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                args.append(cur)
                return args
            cur += ch
        elif ch == "," and depth == 1:
            args.append(cur)
            cur = ""
        elif depth >= 1:
            cur += ch
        j += 1
    return args


def main():
    bad = []
    for f in sorted(glob.glob(os.path.join(ROOT, "src", "**", "*.cpp"), recursive=True)):
        if SKIP.search(f):
            continue
        s = re.sub(r"//[^\n]*", lambda m: " " * len(m.group(0)), open(f).read())
        for m in re.finditer(r"\b(\w+)\s*\(", s):
            callee = m.group(1)
            if callee in ("if", "for", "while", "switch", "return", "catch", "sizeof", "cat", "UserError", "SourceLoc"):
                continue
            rel = os.path.relpath(f, os.path.join(ROOT, "src"))
            if (rel, callee) in ALLOWED:
                continue
            hits = [a.strip() for a in arguments(s, m.end() - 1) if builds(a)]
            if len(hits) >= 2:
                line = s.count("\n", 0, m.start()) + 1
                bad.append(f"{os.path.relpath(f, ROOT)}:{line}: {callee}(...) builds nodes in {len(hits)} arguments, "
                           f"in an order the compiler picks: {' | '.join(h[:40] for h in hits)} (Note [Sequenced operands])")
    for b in bad:
        print(b)
    print(f"check_sequenced: {len(bad)} call(s) with unsequenced node-building arguments")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
