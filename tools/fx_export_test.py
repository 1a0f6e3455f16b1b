#!/usr/bin/python3
"""Tests of tools/fx_export.py with Debian's PyTorch: the exported JSON
validates against schemas/fx_graph.schema.json, the module's state and the
arguments are left as they were (values and version counters), weights are
the values from before the export, inputs carry their state_dict names,
roles and requires_grad, tied tensors are one input with aliases, user
inputs are named after forward's parameters and their paths in nested
arguments, in-place/view ops are kept, every node carries its source line
and module path, and what cannot be captured faithfully is refused with an
error naming it and nothing written.  (Numbers against eager: the fixtures
of testdata/exporter, run by e2e_test.)

    /usr/bin/python3 tools/fx_export_test.py [path/to/aotc]"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
import fx_export  # noqa: E402
from compare_safetensors import load  # noqa: E402

# The aotc binary, when given on the command line (CTest gives it).
AOTC = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else None


def _fused_attention(doc):
    """Whether PyTorch 2.x traced attention as one fused kernel node."""
    return any("scaled_dot_product" in n["target"] for n in doc["nodes"])


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64))
        self.register_buffer("stat", torch.ones(2))
        self.frozen = torch.nn.Parameter(torch.ones(2), requires_grad=False)

    def forward(self, inp, scale):
        y = self.lin(inp) * scale
        self.steps.add_(1)
        self.stat.mul_(0.5).add_(y.detach().mean(0))
        return (y * self.frozen).sum(), inp.t()


class ExportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def export(self, m, args, name="net"):
        return fx_export.export(m, args, os.path.join(self.tmp, name))

    def test_state_unchanged_and_weights_from_before(self):
        m = Net()
        before = {k: v.clone() for k, v in m.state_dict().items()}
        doc = self.export(m, (torch.randn(4, 3), torch.tensor(2.0)))
        for k, v in m.state_dict().items():
            self.assertTrue(torch.equal(v, before[k]), k)
        w = load(os.path.join(self.tmp, "net.safetensors"))
        self.assertEqual(sorted(w), sorted(before))
        for k, v in before.items():
            self.assertTrue((w[k] == v.double().numpy()).all(), k)
        self.assertEqual(doc["weights"], "net.safetensors")

    def test_signature(self):
        doc = self.export(Net(), (torch.randn(4, 3, requires_grad=True), torch.tensor(2.0)))
        got = [(i["name"], i["role"], i["requires_grad"]) for i in doc["inputs"]]
        # named_parameters() order (own parameters first), then named_buffers().
        self.assertEqual(got, [("frozen", "parameter", False), ("lin.weight", "parameter", True),
                               ("lin.bias", "parameter", True), ("steps", "buffer", False),
                               ("stat", "buffer", False), ("inp", "user_input", True), ("scale", "user_input", False)])

    def test_inplace_and_views_kept(self):
        doc = self.export(Net(), (torch.randn(4, 3), torch.tensor(2.0)))
        targets = [n["target"] for n in doc["nodes"]]
        self.assertIn("aten.add_.Tensor", targets)
        self.assertIn("aten.mul_.Tensor", targets)
        self.assertIn("aten.t.default", targets)
        names = {n["name"] for n in doc["nodes"]} | {i["name"] for i in doc["inputs"]}
        for n in doc["nodes"]:
            for a in json.dumps(n["args"]).split('"node": ')[1:]:
                self.assertIn(json.loads(a.split("}")[0]), names)

    def test_schema(self):
        import jsonschema
        doc = self.export(Net(), (torch.randn(4, 3), torch.tensor(2.0)))
        with open(os.path.join(HERE, "..", "schemas", "fx_graph.schema.json")) as f:
            schema = json.load(f)
        jsonschema.validators.validator_for(schema)(schema).validate(doc)

    def test_schema_complex_meta(self):
        """A complex intermediate (torch.fft) records complex64 in its meta."""
        import jsonschema
        doc = self.export(lambda x: torch.view_as_real(torch.fft.rfft(x)), (torch.randn(2, 8),))
        metas = [n["meta"]["dtype"] for n in doc["nodes"] if n["target"] == "aten._fft_r2c.default"]
        self.assertEqual(metas, ["complex64"])
        with open(os.path.join(HERE, "..", "schemas", "fx_graph.schema.json")) as f:
            schema = json.load(f)
        jsonschema.validators.validator_for(schema)(schema).validate(doc)

    def test_unused_training_batch_norm_still_updates_its_statistics(self):
        """native_batch_norm writes running_mean/var without saying so in its
        schema: a node whose output nothing reads is kept (issue 48's fuzzer,
        mixed-13: the exporter pruned it and the statistics never moved)."""
        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.bn = torch.nn.BatchNorm1d(3)

            def forward(self, x):
                self.bn(x)
                return x * 2
        m = M()
        x = torch.randn(4, 3)
        doc = self.export(m, (x,), name="bn")
        self.assertIn("aten.native_batch_norm.default", [n["target"] for n in doc["nodes"]])
        if AOTC is None:
            return
        fx_export.write_safetensors(os.path.join(self.tmp, "x.safetensors"), {"x": x})
        art, out = os.path.join(self.tmp, "bn.aotc"), os.path.join(self.tmp, "out.safetensors")
        for cmd in ([AOTC, "-q", "compile", os.path.join(self.tmp, "bn.json"), "-o", art, "--no-cache"],
                    [AOTC, "run", art, "--forward-only", "--inputs", os.path.join(self.tmp, "x.safetensors"), "--out", out]):
            r = subprocess.run(cmd, capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
        m(x)
        got = load(out)
        for k in ("running_mean", "running_var"):
            want = getattr(m.bn, k).double().numpy()
            self.assertTrue(abs(got["after_forward.bn." + k] - want).max() < 1e-6, k)

    def test_function(self):
        def f(a, b):
            return torch.mm(a, b).relu()
        doc = self.export(f, (torch.randn(2, 3), torch.randn(3, 4)), name="f")
        self.assertEqual([i["name"] for i in doc["inputs"]], ["a", "b"])
        self.assertEqual(doc["outputs"], [{"node": doc["nodes"][-1]["name"]}])


def _line_of(marker):
    """The line of this file that ends with `marker`."""
    with open(__file__) as f:
        return next(i + 1 for i, line in enumerate(f) if line.rstrip().endswith(marker))


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.register_buffer("count", torch.zeros(()))

    def forward(self, x):
        self.count.add_(1)
        x.mul_(2)                      # in place on a requires-grad user input
        x.t_()                         # and its metadata
        return self.lin(x.t())


class CapturingTest(unittest.TestCase):
    """Issue 10: what users write, captured or refused."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def export(self, m, args, name="m"):
        return fx_export.export(m, args, os.path.join(self.tmp, name))

    def assert_refused(self, m, args, *fragments):
        with self.assertRaises(fx_export.ExportError) as cm:
            self.export(m, args, "refused")
        for f in fragments:
            self.assertIn(f, str(cm.exception))
        self.assertEqual([f for f in os.listdir(self.tmp) if f.startswith("refused") or ".tmp-" in f], [])

    def test_export_leaves_state_and_arguments_unchanged(self):
        m = Scaled()
        x = torch.randn(2, 3, requires_grad=True)
        state = {k: (v.detach().clone(), v._version) for k, v in m.state_dict(keep_vars=True).items()}
        xv, xver, xshape = x.detach().clone(), x._version, (tuple(x.shape), x.stride())
        doc = self.export(m, (x,))
        for k, v in m.state_dict(keep_vars=True).items():
            self.assertTrue(torch.equal(v.detach(), state[k][0]), k)
            self.assertEqual(v._version, state[k][1], k)
        self.assertTrue(torch.equal(x.detach(), xv))
        self.assertEqual((x._version, (tuple(x.shape), x.stride())), (xver, xshape))
        self.assertTrue(x.is_leaf and x.grad is None)
        targets = [n["target"] for n in doc["nodes"]]
        self.assertIn("aten.mul_.Tensor", targets)
        self.assertIn("aten.t_.default", targets)

    def test_requires_grad_tensor_that_is_no_input_is_refused(self):
        loose = torch.randn(3, requires_grad=True)
        self.assert_refused(lambda x: x * loose, (torch.randn(3),), "aten.mul.Tensor", "fx_export_test.py:",
                            "requires grad but is neither a parameter, a buffer nor an input")

        class Attr(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = torch.randn(3, requires_grad=True)  # not registered

            def forward(self, x):
                return x * self.scale
        self.assert_refused(Attr(), (torch.randn(3),), "attribute 'scale'", "requires grad")

    def test_backward_inside_the_forward_is_refused(self):
        # Issue 47: .grad written by the program is state the graph does not
        # hold; aotc would report zero gradients where eager leaves the inner ones.
        class Inner(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(3, 2)

            def forward(self, x):
                loss = self.lin(x).pow(2).sum()
                loss.backward()
                with torch.no_grad():
                    for p in self.lin.parameters():
                        p.sub_(0.1 * p.grad)
                return loss.detach()
        m = Inner()
        self.assert_refused(m, (torch.randn(4, 3),), "writes gradients into .grad of lin.weight, lin.bias", "--optimizer")
        self.assertTrue(all(p.grad is None for p in m.parameters()))  # the caller's module untouched

    def test_partial_view_of_state_made_outside_is_refused(self):
        class Stale(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("table", torch.randn(4, 3))
                self.head = self.table[:2]  # a view taken once, at construction

            def forward(self, x):
                self.table.mul_(2)
                return x + self.head
        self.assert_refused(Stale(), (torch.randn(2, 3),), "shares storage with input 'table'")

    def test_detached_alias_of_state_reads_the_input(self):
        class Detached(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = torch.nn.Parameter(torch.randn(3))
                self.frozen = self.w.detach()

            def forward(self, x):
                return x * self.frozen + self.w
        doc = self.export(Detached(), (torch.randn(3),))
        self.assertEqual([i["name"] for i in doc["inputs"]], ["w", "x"])
        det = [n for n in doc["nodes"] if n["target"] == "aten.detach.default"]
        self.assertEqual(det[0]["args"], [{"node": "w"}])

    def test_tied_parameters_are_one_input_with_aliases(self):
        class Tied(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = torch.nn.Linear(2, 2)
                self.b = torch.nn.Linear(2, 2)
                self.b.weight = self.a.weight

            def forward(self, x):
                return self.b(self.a(x))
        doc = self.export(Tied(), (torch.randn(1, 2),))
        self.assertEqual([(i["name"], i.get("aliases")) for i in doc["inputs"]],
                         [("a.weight", ["b.weight"]), ("a.bias", None), ("b.bias", None), ("x", None)])
        self.assertFalse(any(i["role"] == "constant" for i in doc["inputs"]))
        self.assertEqual(sorted(load(os.path.join(self.tmp, "m.safetensors"))), ["a.bias", "a.weight", "b.bias"])

    def test_nested_arguments_and_outputs(self):
        def f(batch, k, opts):
            return {"y": batch["x"] * k, "aux": [batch["pair"][1], None]}
        doc = self.export(f, ({"x": torch.randn(2), "pair": (torch.randn(1), torch.randn(3))}, 4, None))
        self.assertEqual([i["name"] for i in doc["inputs"]], ["batch.x", "batch.pair.0", "batch.pair.1"])
        self.assertEqual(doc["output_paths"], ["y", "aux.0"])
        self.assertEqual(doc["arguments"][1], {"name": "k", "value": {"value": 4}})
        self.assertEqual(doc["arguments"][0]["value"]["dict"]["pair"], {"tuple": [{"input": "batch.pair.0"}, {"input": "batch.pair.1"}]})
        with self.assertRaises(fx_export.ExportError):
            self.export(f, ({"x": torch.randn(2), "pair": object()}, 1, None), "bad")

    def test_source_lines_and_module_paths(self):
        class Block(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = torch.nn.Linear(2, 2)

            def forward(self, x):
                return self.proj(x).relu()  # LINE-RELU

        class Top(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = torch.nn.Sequential(Block(), Block())

            def forward(self, x):
                return self.blocks(x).sum()  # LINE-SUM
        doc = self.export(Top(), (torch.randn(1, 2),))
        relu_line, sum_line = _line_of("# LINE-RELU"), _line_of("# LINE-SUM")
        by_target = {}
        for n in doc["nodes"]:
            self.assertIn("source", n, n["name"])
            by_target.setdefault(n["target"], []).append((n["source"], n.get("module")))
        me = os.path.basename(__file__)
        self.assertEqual(by_target["aten.relu.default"], [(f"{me}:{relu_line}", "blocks.0"), (f"{me}:{relu_line}", "blocks.1")])
        self.assertEqual(by_target["aten.addmm.default"], [(f"{me}:{relu_line}", "blocks.0.proj"), (f"{me}:{relu_line}", "blocks.1.proj")])
        self.assertEqual(by_target["aten.sum.default"], [(f"{me}:{sum_line}", None)])

    def test_schema_v2(self):
        import jsonschema
        with open(os.path.join(HERE, "..", "schemas", "fx_graph.schema.json")) as f:
            schema = json.load(f)

        def f(batch, k):
            return {"y": batch["x"] * k}
        doc = self.export(f, ({"x": torch.randn(2)}, 3))
        jsonschema.validators.validator_for(schema)(schema).validate(doc)

    @unittest.skipIf(AOTC is None, "needs the aotc binary (CTest passes it)")
    def test_compile_error_names_source_line_and_module(self):
        class Inner(torch.nn.Module):
            def forward(self, x):
                return torch.linalg.det(x)  # LINE-DET

        class Outer(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = Inner()

            def forward(self, x):
                return self.inner(x) * 2
        self.export(Outer(), (torch.randn(2, 2),))
        line = _line_of("# LINE-DET")
        r = subprocess.run([AOTC, "compile", os.path.join(self.tmp, "m.json"), "-o", os.path.join(self.tmp, "art")],
                           capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(f"node '_linalg_det' (aten._linalg_det.default) at {os.path.basename(__file__)}:{line} in inner: error: unsupported op",
                      r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "art")))



def _validate(doc):
    import jsonschema
    with open(os.path.join(HERE, "..", "schemas", "fx_graph.schema.json")) as f:
        schema = json.load(f)
    jsonschema.validators.validator_for(schema)(schema).validate(doc)


def _syms(x):
    """Every {"sym": ...} expression in a JSON value."""
    if isinstance(x, dict):
        if set(x) == {"sym"}:
            return [x["sym"]]
        return [e for v in x.values() for e in _syms(v)]
    if isinstance(x, list):
        return [e for v in x for e in _syms(v)]
    return []


class Reshaper(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 4)

    def forward(self, x, target):
        b = x.size(0)
        y = self.lin(x.reshape(b * 2, 8)).reshape(b, -1)
        pairs = x.reshape(-1, 2, 16)  # needs an even batch
        return torch.nn.functional.cross_entropy(y, target) + pairs.sum()


class DynamicExportTest(unittest.TestCase):
    """Note [Dynamic export]: sizes computed from a dynamic dim become
    expressions over its symbol; whatever cannot is refused, nothing written."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def path(self, name="dyn"):
        return os.path.join(self.tmp, name)

    def test_sizes_become_expressions(self):
        x, target = torch.randn(4, 2, 8), torch.tensor([1, 7, 0, 3])
        doc = fx_export.export(Reshaper(), (x, target), self.path(), dynamic={"x": {0: "batch"}, "target": {0: "batch"}},
                               ranges={"batch": (2, 512)})
        _validate(doc)
        self.assertEqual(doc["version"], 3)
        self.assertEqual(doc["symbols"], [{"name": "batch", "hint": 4, "min": 2, "max": 512}])
        inputs = {i["name"]: i for i in doc["inputs"]}
        self.assertEqual(inputs["x"]["shape"], [{"sym": "batch"}, 2, 8])
        self.assertEqual(inputs["target"]["shape"], [{"sym": "batch"}])
        self.assertEqual(inputs["lin.weight"]["shape"], [4, 8])
        exprs = set(_syms(doc["nodes"]))
        self.assertIn("2*batch", exprs)       # reshape(b * 2, 8): computed in Python from x.size(0)
        self.assertIn("batch // 2", exprs)    # reshape(-1, 2, 16): computed inside ATen
        self.assertNotIn(8, [d for n in doc["nodes"] if n["target"].startswith("aten._reshape_alias")
                             for d in n["args"][1][:1]])  # the example's 2*4 is nowhere a constant
        self.assertEqual(doc["guards"][0]["expr"], "batch")
        self.assertEqual(doc["guards"][0]["divisible_by"], 2)
        self.assertIn(os.path.basename(__file__), doc["guards"][0]["where"])
        with open(self.path() + ".json") as f:
            self.assertEqual(json.load(f), doc)

    def test_two_symbols_and_products(self):
        torch.manual_seed(0)
        layer = torch.nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, dropout=0.0, batch_first=True)
        doc = fx_export.export(torch.nn.TransformerEncoder(layer, num_layers=1), (torch.randn(2, 5, 16),), self.path(),
                               dynamic={"src": {0: "batch", 1: "seq"}})
        _validate(doc)
        self.assertEqual([s["name"] for s in doc["symbols"]], ["batch", "seq"])
        exprs = set(_syms(doc))
        self.assertIn("batch*seq", exprs)      # the tokens, flattened for the projections
        self.assertIn("2*batch", exprs)        # batch * heads
        if _fused_attention(doc):
            # PyTorch 2.x: the scores are inside one fused attention node;
            # aotc's IR of it has them, seq x seq.
            if AOTC is not None:
                self.assertIn("seq,seq]", self._backward_ir(self.path()))
        else:
            self.assertIn("seq*seq", exprs)    # an attention score's stride
        self.assertNotIn("guards", doc)

    def _backward_ir(self, prefix):
        r = subprocess.run([AOTC, "graph", prefix + ".json", "--stage", "backward", "--format", "ir"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def test_what_cannot_be_an_expression_is_refused(self):
        cases = [
            (lambda x: x[: max(x.size(0), 8)].sum(), "not a polynomial"),
            (lambda x: x.sum() * x.size(0) ** 3, "not a polynomial"),
            (lambda x: x * (x.size(0) / 2), "only integers may depend on a dynamic size"),
            (lambda x: x * 2 if x.size(0) < 10 else x.exp(), "differ"),
            (lambda x: x + torch.tensor(float(x.size(0))), "constant tensor"),
            (lambda x: x.reshape(6, 3), "fails at"),
        ]
        for fn, message in cases:
            with self.subTest(message=message):
                with self.assertRaises(fx_export.ExportError) as e:
                    fx_export.export(fn, (torch.randn(6, 3),), self.path(), dynamic={"x": {0: "b"}})
                self.assertIn(message, str(e.exception))
                self.assertFalse(os.path.exists(self.path() + ".json"))

    def test_bad_specifications_are_refused(self):
        x = torch.randn(4, 3)
        cases = [
            ({"y": {0: "b"}}, None, "not a tensor input"),
            ({"x": {2: "b"}}, None, "has 2 dims"),
            ({"x": {0: "max"}}, None, "must be an identifier"),
            ({"x": {0: "2b"}}, None, "must be an identifier"),
            ({"x": {0: "b", 1: "b"}}, None, "must agree"),
            ({"x": {0: "b"}}, {"c": (1, 8)}, "which no dynamic= dim defines"),
            ({"x": {0: "b"}}, {"b": (5, 8)}, "must satisfy"),
            ({"x": {0: "b"}}, {"b": (1, 2 ** 31)}, "must satisfy"),
            ({"x": {0: "b"}}, {"b": (1, 12)}, "export with an example of at most 3"),
        ]
        for dynamic, ranges, message in cases:
            with self.subTest(message=message):
                with self.assertRaises(fx_export.ExportError) as e:
                    fx_export.export(lambda x: x * 2, (x,), self.path(), dynamic=dynamic, ranges=ranges)
                self.assertIn(message, str(e.exception))
                self.assertFalse(os.path.exists(self.path() + ".json"))
        with self.assertRaises(fx_export.ExportError) as e:
            fx_export.export(lambda x: x * 2, (torch.randn(1, 3),), self.path(), dynamic={"x": {0: "b"}})
        self.assertIn("at least 2", str(e.exception))
        with self.assertRaises(fx_export.ExportError) as e:
            fx_export.export(lambda x: x * 2, (torch.randn(3, 4).t(),), self.path(), dynamic={"x": {0: "b"}})
        self.assertIn("not contiguous", str(e.exception))

    def test_the_dynamic_programs_of_issue_15_export(self):
        """The exporter's half of issue 15's done-when list: each program
        exports with its dims symbolic, and no example size survives as a
        constant where the symbol belongs."""
        import torchvision

        from dynamic_test import Causal, MlpCE, ViewMutation

        torch.manual_seed(0)
        layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True)
        cases = [
            (MlpCE(), (torch.randn(8, 32), torch.randint(0, 10, (8,))), {"x": {0: "batch"}, "target": {0: "batch"}}, set()),
            (torch.nn.TransformerEncoder(layer, num_layers=2).train(), (torch.randn(2, 6, 32),),
             {"src": {0: "batch", 1: "seq"}}, {"batch*seq", "seq*seq"}),
            (torchvision.models.resnet18(num_classes=10).train(), (torch.randn(2, 3, 32, 32),), {"x": {0: "batch"}}, set()),
            (Causal(), (torch.randn(2, 4, 16),), {"x": {0: "batch", 1: "seq"}}, {"batch*seq", "seq*seq"}),
            (torch.nn.BatchNorm1d(8).train(), (torch.randn(4, 8),), {"input": {0: "batch"}}, set()),
            (ViewMutation(), (torch.randn(4, 6),), {"x": {0: "batch"}}, set()),
        ]
        for i, (m, args, dynamic, want) in enumerate(cases):
            with self.subTest(program=type(m).__name__):
                doc = fx_export.export(m, args, self.path(f"p{i}"), dynamic=dynamic, ranges={"seq": (1, 32)} if i == 3 else None)
                _validate(doc)
                names = sorted({s for spec in dynamic.values() for s in spec.values()})
                self.assertEqual([s["name"] for s in doc["symbols"]], names)
                for inp in doc["inputs"]:
                    for d, sym in dynamic.get(inp["name"], {}).items():
                        self.assertEqual(inp["shape"][d], {"sym": sym})
                scores = "seq*seq" in want and _fused_attention(doc)  # 2.x: inside the fused node
                self.assertLessEqual(want - {"seq*seq"} if scores else want, set(_syms(doc["nodes"])))
                self.assertIn("batch", set(_syms(doc["nodes"])))
                if AOTC is not None:
                    # aotc's engine takes each one symbolically (Note [Symbolic pipeline]).
                    ir = self._backward_ir(self.path(f"p{i}"))
                    self.assertIn("symbol batch = ", ir)
                    if scores:
                        self.assertIn("seq,seq]", ir)

    @unittest.skipIf(AOTC is None, "needs the aotc binary (CTest passes it)")
    def test_one_artifact_runs_at_every_size(self):
        """Compiled once (Note [Dynamic codegen]); the reference runtime binds
        n from the input's shape and matches eager at each size."""
        f = lambda x: (x.reshape(x.size(0) * 3) * 2).cumsum(0)[-1] + x.sum()  # noqa: E731
        fx_export.export(f, (torch.randn(4, 3),), self.path(), dynamic={"x": {0: "n"}})
        r = subprocess.run([AOTC, "compile", self.path() + ".json", "-o", self.path("art"), "-q"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(self.path("art"), "manifest.json")) as m:
            self.assertEqual(json.load(m)["symbols"][0]["name"], "n")
        for n in (1, 4, 7):
            x = torch.randn(n, 3)
            fx_export.write_safetensors(self.path("in") + ".safetensors", {"x": x})
            r = subprocess.run([AOTC, "run", self.path("art"), "--inputs", self.path("in") + ".safetensors", "--forward-only", "--out",
                                self.path("out") + ".safetensors"], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            got = load(self.path("out") + ".safetensors")["output.0"]
            self.assertAlmostEqual(float(got), float(f(x)), places=4)

if __name__ == "__main__":
    if AOTC is not None:
        sys.argv.pop(1)
    unittest.main(verbosity=2)
