//===- onnx/controlflow.cpp - If, Loop and Scan, inlined and unrolled -------===//
//
// Note [ONNX control flow]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// aotc's IR has no control flow, so ONNX's If, Loop and Scan are compiled
// only where their result is fixed at compile time, and refused by name
// otherwise, never approximated.  Each converts its subgraphs through the
// loader (Subgraphs::convertBody): a body's nodes are converted like the
// graph's, once per iteration, in a scope of their own where its inputs are
// bound and any other name resolves to the enclosing graphs' values (ONNX's
// outer-scope references); its values get fresh IR values each time, and
// its node names are prefixed with the node's and the iteration's
// (`loop/iter2/add`).  Folding (Note [Compile-time values]) runs inside the
// bodies as outside, so a loop's iteration number and everything computed
// from it are known.  Control flow nests: a body's If, Loop or Scan is
// converted the same way.
//
//   If    with a known condition: the taken branch, inlined (the other is
//         not converted).  With a condition computed at run time: both
//         branches, each output selected by Where, only when every output
//         has the same dtype and sizes in both, no branch draws random
//         numbers, and not with --train (the gradient through the branch
//         not taken could be NaN where it is undefined there, and Where's
//         zero would not mask it); otherwise refused naming the output.
//   Loop  unrolled when its trip count M is known and at most
//         kMaxIterations, and its condition is absent or known before every
//         iteration that could run (the initial cond input, then each
//         iteration's cond output): a data-dependent termination is
//         refused.  Loop-carried values may change shape between iterations
//         (each iteration is its own IR); scan outputs are stacked along a
//         new leading axis (ONNX's shape inference and onnxruntime; the
//         reference implementation's vstack differs for scalar and rank >= 2
//         elements) and must have one dtype and shape in every iteration.
//         A loop without its cond input whose body's condition turns false
//         before M is refused: ONNX's text ignores the condition there and
//         onnxruntime stops on it.
//   Scan  unrolled over its static scan axis (at most kMaxIterations
//         steps): 9+ with scan_input_axes/directions and
//         scan_output_axes/directions (a backward output prepends); 8 with
//         its batch axis 0 and scan axis 1, once per batch element, and
//         sequence_lens only when absent or all equal to the scan length
//         (shorter sequences pad their outputs, which aotc does not do).
//
// Sequence, optional and map values cannot be a body's input or output
// (aotc's IR holds tensors only).  The unrolled graph is ordinary IR:
// autodiff, fusion and both backends treat it like any other.
//===----------------------------------------------------------------------===//
#include "node.h"

namespace aotc::onnx_fe {

namespace {

constexpr int64_t kMaxIterations = 1024;

const onnx::GraphProto& graphAttr(const onnx::NodeProto& n, const std::string& name, const SourceLoc& loc) {
  for (const auto& a : n.attribute())
    if (a.name() == name) {
      if (a.type() != onnx::AttributeProto::GRAPH || !a.has_g()) throw UserError(loc, cat("attribute '", name, "' must be a graph"));
      return a.g();
    }
  throw UserError(loc, cat("attribute '", name, "' is required"));
}

/// Refuses an attribute outside `known` (Note [No argument dropped]).
void onlyAttrs(const onnx::NodeProto& n, std::initializer_list<const char*> known, const SourceLoc& loc) {
  for (const auto& a : n.attribute())
    if (std::none_of(known.begin(), known.end(), [&](const char* k) { return a.name() == k; }))
      throw UserError(loc, cat("attribute '", a.name(), "' is not an attribute of ", n.op_type(), " at this opset"));
}

int64_t intAttr(const onnx::NodeProto& n, const std::string& name, const SourceLoc& loc) {
  for (const auto& a : n.attribute())
    if (a.name() == name) {
      if (a.type() != onnx::AttributeProto::INT) throw UserError(loc, cat("attribute '", name, "' must be an int"));
      return a.i();
    }
  throw UserError(loc, cat("attribute '", name, "' is required"));
}

/// An INTS attribute of `count` values (`dflt` each when absent).
Ints intsAttr(const onnx::NodeProto& n, const std::string& name, size_t count, int64_t dflt, const SourceLoc& loc) {
  for (const auto& a : n.attribute())
    if (a.name() == name) {
      if (a.type() != onnx::AttributeProto::INTS) throw UserError(loc, cat("attribute '", name, "' must be a list of ints"));
      if (static_cast<size_t>(a.ints_size()) != count)
        throw UserError(loc, cat("attribute '", name, "' has ", a.ints_size(), " values; the node has ", count, " of what it describes"));
      Ints r(a.ints().begin(), a.ints().end());
      for (int64_t v : r)
        if (std::llabs(v) > kMaxExtent) throw UserError(loc, cat("attribute '", name, "' holds ", v, ", out of range"));
      return r;
    }
  return Ints(count, dflt);
}

Ints directions(const onnx::NodeProto& n, const std::string& name, size_t count, const SourceLoc& loc) {
  Ints d = intsAttr(n, name, count, 0, loc);
  for (int64_t v : d)
    if (v != 0 && v != 1) throw UserError(loc, cat("attribute '", name, "' holds ", v, "; a direction is 0 (forward) or 1 (reverse)"));
  return d;
}

std::string typeText(const TensorType& t) { return TensorType::contiguous(t.dtype, t.sizes).str(); }

HostTensor scalarTensor(DType d, double v) {
  HostTensor t;
  t.dtype = d;
  t.data = {v};
  return t;
}

OValue knownValue(HostTensor t) {
  OValue v;
  v.type = TensorType::contiguous(t.dtype, t.sizes);
  v.known = std::move(t);
  return v;
}

/// x indexed at `index` along `dim` (that dim removed).
OValue selectAt(Subgraphs& s, const SourceLoc& loc, const OValue& x, int64_t dim, int64_t index) {
  return s.apply(loc, {&x}, [&](Builder& b, const V& ids) { return V{b.op(OpKind::Select, {ids[0]}, Attrs{{"dim", dim}, {"index", index}})}; })[0];
}

/// The elements stacked along a new axis `dim`.
OValue stack(Subgraphs& s, const SourceLoc& loc, const std::vector<OValue>& elems, int64_t dim) {
  std::vector<const OValue*> ins;
  for (const OValue& e : elems) ins.push_back(&e);
  return s.apply(loc, ins, [&](Builder& b, const V& ids) {
    V parts;
    for (ValueId id : ids) parts.push_back(b.op(OpKind::Unsqueeze, {id}, Attrs{{"dim", dim}}));
    if (parts.size() == 1) return V{parts[0]};
    return V{b.op(OpKind::Cat, parts, Attrs{{"dim", dim}})};
  })[0];
}

/// Every element must have the first's dtype and sizes.
void sameTypes(const std::vector<OValue>& elems, const std::string& what, const SourceLoc& loc) {
  for (size_t t = 1; t < elems.size(); ++t)
    if (elems[t].type.dtype != elems[0].type.dtype || elems[t].type.sizes != elems[0].type.sizes)
      throw UserError(loc, cat(what, " is ", typeText(elems[0].type), " in iteration 0 but ", typeText(elems[t].type), " in iteration ", t,
                               "; its iterations cannot be stacked"));
}

// If --------------------------------------------------------------------------

std::vector<OValue> convertIf(const onnx::NodeProto& n, const SourceLoc& loc, const std::vector<const OValue*>& ins, Subgraphs& s) {
  onlyAttrs(n, {"then_branch", "else_branch"}, loc);
  if (ins.size() != 1 || !ins[0]) throw UserError(loc, "If takes one input, its condition");
  const OValue& cond = *ins[0];
  const onnx::GraphProto& thenG = graphAttr(n, "then_branch", loc);
  const onnx::GraphProto& elseG = graphAttr(n, "else_branch", loc);
  if (cond.type.numel() != 1) throw UserError(loc, cat("the condition is ", typeText(cond.type), "; If's condition holds one element"));
  if (thenG.output_size() != n.output_size() || elseG.output_size() != n.output_size())
    throw UserError(loc, cat("the node has ", n.output_size(), " outputs but its branches give ", thenG.output_size(), " and ", elseG.output_size()));
  const std::string& node = loc.node;
  if (cond.known) return s.convertBody(cond.known->data[0] != 0 ? thenG : elseG, {}, node + (cond.known->data[0] != 0 ? "/then/" : "/else/"), loc);

  // A condition computed at run time: both branches, selected.
  std::string runtime = cat("the condition '", n.input(0), "' is computed at run time");
  if (s.train()) {
    s.want(cond);
    throw UserError(loc, runtime + "; with --train aotc does not compute both branches and select (the gradient through the branch not taken "
                               "could be NaN where that branch is undefined)");
  }
  size_t before = s.graph().nodes.size();
  std::vector<OValue> thenV = s.convertBody(thenG, {}, node + "/then/", loc);
  std::vector<OValue> elseV = s.convertBody(elseG, {}, node + "/else/", loc);
  for (size_t k = before; k < s.graph().nodes.size(); ++k)
    if (opInfo(s.graph().nodes[k].op).category == OpCategory::Random) {
      s.want(cond);
      throw UserError(loc, runtime + " and a branch draws random numbers; aotc computes both branches of such an If and selects, which would draw "
                                     "them for the branch not taken too");
    }
  std::vector<OValue> r;
  for (size_t k = 0; k < thenV.size(); ++k) {
    const TensorType& a = thenV[k].type;
    const TensorType& b = elseV[k].type;
    if (a.dtype != b.dtype || a.sizes != b.sizes) {
      s.want(cond);
      throw UserError(loc, cat(runtime, " and output ", k, " ('", n.output(static_cast<int>(k)), "') is ", typeText(a), " in the then branch but ",
                               typeText(b), " in the else branch; aotc selects between both branches only where their outputs have one shape"));
    }
    if (n.output(static_cast<int>(k)).empty()) {
      r.emplace_back();
      continue;
    }
    r.push_back(s.apply(loc, {&cond, &thenV[k], &elseV[k]}, [&](Builder& bl, const V& ids) {
      ValueId c = bl.reshape(ids[0], {});
      return V{bl.op(OpKind::Where, {c, ids[1], ids[2]})};
    })[0]);
  }
  return r;
}

// Loop ------------------------------------------------------------------------

/// A scan output of a loop that ran no iteration: empty, of the body's
/// declared element shape, which must be static.
OValue emptyScanOutput(const onnx::ValueInfoProto& vi, const std::string& what, const SourceLoc& loc) {
  const auto& tt = vi.type().tensor_type();
  std::optional<DType> d = vi.type().has_tensor_type() ? dtypeOfOnnx(tt.elem_type()) : std::nullopt;
  bool ok = d && tt.has_shape();
  Ints sizes{0};
  if (ok)
    for (const auto& dim : tt.shape().dim()) {
      if (!dim.has_dim_value()) ok = false;
      sizes.push_back(dim.dim_value());
    }
  if (!ok) throw UserError(loc, cat("the loop runs no iteration and the body does not declare a static shape for ", what, " ('", vi.name(), "')"));
  return knownValue(HostTensor::zeros(*d, sizes));
}

std::vector<OValue> convertLoop(const onnx::NodeProto& n, const SourceLoc& loc, const std::vector<const OValue*>& ins, Subgraphs& s) {
  onlyAttrs(n, {"body"}, loc);
  const onnx::GraphProto& body = graphAttr(n, "body", loc);
  if (ins.size() < 2) throw UserError(loc, "Loop takes a trip count and a condition (either may be empty) before its loop-carried values");
  const size_t N = ins.size() - 2;
  if (body.input_size() != static_cast<int>(N + 2) || body.output_size() < static_cast<int>(N + 1))
    throw UserError(loc, cat("the body has ", body.input_size(), " inputs and ", body.output_size(), " outputs; with ", N,
                             " loop-carried values it takes ", N + 2, " and gives at least ", N + 1));
  const size_t K = static_cast<size_t>(body.output_size()) - 1 - N;
  if (static_cast<size_t>(n.output_size()) > N + K) throw UserError(loc, cat("the node has ", n.output_size(), " outputs; its body gives ", N + K));
  for (size_t k = 0; k < N; ++k)
    if (!ins[2 + k]) throw UserError(loc, cat("loop-carried value ", k, " is empty"));

  std::optional<int64_t> trip;
  if (ins[0]) {
    const OValue& m = *ins[0];
    if (!m.known) {
      s.want(m);
      throw UserError(loc, cat("the trip count '", n.input(0), "' is computed at run time; aotc unrolls loops, so it must be known when compiling"));
    }
    if (m.known->data.size() != 1) throw UserError(loc, cat("the trip count is ", typeText(m.type), "; it holds one value"));
    double v = m.known->data[0];
    if (v > static_cast<double>(kMaxIterations))
      throw UserError(loc, cat("the trip count is ", static_cast<int64_t>(v), "; aotc unrolls loops of at most ", kMaxIterations, " iterations"));
    trip = v <= 0 ? 0 : static_cast<int64_t>(v);  // a negative count runs no iteration
  }
  bool keep = true;
  if (ins[1]) {
    const OValue& c = *ins[1];
    if (!c.known) {
      s.want(c);
      throw UserError(loc, cat("the initial condition '", n.input(1), "' is computed at run time; aotc refuses a loop whose termination depends on "
                               "the data"));
    }
    if (c.known->data.size() != 1) throw UserError(loc, cat("the condition is ", typeText(c.type), "; it holds one value"));
    keep = c.known->data[0] != 0;
  } else if (!trip) {
    throw UserError(loc, "the loop has neither a trip count nor a condition: it never ends");
  }

  std::vector<OValue> carried;
  for (size_t k = 0; k < N; ++k) carried.push_back(*ins[2 + k]);
  std::vector<std::vector<OValue>> scans(K);
  int64_t i = 0;
  while (keep && (!trip || i < *trip)) {
    if (i >= kMaxIterations)
      throw UserError(loc, cat("the loop runs more than ", kMaxIterations, " iterations (its condition stays true); aotc unrolls at most that many"));
    std::vector<OValue> inputs;
    inputs.push_back(knownValue(scalarTensor(DType::I64, static_cast<double>(i))));
    inputs.push_back(knownValue(scalarTensor(DType::Bool, 1.0)));
    for (OValue& v : carried) inputs.push_back(std::move(v));
    std::vector<OValue> outs = s.convertBody(body, std::move(inputs), cat(loc.node, "/iter", i, "/"), loc);
    carried.assign(outs.begin() + 1, outs.begin() + 1 + static_cast<std::ptrdiff_t>(N));
    for (size_t k = 0; k < K; ++k) scans[k].push_back(outs[1 + N + k]);
    ++i;
    if (trip && i >= *trip) break;  // the condition no longer matters
    const OValue& c = outs[0];
    if (!c.known) {
      s.want(c);
      throw UserError(loc, cat("the condition the body computes ('", body.output(0).name(), "', iteration ", i - 1,
                               ") is computed from the data at run time; aotc unrolls loops and refuses a data-dependent termination"));
    }
    if (c.known->data.size() != 1) throw UserError(loc, cat("the body's condition is ", typeText(c.type), "; it holds one value"));
    keep = c.known->data[0] != 0;
    if (!keep && !ins[1])
      throw UserError(loc, cat("the loop has no condition input but its body's condition turns false at iteration ", i - 1,
                               " before the trip count; ONNX ignores it there and onnxruntime stops on it, so aotc refuses"));
  }
  std::vector<OValue> r = std::move(carried);
  for (size_t k = 0; k < K; ++k) {
    std::string what = cat("scan output ", k);
    if (scans[k].empty()) {
      r.push_back(emptyScanOutput(body.output(static_cast<int>(1 + N + k)), what, loc));
      continue;
    }
    sameTypes(scans[k], what, loc);
    r.push_back(stack(s, loc, scans[k], 0));
  }
  return r;
}

// Scan ------------------------------------------------------------------------

/// Scan 9 and later.
std::vector<OValue> convertScan(const onnx::NodeProto& n, const SourceLoc& loc, const std::vector<const OValue*>& ins, Subgraphs& s) {
  onlyAttrs(n, {"body", "num_scan_inputs", "scan_input_axes", "scan_input_directions", "scan_output_axes", "scan_output_directions"}, loc);
  const onnx::GraphProto& body = graphAttr(n, "body", loc);
  int64_t M = intAttr(n, "num_scan_inputs", loc);
  if (M < 1 || M > static_cast<int64_t>(ins.size())) throw UserError(loc, cat("num_scan_inputs is ", M, " but the node has ", ins.size(), " inputs"));
  const size_t N = ins.size() - static_cast<size_t>(M);
  if (body.input_size() != static_cast<int>(ins.size()) || body.output_size() < static_cast<int>(N))
    throw UserError(loc, cat("the body has ", body.input_size(), " inputs and ", body.output_size(), " outputs; the node has ", N, " states and ", M,
                             " scan inputs"));
  const size_t K = static_cast<size_t>(body.output_size()) - N;
  if (static_cast<size_t>(n.output_size()) > N + K) throw UserError(loc, cat("the node has ", n.output_size(), " outputs; its body gives ", N + K));
  for (const OValue* v : ins)
    if (!v) throw UserError(loc, "Scan's inputs may not be empty");
  Ints inAxes = intsAttr(n, "scan_input_axes", static_cast<size_t>(M), 0, loc);
  Ints inDirs = directions(n, "scan_input_directions", static_cast<size_t>(M), loc);
  Ints outAxes = intsAttr(n, "scan_output_axes", K, 0, loc);
  Ints outDirs = directions(n, "scan_output_directions", K, loc);
  int64_t T = -1;
  for (size_t j = 0; j < static_cast<size_t>(M); ++j) {
    const TensorType& t = ins[N + j]->type;
    int64_t r = t.rank();
    if (inAxes[j] < -r || inAxes[j] >= r) throw UserError(loc, cat("scan_input_axes[", j, "] = ", inAxes[j], " is out of range for scan input ", j, " (", typeText(t), ")"));
    if (inAxes[j] < 0) inAxes[j] += r;
    int64_t len = t.sizes[static_cast<size_t>(inAxes[j])];
    if (T >= 0 && len != T) throw UserError(loc, cat("scan input ", j, " has ", len, " elements along its scan axis; scan input 0 has ", T));
    T = len;
  }
  if (T > kMaxIterations) throw UserError(loc, cat("the scan has ", T, " steps; aotc unrolls scans of at most ", kMaxIterations));
  if (T == 0 && K > 0) throw UserError(loc, "the scan has no step, so the shapes of its scan outputs are not known without running the body");

  std::vector<OValue> states;
  for (size_t k = 0; k < N; ++k) states.push_back(*ins[k]);
  std::vector<std::vector<OValue>> outs(K);
  for (int64_t t = 0; t < T; ++t) {
    std::vector<OValue> inputs = std::move(states);
    for (size_t j = 0; j < static_cast<size_t>(M); ++j) inputs.push_back(selectAt(s, loc, *ins[N + j], inAxes[j], inDirs[j] ? T - 1 - t : t));
    std::vector<OValue> o = s.convertBody(body, std::move(inputs), cat(loc.node, "/iter", t, "/"), loc);
    states.assign(o.begin(), o.begin() + static_cast<std::ptrdiff_t>(N));
    for (size_t k = 0; k < K; ++k) outs[k].push_back(o[N + k]);
  }
  std::vector<OValue> r = std::move(states);
  for (size_t k = 0; k < K; ++k) {
    std::string what = cat("scan output ", k);
    sameTypes(outs[k], what, loc);
    int64_t rank = outs[k][0].type.rank() + 1;
    int64_t a = outAxes[k];
    if (a < -rank || a >= rank) throw UserError(loc, cat("scan_output_axes[", k, "] = ", a, " is out of range for ", what, " of rank ", rank));
    if (a < 0) a += rank;
    if (outDirs[k]) std::reverse(outs[k].begin(), outs[k].end());  // each step prepends
    r.push_back(stack(s, loc, outs[k], a));
  }
  return r;
}

/// Scan 8: a batch axis 0 and the scan axis 1; the body runs per batch element.
std::vector<OValue> convertScan8(const onnx::NodeProto& n, const SourceLoc& loc, const std::vector<const OValue*>& ins, Subgraphs& s) {
  onlyAttrs(n, {"body", "num_scan_inputs", "directions"}, loc);
  const onnx::GraphProto& body = graphAttr(n, "body", loc);
  int64_t M = intAttr(n, "num_scan_inputs", loc);
  if (ins.empty() || M < 1 || M > static_cast<int64_t>(ins.size()) - 1)
    throw UserError(loc, cat("num_scan_inputs is ", M, " but the node has ", ins.size(), " inputs (sequence_lens first)"));
  const size_t N = ins.size() - 1 - static_cast<size_t>(M);
  if (body.input_size() != static_cast<int>(N) + M || body.output_size() < static_cast<int>(N))
    throw UserError(loc, cat("the body has ", body.input_size(), " inputs and ", body.output_size(), " outputs; the node has ", N, " states and ", M,
                             " scan inputs"));
  const size_t K = static_cast<size_t>(body.output_size()) - N;
  if (static_cast<size_t>(n.output_size()) > N + K) throw UserError(loc, cat("the node has ", n.output_size(), " outputs; its body gives ", N + K));
  for (size_t k = 1; k < ins.size(); ++k)
    if (!ins[k]) throw UserError(loc, "Scan's states and scan inputs may not be empty");
  Ints dirs = directions(n, "directions", static_cast<size_t>(M), loc);
  int64_t B = -1, T = -1;
  for (size_t j = 0; j < static_cast<size_t>(M); ++j) {
    const TensorType& t = ins[1 + N + j]->type;
    if (t.rank() < 2) throw UserError(loc, cat("scan input ", j, " is ", typeText(t), "; Scan 8's scan inputs have a batch and a sequence axis"));
    if ((B >= 0 && t.sizes[0] != B) || (T >= 0 && t.sizes[1] != T))
      throw UserError(loc, cat("scan input ", j, " is ", typeText(t), "; scan input 0 has batch ", B, " and length ", T));
    B = t.sizes[0];
    T = t.sizes[1];
  }
  for (size_t k = 0; k < N; ++k) {
    const TensorType& t = ins[1 + k]->type;
    if (t.rank() < 1 || t.sizes[0] != B) throw UserError(loc, cat("state ", k, " is ", typeText(t), "; Scan 8's states have the batch axis (", B, ") first"));
  }
  if (ins[0]) {
    const OValue& lens = *ins[0];
    if (!lens.known) {
      s.want(lens);
      throw UserError(loc, cat("sequence_lens '", n.input(0), "' is computed at run time; aotc unrolls scans, so it must be known when compiling"));
    }
    for (double v : lens.known->data)
      if (v != static_cast<double>(T))
        throw UserError(loc, cat("sequence_lens holds ", v, " but the scan length is ", T, "; shorter sequences pad the scan outputs, which aotc does "
                                 "not compile"));
  }
  if (B * T > kMaxIterations) throw UserError(loc, cat("the scan has ", B, " x ", T, " steps; aotc unrolls scans of at most ", kMaxIterations));
  if (T == 0 && K > 0) throw UserError(loc, "the scan has no step, so the shapes of its scan outputs are not known without running the body");
  if (B == 0) throw UserError(loc, "the scan's batch is empty, so the shapes of its outputs are not known without running the body");

  std::vector<std::vector<OValue>> finals(N), outs(K);
  for (int64_t b = 0; b < B; ++b) {
    std::vector<OValue> states, seqs;
    for (size_t k = 0; k < N; ++k) states.push_back(selectAt(s, loc, *ins[1 + k], 0, b));
    for (size_t j = 0; j < static_cast<size_t>(M); ++j) seqs.push_back(selectAt(s, loc, *ins[1 + N + j], 0, b));
    std::vector<std::vector<OValue>> steps(K);
    for (int64_t t = 0; t < T; ++t) {
      std::vector<OValue> inputs = std::move(states);
      for (size_t j = 0; j < static_cast<size_t>(M); ++j) inputs.push_back(selectAt(s, loc, seqs[j], 0, dirs[j] ? T - 1 - t : t));
      std::vector<OValue> o = s.convertBody(body, std::move(inputs), cat(loc.node, "/batch", b, "/iter", t, "/"), loc);
      states.assign(o.begin(), o.begin() + static_cast<std::ptrdiff_t>(N));
      for (size_t k = 0; k < K; ++k) steps[k].push_back(o[N + k]);
    }
    for (size_t k = 0; k < N; ++k) finals[k].push_back(states[k]);
    for (size_t k = 0; k < K; ++k) {
      sameTypes(steps[k], cat("scan output ", k), loc);
      outs[k].push_back(stack(s, loc, steps[k], 0));
    }
  }
  std::vector<OValue> r;
  for (size_t k = 0; k < N; ++k) {
    sameTypes(finals[k], cat("state ", k), loc);
    r.push_back(stack(s, loc, finals[k], 0));
  }
  for (size_t k = 0; k < K; ++k) {
    sameTypes(outs[k], cat("scan output ", k), loc);
    r.push_back(stack(s, loc, outs[k], 0));
  }
  return r;
}

/// The converter table's entry: never called, the loader converts these.
Outs byTheLoader(Node& c) {
  AOTC_CHECK(false, "onnx: ", c.proto().op_type(), " is converted by convertControlFlow");
  return {};
}

}  // namespace

bool isControlFlow(const std::string& op) { return op == "If" || op == "Loop" || op == "Scan"; }

std::string nonTensorType(const onnx::TypeProto& t) {
  switch (t.value_case()) {
    case onnx::TypeProto::kSequenceType: return "holds sequence values, which aotc's IR (tensors only) cannot hold";
    case onnx::TypeProto::kMapType: return "holds map values, which aotc's IR (tensors only) cannot hold";
    case onnx::TypeProto::kOptionalType: return "holds optional values, which aotc's IR (tensors only) cannot hold";
    case onnx::TypeProto::kSparseTensorType: return "holds sparse tensors, which aotc does not read";
    default: return "";
  }
}

std::string declaredMismatch(const onnx::TypeProto& declared, const TensorType& t) {
  if (!declared.has_tensor_type() || declaredAgrees(declared.tensor_type(), t)) return "";
  return cat("is declared ", declaredText(declared.tensor_type()), " but is ", typeText(t));
}

std::vector<OValue> convertControlFlow(const onnx::NodeProto& n, const SourceLoc& loc, int opset, const std::vector<const OValue*>& ins,
                                       Subgraphs& s) {
  if (n.op_type() == "If") return convertIf(n, loc, ins, s);
  if (n.op_type() == "Loop") return convertLoop(n, loc, ins, s);
  AOTC_CHECK(n.op_type() == "Scan", "onnx: not a control-flow op: ", n.op_type());
  return opset < 9 ? convertScan8(n, loc, ins, s) : convertScan(n, loc, ins, s);
}

Entries controlFlowConverters() { return {{"If", &byTheLoader}, {"Loop", &byTheLoader}, {"Scan", &byTheLoader}}; }

}  // namespace aotc::onnx_fe
