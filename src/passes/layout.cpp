//===- layout.cpp - Channels-last storage around tensor-core convolutions -===//
//
// Note [Channels last]: cuDNN's tensor-core convolutions in float16 and
// bfloat16 work in NHWC; given NCHW tensors they transpose the operands
// into NHWC and the result back, on every call (NVIDIA's Deep Learning
// Performance Guide, "Tensor layouts in memory: NCHW vs NHWC"; PyTorch's
// channels_last memory format exists for the same reason).  This pass
// chooses the layout once, at compile time: it stores a convolution's
// operands and result channels-last where every one of them can be, so
// cuDNN reads and writes them as they lie, and the transposes that remain
// are folded into the kernels at the island's border (the cast of a
// float32 weight to bfloat16 writes its KRSC copy; a kernel reading an NHWC
// value for an NCHW result reads through the strides).
//
// A convolution qualifies when it computes in float16 or bfloat16 and has
// input and output channels that are multiples of 8 (the shapes cuDNN's
// NHWC tensor-core kernels take without padding; grouped and depthwise
// convolutions too, whose filters have one channel per group).  Float32
// (FMA, or TF32 under --precision tf32) and float64 keep NCHW: that is
// where cuDNN's NCHW kernels are native.
//
// A value can be stored channels-last when its storage is its own (the
// only result of a pointwise op or a convolution, dense, 4-D, more than one
// channel and more than one pixel) and everything that reads it reads
// through its strides: pointwise kernels, reductions, pooling and
// convolutions (pooling writes NCHW: an island ends there).  It
// is not a result the caller sees (user outputs and gradients keep their
// NCHW contract); a saved value is stored channels-last only when the
// backward's readers take it too, and then both programs give it the same
// layout (the runtime checks that a saved tensor's layouts agree).
//
// Which values: every operand and result of a qualifying convolution whose
// values can all be stored channels-last, then, program order, every
// pointwise result that can be and reads a channels-last value of its own
// shape (as PyTorch's pointwise ops keep their input's memory format), so
// that conv -> batch norm -> relu -> conv stays in NHWC.  Every convolution,
// qualifying or not, in either program, then has all its operands in one
// layout (cuDNN's filter format goes with its tensors): where one would
// mix them, its operands are barred and the choice is made again (bars
// only grow, so this ends).  The code generator
// runs a channels-last pointwise kernel in the order its result lies in
// memory (Note [Channels-last kernels]).  A 1x1 filter's bytes are the same
// in both layouts and need no new strides.
//
// The choice is recorded as the node attribute `channels_last` (Note
// [Channels last] in ops.h): shape inference gives the result NHWC strides,
// so the verifier checks every layout, and IR dumps show it.
//===----------------------------------------------------------------------===//
#include <set>

#include "aotc/ops/ops.h"
#include "aotc/ops/reductions.h"
#include "aotc/passes/passes.h"

namespace aotc {

namespace {

bool isConv(OpKind k) { return k == OpKind::Conv2d || k == OpKind::Conv2dBackwardInput || k == OpKind::Conv2dBackwardWeight; }

/// Reads its operands through their strides (Note [Channels last]).
/// Pooling (the window ops) reads through `at()` of its operands' types
/// (src/ops/windows.cpp); a global average pool over an NHWC input reads
/// consecutive channels in consecutive threads.
bool readsStrided(OpKind k) {
  const OpCategory c = opInfo(k).category;
  return c == OpCategory::Pointwise || c == OpCategory::Window || reductionRule(k) || isConv(k);
}

/// A float16/bfloat16 convolution whose input and output channel counts
/// are multiples of 8.
bool tensorCoreConv(const Graph& g, const Node& n) {
  if (!isConv(n.op)) return false;
  const TensorType& out = g.type(n.outputs[0]);
  if (out.dtype != DType::F16 && out.dtype != DType::BF16) return false;
  const Ints& w = n.op == OpKind::Conv2dBackwardWeight ? out.sizes : g.type(n.inputs[1]).sizes;
  const Ints& x = n.op == OpKind::Conv2d ? g.type(n.inputs[0]).sizes : n.op == OpKind::Conv2dBackwardInput ? out.sizes : g.type(n.inputs[1]).sizes;
  return w.size() == 4 && x.size() == 4 && w[0] % 8 == 0 && x[1] % 8 == 0;
}

/// A value's storage is the same in NCHW and NHWC: one channel or one pixel.
bool layoutFree(const TensorType& t) { return t.rank() == 4 && (t.sizes[1] == 1 || t.sizes[2] * t.sizes[3] == 1); }

struct Program {
  const Graph& g;
  std::vector<std::vector<int32_t>> readers;  ///< per value, the nodes reading it
  std::vector<bool> visible, saved;           ///< per value: a result the caller sees; saved for the backward
  explicit Program(const Graph& graph)
      : g(graph), readers(graph.values.size()), visible(graph.values.size()), saved(graph.values.size()) {
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (ValueId v : g.nodes[i].inputs) readers[v].push_back(static_cast<int32_t>(i));
    for (const GraphOutput& o : g.outputs) (o.role == OutputRole::Saved ? saved : visible)[o.value] = true;
  }
  bool readersTake(ValueId v) const {
    for (int32_t r : readers[v])
      if (!readsStrided(g.nodes[static_cast<size_t>(r)].op)) return false;
    return true;
  }
  /// Its own dense 4-D storage, written by a node that writes through strides.
  bool storable(ValueId v) const {
    const Value& val = g.values[v];
    if (val.node < 0) return false;
    const Node& n = g.nodes[static_cast<size_t>(val.node)];
    if (n.outputs.size() != 1) return false;
    const TensorType& t = val.type;
    return channelsLastWritable(n.op) && t.rank() == 4 && !t.isSymbolic() && t.isContiguous() &&
           t.offset == 0 && isFloating(t.dtype) && !layoutFree(t);
  }
};

struct ChannelsLast {
  Program fw, bw;
  std::vector<ValueId> savedIn;  ///< per forward value: its backward input, if saved
  std::vector<ValueId> twins;    ///< per backward value: its forward value, if a saved input
  std::set<ValueId> chosenFw, chosenBw, barredFw, barredBw;

  ChannelsLast(const Graph& f, const Graph& b)
      : fw(f), bw(b), savedIn(f.values.size(), kNoValue), twins(b.values.size(), kNoValue) {
    std::vector<std::string> names;
    std::vector<ValueId> ins;
    for (const GraphInput& in : b.inputs)
      if (in.role == InputRole::Saved) {
        names.push_back(b.values[in.value].name);
        ins.push_back(in.value);
      }
    std::vector<ValueId> fv = f.valuesNamed(names);
    for (size_t i = 0; i < ins.size(); ++i)
      if (fv[i] != kNoValue) {
        savedIn[fv[i]] = ins[i];
        twins[ins[i]] = fv[i];
      }
  }

  /// Can forward value v be stored channels-last (with its backward twin)?
  bool canFw(ValueId v) const {
    if (barredFw.count(v) || !fw.storable(v) || !fw.readersTake(v) || fw.visible[v]) return false;
    return !fw.saved[v] || (savedIn[v] != kNoValue && bw.readersTake(savedIn[v]));
  }
  bool canBw(ValueId v) const { return !barredBw.count(v) && bw.storable(v) && bw.readersTake(v) && !bw.visible[v] && !bw.saved[v]; }

  /// A backward value's forward twin (a saved input), or kNoValue.
  ValueId twin(ValueId v) const { return twins[static_cast<size_t>(v)]; }

  /// Every 4-D operand and result of conv `n` of program `back`, if each
  /// can be stored channels-last or needs no new strides; else none.
  void seed(bool back, const Node& n) {
    const Program& p = back ? bw : fw;
    std::vector<std::pair<bool, ValueId>> want;  // (in the backward, value)
    for (ValueId v : {n.inputs[0], n.inputs[1], n.outputs[0]}) {
      if (layoutFree(p.g.type(v))) continue;
      if (!back) {
        if (!chosenFw.count(v) && !canFw(v)) return;
        want.push_back({false, v});
      } else if (ValueId f = twin(v); f != kNoValue) {
        if (!chosenFw.count(f) && !canFw(f)) return;
        want.push_back({false, f});
      } else {
        if (!chosenBw.count(v) && !canBw(v)) return;
        want.push_back({true, v});
      }
    }
    for (auto [b, v] : want) (b ? chosenBw : chosenFw).insert(v);
  }

  /// Pointwise results that read a chosen value of their own shape.
  void spread(bool back) {
    const Program& p = back ? bw : fw;
    std::set<ValueId>& chosen = back ? chosenBw : chosenFw;
    auto isChosen = [&](ValueId v) {
      if (chosen.count(v)) return true;
      ValueId f = back ? twin(v) : kNoValue;
      return f != kNoValue && chosenFw.count(f) > 0;
    };
    for (const Node& n : p.g.nodes) {
      if (opInfo(n.op).category != OpCategory::Pointwise || n.outputs.size() != 1) continue;
      ValueId o = n.outputs[0];
      if (chosen.count(o) || !(back ? canBw(o) : canFw(o))) continue;
      for (ValueId in : n.inputs)
        if (p.g.type(in).sizes == p.g.type(o).sizes && isChosen(in)) {
          chosen.insert(o);
          break;
        }
    }
  }

  /// Bars the chosen operands of every convolution of a program whose
  /// operands would be in both layouts; true if it barred any.
  bool barMixed(bool back) {
    const Program& p = back ? bw : fw;
    bool barred = false;
    for (const Node& n : p.g.nodes) {
      if (!isConv(n.op)) continue;
      std::vector<std::pair<bool, ValueId>> nhwc;  // (in the backward, value)
      bool nchw = false;
      for (ValueId v : {n.inputs[0], n.inputs[1], n.outputs[0]}) {
        if (layoutFree(p.g.type(v))) continue;
        ValueId f = back ? twin(v) : v;
        if (back && f == kNoValue) {
          if (chosenBw.count(v)) nhwc.push_back({true, v});
          else nchw = true;
        } else if (chosenFw.count(f)) {
          nhwc.push_back({false, f});
        } else {
          nchw = true;
        }
      }
      if (!nchw || nhwc.empty()) continue;
      for (auto [b, v] : nhwc) (b ? barredBw : barredFw).insert(v);
      barred = true;
    }
    return barred;
  }

  static Graph apply(const Graph& g, const std::set<ValueId>& chosen) {
    Graph out = g;
    for (ValueId v : chosen) {
      Value& val = out.values[v];
      out.nodes[static_cast<size_t>(val.node)].attrs[kChannelsLast] = true;
      val.type.strides = channelsLastStrides(val.type.sizes);
    }
    return out;
  }
};

}  // namespace

Partition channelsLast(const Partition& p) {
  ChannelsLast c(p.forward, p.backward);
  for (;;) {
    c.chosenFw.clear();
    c.chosenBw.clear();
    for (const Node& n : p.forward.nodes)
      if (tensorCoreConv(p.forward, n)) c.seed(false, n);
    for (const Node& n : p.backward.nodes)
      if (tensorCoreConv(p.backward, n)) c.seed(true, n);
    c.spread(false);
    c.spread(true);
    if (!c.barMixed(false) && !c.barMixed(true)) break;
  }
  Partition r = p;
  r.forward = ChannelsLast::apply(p.forward, c.chosenFw);
  r.backward = ChannelsLast::apply(p.backward, c.chosenBw);
  // The backward's saved inputs take their forward layout.
  for (const GraphInput& in : r.backward.inputs)
    if (in.role == InputRole::Saved)
      if (ValueId f = c.twin(in.value); f != kNoValue && c.chosenFw.count(f))
        r.backward.values[in.value].type.strides = r.forward.type(f).strides;
  return r;
}

Graph channelsLast(const Graph& g) { return channelsLast(Partition{g, Graph{}, {}}).forward; }

}  // namespace aotc
