//===- rules.h - Every op that is not elementwise or a reduction: one row --*- C++ -*-===//
//
// Note [Op rows]
// ~~~~~~~~~~~~~~
// An op is its ops.def row (name, arity, category, gradient kind, attributes)
// plus one row of rules kept together in the file of its family:
//   src/ops/pointwise.cpp   elementwise ops     (Note [Pointwise rows])
//   src/ops/reductions.cpp  reductions          (Note [Reduction rows])
//   src/ops/views.cpp       views, their in-place (metadata) forms, and the
//                           scatters that write a view's region
//   src/ops/windows.cpp     pooling windows and their backwards
//   src/ops/gathers.cpp     gathers, scatters along a dim, cumsum, sort, cat, pad, argmax
//   src/ops/linalg.cpp      GEMMs and convolutions (library calls)
//   src/ops/creation.cpp    constants, arange, random bits
//   src/ops/internal.cpp    ops only the engine makes or removes (in-place ops
//                           before functionalize, autograd.Function, epilogues)
// The last six families share the OpRule below.  A row holds
//   types      the shape/dtype rule
//   reference  the reference kernel on dense host tensors (nullptr: the op
//              computes nothing, it exists only before functionalize)
//   grad       the gradient rule, in forward ops (nullptr: no gradient)
//   cuda       how the CUDA code generator lowers it, and `body`/`region`,
//              the text it needs, written with kernel_text.h's helpers
//   scatters   a scatter's view: the region of its base it replaces (the
//              reference, the gradient, functionalize and the epilogue
//              copies read it)
//   inverse    a view's inverse: the base's new value when the view is
//              written (functionalize)
//   samples    operands and attributes the finite-difference gradient check
//              and the NVRTC codegen test run
// The op table (shapes), the reference runtime, autodiff, functionalize, the
// code generator and the table-driven tests all read these rows; none of them
// switches on an op kind to find a rule.  The FX and ONNX converters are the
// exception by design: one IR op serves many ATen or ONNX spellings (a
// gather serves index.Tensor, embedding, take_along_dim...), so a spelling
// lives with its converter, and the completeness test checks that every row
// is spelled by some committed front-end fixture.
//===----------------------------------------------------------------------===//
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "aotc/ir/host_tensor.h"
#include "aotc/ops/builder.h"
#include "aotc/ops/gradients.h"
#include "aotc/ops/ops.h"

namespace aotc {

/// A reference kernel: results from dense row-major operands (Note in reference.h).
using ReferenceKernel = std::vector<HostTensor> (*)(const std::vector<const HostTensor*>& ins, const Attrs& attrs,
                                                    const std::vector<TensorType>& out_types);

/// How the CUDA code generator lowers a row's op.
enum class Lowering : uint8_t {
  None,        ///< never reaches the code generator (removed by functionalize or autodiff)
  View,        ///< no launch: a layout over its source's buffer (the shape rule's strides)
  Expression,  ///< computed inside its consumer's kernel: `region` (Note [Scatter expressions])
  Element,     ///< a kernel with one thread per element of output 0; `body` writes it
  Fill,        ///< a constant: one store per element (0-dim constants are inlined as literals)
  Gemm,        ///< cuBLAS (batched) GEMM
  Conv,        ///< cuDNN convolution, forward or either backward
  Epilogue,    ///< a copy kernel into a mutated input's buffer (or its region)
};

/// The body of an element kernel (Lowering::Element) for node `n` of `g`.
/// The kernel header declares out0..outK, in0..inN (the node's operands,
/// each with its IR layout), the flat output index `i` and its coordinates
/// c[0..rank) (kernel_text.h's coords); the body stores output elements.
using ElementBody = std::string (*)(const Graph& g, const Node& n);

/// A scatter expression's region test at output coordinates `c`: `inside`
/// is a C condition (given a name by the caller), `source` the source's
/// coordinates (only read when inside; they must stay in bounds outside).
struct ScatterRegion {
  std::string inside;
  std::vector<std::string> source;
};
using RegionRule = ScatterRegion (*)(const Graph& g, const Node& n, const std::vector<std::string>& c, const std::string& insideVar);

/// A view's inverse: the base's new value when the view (attributes `a`) of
/// `base` now holds `v`.  Built with `b` (the mutation's location).
using InverseRule = ValueId (*)(Builder& b, const Attrs& a, ValueId base, ValueId v);

/// An operand of a sample: floating ones are drawn in the sample's range,
/// integer and bool ones hold `fixed`.
struct SampleOperand {
  DType dtype;
  Ints sizes;
  std::vector<double> fixed;
};
struct OpSample {
  std::vector<SampleOperand> inputs;
  Attrs attrs;
};

struct OpRule {
  OpKind op;
  ShapeRule types;
  ReferenceKernel reference;
  GradRule grad;
  Lowering cuda;
  ElementBody body = nullptr;     ///< Lowering::Element
  RegionRule region = nullptr;    ///< Lowering::Expression
  std::optional<OpKind> scatters; ///< a scatter: the view whose region it replaces
  InverseRule inverse = nullptr;  ///< a view op
  std::vector<OpSample> samples;
};

/// Every OpRule row, family by family.
std::span<const OpRule* const> opRules();
/// The op's row, or nullptr for an elementwise op or a reduction (their
/// rows are pointwiseRule/reductionRule).
const OpRule* opRule(OpKind k);

}  // namespace aotc
