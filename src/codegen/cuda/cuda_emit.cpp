//===- cuda_emit.cpp - Lower forward/backward programs to steps -----------===//
//
// One step per node (fusion comes later):
//   kernel  pointwise, reduction, constant, clone, and epilogue copies: a
//           CUDA kernel with every size, stride and offset baked in;
//   gemm    mm as one cublasGemmEx call, spelled out in cuBLAS's column-major
//           terms (operands whose layout cuBLAS cannot take are first copied
//           by a kernel);
//   view    a view op: pointer arithmetic on its root buffer, no launch.
// Buffers: `input` (a caller or saved tensor), `alloc` (owned, dense) and
// `view` (root buffer + sizes/strides/offset from the IR type).
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <sstream>

#include "aotc/codegen/codegen.h"
#include "aotc/codegen/prelude.h"
#include "aotc/ops/ops.h"

namespace aotc {

const char* devicePrelude() { return kDevicePrelude; }

namespace {

using ojson = nlohmann::ordered_json;
constexpr int kBlock = 256;

const char* storageType(DType d) {
  switch (d) {
    case DType::F32: return "float";
    case DType::F64: return "double";
    case DType::I64: return "long long";
    case DType::I32: return "int";
    case DType::Bool: return "bool";
    case DType::F16: return "unsigned short";  // half types get float compute in the op-coverage work
    case DType::BF16: return "unsigned short";
  }
  return "float";
}
const char* computeType(DType d) {
  switch (d) {
    case DType::F64: return "double";
    case DType::I64: return "long long";
    case DType::I32: return "int";
    case DType::Bool: return "bool";
    default: return "float";
  }
}

std::string literal(double v, DType d) {
  std::ostringstream os;
  os.precision(17);
  if (!isFloating(d)) {
    os << static_cast<long long>(v);
    return d == DType::Bool ? (v != 0 ? "true" : "false") : os.str() + (d == DType::I64 ? "LL" : "");
  }
  if (std::isinf(v)) return v > 0 ? "(1.0/0.0)" : "(-1.0/0.0)";
  if (std::isnan(v)) return "(0.0/0.0)";
  os << v;
  std::string s = os.str();
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return d == DType::F64 ? s : s + "f";
}

/// The expression an op computes from its operand expressions {0}, {1}, {2}.
std::string pointwiseExpr(OpKind k, const std::vector<std::string>& a) {
  switch (k) {
    case OpKind::Add: return "(" + a[0] + " + " + a[1] + ")";
    case OpKind::Sub: return "(" + a[0] + " - " + a[1] + ")";
    case OpKind::Mul: return "(" + a[0] + " * " + a[1] + ")";
    case OpKind::Div: return "(" + a[0] + " / " + a[1] + ")";
    case OpKind::Neg: return "(-" + a[0] + ")";
    case OpKind::Relu: return "aotc_relu(" + a[0] + ")";
    case OpKind::Exp: return "aotc_exp(" + a[0] + ")";
    case OpKind::Log: return "aotc_log(" + a[0] + ")";
    case OpKind::Tanh: return "aotc_tanh(" + a[0] + ")";
    case OpKind::Sigmoid: return "aotc_sigmoid(" + a[0] + ")";
    case OpKind::Sqrt: return "aotc_sqrt(" + a[0] + ")";
    case OpKind::Rsqrt: return "aotc_rsqrt(" + a[0] + ")";
    case OpKind::Gt: return "(" + a[0] + " > " + a[1] + ")";
    case OpKind::Where: return "(" + a[0] + " ? " + a[1] + " : " + a[2] + ")";
    case OpKind::Clone: case OpKind::EpilogueCopy: return a[0];
    default: break;
  }
  AOTC_CHECK(false, "no pointwise emit rule for ", opName(k));
  return "";
}

/// Strides of `in` seen from an output of shape `out` (broadcast dims get 0).
Ints broadcastStrides(const TensorType& in, const Ints& out) {
  Ints st(out.size(), 0);
  size_t lead = out.size() - in.sizes.size();
  for (size_t d = lead; d < out.size(); ++d)
    if (in.sizes[d - lead] != 1) st[d] = in.strides[d - lead];
  return st;
}

std::string banner(const Node& n, const Graph& g) {
  std::string s = "// aotc kernel for " + std::string(opName(n.op));
  if (!n.loc.node.empty()) s += " (node '" + n.loc.node + "'" + (n.loc.op.empty() ? "" : " " + n.loc.op) + ")";
  s += ": ";
  for (size_t i = 0; i < n.inputs.size(); ++i) s += (i ? ", " : "") + g.type(n.inputs[i]).str();
  return s + "\n";
}

/// Loop body computing offsets of every operand for linear index `i` over `sizes`.
std::string offsetCode(const Ints& sizes, const std::vector<std::pair<std::string, std::pair<Ints, int64_t>>>& ops,
                       const char* idx) {
  std::ostringstream os;
  for (auto& [name, st] : ops) os << "  aotc_i64 " << name << " = " << st.second << ";\n";
  os << "  aotc_i64 r = " << idx << ";\n";
  for (size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] == 1) continue;
    os << "  { aotc_i64 c = r % " << sizes[d] << "; r /= " << sizes[d] << ";";
    for (auto& [name, st] : ops)
      if (st.first[d] != 0) os << " " << name << " += c * " << st.first[d] << ";";
    os << " }\n";
  }
  return os.str();
}

struct Lowering {
  const Graph& g;
  std::map<std::string, KernelSource>& kernels;
  ojson buffers = ojson::array();
  ojson steps = ojson::array();
  std::vector<std::string> bufName;  // per value
  std::vector<std::string> root;     // root buffer per value

  Lowering(const Graph& graph, std::map<std::string, KernelSource>& k)
      : g(graph), kernels(k), bufName(graph.values.size()), root(graph.values.size()) {}

  ojson layout(const TensorType& t) {
    return ojson{{"dtype", dtypeName(t.dtype)}, {"shape", t.sizes}, {"strides", t.strides}, {"offset", t.offset}};
  }

  void declare(ValueId v, const std::string& kind, ojson extra) {
    const Value& val = g.values[v];
    bufName[v] = val.name;
    ojson b = {{"name", val.name}, {"kind", kind}};
    ojson lay = layout(val.type);
    for (auto& [k, x] : lay.items()) b[k] = x;
    for (auto& [k, x] : extra.items()) b[k] = x;
    buffers.push_back(b);
  }

  std::string addKernel(std::string body, const Node& n) {
    std::string src = std::string("#include \"aotc_prelude.cuh\"\n") + body;
    // The name is a hash of the whole text with a placeholder for the name.
    std::string name = "k_" + sha256Hex(src).substr(0, 16);
    size_t p;
    while ((p = src.find("@KERNEL@")) != std::string::npos) src.replace(p, 8, name);
    auto& k = kernels[name];
    k.name = name;
    k.source = src;
    std::string who = n.loc.node.empty() ? std::string(opName(n.op)) : n.loc.node;
    if (std::find(k.nodes.begin(), k.nodes.end(), who) == k.nodes.end()) k.nodes.push_back(who);
    return name;
  }

  void launch(const std::string& kernel, const std::vector<ValueId>& args, ValueId out, int64_t threads,
              const std::string& outRoot = "") {
    ojson a = ojson::array();
    a.push_back(outRoot.empty() ? root[out] : outRoot);
    for (ValueId v : args) a.push_back(root[v]);
    int64_t grid = std::max<int64_t>(1, (threads + kBlock - 1) / kBlock);
    steps.push_back({{"op", "launch"}, {"kernel", kernel}, {"grid", {grid, 1, 1}}, {"block", {kBlock, 1, 1}},
                     {"shared_bytes", 0}, {"args", a}});
  }

  /// Elementwise kernel: out (with its own layout) = f(inputs), broadcast.
  std::string pointwiseKernel(const Node& n, const TensorType& ot, const std::string& exprOverride = "") {
    std::ostringstream os;
    os << banner(n, g);
    os << "extern \"C\" __global__ void @KERNEL@(" << storageType(ot.dtype) << "* __restrict__ out";
    for (size_t i = 0; i < n.inputs.size(); ++i)
      os << ", const " << storageType(g.type(n.inputs[i]).dtype) << "* __restrict__ in" << i;
    os << ") {\n";
    os << "  aotc_i64 i = (aotc_i64)blockIdx.x * blockDim.x + threadIdx.x;\n";
    os << "  if (i >= " << ot.numel() << ") return;\n";
    std::vector<std::pair<std::string, std::pair<Ints, int64_t>>> offs;
    offs.push_back({"o", {ot.strides, ot.offset}});
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const TensorType& it = g.type(n.inputs[i]);
      offs.push_back({"o" + std::to_string(i), {broadcastStrides(it, ot.sizes), it.offset}});
    }
    os << offsetCode(ot.sizes, offs, "i");
    const char* ct = computeType(ot.dtype);
    std::vector<std::string> a;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      DType id = g.type(n.inputs[i]).dtype;
      // Comparison/select operands keep their own compute type.
      os << "  " << computeType(id) << " a" << i << " = (" << computeType(id) << ")in" << i << "[o" << i << "];\n";
      a.push_back("a" + std::to_string(i));
    }
    std::string e = exprOverride.empty() ? pointwiseExpr(n.op, a) : exprOverride;
    os << "  out[o] = (" << storageType(ot.dtype) << ")(" << ct << ")" << e << ";\n}\n";
    return addKernel(os.str(), n);
  }

  std::string reductionKernel(const Node& n) {
    const TensorType& it = g.type(n.inputs[0]);
    const TensorType& ot = g.type(n.outputs[0]);
    Ints dims = reductionDims(n.attrs, it.rank());
    Ints keptSizes = it.sizes, redSizes, redStrides, keptStrides(it.rank(), 0);
    int64_t nred = 1;
    for (int64_t d = 0; d < it.rank(); ++d) {
      if (std::binary_search(dims.begin(), dims.end(), d)) {
        keptSizes[d] = 1;
        redSizes.push_back(it.sizes[d]);
        redStrides.push_back(it.strides[d]);
        nred *= it.sizes[d];
      } else {
        keptStrides[d] = it.strides[d];
      }
    }
    const char* acc = ot.dtype == DType::F64 ? "double" : (isFloating(ot.dtype) ? "float" : "long long");
    std::ostringstream os;
    os << banner(n, g);
    os << "extern \"C\" __global__ void @KERNEL@(" << storageType(ot.dtype) << "* __restrict__ out, const "
       << storageType(it.dtype) << "* __restrict__ in0) {\n";
    os << "  aotc_i64 i = (aotc_i64)blockIdx.x * blockDim.x + threadIdx.x;\n";
    os << "  if (i >= " << ot.numel() << ") return;\n";
    os << offsetCode(keptSizes, {{"base", {keptStrides, it.offset}}}, "i");
    os << "  " << acc << " acc = 0;\n";
    os << "  for (aotc_i64 j = 0; j < " << nred << "; ++j) {\n";
    std::ostringstream inner;
    inner << offsetCode(redSizes, {{"o0", {redStrides, 0}}}, "j");
    std::string body = inner.str();
    for (size_t p = 0; (p = body.find('\n', p)) != std::string::npos && p + 1 < body.size(); p += 3) body.insert(p + 1, "  ");
    os << "  " << body;
    os << "    acc += (" << acc << ")in0[base + o0];\n  }\n";
    if (n.op == OpKind::Mean) os << "  acc = acc / (" << acc << ")" << nred << ";\n";
    os << "  out[i] = (" << storageType(ot.dtype) << ")acc;\n}\n";
    return addKernel(os.str(), n);
  }

  /// out = base with the region view(base) replaced by src: one thread per
  /// output element; elements inside the region read src.
  std::string scatterKernel(const Node& n) {
    const TensorType& ot = g.type(n.outputs[0]);
    const TensorType& bt = g.type(n.inputs[0]);
    const TensorType& st = g.type(n.inputs[1]);
    OpKind viewOp = n.op == OpKind::SliceScatter ? OpKind::Slice : OpKind::Select;
    int64_t rank = ot.rank();
    int64_t dim = wrapDim(attrInt(n.attrs, "dim"), std::max<int64_t>(rank, 1));
    std::ostringstream os;
    os << banner(n, g);
    os << "extern \"C\" __global__ void @KERNEL@(" << storageType(ot.dtype) << "* __restrict__ out, const "
       << storageType(bt.dtype) << "* __restrict__ in0, const " << storageType(st.dtype) << "* __restrict__ in1) {\n";
    os << "  aotc_i64 i = (aotc_i64)blockIdx.x * blockDim.x + threadIdx.x;\n";
    os << "  if (i >= " << ot.numel() << ") return;\n";
    // Coordinates of i in the output; the scatter dim's coordinate decides.
    os << "  aotc_i64 r = i, c[" << std::max<int64_t>(rank, 1) << "];\n";
    for (int64_t d = rank; d-- > 0;) os << "  c[" << d << "] = r % " << ot.sizes[d] << "; r /= " << ot.sizes[d] << ";\n";
    os << "  aotc_i64 ob = " << bt.offset;
    for (int64_t d = 0; d < rank; ++d) os << " + c[" << d << "] * " << bt.strides[d];
    os << ";\n";
    (void)viewOp;
    std::string inside, srcIdx;
    if (n.op == OpKind::SliceScatter) {
      SliceBounds b = sliceBounds(n.attrs, ot.sizes[dim]);
      inside = "c[" + std::to_string(dim) + "] >= " + std::to_string(b.start) + " && c[" + std::to_string(dim) + "] < " +
               std::to_string(b.end) + " && (c[" + std::to_string(dim) + "] - " + std::to_string(b.start) + ") % " +
               std::to_string(b.step) + " == 0";
      srcIdx = std::to_string(st.offset);
      for (int64_t d = 0; d < rank; ++d) {
        std::string cd = d == dim ? "((c[" + std::to_string(d) + "] - " + std::to_string(b.start) + ") / " + std::to_string(b.step) + ")"
                                  : "c[" + std::to_string(d) + "]";
        srcIdx += " + " + cd + " * " + std::to_string(st.strides[d]);
      }
    } else {
      int64_t idx = attrInt(n.attrs, "index");
      if (idx < 0) idx += ot.sizes[dim];
      inside = "c[" + std::to_string(dim) + "] == " + std::to_string(idx);
      srcIdx = std::to_string(st.offset);
      for (int64_t d = 0, sd = 0; d < rank; ++d) {
        if (d == dim) continue;
        srcIdx += " + c[" + std::to_string(d) + "] * " + std::to_string(st.strides[sd++]);
      }
    }
    os << "  out[i] = (" << inside << ") ? in1[" << srcIdx << "] : in0[ob];\n}\n";
    return addKernel(os.str(), n);
  }

  std::string constantKernel(const Node& n) {
    const TensorType& ot = g.type(n.outputs[0]);
    std::ostringstream os;
    os << banner(n, g);
    os << "extern \"C\" __global__ void @KERNEL@(" << storageType(ot.dtype) << "* __restrict__ out) {\n";
    os << "  aotc_i64 i = (aotc_i64)blockIdx.x * blockDim.x + threadIdx.x;\n";
    os << "  if (i >= " << ot.numel() << ") return;\n";
    os << "  out[i] = (" << storageType(ot.dtype) << ")" << literal(attrFloat(n.attrs, "value"), ot.dtype) << ";\n}\n";
    return addKernel(os.str(), n);
  }

  /// A dense copy of `v` (for GEMM operands cuBLAS cannot address).
  ValueId denseCopy(ValueId v, const Node& n) {
    Node c{OpKind::Clone, {v}, {}, {}, n.loc, n.phase, 0, {}};
    TensorType t = TensorType::contiguous(g.type(v).dtype, g.type(v).sizes);
    std::string name = g.values[v].name + ".dense";
    buffers.push_back(ojson{{"name", name}, {"kind", "alloc"}, {"dtype", dtypeName(t.dtype)}, {"shape", t.sizes},
                            {"strides", t.strides}, {"offset", 0}, {"bytes", t.numel() * dtypeSize(t.dtype)}});
    std::string k = pointwiseKernel(c, t);
    launch(k, {v}, kNoValue, t.numel(), name);
    dense_[v] = name;
    return v;
  }

  void gemm(const Node& n) {
    // Row-major C[m,n] = A[m,k] B[k,n] is column-major C^T = B^T A^T.
    ValueId A = n.inputs[0], B = n.inputs[1];
    const TensorType &ta = g.type(A), &tb = g.type(B), &tc = g.type(n.outputs[0]);
    auto operand = [&](ValueId v, const TensorType& t, std::string& op, int64_t& ld, std::string& buf, int64_t& off) {
      // Row-major with unit column stride: no transpose; column-major: transpose.
      if (t.strides[1] == 1 && t.strides[0] >= std::max<int64_t>(1, t.sizes[1])) {
        op = "N";
        ld = t.strides[0];
      } else if (t.strides[0] == 1 && t.strides[1] >= std::max<int64_t>(1, t.sizes[0])) {
        op = "T";
        ld = t.strides[1];
      } else {
        denseCopy(v, n);
        op = "N";
        ld = std::max<int64_t>(1, t.sizes[1]);
        buf = dense_[v];
        off = 0;
        return;
      }
      buf = root[v];
      off = t.offset;
    };
    std::string opA, opB, bufA, bufB;
    int64_t ldA = 0, ldB = 0, offA = 0, offB = 0;
    operand(A, ta, opA, ldA, bufA, offA);
    operand(B, tb, opB, ldB, bufB, offB);
    const char* cudaType = tc.dtype == DType::F64 ? "CUDA_R_64F" : "CUDA_R_32F";
    const char* computeT = tc.dtype == DType::F64 ? "CUBLAS_COMPUTE_64F" : "CUBLAS_COMPUTE_32F";
    steps.push_back({{"op", "gemm"},
                     {"library", "cublas"},
                     {"call", "cublasGemmEx"},
                     {"node", n.loc.node},
                     {"transa", opB},
                     {"transb", opA},
                     {"m", tc.sizes[1]},
                     {"n", tc.sizes[0]},
                     {"k", ta.sizes[1]},
                     {"alpha", 1.0},
                     {"A", {{"buffer", bufB}, {"offset", offB}, {"ld", ldB}}},
                     {"B", {{"buffer", bufA}, {"offset", offA}, {"ld", ldA}}},
                     {"beta", 0.0},
                     {"C", {{"buffer", root[n.outputs[0]]}, {"offset", tc.offset}, {"ld", std::max<int64_t>(1, tc.sizes[1])}}},
                     {"Atype", cudaType},
                     {"Btype", cudaType},
                     {"Ctype", cudaType},
                     {"computeType", computeT},
                     {"algo", "CUBLAS_GEMM_DEFAULT"}});
  }

  void run(const std::vector<std::pair<std::string, ojson>>& inputKinds) {
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      ValueId v = g.inputs[i].value;
      declare(v, "input", inputKinds[i].second);
      root[v] = bufName[v];
    }
    for (const Node& n : g.nodes) {
      const OpInfo& info = opInfo(n.op);
      if (n.op == OpKind::EpilogueCopy) {
        ValueId dst = n.inputs[0];
        Node c = n;
        c.inputs = {n.inputs[1]};
        std::string k = pointwiseKernel(c, g.type(dst));
        launch(k, {n.inputs[1]}, dst, g.type(dst).numel());
        steps.back()["epilogue"] = {{"input", g.values[dst].name},
                                    {"phase", (n.tags & kMustBeInForward) ? "forward" : "backward"}};
        continue;
      }
      ValueId out = n.outputs.at(0);
      if (info.category == OpCategory::View) {
        ValueId src = n.inputs[0];
        declare(out, "view", ojson{{"base", root[src]}});
        root[out] = root[src];
        continue;
      }
      const TensorType& ot = g.type(out);
      declare(out, "alloc", ojson{{"bytes", ot.storageSpan() * dtypeSize(ot.dtype)}});
      root[out] = bufName[out];
      switch (info.category) {
        case OpCategory::Pointwise: launch(pointwiseKernel(n, ot), n.inputs, out, ot.numel()); break;
        case OpCategory::Reduction: launch(reductionKernel(n), n.inputs, out, ot.numel()); break;
        case OpCategory::Creation: launch(constantKernel(n), {}, out, ot.numel()); break;
        case OpCategory::Extern: gemm(n); break;
        case OpCategory::Scatter: launch(scatterKernel(n), n.inputs, out, ot.numel()); break;
        default: AOTC_CHECK(false, "cannot lower ", info.name);
      }
    }
  }

  std::map<ValueId, std::string> dense_;
};

ojson lowerProgram(const Graph& g, std::map<std::string, KernelSource>& kernels) {
  std::vector<std::pair<std::string, ojson>> kinds;
  for (auto& in : g.inputs) kinds.push_back({"input", ojson{{"role", inputRoleName(in.role)}}});
  Lowering l(g, kernels);
  l.run(kinds);
  ojson outs = ojson::array();
  for (auto& o : g.outputs) outs.push_back(ojson{{"role", outputRoleName(o.role)}, {"buffer", g.values[o.value].name}});
  return ojson{{"buffers", l.buffers}, {"steps", l.steps}, {"outputs", outs}};
}

}  // namespace

CodegenResult generateCuda(const Partition& p) {
  CodegenResult r;
  r.forward = lowerProgram(p.forward, r.kernels);
  r.backward = lowerProgram(p.backward, r.kernels);
  return r;
}

}  // namespace aotc
