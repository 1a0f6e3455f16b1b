#!/usr/bin/python3
"""A newer schema minor's keys (issue 46; Note [pt2 schema minors]): archives
synthesized from the committed fixture testdata/pt2/mlp.pt2 with
schema_version's minor raised past the pinned one and a key added in one
place each.  Under `metadata` (a node's, the graph module's) the archive
compiles and runs to eager's results; anywhere else (the program, a node, a
tensor's meta, an argument union, the signature) it is refused in one line
naming the archive and the key's JSON path, exit 1, no artifact.  At the
pinned minor, the same unknown keys are ignored, as before (an unknown
argument kind is then refused by the translator, as before).  No PyTorch
needed.

    /usr/bin/python3 scripts/pt2_schema_test.py path/to/aotc
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(ROOT, "testdata", "pt2", "mlp.pt2")
PINNED = int(re.search(r"PT2_SCHEMA_VERSION\(\d+, (\d+)\)", open(os.path.join(ROOT, "src", "frontend", "pt2", "schema.inc")).read()).group(1))


def first_tensor_value(j):
    return next(iter(j["graph_module"]["graph"]["tensor_values"].values()))


# (name, edit(program JSON), the refused key's JSON path or None when it compiles)
CASES = [
    ("node_metadata", lambda j: j["graph_module"]["graph"]["nodes"][0]["metadata"].update(new_provenance="x"), None),
    ("module_metadata", lambda j: j["graph_module"].setdefault("metadata", {}).update(new_key={"deep": [1]}), None),
    ("top", lambda j: j.update(new_field=1), "new_field"),
    ("node", lambda j: j["graph_module"]["graph"]["nodes"][0].update(new_key=True), "graph_module.graph.nodes[0].new_key"),
    ("tensor_meta", lambda j: first_tensor_value(j).update(new_key=0),
     'graph_module.graph.tensor_values["{first}"].new_key'),
    ("argument_union", lambda j: j["graph_module"]["graph"]["nodes"][0]["inputs"][0].update(arg={"as_new_kind": 1}),
     "graph_module.graph.nodes[0].inputs[0].arg.as_new_kind"),
    ("signature", lambda j: j["graph_module"]["signature"]["input_specs"][0]["parameter"].update(new_key="x"),
     "graph_module.signature.input_specs[0].parameter.new_key"),
]


def write(src, dst, minor, edit):
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            b = zin.read(info.filename)
            if info.filename.endswith("models/model.json"):
                j = json.loads(b)
                j["schema_version"]["minor"] = minor
                edit(j)
                b = json.dumps(j).encode()
            zout.writestr(info, b)


def main():
    aotc = sys.argv[1]
    work = tempfile.mkdtemp(prefix="aotc_pt2_schema_")
    with zipfile.ZipFile(FIXTURE) as z:
        first = next(iter(json.loads(z.read(next(n for n in z.namelist() if n.endswith("models/model.json"))))
                          ["graph_module"]["graph"]["tensor_values"]))
    ok = True
    for name, edit, refused in CASES:
        for minor in (PINNED + 1, PINNED):
            model = os.path.join(work, f"{name}_{minor}.pt2")
            write(FIXTURE, model, minor, edit)
            art = os.path.join(work, f"{name}_{minor}")
            r = subprocess.run([aotc, "compile", model, "-o", art, "-q"], capture_output=True, text=True)
            line = r.stderr.strip()
            if name == "argument_union" and minor == PINNED:
                # The translator's own refusal of an argument kind it does not know.
                good = r.returncode == 1 and len(line.splitlines()) == 1 and "argument of kind as_new_kind is not supported" in line
                what = "refused by the translator"
            elif refused and minor > PINNED:
                path = refused.format(first=first)
                good = (r.returncode == 1 and len(line.splitlines()) == 1 and f"{name}_{minor}.pt2" in line and f"'{path}'" in line
                        and not os.path.exists(art))
                what = f"refused naming '{path}'"
            else:
                out = os.path.join(work, f"{name}_{minor}.safetensors")
                good = r.returncode == 0 and subprocess.run(
                    [aotc, "run", art, "--inputs", os.path.join(ROOT, "testdata", "pt2", "mlp.inputs.safetensors"), "--out", out, "-q"]
                ).returncode == 0 and subprocess.run(
                    [sys.executable, os.path.join(ROOT, "scripts", "compare_safetensors.py"), out,
                     os.path.join(ROOT, "testdata", "pt2", "mlp.expected.safetensors"), "--tol", "1e-5"],
                    stdout=subprocess.DEVNULL).returncode == 0
                what = "compiled and matches eager"
            print(f"{'ok' if good else 'FAIL'} {name}, schema 8.{minor}: {what}" + ("" if good else f" (exit {r.returncode}: {line})"))
            ok = ok and good
    print("newer-minor keys handled" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
