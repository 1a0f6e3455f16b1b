#!/usr/bin/python3
"""schema_selftest.py SRCROOT AOTC : the schemas must reject broken documents, or
validating against them proves nothing.  Takes the committed FX fixtures (and
a manifest compiled by the e2e test, if present), breaks each in ways the
schema forbids, and checks that every broken copy is rejected while the
original passes.  AOTC is the aotc binary, used to compile one manifest."""
import copy
import json
import os
import subprocess
import sys
import tempfile

import jsonschema


def validator(root, name):
    with open(os.path.join(root, "schemas", name)) as f:
        schema = json.load(f)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def main():
    root = sys.argv[1]
    fails = 0
    fx = validator(root, "fx_graph.schema.json")
    doc = json.load(open(os.path.join(root, "testdata", "fx", "mlp.json")))
    breakages = {
        "wrong version": lambda d: d.__setitem__("version", 4),
        "bad symbol": lambda d: d.__setitem__("symbols", [{"name": "max", "hint": 4, "min": 1, "max": 8}]),
        "bad expression": lambda d: d["inputs"][0]["shape"].__setitem__(0, {"sym": "batch; rm"}),
        "bad guard": lambda d: d.__setitem__("guards", [{"expr": "batch", "divisible_by": 1}]),
        "bad output_paths": lambda d: d.__setitem__("output_paths", [1]),
        "bad aliases": lambda d: d["inputs"][0].__setitem__("aliases", ["../x"]),
        "bad argument": lambda d: d.__setitem__("arguments", [{"name": "x", "value": {"tensor": 1}}]),
        "no nodes": lambda d: d.pop("nodes"),
        "weights path": lambda d: d.__setitem__("weights", "../w.safetensors"),
        "bad role": lambda d: d["inputs"][0].__setitem__("role", "weight"),
        "bad dtype": lambda d: d["inputs"][0].__setitem__("dtype", "float8"),
        "unknown key": lambda d: d["nodes"][0].__setitem__("extra", 1),
        "bad arg": lambda d: d["nodes"][0]["args"].append({"tensor": "x"}),
    }
    if not fx.is_valid(doc):
        print("FAIL: mlp.json should be valid")
        fails += 1
    import glob
    for path in sorted(glob.glob(os.path.join(root, "testdata", "exporter", "*.json"))):
        errors = list(fx.iter_errors(json.load(open(path))))
        if errors:
            print(f"FAIL: {os.path.basename(path)} should be valid: {errors[0].message[:200]}")
            fails += 1
    for what, f in breakages.items():
        d = copy.deepcopy(doc)
        f(d)
        ok = not fx.is_valid(d)
        print(("ok  " if ok else "FAIL") + f": fx schema rejects {what}")
        fails += not ok

    man = validator(root, "manifest.schema.json")
    tmp = tempfile.mkdtemp()
    subprocess.run([sys.argv[2], "-q", "compile", os.path.join(root, "testdata", "fx", "output_view.json"),
                    "-o", os.path.join(tmp, "art")], check=True)
    manifests = [os.path.join(tmp, "art", "manifest.json")]
    if manifests:
        m = json.load(open(manifests[0]))
        mb = {
            "wrong format": lambda d: d.__setitem__("format", "x"),
            "bad mutation": lambda d: d["inputs"][0].__setitem__("mutation", "sometimes"),
            "alias without recipe": lambda d: d["outputs"][0].update(kind="alias_of_input") or d["outputs"][0].pop("alias", None),
            "bad step": lambda d: d["forward"]["steps"].append({"op": "launch"}),
            "no runtime checks": lambda d: d.pop("runtime_checks"),
            "version 11 without symbols": lambda d: d.__setitem__("version", 11),
            "symbols in version 10": lambda d: d.__setitem__("symbols", [{"name": "b", "hint": 2, "min": 1, "max": 8}]),
            "limits in version 10": lambda d: d.__setitem__("limits", [{"expr": "8*b", "at_most": 2147483647}]),
            "a limit without a bound": lambda d: d.update(version=7, symbols=[{"name": "b", "hint": 2, "min": 1, "max": 8}],
                                                         limits=[{"expr": "8*b"}]),
            "an expression outside the grammar": lambda d: d.update(version=7, symbols=[{"name": "b", "hint": 2, "min": 1, "max": 8}])
            or d["inputs"][0]["shape"].__setitem__(0, {"sym": "b; rm -rf"}),
        }
        if not man.is_valid(m):
            print(f"FAIL: {manifests[0]} should be valid")
            fails += 1
        for what, f in mb.items():
            d = copy.deepcopy(m)
            f(d)
            ok = not man.is_valid(d)
            print(("ok  " if ok else "FAIL") + f": manifest schema rejects {what}")
            fails += not ok
    print(f"{(len(breakages) + (len(mb) if manifests else 0)) - fails} passed, {fails} failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
