//===- ops.h - Op table queries and per-op rules ------------------*- C++ -*-===//
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "aotc/ir/ir.h"

namespace aotc {

enum class OpKind : uint16_t {
#define OP(Kind, name, arity, cat, grad, fn, attrs) Kind,
#include "aotc/ops/ops.def"
#undef OP
};
inline constexpr int kNumOps = 0
#define OP(Kind, name, arity, cat, grad, fn, attrs) +1
#include "aotc/ops/ops.def"
#undef OP
    ;

enum class OpCategory : uint8_t { Creation, Pointwise, Reduction, View, Extern, Mutation, MetaMutation, Epilogue, Scatter, Alias, Custom, Window, Gather, Random };
enum class GradKind : uint8_t { Diff, NoGrad, NeverDiff };

struct OpInfo {
  OpKind kind;
  const char* name;
  int arity;  ///< -1 variadic
  OpCategory category;
  GradKind grad;
  std::optional<OpKind> functional;  ///< Mutation ops: the pure op they become
  const char* attrs;                 ///< attribute schema, as written in ops.def
};

enum class AttrKind : uint8_t { Int, Float, Bool, Str, DType, Ints };
struct AttrSpec {
  std::string name;
  AttrKind kind;
  bool required;
};
/// The op's attribute schema (its ops.def row, parsed), `no_grad:bool?` included.
const std::vector<AttrSpec>& attrSchema(OpKind k);
/// Checks `attrs` against the op's schema: every required attribute present,
/// none unknown, each of its kind (Note [Typed attributes]).  Throws UserError
/// (message only) naming the op and the attribute.
void checkAttrs(OpKind k, const Attrs& attrs);

const OpInfo& opInfo(OpKind k);
const char* opName(OpKind k);
std::optional<OpKind> opFromName(const std::string& name);
inline bool isView(OpKind k) { return opInfo(k).category == OpCategory::View; }
/// Computes a value: every op but those that exist only before functionalize
/// (mutations, captured autograd.Functions) and side effects (epilogue copies).
inline bool opComputes(OpKind k) {
  OpCategory c = opInfo(k).category;
  return c != OpCategory::Mutation && c != OpCategory::MetaMutation && c != OpCategory::Epilogue &&
         c != OpCategory::Custom;
}
/// Runs as code on the device (a kernel or a library call), as views,
/// creation and alias ops do not.
inline bool opRunsKernel(OpKind k) {
  OpCategory c = opInfo(k).category;
  return c == OpCategory::Pointwise || c == OpCategory::Reduction || c == OpCategory::Extern ||
         c == OpCategory::Window || c == OpCategory::Gather || c == OpCategory::Scatter;
}
inline bool isMutation(OpKind k) {
  return opInfo(k).category == OpCategory::Mutation || opInfo(k).category == OpCategory::MetaMutation;
}

/// A shape/dtype rule: result types from operand types and attributes.
/// Throws UserError (message only) on a bad operand.
using ShapeRule = std::vector<TensorType> (*)(const std::vector<TensorType>&, const Attrs&);

/// Output types of `op` applied to inputs of type `ins`.  Throws UserError
/// (message only; callers attach the location) on arity, dtype or shape errors.
std::vector<TensorType> inferTypes(OpKind op, const std::vector<TensorType>& ins,
                                   const Attrs& attrs);

/// Note [Channels last]: the attribute the channels-last pass
/// (src/passes/layout.cpp) sets on a node whose 4-D result it stores
/// channels-last: sizes stay NCHW, strides become NHWC's.  Any op whose
/// kernel or library call writes through the result's strides may carry it
/// (channelsLastWritable); inferTypes strips it, infers, and gives result 0
/// those strides, so the verifier re-derives the layout like any type.
inline constexpr const char* kChannelsLast = "channels_last";
bool channelsLastWritable(OpKind k);
/// NHWC strides of 4-D NCHW `sizes`: {H*W*C, 1, W*C, C}.
Ints channelsLastStrides(const Ints& sizes);
bool isChannelsLast(const TensorType& t);

/// inferTypes, plus ops whose result types come from their regions
/// (autograd_function: the forward region's user outputs).
std::vector<TensorType> inferNodeTypes(OpKind op, const std::vector<TensorType>& ins, const Attrs& attrs,
                                       const std::vector<Graph>& regions);

/// Appends a node to `g`, its output types inferred by the op's shape rule
/// (and checked against aotc's size bounds).  Throws UserError, located at
/// `loc`, on a bad shape.  The one builder front ends, gradient rules and
/// passes use.
std::vector<ValueId> addNode(Graph& g, OpKind op, std::vector<ValueId> inputs, Attrs attrs = {}, SourceLoc loc = {},
                             Phase phase = Phase::Forward, uint32_t tags = kTagNone, std::vector<Graph> regions = {});
/// Single-output addNode.
ValueId addOp(Graph& g, OpKind op, std::vector<ValueId> inputs, Attrs attrs = {}, SourceLoc loc = {},
              Phase phase = Phase::Forward, uint32_t tags = kTagNone);

/// Broadcast two shapes (PyTorch rules); nullopt if incompatible.
std::optional<Ints> broadcastShapes(const Ints& a, const Ints& b);
/// Strides of `view(sizes)` of a tensor with these sizes/strides, PyTorch's
/// computeStride; nullopt when the view needs a copy.
std::optional<Ints> viewStrides(const Ints& old_sizes, const Ints& old_strides, const Ints& new_sizes);
/// Resolves a single -1 in a view size.
Ints inferViewSize(const Ints& size, int64_t numel);
/// Normalizes a dim index for a tensor of `rank` (PyTorch's maybe_wrap_dim).
int64_t wrapDim(int64_t dim, int64_t rank);
/// Normalized slice bounds {start, end, step, length} of `size` (ATen's slice).
struct SliceBounds { int64_t start, end, step, length; };
SliceBounds sliceBounds(const Attrs& a, int64_t size);
/// Normalizes reduction dims (negative, empty = all) to a sorted list.
Ints reductionDims(const Attrs& attrs, int64_t rank);

// Attribute helpers shared by every table.
int64_t attrInt(const Attrs& a, const std::string& key);
double attrFloat(const Attrs& a, const std::string& key);
bool attrBool(const Attrs& a, const std::string& key, bool dflt);
const Ints& attrInts(const Attrs& a, const std::string& key);
const std::string& attrString(const Attrs& a, const std::string& key);
bool hasAttr(const Attrs& a, const std::string& key);

/// Output size of a pooling/conv window along one dim (PyTorch's rule).
int64_t windowOut(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation, bool ceil);
/// Attrs of a 2-D window op, normalized to two values each.
struct Window2d {
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
  bool ceil;
};
Window2d window2d(const Attrs& a);
/// Note [Window offsets] (src/passes/pool_offsets.cpp): the dtype of a max
/// pool's indices when `window_offsets` is set (the narrowest signed integer
/// holding p * kw + q), else int64.
DType windowOffsetDType(const Attrs& a);
/// Adaptive pooling window [start, end) of output index `i` (ATen's rule).
inline int64_t adaptiveStart(int64_t i, int64_t out, int64_t in) { return (i * in) / out; }
inline int64_t adaptiveEnd(int64_t i, int64_t out, int64_t in) { return ((i + 1) * in + out - 1) / out; }
/// Promoted dtype of a binary op (ATen's lattice, simplified).
DType promoteTypes(DType a, DType b);

/// Philox4x32-10 uniform in [0, 1) for (seed, offset, index): the same bits in
/// the reference kernels and the CUDA prelude (aotc_uniform).
double philoxUniform(uint64_t seed, uint64_t offset, uint64_t index);

/// Which tables have a row for each op (for the completeness test).
bool hasShapeRule(OpKind k);

}  // namespace aotc
