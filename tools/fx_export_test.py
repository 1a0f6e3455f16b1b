#!/usr/bin/python3
"""Tests of tools/fx_export.py with Debian's PyTorch: the exported JSON
validates against schemas/fx_graph.schema.json, the module's state is left as
it was, weights are the values from before the export, inputs carry their
state_dict names, roles and requires_grad, user inputs are named after
forward's parameters, and in-place/view ops are kept."""
import json
import os
import sys
import tempfile
import unittest

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
import fx_export  # noqa: E402
from compare_safetensors import load  # noqa: E402


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

    def test_function(self):
        def f(a, b):
            return torch.mm(a, b).relu()
        doc = self.export(f, (torch.randn(2, 3), torch.randn(3, 4)), name="f")
        self.assertEqual([i["name"] for i in doc["inputs"]], ["a", "b"])
        self.assertEqual(doc["outputs"], [{"node": doc["nodes"][-1]["name"]}])


if __name__ == "__main__":
    unittest.main(verbosity=2)
