//===- extern_calls.cpp - cuBLAS and cuDNN steps (codegen stage 3) ---------===//
//
// GEMMs and convolutions are library calls, spelled as plan steps in the
// libraries' own terms; an operand the library cannot address is first
// copied dense by a kernel (stage 2).  Note [Codegen stages] in lowering.h.
//===----------------------------------------------------------------------===//
#include <algorithm>

#include "aotc/ops/ops.h"
#include "aotc/ops/rules.h"
#include "lowering.h"

namespace aotc::cudagen {

namespace {

struct ExternCalls {
  ProgramBuilder& b;
  KernelEmitter& k;
  const FusionPlan& plan;
  const Graph& g = b.g;

  /// A GEMM operand's cuBLAS layout: transposed or not, and buffer, offset,
  /// leading dimension and batch stride; a dense copy when cuBLAS cannot
  /// address it.  `d` is the first of its two matrix dims; the batch stride
  /// is the stride of dim 0 when d is 1.
  struct GemmOperand {
    bool trans = false;
    plan::MatrixOperand m;
  };
  GemmOperand gemmOperand(ValueId v, const Node& n, size_t d) {
    const TensorType& t = g.type(v);
    const int64_t rows = t.sizes[d], cols = t.sizes[d + 1], sr = t.strides[d], sc = t.strides[d + 1];
    GemmOperand o{false, {b.root[v], t.offset, 0, d ? t.strides[0] : 0}};
    if (sc == 1 && sr >= std::max<int64_t>(1, cols)) {
      o.m.ld = sr;
    } else if (sr == 1 && sc >= std::max<int64_t>(1, rows)) {
      o.trans = true;
      o.m.ld = sc;
    } else {
      denseCopy(v, n);
      o = GemmOperand{false, {b.dense[v], 0, std::max<int64_t>(1, cols), d ? rows * cols : 0}};
    }
    return o;
  }

  plan::ConvTensor tensorDesc(ValueId v) {
    const TensorType& t = g.type(v);
    return plan::ConvTensor{b.root[v], t.offset, t.sizes, t.strides};
  }

  void conv(const Node& n) {
    Window2d w = window2d(Attrs{{"kernel", Ints{1}},
                                {"stride", hasAttr(n.attrs, "stride") ? attrInts(n.attrs, "stride") : Ints{1}},
                                {"padding", hasAttr(n.attrs, "padding") ? attrInts(n.attrs, "padding") : Ints{0}},
                                {"dilation", hasAttr(n.attrs, "dilation") ? attrInts(n.attrs, "dilation") : Ints{1}}});
    const TensorType& ot = g.type(n.outputs[0]);
    plan::Conv st;
    st.node = n.loc.node;
    st.pad = {w.ph, w.pw};
    st.stride = {w.sh, w.sw};
    st.dilation = {w.dh, w.dw};
    st.groups = hasAttr(n.attrs, "groups") ? attrInt(n.attrs, "groups") : 1;
    st.dtype = ot.dtype;
    // Note [Channels last]: the channels-last pass gave every operand of
    // this convolution one layout; the filter's format follows it.
    st.nhwc = isChannelsLast(g.type(n.inputs[0])) || isChannelsLast(g.type(n.inputs[1])) || isChannelsLast(ot);
    auto filter = [&](ValueId v) {  // cuDNN filters are packed, NCHW or NHWC
      if (st.nhwc) {
        plan::ConvTensor t = tensorDesc(v);
        if (plan::denseIn(t, true)) return t;
        // Note [Channels last]: a convolution whose activation arrives
        // channels-last by the program's own permutes (ConvNeXt's
        // LayerNorm2d: permute, layer_norm, permute back) while the pass left
        // its filter as the parameter is: the filter's NHWC-packed copy, so
        // that cuDNN sees one layout.
        const TensorType& f = g.type(v);
        return plan::ConvTensor{nhwcCopy(v, n), 0, f.sizes, channelsLastStrides(f.sizes)};
      }
      if (!g.type(v).isContiguous()) {
        denseCopy(v, n);
        const TensorType& t = g.type(v);
        return plan::ConvTensor{b.dense[v], 0, t.sizes, TensorType::contiguousStrides(t.sizes)};
      }
      return tensorDesc(v);
    };
    ValueId out = n.outputs[0];
    st.out = plan::ConvTensor{b.root[out], ot.offset, ot.sizes, ot.strides};
    if (n.op == OpKind::Conv2d) {
      st.call = plan::ConvCall::Forward;
      st.a = tensorDesc(n.inputs[0]);
      st.b = filter(n.inputs[1]);
    } else if (n.op == OpKind::Conv2dBackwardInput) {
      st.call = plan::ConvCall::BackwardData;
      st.a = tensorDesc(n.inputs[0]);
      st.b = filter(n.inputs[1]);
    } else {
      st.call = plan::ConvCall::BackwardFilter;
      st.a = tensorDesc(n.inputs[0]);
      st.b = tensorDesc(n.inputs[1]);
      AOTC_CHECK(plan::denseIn(st.out, st.nhwc), "the filter gradient %", g.values[out].name, " is not packed ", st.nhwc ? "NHWC" : "NCHW");
    }
    b.steps.push_back(st);
  }

  /// A packed copy of `v` into a new buffer `<v>.<suffix>` (strides
  /// `strides`), made once per value and layout: values are immutable, so a
  /// second reader of the same operand reads the first copy, whose buffer
  /// lives until its last use.  Its buffer's name.
  std::string packedCopy(ValueId v, const Node& n, std::map<ValueId, std::string>& made, const char* suffix, bool channelsLast) {
    if (auto it = made.find(v); it != made.end()) return it->second;
    Node c{OpKind::Clone, {v}, {}, {}, n.loc, n.phase, 0, {}};
    TensorType t = TensorType::contiguous(g.type(v).dtype, g.type(v).sizes);
    if (channelsLast) t.strides = channelsLastStrides(t.sizes);
    std::string name = g.values[v].name + suffix;
    b.buffers.push_back(plan::Buffer{name, plan::BufferKind::Alloc, ProgramBuilder::layout(t), "", "", t.numel() * dtypeSize(t.dtype), -1});
    KernelEmitter::Kernel copy = k.pointwise(c, t);
    b.launchPointwise(copy.name, copy.leaves, kNoValue, copy.threads, copy.vector, copy.strided, name);
    made[v] = name;
    return name;
  }
  /// The NHWC-packed copy of a 4-D filter for a channels-last convolution.
  std::string nhwcCopy(ValueId v, const Node& n) { return packedCopy(v, n, b.nhwc, ".nhwc", true); }
  /// A dense (contiguous) copy of `v`, for GEMM operands cuBLAS cannot
  /// address (an expanded gradient feeding both mm's of a matmul's backward).
  ValueId denseCopy(ValueId v, const Node& n) {
    packedCopy(v, n, b.dense, ".dense", false);
    return v;
  }

  /// mm (d = 0) and bmm (d = 1, dim 0 the batch).  Row-major C = A B is
  /// column-major C^T = B^T A^T: cuBLAS's A is our B and its B our A.
  void gemm(const Node& n, size_t d) {
    ValueId A = n.inputs[0], B = n.inputs[1];
    const int32_t id = g.values[n.outputs[0]].node;
    const TensorType &ta = g.type(A), &tc = g.type(n.outputs[0]);
    const GemmOperand a = gemmOperand(A, n, d), bOp = gemmOperand(B, n, d);
    plan::Gemm st;
    st.call = d ? plan::GemmCall::GemmStridedBatchedEx : plan::GemmCall::GemmEx;
    st.node = n.loc.node;
    st.transa = bOp.trans;
    st.transb = a.trans;
    st.m = tc.sizes[d + 1];
    st.n = tc.sizes[d];
    st.k = ta.sizes[d + 1];
    st.batch = d ? tc.sizes[0] : 1;
    st.A = bOp.m;
    st.B = a.m;
    st.C = {b.root[n.outputs[0]], tc.offset, std::max<int64_t>(1, tc.sizes[d + 1]), d ? tc.sizes[1] * tc.sizes[2] : 0};
    if (auto it = plan.gemmInto.find(id); it != plan.gemmInto.end()) {
      // Note [GEMM into its copy]: the product's strides in the copy.
      const Ints& s = it->second.strides;
      const int64_t rows = tc.sizes[d], cols = tc.sizes[d + 1];
      st.C.stride = d ? s[0] : 0;
      if (s[d + 1] == 1 && s[d] >= std::max<int64_t>(1, cols)) {
        st.C.ld = s[d];
      } else {
        // Unit-stride rows: C = A B, column-major, with C's ld the column
        // stride -- cuBLAS's A is our A, its B our B, each transposed
        // from the layout the row-major order above reads it in.
        AOTC_CHECK(s[d] == 1 && s[d + 1] >= std::max<int64_t>(1, rows), "a GEMM product's layout in its copy cuBLAS cannot write");
        st.transa = !a.trans;
        st.transb = !bOp.trans;
        st.m = rows;
        st.n = cols;
        st.A = a.m;
        st.B = bOp.m;
        st.C.ld = s[d + 1];
      }
    }
    if (auto it = plan.gemmAlpha.find(id); it != plan.gemmAlpha.end()) st.alpha = it->second;  // Note [GEMM scale]
    st.dtype = tc.dtype;
    if (auto it = plan.gemmBias.find(id); it != plan.gemmBias.end()) {
      AOTC_CHECK(!d, "a bias epilogue on a batched GEMM");
      // cuBLASLt in column-major terms: the bias runs along the m dimension.
      st.call = plan::GemmCall::LtMatmulBias;
      b.ensureView(it->second);  // a view of the bias's buffer, declared here if it comes later
      st.bias = plan::MatrixOperand{b.root[it->second], g.type(it->second).offset, 1, 0};
      st.relu = plan.gemmRelu.count(id) > 0;  // Note [GEMM relu epilogue]
    }
    b.steps.push_back(st);
  }
};

}  // namespace

void lowerGemm(ProgramBuilder& b, KernelEmitter& k, const FusionPlan& plan, const Node& n, size_t d) {
  ExternCalls{b, k, plan}.gemm(n, d);
}

void lowerConv(ProgramBuilder& b, KernelEmitter& k, const FusionPlan& plan, const Node& n) {
  ExternCalls{b, k, plan}.conv(n);
}

}  // namespace aotc::cudagen
