#!/usr/bin/python3
"""Generates the small ONNX fixtures of the ONNX front end's tests.

Run with Debian's python3-onnx: /usr/bin/python3 testdata/onnx/gen.py
The files are committed; this script is how they were made (deterministic).
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def save(model, name):
    onnx.checker.check_model(model)
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(model.SerializeToString())


def mlp():
    """x[batch, 4] -> Gemm -> Relu -> Gemm -> y[batch, 3]; a symbolic batch."""
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((8, 4)).astype(np.float32), "fc1.weight")
    b1 = numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "fc1.bias")
    w2 = numpy_helper.from_array(rng.standard_normal((3, 8)).astype(np.float32), "fc2.weight")
    b2 = numpy_helper.from_array(rng.standard_normal(3).astype(np.float32), "fc2.bias")
    nodes = [
        helper.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["h"], name="fc1", transB=1),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("Gemm", ["r", "fc2.weight", "fc2.bias"], ["y"], name="fc2", transB=1),
    ]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])], [w1, b1, w2, b2])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)], producer_name="aotc-testdata")
    save(m, "mlp.onnx")
    with open(os.path.join(HERE, "mlp.onnx"), "rb") as f:
        data = f.read()
    with open(os.path.join(HERE, "truncated.onnx"), "wb") as f:
        f.write(data[: len(data) // 2])


def unsupported():
    """Three nodes aotc cannot convert: reported together."""
    nodes = [
        helper.make_node("NonZero", ["x"], ["nz"], name="find"),
        helper.make_node("Det", ["x"], ["d"], name="det"),
        helper.make_node("Relu", ["x"], ["r"], name="ok"),
        helper.make_node("MyOp", ["r"], ["y"], name="custom", domain="com.example"),
    ]
    g = helper.make_graph(nodes, "unsupported", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 3])],
                          [helper.make_tensor_value_info("nz", TensorProto.INT64, None),
                           helper.make_tensor_value_info("d", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14), helper.make_opsetid("com.example", 1)])
    with open(os.path.join(HERE, "unsupported.onnx"), "wb") as f:
        f.write(m.SerializeToString())


def external():
    """A weight in external data beside the model, and one whose file is missing."""
    w = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    with open(os.path.join(HERE, "external.weights"), "wb") as f:
        f.write(w.tobytes())
    for name, location in [("external.onnx", "external.weights"), ("missing_external.onnx", "no_such_file.weights"),
                           ("escaping_external.onnx", "../../etc/passwd")]:
        t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[3, 4], data_location=TensorProto.EXTERNAL)
        for k, v in [("location", location), ("offset", "0"), ("length", str(w.nbytes))]:
            e = t.external_data.add()
            e.key, e.value = k, v
        g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "external",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], [t])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
        with open(os.path.join(HERE, name), "wb") as f:
            f.write(m.SerializeToString())


def bad_dims():
    """A negative dim on a graph input."""
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "bad_dims",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, -3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    with open(os.path.join(HERE, "bad_dims.onnx"), "wb") as f:
        f.write(m.SerializeToString())


def cycle():
    """Two nodes that consume each other's output."""
    nodes = [helper.make_node("Add", ["x", "b"], ["a"], name="first"), helper.make_node("Relu", ["a"], ["b"], name="second")]
    g = helper.make_graph(nodes, "cycle", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("b", TensorProto.FLOAT, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    with open(os.path.join(HERE, "cycle.onnx"), "wb") as f:
        f.write(m.SerializeToString())


def bad_weight():
    """ConvTranspose with a 2-D weight for a 3-D input: ONNX 1.12's own shape
    inference reads past the weight's dims (found by scripts/fuzz onnx)."""
    g = helper.make_graph([helper.make_node("ConvTranspose", ["X", "W"], ["Y"])], "bad_weight",
                          [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 1, 3]),
                           helper.make_tensor_value_info("W", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 2, 5])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)])
    with open(os.path.join(HERE, "bad_weight.onnx"), "wb") as f:
        f.write(m.SerializeToString())


def scalar_split():
    """Split of a rank-0 input: no axis exists (found by scripts/fuzz onnx)."""
    g = helper.make_graph([helper.make_node("Split", ["x"], ["a", "b"])], "scalar_split",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [])],
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1]),
                           helper.make_tensor_value_info("b", TensorProto.FLOAT, [1])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    with open(os.path.join(HERE, "scalar_split.onnx"), "wb") as f:
        f.write(m.SerializeToString())


def write_safetensors(name, tensors):
    """{name: numpy array} as safetensors (names sorted, data 8-byte aligned)."""
    import json
    import struct
    st = {np.dtype(np.float32): "F32", np.dtype(np.float64): "F64", np.dtype(np.float16): "F16", np.dtype(np.int64): "I64",
          np.dtype(np.int32): "I32", np.dtype(np.int16): "I16", np.dtype(np.int8): "I8", np.dtype(np.uint8): "U8",
          np.dtype(np.uint16): "U16", np.dtype(np.uint32): "U32", np.dtype(np.uint64): "U64", np.dtype(np.bool_): "BOOL"}
    header, blobs, off = {}, [], 0
    for k in sorted(tensors):
        a = np.ascontiguousarray(tensors[k])
        header[k] = {"dtype": st[a.dtype], "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
        blobs.append(a.tobytes())
        off += a.nbytes
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def int_types():
    """The integer dtypes: arithmetic that wraps, BitShift by the type's width
    and more, integer Div/Mod, Max/Min, and casts between them; expected
    values from numpy (whose integer arithmetic wraps like ONNX's)."""
    a = np.array([200, 100, 7, 255], np.uint8)
    b = np.array([100, 200, 3, 1], np.uint8)
    s = np.array([1, 9, 8, 7], np.uint8)
    x = np.array([-128, 100, -7, 5], np.int8)
    y = np.array([-1, 2, 3, -2], np.int8)
    p = np.array([300, 65535, 2, 40000], np.uint16)
    q = np.array([4000000000, 1, 70000, 3], np.uint32)
    r = np.array([2**40, 3, 9007199254740992, 0], np.uint64)
    t = np.array([-32768, 32767, 5, -3], np.int16)
    ins = {"a": a, "b": b, "s": s, "x": x, "y": y, "p": p, "q": q, "r": r, "t": t}
    nodes, outs, exp = [], [], {}

    def node(op, inputs, want, **attrs):
        name = f"o{len(outs)}"
        nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        outs.append(helper.make_tensor_value_info(name, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(want.dtype)], list(want.shape)))
        exp[f"output.{len(outs) - 1}"] = want

    with np.errstate(over="ignore"):
        node("Add", ["a", "b"], a + b)
        node("Sub", ["b", "a"], b - a)
        node("Mul", ["a", "b"], a * b)
        node("BitShift", ["a", "s"], np.where(s >= 8, 0, a << np.minimum(s, 7)).astype(np.uint8), direction="LEFT")
        node("BitShift", ["a", "s"], np.where(s >= 8, 0, a >> np.minimum(s, 7)).astype(np.uint8), direction="RIGHT")
        node("Mul", ["x", "y"], x * y)
        node("Div", ["x", "y"], np.trunc(x.astype(np.float64) / y).astype(np.int64).astype(np.int8))
        node("Mod", ["x", "y"], np.mod(x, y))
        node("Mod", ["x", "y"], np.fmod(x, y), fmod=1)
        node("Max", ["p", "p"], p)
        node("Min", ["q", "q"], q)
        node("Add", ["r", "r"], r + r)
        node("Sub", ["t", "t"], t - t)
        node("Neg", ["t"], -t)
        node("Cast", ["x"], x.astype(np.uint8), to=TensorProto.UINT8)
        node("Cast", ["p"], p.astype(np.int8), to=TensorProto.INT8)
        node("Cast", ["a"], a.astype(np.float32), to=TensorProto.FLOAT)
        node("Cast", ["q"], q.astype(np.int64), to=TensorProto.INT64)
        node("Less", ["x", "y"], x < y)
    g = helper.make_graph(nodes, "int_types", [helper.make_tensor_value_info(k, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(v.dtype)], list(v.shape))
                                               for k, v in ins.items()], outs)
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="aotc-testdata"), "int_types.onnx")
    write_safetensors("int_types.inputs.safetensors", ins)
    write_safetensors("int_types.expected.safetensors", exp)


def inputs():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 4)).astype(np.float32)
    import json
    import struct
    h = json.dumps({"x": {"dtype": "F32", "shape": [2, 4], "data_offsets": [0, x.nbytes]}}).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(os.path.join(HERE, "mlp.inputs.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + x.tobytes())


def huge_constant():
    """A Constant whose dims promise 2^36 elements but hold 25 values: refused
    before anything is allocated (found by scripts/fuzz onnx, which asked for
    147 GB)."""
    t = helper.make_tensor("value", TensorProto.FLOAT, [5, 5], [0.5] * 25)
    t.dims[:] = [1 << 18, 1 << 18]  # make_tensor checks the count; a damaged file does not
    g = helper.make_graph([helper.make_node("Constant", [], ["y"], name="huge", value=t)], "huge_constant", [],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1 << 18, 1 << 18])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    with open(os.path.join(HERE, "huge_constant.onnx"), "wb") as f:
        f.write(m.SerializeToString())


def newer_opsets():
    """Opset 18+ models (issue 38), beyond what ONNX 1.12's checker knows, so
    saved without it: aotc's own rules must hold the line.
    newer_bad_shape: ReduceMean 18 (axes an input) whose declared output
    shape is wrong; refused.  newer_function: a model-local function (as
    PyTorch 2.x's exporter writes them) called twice, with an attribute the
    call gives and one from its body; inlined, checked against numpy."""
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    nodes = [helper.make_node("ReduceMean", ["x", "axes"], ["y"], name="mean", keepdims=0)]
    g = helper.make_graph(nodes, "newer_bad_shape", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])], [axes])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], producer_name="aotc-testdata")
    with open(os.path.join(HERE, "newer_bad_shape.onnx"), "wb") as f:
        f.write(m.SerializeToString())

    # LeakyShift(x) = LeakyRelu(x * x - 1, alpha=@alpha); Split 18 by num_outputs.
    one = helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])
    leaky = helper.make_node("LeakyRelu", ["s"], ["out"], name="act")
    leaky.attribute.add().CopyFrom(onnx.AttributeProto(name="alpha", ref_attr_name="alpha", type=onnx.AttributeProto.FLOAT))
    fn = helper.make_function("aotc.local", "LeakyShift", ["in"], ["out"],
                              [helper.make_node("Constant", [], ["c"], value=one), helper.make_node("Mul", ["in", "in"], ["sq"]),
                               helper.make_node("Sub", ["sq", "c"], ["s"]), leaky],
                              [helper.make_opsetid("", 18)], attributes=["alpha"])
    nodes = [helper.make_node("LeakyShift", ["x"], ["a"], name="f1", domain="aotc.local", alpha=0.5),
             helper.make_node("LeakyShift", ["a"], ["b"], name="f2", domain="aotc.local", alpha=0.25),
             helper.make_node("Split", ["b"], ["y", "z"], name="split", axis=1, num_outputs=2)]
    g = helper.make_graph(nodes, "newer_function", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3]),
                           helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("aotc.local", 1)],
                          producer_name="aotc-testdata", functions=[fn])
    with open(os.path.join(HERE, "newer_function.onnx"), "wb") as f:
        f.write(m.SerializeToString())
    x = np.random.default_rng(3).standard_normal((2, 5)).astype(np.float32)

    def ls(v, alpha):
        s = v * v - np.float32(1)
        return np.where(s < 0, s * np.float32(alpha), s).astype(np.float32)
    b = ls(ls(x, 0.5), 0.25)
    write_safetensors("newer_function.inputs.safetensors", {"x": x})
    write_safetensors("newer_function.expected.safetensors", {"output.0": b[:, :3], "output.1": b[:, 3:]})


def mod_signed_zero():
    """Mod with fmod=0 (opset 28) in float16, float32 and float64, as numpy's
    mod: a zero remainder takes the divisor's sign (Note [Signed zero of
    mod]), which Reciprocal shows as the sign of an infinity; with the onnx
    suite's edge cases (infinite and NaN operands, a zero divisor) beside.
    Saved without ONNX 1.12's checker, which knows no opset 28."""
    nodes, ins, outs, exp = [], [], [], {}
    x = [0.0, -0.0, 0.0, -0.0, 4.0, -4.0, 3.0, -3.0, -3.0, 3.0, -1.0, 1.0, np.inf, 1.0, 1.0, np.nan, 1.0, 5.5, -5.5]
    y = [-2.0, 2.0, 2.0, -2.0, -2.0, 2.0, -1.5, 1.5, np.inf, np.inf, -np.inf, -np.inf, 2.0, 0.0, -0.0, 2.0, np.nan, -2.0, 2.0]
    for i, (dt, tp) in enumerate([(np.float16, TensorProto.FLOAT16), (np.float32, TensorProto.FLOAT), (np.float64, TensorProto.DOUBLE)]):
        a, b = np.array(x, dt), np.array(y, dt)
        nodes += [helper.make_node("Mod", [f"x{i}", f"y{i}"], [f"m{i}"], name=f"mod{i}", fmod=0),
                  helper.make_node("Reciprocal", [f"m{i}"], [f"r{i}"], name=f"reciprocal{i}")]
        ins += [helper.make_tensor_value_info(f"x{i}", tp, [len(x)]), helper.make_tensor_value_info(f"y{i}", tp, [len(x)])]
        outs += [helper.make_tensor_value_info(f"m{i}", tp, [len(x)]), helper.make_tensor_value_info(f"r{i}", tp, [len(x)])]
        with np.errstate(divide="ignore", invalid="ignore"):
            m = np.mod(a, b)
            exp[f"output.{2 * i}"], exp[f"output.{2 * i + 1}"] = m, np.reciprocal(m)
        exp[f"x{i}"], exp[f"y{i}"] = a, b
    g = helper.make_graph(nodes, "mod_signed_zero", ins, outs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 28)], producer_name="aotc-testdata")
    with open(os.path.join(HERE, "mod_signed_zero.onnx"), "wb") as f:
        f.write(m.SerializeToString())
    write_safetensors("mod_signed_zero.inputs.safetensors", {k: v for k, v in exp.items() if not k.startswith("output")})
    write_safetensors("mod_signed_zero.expected.safetensors", {k: v for k, v in exp.items() if k.startswith("output")})


def newer_undefined_op():
    """Gelu (defined from opset 20) in an opset-18 model: refused by the op
    version guard (Note [ONNX op versions]), which ONNX 1.12's checker cannot
    be for opsets it does not know."""
    nodes = [helper.make_node("Gelu", ["x"], ["y"], name="gelu")]
    g = helper.make_graph(nodes, "newer_undefined_op", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], producer_name="aotc-testdata")
    with open(os.path.join(HERE, "newer_undefined_op.onnx"), "wb") as f:
        f.write(m.SerializeToString())


def control_flow():
    """Control flow, compiled where its result is fixed when compiling (Note
    [ONNX control flow]).  scan_unrolled: a Scan 9+ over axis 1 of x with a
    state, a backward scan output, and an outer-scope reference (w) in the
    body; unrolled, checked against numpy.  loop_if: a Loop of 3 iterations
    (a constant trip count) whose body holds an If on the iteration number;
    each iteration inlines one branch.  loop_data_dependent: a Loop whose
    body's condition is computed from the data; refused."""
    f = TensorProto.FLOAT
    body = helper.make_graph(
        [helper.make_node("Mul", ["x_t", "w"], ["wx"]), helper.make_node("Add", ["s_in", "wx"], ["s_out"]),
         helper.make_node("Identity", ["s_out"], ["y_t"])],
        "scan_body", [helper.make_tensor_value_info("s_in", f, [2]), helper.make_tensor_value_info("x_t", f, [2])],
        [helper.make_tensor_value_info("s_out", f, [2]), helper.make_tensor_value_info("y_t", f, [2])])
    nodes = [helper.make_node("Scan", ["s0", "x"], ["s", "ys"], name="scan", body=body, num_scan_inputs=1, scan_input_axes=[1],
                              scan_output_directions=[1], scan_output_axes=[1])]
    g = helper.make_graph(nodes, "scan_unrolled", [helper.make_tensor_value_info("s0", f, [2]), helper.make_tensor_value_info("x", f, [2, 3]),
                                                   helper.make_tensor_value_info("w", f, [2])],
                          [helper.make_tensor_value_info("s", f, [2]), helper.make_tensor_value_info("ys", f, [2, 3])])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)], producer_name="aotc-testdata"), "scan_unrolled.onnx")
    rng = np.random.default_rng(5)
    s0 = rng.standard_normal(2).astype(np.float32)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    w = rng.standard_normal(2).astype(np.float32)
    s, ys = s0, []
    for t in range(3):
        s = s + x[:, t] * w
        ys.append(s)
    write_safetensors("scan_unrolled.inputs.safetensors", {"s0": s0, "x": x, "w": w})
    write_safetensors("scan_unrolled.expected.safetensors", {"output.0": s, "output.1": np.stack(ys[::-1], axis=1)})

    # Loop 3 times: y = y * 2 in iteration 0, y = y + x after; scan out y.
    one = helper.make_tensor("one", TensorProto.INT64, [], [1])
    two = helper.make_tensor("two", f, [], [2.0])
    then_b = helper.make_graph([helper.make_node("Constant", [], ["c2"], value=two), helper.make_node("Mul", ["y_in", "c2"], ["t_out"])],
                               "then_b", [], [helper.make_tensor_value_info("t_out", f, [2])])
    else_b = helper.make_graph([helper.make_node("Add", ["y_in", "x"], ["e_out"])], "else_b", [], [helper.make_tensor_value_info("e_out", f, [2])])
    body = helper.make_graph(
        [helper.make_node("Constant", [], ["one"], value=one), helper.make_node("Less", ["i", "one"], ["first"]),
         helper.make_node("If", ["first"], ["y_out"], name="pick", then_branch=then_b, else_branch=else_b),
         helper.make_node("Identity", ["c_in"], ["c_out"]), helper.make_node("Identity", ["y_out"], ["y_scan"])],
        "loop_body", [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
                      helper.make_tensor_value_info("y_in", f, [2])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []), helper.make_tensor_value_info("y_out", f, [2]),
         helper.make_tensor_value_info("y_scan", f, [2])])
    trip = numpy_helper.from_array(np.array(3, np.int64), "trip")
    nodes = [helper.make_node("Loop", ["trip", "", "y0"], ["y", "ys"], name="loop", body=body)]
    g = helper.make_graph(nodes, "loop_if", [helper.make_tensor_value_info("y0", f, [2]), helper.make_tensor_value_info("x", f, [2])],
                          [helper.make_tensor_value_info("y", f, [2]), helper.make_tensor_value_info("ys", f, [3, 2])], [trip])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)], producer_name="aotc-testdata"), "loop_if.onnx")
    y0 = rng.standard_normal(2).astype(np.float32)
    x = rng.standard_normal(2).astype(np.float32)
    y, ys = y0, []
    for i in range(3):
        y = y * np.float32(2) if i < 1 else y + x
        ys.append(y)
    write_safetensors("loop_if.inputs.safetensors", {"y0": y0, "x": x})
    write_safetensors("loop_if.expected.safetensors", {"output.0": y, "output.1": np.stack(ys)})

    # while (sum(y) < 10) y = y * 2: the number of iterations depends on y.
    ten = helper.make_tensor("ten", f, [], [10.0])
    body = helper.make_graph(
        [helper.make_node("Add", ["y_in", "y_in"], ["y_out"]), helper.make_node("ReduceSum", ["y_out"], ["total"], keepdims=0),
         helper.make_node("Constant", [], ["ten"], value=ten), helper.make_node("Less", ["total", "ten"], ["c_out"])],
        "loop_body", [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
                      helper.make_tensor_value_info("y_in", f, [2])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []), helper.make_tensor_value_info("y_out", f, [2])])
    trip = numpy_helper.from_array(np.array(100, np.int64), "trip")
    cond = numpy_helper.from_array(np.array(True), "cond")
    nodes = [helper.make_node("Loop", ["trip", "cond", "y0"], ["y"], name="grow", body=body)]
    g = helper.make_graph(nodes, "loop_data_dependent", [helper.make_tensor_value_info("y0", f, [2])],
                          [helper.make_tensor_value_info("y", f, [2])], [trip, cond])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="aotc-testdata"), "loop_data_dependent.onnx")


if __name__ == "__main__":
    mlp()
    unsupported()
    external()
    bad_dims()
    cycle()
    bad_weight()
    scalar_split()
    huge_constant()
    int_types()
    inputs()
    newer_opsets()
    mod_signed_zero()
    newer_undefined_op()
    control_flow()
