#!/usr/bin/env python3
"""`aotc reduce` shrinks planted failures to a few nodes (issue 48 item 4;
Note [Reduce] in include/aotc/driver/reduce.h).

  reduce_test.py AOTC WORKDIR

The model: an MLP trunk of about 30 ATen nodes (linears, activations,
normalization, a softmax) exported with tools/fx_export.py under PyTorch
1.13, and a second output, a head of two nodes on the input.  Two planted
failures:

1. A NaN source (--check, a predicate script): one sqrt in the middle of the
   trunk reads a value that is negative somewhere, and the NaN flows to the
   output.  The predicate: the candidate's inputs are finite and aotc's
   reference run gives a NaN output.  The repro must keep the sqrt, at most
   3 nodes, and still fail the predicate.
2. A wrong result against a reference file (--expected on the reference
   backend, which only deletes; Note [Reduce values]): the expected outputs
   are eager's with expm1 deliberately wrong (expm1 + 0.05, a "wrong kernel"
   in the truth), so aotc's correct expm1 mismatches at the second output.
   The repro must keep the expm1, drop the trunk (at most 3 nodes), hold its
   expected.safetensors, and still mismatch when its README's commands run.

The ONNX door (Note [Reduce ONNX]): the same trunk written as an ONNX model
(onnx.helper, opset 13, 24 nodes with an If whose branches read the trunk
from the outer scope) and the same two planted failures: the sqrt's NaN
under the predicate (its repro keeps the Sqrt, at most 3 nodes, its operand
a new graph input holding the original's captured values), and an Exp of the
head wrong in the expected file (the repro keeps the Exp, drops the trunk).
A malformed ONNX file is refused in one line.

Each reduction runs twice and the repros are compared byte for byte (the
same model and check give the same repro).  Negative controls: a model that
passes the check is refused by name and leaves no directory; a check that
never fails is refused the same way.
"""
import filecmp
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
from fx_export import export, write_safetensors  # noqa: E402

AOTC, WORK = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])


class Trunk(torch.nn.Module):
    def __init__(self, nan):
        super().__init__()
        self.nan = nan
        self.l1 = torch.nn.Linear(8, 16)
        self.l2 = torch.nn.Linear(16, 16)
        self.l3 = torch.nn.Linear(16, 8)
        self.ln = torch.nn.LayerNorm(16)

    def forward(self, x):
        h = torch.relu(self.l1(x))
        h = self.ln(h * 0.5 + 1.0)
        h = h * torch.sigmoid(h)
        h = torch.tanh(self.l2(h)) - 0.25
        if self.nan:
            h = torch.sqrt(h)  # negative entries: NaN
        else:
            h = torch.sigmoid(h)
        h = torch.softmax(h, dim=-1) * 3.0
        h = torch.nn.functional.gelu(self.l3(h))
        h = torch.clamp(h, -2.0, 2.0)
        h = h.mean(-1, keepdim=True) + h
        h = h / (h.abs() + 1.0)
        y = torch.exp(h) - 1.0
        return y + torch.erf(y), torch.expm1(x) * 0.5


REAL_EXPM1 = torch.expm1


def torch_expm1_wrong(t):
    return REAL_EXPM1(t) + 0.05


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def onnx_model(path, nan):
    """The trunk and head as an ONNX model (opset 13); returns its nodes' count."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    inits = {"W1": rng.standard_normal((8, 16)) * 0.4, "b1": rng.standard_normal(16) * 0.1,
             "W2": rng.standard_normal((16, 16)) * 0.4, "W3": rng.standard_normal((16, 8)) * 0.4,
             "half": 0.5, "one": 1.0, "quarter": 0.25, "three": 3.0, "lo": -2.0, "hi": 2.0, "unused": np.ones(3)}
    tensors = [numpy_helper.from_array(np.asarray(v, dtype=np.float32), k) for k, v in inits.items()]
    tensors.append(numpy_helper.from_array(np.array(True), "cond"))
    N = helper.make_node
    branch = lambda op, name: helper.make_graph([N(op, ["t6"], [name + "_out"], name=name)], name, [],
                                                [helper.make_tensor_value_info(name + "_out", TensorProto.FLOAT, [4, 16])])
    nodes = [N("MatMul", ["x", "W1"], ["t0"], name="mm1"), N("Add", ["t0", "b1"], ["t1"], name="add1"),
             N("Relu", ["t1"], ["t2"], name="relu"), N("Mul", ["t2", "half"], ["t3"], name="mul1"),
             N("Add", ["t3", "one"], ["t4"], name="add2"), N("Sigmoid", ["t4"], ["t5"], name="sig1"),
             N("Mul", ["t4", "t5"], ["t6"], name="silu"),
             N("If", ["cond"], ["t6b"], name="if", then_branch=branch("Relu", "then"), else_branch=branch("Neg", "else")),
             N("MatMul", ["t6b", "W2"], ["t7"], name="mm2"), N("Tanh", ["t7"], ["t8"], name="tanh"),
             N("Sub", ["t8", "quarter"], ["t9"], name="sub1"),
             N("Sqrt" if nan else "Sigmoid", ["t9"], ["t10"], name="sqrt" if nan else "sig2"),
             N("Softmax", ["t10"], ["t11"], name="softmax", axis=-1), N("Mul", ["t11", "three"], ["t12"], name="mul2"),
             N("MatMul", ["t12", "W3"], ["t13"], name="mm3"), N("Erf", ["t13"], ["t14"], name="erf"),
             N("Clip", ["t14", "lo", "hi"], ["t15"], name="clip"),
             N("ReduceMean", ["t15"], ["t16"], name="mean", axes=[-1], keepdims=1), N("Add", ["t16", "t15"], ["t17"], name="add3"),
             N("Abs", ["t17"], ["t18"], name="abs"), N("Add", ["t18", "one"], ["t19"], name="add4"),
             N("Div", ["t17", "t19"], ["t20"], name="div"), N("Exp", ["t20"], ["t21"], name="exp1"),
             N("Sub", ["t21", "one"], ["y"], name="sub2"),
             N("Exp", ["x"], ["h0"], name="exp_head"), N("Mul", ["h0", "half"], ["z"], name="mul_head")]
    graph = helper.make_graph(nodes, "trunk", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8]),
                               helper.make_tensor_value_info("z", TensorProto.FLOAT, [4, 8])], tensors)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return len(nodes), inits


def onnx_reference(x, inits, exp_wrong):
    """The non-NaN ONNX model's outputs in PyTorch, its head's Exp + 0.05 when exp_wrong."""
    W = {k: torch.tensor(v, dtype=torch.float32) for k, v in inits.items()}
    h = torch.relu(x @ W["W1"] + W["b1"]) * 0.5 + 1.0
    h = torch.relu(h * torch.sigmoid(h))
    h = torch.softmax(torch.sigmoid(torch.tanh(h @ W["W2"]) - 0.25), -1) * 3.0
    h = torch.clamp(torch.erf(h @ W["W3"]), -2.0, 2.0)
    h = h.mean(-1, keepdim=True) + h
    y = torch.exp(h / (h.abs() + 1.0)) - 1.0
    return y, (torch.exp(x) + (0.05 if exp_wrong else 0.0)) * 0.5


def onnx_nodes(path):
    import onnx
    return onnx.load(path).graph


def onnx_cases(pred):
    import onnx
    onnx_path = os.path.join(WORK, "nan.onnx")
    n_onnx, inits = onnx_model(onnx_path, True)
    onnx_model(os.path.join(WORK, "ok.onnx"), False)
    check(n_onnx >= 20, f"the ONNX model has 20 nodes or more ({n_onnx})")
    repros = []
    for k in range(2):
        out = os.path.join(WORK, f"onnx_nan_repro{k}")
        r = run([AOTC, "reduce", onnx_path, "--inputs", os.path.join(WORK, "inputs.safetensors"),
                 "--check", f"{sys.executable} {pred} {{}}", "-o", out])
        print(r.stdout + r.stderr, end="")
        check(r.returncode == 0, f"reduce --check of an ONNX model (run {k}) exits 0")
        repros.append(out)
    if os.path.isdir(repros[0]):
        g = onnx_nodes(os.path.join(repros[0], "repro.onnx"))
        ops = [n.op_type for n in g.node]
        check(len(ops) <= 3 and "Sqrt" in ops, f"the ONNX NaN repro keeps the Sqrt in at most 3 nodes ({ops})")
        check(same_dir(*repros), "the ONNX NaN repro is the same on a second run (byte for byte)")
        check(run([sys.executable, pred, os.path.join(repros[0], "repro.onnx")]).returncode == 0,
              "the ONNX NaN repro still fails the predicate")
        check([i.name for i in g.input] == ["t9"], f"the Sqrt reads a new input named after the value it read ({[i.name for i in g.input]})")
        check([(o.domain, o.version) for o in onnx.load(os.path.join(repros[0], "repro.onnx")).opset_import] == [("", 13)],
              "the ONNX repro keeps the opset imports")

    # --expected on the reference backend (deletions only): the head's Exp wrong in the truth.
    x = read_x()
    y, z = onnx_reference(x, inits, True)
    write_safetensors(os.path.join(WORK, "onnx_expected.safetensors"), {"output.0": y, "output.1": z})
    y_ok, z_ok = onnx_reference(x, inits, False)
    write_safetensors(os.path.join(WORK, "onnx_right.safetensors"), {"output.0": y_ok, "output.1": z_ok})
    flags = ["--inputs", os.path.join(WORK, "inputs.safetensors"), "--forward-only", "--atol", "1e-3"]
    out = os.path.join(WORK, "onnx_none")
    r = run([AOTC, "reduce", os.path.join(WORK, "ok.onnx"), *flags, "--expected", os.path.join(WORK, "onnx_right.safetensors"), "-o", out])
    check(r.returncode == 1 and "does not fail the check" in r.stderr and not os.path.exists(out),
          "the ONNX model agrees with PyTorch's outputs (no planted fault, nothing to reduce): " + r.stderr.strip())
    repros = []
    for k in range(2):
        out = os.path.join(WORK, f"onnx_exp_repro{k}")
        r = run([AOTC, "reduce", os.path.join(WORK, "ok.onnx"), *flags, "--expected", os.path.join(WORK, "onnx_expected.safetensors"), "-o", out])
        print(r.stdout + r.stderr, end="")
        check(r.returncode == 0, f"reduce --expected of an ONNX model (run {k}) exits 0")
        repros.append(out)
    if os.path.isdir(repros[0]):
        d = repros[0]
        ops = [n.op_type for n in onnx_nodes(os.path.join(d, "repro.onnx")).node]
        check(len(ops) <= 3 and "Exp" in ops and "MatMul" not in ops, f"the ONNX Exp repro keeps the Exp and drops the trunk ({ops})")
        inits = [t.name for t in onnx_nodes(os.path.join(d, "repro.onnx")).initializer]
        check(inits == ["half"], f"the ONNX Exp repro keeps only the initializer it reads ({inits})")
        check(same_dir(*repros), "the ONNX Exp repro is the same on a second run (byte for byte)")
        check(repro_mismatches(d, "repro.onnx"), "the ONNX Exp repro still mismatches its expected.safetensors")

    # A node with subgraphs is one unit: the If alone, the trunk value its
    # branches read from the outer scope a new input.
    if_pred = os.path.join(WORK, "if_pred.py")
    with open(if_pred, "w") as f:
        f.write(f"""import os, subprocess, sys
import onnx
if 'If' not in [n.op_type for n in onnx.load(sys.argv[1]).graph.node]: sys.exit(1)
d = os.path.dirname(sys.argv[1])
if subprocess.run([{AOTC!r}, 'compile', sys.argv[1], '-o', os.path.join(d, 'a'), '-q']).returncode: sys.exit(1)
sys.exit(subprocess.run([{AOTC!r}, 'run', os.path.join(d, 'a'), '--inputs', os.path.join(d, 'inputs.safetensors'),
                         '--forward-only', '--out', os.path.join(d, 'a.safetensors'), '-q']).returncode)
""")
    out = os.path.join(WORK, "onnx_if_repro")
    r = run([AOTC, "reduce", os.path.join(WORK, "ok.onnx"), "--inputs", os.path.join(WORK, "inputs.safetensors"),
             "--check", f"{sys.executable} {if_pred} {{}}", "-o", out])
    print(r.stdout + r.stderr, end="")
    if r.returncode == 0:
        g = onnx_nodes(os.path.join(out, "repro.onnx"))
        shape = ([n.op_type for n in g.node], [i.name for i in g.input], [t.name for t in g.initializer], [o.name for o in g.output])
        check(shape == (["If"], ["t6"], ["cond"], ["t6b"]), f"the If repro is the If, its outer value t6 a new input ({shape})")
    else:
        check(False, "reduce of an ONNX model to its If exits 0")

    # A malformed ONNX file: refused in one line, nothing written.
    bad = os.path.join(WORK, "bad.onnx")
    with open(bad, "wb") as f:
        f.write(b"not an onnx model\n")
    out = os.path.join(WORK, "bad_repro")
    r = run([AOTC, "reduce", bad, "--crash", "-o", out])
    check(r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and "bad.onnx" in r.stderr and "not a valid ONNX model" in r.stderr
          and not os.path.exists(out), "a malformed ONNX model is refused in one line: " + r.stderr.strip())


def read_x():
    torch.manual_seed(0)
    return torch.randn(4, 8)


def nodes_of(path):
    with open(path) as f:
        return json.load(f)["nodes"]


def same_dir(a, b):
    names = sorted(os.listdir(a))
    if names != sorted(os.listdir(b)):
        return False
    return all(filecmp.cmp(os.path.join(a, n), os.path.join(b, n), shallow=False) for n in names)


failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)



def repro_mismatches(d, model):
    """A repro's README commands (compile, run on the reference) still give
    outputs that differ from its expected.safetensors."""
    ok = run([AOTC, "compile", model, "-o", "repro.aotc", "-q"], cwd=d).returncode == 0
    ok = ok and run([AOTC, "run", "repro.aotc", "--inputs", "inputs.safetensors", "--backend", "reference", "--forward-only",
                     "--out", "out.safetensors", "-q"], cwd=d).returncode == 0
    cmp = run([sys.executable, os.path.join(HERE, "compare_safetensors.py"), os.path.join(d, "out.safetensors"),
               os.path.join(d, "expected.safetensors")])
    return ok and "0 differ" not in cmp.stdout

def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    x = read_x()
    write_safetensors(os.path.join(WORK, "inputs.safetensors"), {"x": x})
    for nan in (True, False):
        torch.manual_seed(1)
        m = Trunk(nan)
        export(m, (x,), os.path.join(WORK, "nan" if nan else "ok"))
    n_nan = len(nodes_of(os.path.join(WORK, "nan.json")))
    check(25 <= n_nan <= 40, f"the NaN model has about 30 nodes ({n_nan})")

    # 1. The NaN source, through a predicate script.
    pred = os.path.join(WORK, "nan_pred.py")
    with open(pred, "w") as f:
        f.write(f"""import json, math, os, struct, subprocess, sys
aotc, model = {AOTC!r}, sys.argv[1]
d = os.path.dirname(model)
def floats(path):
    b = open(path, 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8 + n])
    out = {{}}
    for k, v in h.items():
        if k == '__metadata__' or v['dtype'] != 'F32': continue
        s, e = v['data_offsets']; raw = b[8 + n + s:8 + n + e]
        out[k] = struct.unpack('<%df' % (len(raw) // 4), raw)
    return out
if any(not math.isfinite(v) for t in floats(os.path.join(d, 'inputs.safetensors')).values() for v in t): sys.exit(1)
if subprocess.run([aotc, 'compile', model, '-o', os.path.join(d, 'p.aotc'), '-q']).returncode: sys.exit(1)
if subprocess.run([aotc, 'run', os.path.join(d, 'p.aotc'), '--inputs', os.path.join(d, 'inputs.safetensors'),
                   '--forward-only', '--out', os.path.join(d, 'p.safetensors'), '-q']).returncode: sys.exit(1)
res = floats(os.path.join(d, 'p.safetensors'))
sys.exit(0 if any(math.isnan(v) for k, t in res.items() if k.startswith('output.') for v in t) else 1)
""")
    check_cmd = f"{sys.executable} {pred} {{}}"
    repros = []
    for k in range(2):
        out = os.path.join(WORK, f"nan_repro{k}")
        r = run([AOTC, "reduce", os.path.join(WORK, "nan.json"), "--inputs", os.path.join(WORK, "inputs.safetensors"),
                 "--check", check_cmd, "-o", out])
        print(r.stdout + r.stderr, end="")
        check(r.returncode == 0, f"reduce --check (run {k}) exits 0")
        repros.append(out)
    if os.path.isdir(repros[0]):
        nodes = nodes_of(os.path.join(repros[0], "repro.json"))
        targets = [n["target"] for n in nodes]
        check(len(nodes) <= 3, f"the NaN repro has at most 3 nodes ({len(nodes)}: {targets})")
        check(any("sqrt" in t for t in targets), "the NaN repro keeps the sqrt")
        check(same_dir(*repros), "the NaN repro is the same on a second run")
        check(run([sys.executable, pred, os.path.join(repros[0], "repro.json")]).returncode == 0,
              "the NaN repro still fails the predicate")
        check(os.path.exists(os.path.join(repros[0], "README.md")), "the NaN repro has a README")

    # 2. A wrong result against a reference file: eager's truth with expm1 planted wrong.
    torch.manual_seed(1)
    m = Trunk(False)
    torch.expm1 = torch_expm1_wrong
    try:
        with torch.no_grad():
            exp = m(x)
    finally:
        torch.expm1 = REAL_EXPM1
    write_safetensors(os.path.join(WORK, "expected.safetensors"), {"output.0": exp[0], "output.1": exp[1]})
    repros = []
    for k in range(2):
        out = os.path.join(WORK, f"expm1_repro{k}")
        r = run([AOTC, "reduce", os.path.join(WORK, "ok.json"), "--inputs", os.path.join(WORK, "inputs.safetensors"),
                 "--expected", os.path.join(WORK, "expected.safetensors"), "--forward-only", "--atol", "1e-3", "-o", out])
        print(r.stdout + r.stderr, end="")
        check(r.returncode == 0, f"reduce --expected (run {k}) exits 0")
        repros.append(out)
    if os.path.isdir(repros[0]):
        d = repros[0]
        nodes = nodes_of(os.path.join(d, "repro.json"))
        targets = [n["target"] for n in nodes]
        check(len(nodes) <= 3, f"the expm1 repro has at most 3 nodes ({len(nodes)}: {targets})")
        check(any("expm1" in t for t in targets), "the expm1 repro keeps the expm1 and drops the trunk")
        check(same_dir(*repros), "the expm1 repro is the same on a second run")
        # Its README's commands still show the mismatch.
        check(repro_mismatches(d, "repro.json"), "the expm1 repro still mismatches its expected.safetensors")
        check(run([AOTC, "reduce", os.path.join(WORK, "ok.json"), "--inputs", os.path.join(WORK, "inputs.safetensors"),
                   "--expected", os.path.join(WORK, "expected.safetensors"), "--forward-only", "-o", d]).returncode == 1,
              "an existing repro directory is not replaced")

    onnx_cases(pred)

    # The .pt2 door: the archive's program reduced as an FX document, its
    # weights from the archive.  The check: the candidate compiles and still
    # has the relu.
    pt2 = os.path.join(HERE, "..", "testdata", "pt2", "mlp.pt2")
    pt2_pred = os.path.join(WORK, "relu_pred.py")
    with open(pt2_pred, "w") as f:
        f.write(f"""import json, os, subprocess, sys
doc = json.load(open(sys.argv[1]))
if not any(n['target'].startswith('aten.relu') for n in doc['nodes']): sys.exit(1)
sys.exit(subprocess.run([{AOTC!r}, 'compile', sys.argv[1], '-o', os.path.join(os.path.dirname(sys.argv[1]), 'a'), '-q']).returncode)
""")
    out = os.path.join(WORK, "pt2_repro")
    r = run([AOTC, "reduce", pt2, "--train", "--inputs", pt2.replace(".pt2", ".inputs.safetensors"),
             "--check", f"{sys.executable} {pt2_pred} {{}}", "-o", out])
    print(r.stdout + r.stderr, end="")
    if r.returncode == 0:
        nodes = nodes_of(os.path.join(out, "repro.json"))
        check([n["target"] for n in nodes] == ["aten.relu.default"], f"the .pt2 repro is the relu alone ({len(nodes)} nodes)")
        check(run([sys.executable, pt2_pred, os.path.join(out, "repro.json")]).returncode == 0, "the .pt2 repro compiles as FX JSON")
    else:
        check(False, "reduce of a .pt2 exits 0")

    # Negative controls: nothing fails, nothing is written.
    out = os.path.join(WORK, "none")
    r = run([AOTC, "reduce", os.path.join(WORK, "ok.json"), "--inputs", os.path.join(WORK, "inputs.safetensors"),
             "--mismatch", "reference,reference", "--forward-only", "-o", out])
    check(r.returncode == 1 and "does not fail the check" in r.stderr and len(r.stderr.strip().splitlines()) == 1,
          "a model that passes is refused in one line: " + r.stderr.strip())
    r = run([AOTC, "reduce", os.path.join(WORK, "ok.json"), "--check", "false {}", "-o", out])
    check(r.returncode == 1 and "does not fail the check" in r.stderr, "a check that never fails is refused")
    check(not os.path.exists(out) and not [n for n in os.listdir(WORK) if n.startswith(".none")],
          "nothing is left behind")
    r = run([AOTC, "reduce", os.path.join(WORK, "ok.json"), "-o", out])
    check(r.returncode == 1 and "give one check" in r.stderr, "no check is a one-line error")

    # --crash and --mismatch reference,emulate on a model that compiles and
    # agrees: refused, nothing written.
    for flags in (["--crash"], ["--mismatch", "reference,emulate", "--forward-only"]):
        r = run([AOTC, "reduce", os.path.join(WORK, "ok.json"), "--inputs", os.path.join(WORK, "inputs.safetensors"), *flags, "-o", out])
        check(r.returncode == 1 and "does not fail the check" in r.stderr and not os.path.exists(out),
              f"reduce {' '.join(flags)} on a sound model is refused: " + r.stderr.strip())

    # compile --repro-dir: a compile that dies of a signal (SIGSEGV sent to
    # the child that compiles) leaves the model, its weights and the command.
    rd = os.path.join(WORK, "crash_repro")
    p = subprocess.Popen([AOTC, "compile", os.path.join(WORK, "nan.json"), "-o", os.path.join(WORK, "c.aotc"), "--no-cache",
                          "--repro-dir", rd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    child = None
    for _ in range(2000):
        try:
            with open(f"/proc/{p.pid}/task/{p.pid}/children") as f:
                kids = f.read().split()
        except OSError:
            kids = []
        if kids:
            child = int(kids[0])
            break
        time.sleep(0.001)
    if child:
        os.kill(child, signal.SIGSEGV)
    _, err = p.communicate()
    # Under AddressSanitizer the SIGSEGV is ASan's to report, and it then
    # aborts: the child dies of SIGABRT (6) instead of SIGSEGV (11).
    died = re.search(r"died of signal (11|6)\b", err)
    check(child is not None and p.returncode == 3 and died is not None, "--repro-dir: the child's crash is an internal error: " + err.strip())
    files = sorted(os.listdir(rd)) if os.path.isdir(rd) else []
    check(files == ["README.md", "nan.json", "nan.safetensors"], f"--repro-dir holds the model, its weights and a README ({files})")
    if files:
        text = open(os.path.join(rd, "README.md")).read()
        check("aotc compile nan.json" in text and "--repro-dir" in text and died is not None and f"signal {died.group(1)}" in text,
              "the README has the command line and the error")
    rd2 = os.path.join(WORK, "no_repro")
    r = run([AOTC, "compile", os.path.join(WORK, "nan.json"), "-o", os.path.join(WORK, "c.aotc"), "--repro-dir", rd2, "-q"])
    check(r.returncode == 0 and not os.path.exists(rd2), "--repro-dir: a sound compile writes no repro")
    r = run([AOTC, "compile", os.path.join(WORK, "nope.json"), "-o", os.path.join(WORK, "c.aotc"), "--repro-dir", rd2, "-q"])
    check(r.returncode == 1 and not os.path.exists(rd2), "--repro-dir: a refused model (exit 1) writes no repro")

    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
