#!/usr/bin/env python3
"""A torch.optim state_dict <-> an --optimizer artifact's state (issue 47 item 2).

torch keys an optimizer's state by integer position in its parameter groups;
an aotc artifact names it after the parameters (Note [Optimizer step]):
optim.<param>.exp_avg, optim.<param>.exp_avg_sq, optim.<param>.max_exp_avg_sq,
optim.<param>.momentum_buffer, one step count for every parameter,
optim.step (torch keeps one per parameter, equal in a static graph: a
state_dict whose steps differ is refused; SGD keeps none in torch: aotc's is
its first-step flag, 1 once a momentum buffer exists), and the groups'
momentum or beta1 (optim.momentum, optim.beta1: run-time inputs, one for all
groups; a state_dict whose groups differ in them is refused).
Positions are mapped to names by the order the parameters were given to the
optimizer: by default `model.parameters()`'s, which is the order of the
artifact's parameter inputs (tools/fx_export.py writes them as
named_parameters lists them); pass --names for another.

    optim_state.py to-aotc STATE_DICT.pt ARTIFACT OUT.safetensors [--names a,b,...]
        the state as `aotc run --inputs` takes it (a resumed checkpoint);
    optim_state.py to-torch RESULTS.safetensors ARTIFACT TEMPLATE.pt OUT.pt [--names ...]
        aotc's after_backward.optim.* (or optim.*) results as a state_dict for
        optimizer.load_state_dict: TEMPLATE is the optimizer's own
        state_dict() (its groups and hyperparameters are kept).

As a module: to_aotc(state_dict, names) and to_torch(tensors, names, template).
"""
import argparse
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

STATES = ("momentum_buffer", "exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step")


def parameter_names(artifact):
    """The artifact's parameter inputs in input order (model.parameters()'s:
    those the loss does not reach too, as the optimizer holds them)."""
    with open(os.path.join(artifact, "manifest.json")) as f:
        m = json.load(f)
    return [i["name"] for i in m["inputs"] if i.get("role") == "parameter"]


def order(state_dict):
    """Parameter positions in the order of the groups."""
    return [i for g in state_dict["param_groups"] for i in g["params"]]


def to_aotc(state_dict, names):
    """{optim.<name>.<state>: tensor, optim.step: tensor} from a torch.optim state_dict."""
    positions = order(state_dict)
    if len(positions) != len(names):
        raise ValueError(f"the state_dict has {len(positions)} parameters, the names {len(names)}")
    out, steps = {}, set()
    for pos, name in zip(positions, names):
        st = state_dict["state"].get(pos, {})
        for s in STATES:
            if s == "step" or s not in st or st[s] is None:
                continue
            out[f"optim.{name}.{s}"] = torch.as_tensor(st[s]).detach().clone()
        if "step" in st:
            steps.add(float(st["step"]))
        elif st.get("momentum_buffer") is not None:
            steps.add(1.0)  # SGD: aotc's first-step flag
    if len(steps) > 1:
        raise ValueError(f"the parameters' step counts differ ({sorted(steps)}): aotc keeps one for all")
    if steps:
        out["optim.step"] = torch.tensor(steps.pop(), dtype=torch.float32)
    # Note [Run-time momentum]: the momentum (SGD with momentum) or beta1
    # (Adam, AdamW) the checkpoint's groups hold, one for all groups in aotc.
    groups = state_dict["param_groups"]
    for key, pick in (("momentum", lambda g: g.get("momentum")), ("beta1", lambda g: (g.get("betas") or (None,))[0])):
        values = {float(pick(g)) for g in groups if pick(g) is not None}
        if len(values) > 1:
            raise ValueError(f"the parameter groups' {key} values differ ({sorted(values)}): aotc keeps one for all")
        if values and (key != "momentum" or values != {0.0}):  # SGD without momentum has no optim.momentum
            out["optim." + key] = torch.tensor(values.pop(), dtype=torch.float64)
    return out


def to_torch(tensors, names, template):
    """A state_dict like `template` (an optimizer's own) holding aotc's state."""
    def get(key):
        for k in ("after_backward." + key, key):
            if k in tensors:
                return torch.as_tensor(tensors[k])
        return None
    positions = order(template)
    if len(positions) != len(names):
        raise ValueError(f"the template has {len(positions)} parameters, the names {len(names)}")
    step = get("optim.step")
    if step is None or float(step) == 0:
        return {"state": {}, "param_groups": template["param_groups"]}
    sgd = all("momentum" in g for g in template["param_groups"])
    state = {}
    for pos, name in zip(positions, names):
        st = {s: get(f"optim.{name}.{s}").clone() for s in STATES if s != "step" and get(f"optim.{name}.{s}") is not None}
        if not st:
            continue  # a parameter the loss does not reach: no state, as in torch
        if not sgd:
            st["step"] = step.clone().to(torch.float32)
        state[pos] = st
    return {"state": state, "param_groups": template["param_groups"]}


def main():
    from precision_test import load_torch, write_safetensors
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("to-aotc")
    a.add_argument("state_dict")
    a.add_argument("artifact")
    a.add_argument("out")
    a.add_argument("--names")
    t = sub.add_parser("to-torch")
    t.add_argument("results")
    t.add_argument("artifact")
    t.add_argument("template")
    t.add_argument("out")
    t.add_argument("--names")
    opts = ap.parse_args()
    names = opts.names.split(",") if opts.names else parameter_names(opts.artifact)
    if opts.cmd == "to-aotc":
        write_safetensors(opts.out, to_aotc(torch.load(opts.state_dict, weights_only=True), names))
    else:
        tensors = {k: v for k, (_, v) in load_torch(opts.results).items()}
        torch.save(to_torch(tensors, names, torch.load(opts.template, weights_only=True)), opts.out)


if __name__ == "__main__":
    main()
