#!/usr/bin/python3
"""batch_test.py AOTC ROOT: `aotc batch` over testdata's FX fixtures (a
directory), an ONNX model and a broken model (issue 16, Note [Batch
compiles]).  Checks: the exit status; the JSON report against
schemas/batch_report.schema.json and against what was asked; the JUnit XML
read by an XML parser (one test case per model, the broken one a failure);
the artifacts (the same bytes as `aotc compile` of the same model; none for
the broken one); --shard 1/2 + 2/2 = the unsharded set with no overlap;
@LIST files; plain lines in list order off a terminal (terminal_test.py runs
it on one); usage errors exit 2."""
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

import jsonschema

FAILS = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        FAILS.append(what)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def same_tree(a, b):
    return subprocess.run(["diff", "-r", "-q", a, b], capture_output=True).returncode == 0


def main():
    aotc, root = sys.argv[1], os.path.abspath(sys.argv[2])
    tmp = tempfile.mkdtemp(prefix="aotc-batch-")
    cache = os.path.join(tmp, "cache")
    fx = os.path.join(root, "testdata", "fx")
    broken = os.path.join(root, "testdata", "errors", "inputs", "unknown_op.json")
    onnx = os.path.join(root, "testdata", "onnx", "mlp.onnx")
    with open(os.path.join(root, "schemas", "batch_report.schema.json")) as f:
        schema = json.load(f)
    validator = jsonschema.Draft202012Validator(schema)
    common = ["--arch", "sm_90", "--cache-dir", cache, "-j", "2"]

    # The whole set: a directory, an ONNX file and a broken model.
    report, junit = os.path.join(tmp, "all.json"), os.path.join(tmp, "all.xml")
    rc, out, err = run([aotc, "batch", fx, onnx, broken, "-o", os.path.join(tmp, "zoo"), "--report", report, "--junit", junit] + common)
    check(rc == 1, f"a batch with a broken model exits 1 (got {rc}; {err.strip()[:300]})")
    check("\x1b" not in out + err, "off a terminal the output has no escape codes")
    rep = json.load(open(report))
    errors = list(validator.iter_errors(rep))
    check(not errors, "the report validates against schemas/batch_report.schema.json" + (f": {errors[0].message[:200]}" if errors else ""))
    fixtures = sorted(os.path.join(fx, f) for f in os.listdir(fx) if f.endswith(".json") and '"aotc.fx_graph"' in open(os.path.join(fx, f)).read(4096))
    models = [m["model"] for m in rep["models"]]
    check(models == fixtures + [onnx, broken], f"the report lists the directory's FX graphs (sorted), then the others ({len(models)} models)")
    status = {m["model"]: m for m in rep["models"]}
    check(status[broken]["status"] == "error" and any("node 'bar'" in e and "unsupported op" in e for e in status[broken]["errors"]),
          "the broken model is an error naming its node")
    bad_ok = [m["model"] for m in rep["models"] if m["model"] != broken and m["status"] != "ok"]
    check(not bad_ok, f"every other model compiled {bad_ok[:3]}")
    check(rep["failed"] == 1, "the report counts one failure")
    check(not os.path.exists(status[broken]["artifact"]), "the broken model leaves no artifact")
    for m in rep["models"]:
        if m["status"] == "ok" and not os.path.isfile(os.path.join(m["artifact"], "manifest.json")):
            check(False, f"{m['model']}: artifact {m['artifact']} missing")
    # Lines in list order, one per model, before the summary.
    lines = [l for l in out.splitlines() if l.startswith(("ok ", "error ", "crash "))]
    check([l.split()[1].rstrip(":") for l in lines] == models, "one line per model, in list order")
    check(f"{len(models)} models: {len(models) - 1} compiled, 1 refused, 0 internal errors" in out, "the summary line counts them")
    # An artifact from the batch is the bytes `aotc compile` writes.
    one = fixtures[0]
    rc1, _, e1 = run([aotc, "-q", "compile", one, "-o", os.path.join(tmp, "single"), "--arch", "sm_90", "--cache-dir", cache])
    check(rc1 == 0 and same_tree(status[one]["artifact"], os.path.join(tmp, "single")),
          f"the batch's artifact of {os.path.basename(one)} is the bytes aotc compile writes {e1.strip()}")

    # JUnit, read by an XML parser.
    suite = ET.parse(junit).getroot().find("testsuite")
    cases = suite.findall("testcase")
    check(suite.get("tests") == str(len(models)) and suite.get("failures") == "1" and suite.get("errors") == "0",
          "the JUnit suite counts the models and the failure")
    check([c.get("name") for c in cases] == models, "one JUnit test case per model, in order")
    failed = [c.get("name") for c in cases if c.find("failure") is not None]
    check(failed == [broken] and "unsupported op" in cases[models.index(broken)].find("failure").get("message"),
          "the broken model's test case is a failure with the error as its message")

    # Shards: together the whole set, no overlap, the same artifact names.
    got = []
    for i in (1, 2):
        r = os.path.join(tmp, f"shard{i}.json")
        rc, out, err = run([aotc, "batch", fx, onnx, broken, "-o", os.path.join(tmp, f"zoo{i}"), "--shard", f"{i}/2", "--report", r] + common)
        sr = json.load(open(r))
        check(sr["shard"] == {"index": i, "count": 2, "models_in_all_shards": len(models)}, f"shard {i}/2 says which it is")
        got.append([(m["model"], os.path.basename(m["artifact"])) for m in sr["models"]])
    a, b = set(got[0]), set(got[1])
    want = {(m["model"], os.path.basename(m["artifact"])) for m in rep["models"]}
    check(not (a & b) and a | b == want and abs(len(a) - len(b)) <= 1,
          f"shards 1/2 ({len(a)}) and 2/2 ({len(b)}) are the unsharded set, no overlap, same names")

    # @LIST: one path per line, comments and blank lines skipped, each model once.
    lst = os.path.join(tmp, "models.txt")
    with open(lst, "w") as f:
        f.write(f"# two models\n{fixtures[1]}\n\n{onnx}\n{fixtures[1]}\n")
    r = os.path.join(tmp, "list.json")
    rc, out, err = run([aotc, "batch", "@" + lst, "-o", os.path.join(tmp, "zoo3"), "--report", r] + common)
    check(rc == 0 and [m["model"] for m in json.load(open(r))["models"]] == [fixtures[1], onnx], f"@LIST compiles its models once each {err.strip()}")
    # Two models with one stem get their parent directory in the name.
    names = [os.path.basename(m["artifact"]) for m in rep["models"]]
    check(len(set(names)) == len(names), "artifact names are unique")

    # Usage errors: exit 2, one line, nothing written.
    for args, frag in ((["--shard", "3/2"], "--shard 3/2: expected I/N"), (["--shard", "x"], "--shard x"), (["-j", "0"], "-j")):
        rc, out, err = run([aotc, "batch", onnx, "-o", os.path.join(tmp, "never")] + args)
        check(rc == 2 and frag in err and not os.path.exists(os.path.join(tmp, "never")), f"batch {' '.join(args)}: usage error, exit 2")
    rc, out, err = run([aotc, "batch", os.path.join(tmp, "empty-dir-that-is-missing.json"), "-o", os.path.join(tmp, "z4")] + common)
    check(rc == 1 and "file does not exist" in out, "a missing model file is that model's error")

    print("batch_test:", "FAILED" if FAILS else "all passed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
