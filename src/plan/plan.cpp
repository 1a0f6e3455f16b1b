//===- plan.cpp - The manifest's JSON form, written and read in one place ---===//
//
// Note [Typed plan] (plan.h).  Every key of manifest.json is spelled in this
// file: the writer (toJson) and the checking reader (manifestFromJson) sit
// side by side, one pair of functions per type, and a round-trip test holds
// them together.  A dynamic-shape manifest's binding and instantiation live
// in symbolic_manifest.cpp, the arena planner in arena.cpp.
//===----------------------------------------------------------------------===//
#include "aotc/support/options.h"
#include "aotc/plan/plan.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "aotc/ir/unify.h"
#include "aotc/ops/ops.h"
#include "aotc/support/diag.h"
#include "plan/internal.h"

namespace aotc::plan {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;
using json = nlohmann::json;

int64_t Layout::numel() const {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

int64_t Layout::span() const { return TensorType{dtype, shape, strides, offset}.storageSpan(); }

const char* mutationName(Mutation m) {
  switch (m) {
    case Mutation::None: return "none";
    case Mutation::Forward: return "forward";
    case Mutation::Backward: return "backward";
    case Mutation::Both: return "both";
  }
  return "none";
}

const Buffer* Program::buffer(const std::string& name) const {
  for (const Buffer& b : buffers)
    if (b.name == name) return &b;
  return nullptr;
}

const InputSpec* Manifest::input(const std::string& name) const {
  for (const InputSpec& i : inputs) {
    if (i.name == name) return &i;
    for (const std::string& a : i.aliases)
      if (a == name) return &i;
  }
  return nullptr;
}

const KernelSpec* Manifest::kernel(const std::string& name) const {
  for (const KernelSpec& k : kernels)
    if (k.name == name) return &k;
  return nullptr;
}

bool denseIn(const ConvTensor& t, bool nhwc) {
  if (t.dims.size() != 4 || t.strides.size() != 4) return false;
  const Ints want = nhwc ? channelsLastStrides(t.dims) : TensorType::contiguousStrides(t.dims);
  for (size_t i = 0; i < 4; ++i)
    if (t.dims[i] > 1 && t.strides[i] != want[i]) return false;
  return true;
}

const char* gemmCallName(GemmCall c) {
  switch (c) {
    case GemmCall::GemmEx: return "cublasGemmEx";
    case GemmCall::GemmStridedBatchedEx: return "cublasGemmStridedBatchedEx";
    case GemmCall::LtMatmulBias: return "cublasLtMatmul";
  }
  return "";
}

const char* convCallName(ConvCall c) {
  switch (c) {
    case ConvCall::Forward: return "cudnnConvolutionForward";
    case ConvCall::BackwardData: return "cudnnConvolutionBackwardData";
    case ConvCall::BackwardFilter: return "cudnnConvolutionBackwardFilter";
  }
  return "";
}

namespace {

/// The CUDA library enums a step names, derived from its dtype (kept in the
/// JSON for readers; the runtimes derive them again from the dtype).
struct LibraryTypes {
  DType dtype;
  const char* cuda;   ///< cudaDataType_t
  const char* cudnn;  ///< cudnnDataType_t
};
constexpr LibraryTypes kLibraryTypes[] = {{DType::F32, "CUDA_R_32F", "CUDNN_DATA_FLOAT"},
                                          {DType::F64, "CUDA_R_64F", "CUDNN_DATA_DOUBLE"},
                                          {DType::F16, "CUDA_R_16F", "CUDNN_DATA_HALF"},
                                          {DType::BF16, "CUDA_R_16BF", "CUDNN_DATA_BFLOAT16"}};
const LibraryTypes& libraryTypes(DType d) {
  for (const LibraryTypes& t : kLibraryTypes)
    if (t.dtype == d) return t;
  return kLibraryTypes[0];  // integer data never reaches a library call
}
const char* cudaDataType(DType d) { return libraryTypes(d).cuda; }
const char* cudnnDataType(DType d) { return libraryTypes(d).cudnn; }
const char* cublasCompute(DType d) { return d == DType::F64 ? "CUBLAS_COMPUTE_64F" : "CUBLAS_COMPUTE_32F"; }
/// The dtype a library type name spells (`field` picks the library).
std::optional<DType> dtypeOfLibraryType(const std::string& s, const char* LibraryTypes::*field) {
  for (const LibraryTypes& t : kLibraryTypes)
    if (s == t.*field) return t.dtype;
  return std::nullopt;
}

// ------------------------------------------------------------------ writer

void putAttrs(ojson& o, const Attrs& attrs) {
  for (auto& [k, v] : attrs) std::visit([&](auto&& x) { o[k] = x; }, v);
}
ojson viewOpJson(const ViewOp& v) {
  ojson o{{"op", v.op}};
  putAttrs(o, v.attrs);
  return o;
}
ojson chainJson(const ViewChain& c) {
  ojson a = ojson::array();
  for (const ViewOp& v : c) a.push_back(viewOpJson(v));
  return a;
}
void putLayout(ojson& o, const Layout& l, bool withOffset) {
  o["dtype"] = dtypeName(l.dtype);
  o["shape"] = l.shape;
  o["strides"] = l.strides;
  if (withOffset) o["offset"] = l.offset;
}
ojson operandJson(const MatrixOperand& op, bool batched) {
  ojson j{{"buffer", op.buffer}, {"offset", op.offset}, {"ld", op.ld}};
  if (batched) j["stride"] = op.stride;
  return j;
}
ojson convTensorJson(const ConvTensor& t) {
  return ojson{{"buffer", t.buffer}, {"offset", t.offset}, {"dims", t.dims}, {"strides", t.strides}};
}

ojson stepJson(const Step& s) {
  if (const Launch* l = std::get_if<Launch>(&s)) {
    ojson j{{"op", "launch"}, {"kernel", l->kernel}, {"grid", l->grid}, {"block", l->block}, {"shared_bytes", l->shared_bytes},
            {"args", l->args}};
    if (!l->scalars.empty()) j["scalars"] = l->scalars;
    if (l->epilogue) {
      j["epilogue"] = {{"input", l->epilogue->input}, {"phase", l->epilogue->phase == Phase::Forward ? "forward" : "backward"}};
      if (l->epilogue->region) j["epilogue"]["region"] = viewOpJson(*l->epilogue->region);
    }
    if (l->work) {
      j["work"] = {{"bytes", l->work->bytes}, {"blocks", l->work->blocks}, {"serial", l->work->serial}, {"split", l->work->split}};
      if (l->work->vector != 1) j["work"]["vector"] = l->work->vector;
    }
    return j;
  }
  if (const Gemm* g = std::get_if<Gemm>(&s)) {
    const bool batched = g->call == GemmCall::GemmStridedBatchedEx;
    ojson j{{"op", batched ? "gemm_batched" : "gemm"},
            {"library", g->call == GemmCall::LtMatmulBias ? "cublasLt" : "cublas"},
            {"call", gemmCallName(g->call)},
            {"node", g->node},
            {"transa", g->transa ? "T" : "N"},
            {"transb", g->transb ? "T" : "N"},
            {"m", g->m},
            {"n", g->n},
            {"k", g->k}};
    if (batched) j["batch"] = g->batch;
    j["alpha"] = g->alpha;
    j["A"] = operandJson(g->A, batched);
    j["B"] = operandJson(g->B, batched);
    j["beta"] = g->beta;
    j["C"] = operandJson(g->C, batched);
    j["Atype"] = j["Btype"] = j["Ctype"] = cudaDataType(g->dtype);
    j["computeType"] = cublasCompute(g->dtype);
    if (g->call == GemmCall::LtMatmulBias) {
      j["epilogue"] = g->relu ? "CUBLASLT_EPILOGUE_RELU_BIAS" : "CUBLASLT_EPILOGUE_BIAS";
      j["bias"] = {{"buffer", g->bias->buffer}, {"offset", g->bias->offset}};
    } else {
      j["algo"] = "CUBLAS_GEMM_DEFAULT";
    }
    return j;
  }
  const Conv& c = std::get<Conv>(s);
  ojson j{{"op", "conv"}, {"library", "cudnn"}, {"node", c.node}, {"mode", "CUDNN_CROSS_CORRELATION"},
          {"pad", c.pad}, {"stride", c.stride}, {"dilation", c.dilation}, {"groups", c.groups},
          {"dataType", cudnnDataType(c.dtype)}, {"computeType", c.dtype == DType::F64 ? "CUDNN_DATA_DOUBLE" : "CUDNN_DATA_FLOAT"},
          {"alpha", c.alpha}, {"beta", c.beta}, {"call", convCallName(c.call)},
          {"format", c.nhwc ? "CUDNN_TENSOR_NHWC" : "CUDNN_TENSOR_NCHW"}};
  switch (c.call) {
    case ConvCall::Forward: j["x"] = convTensorJson(c.a); j["w"] = convTensorJson(c.b); j["y"] = convTensorJson(c.out); break;
    case ConvCall::BackwardData: j["dy"] = convTensorJson(c.a); j["w"] = convTensorJson(c.b); j["dx"] = convTensorJson(c.out); break;
    case ConvCall::BackwardFilter: j["dy"] = convTensorJson(c.a); j["x"] = convTensorJson(c.b); j["dw"] = convTensorJson(c.out); break;
  }
  return j;
}

const char* bufferKindName(BufferKind k) {
  switch (k) {
    case BufferKind::Input: return "input";
    case BufferKind::Alloc: return "alloc";
    case BufferKind::View: return "view";
  }
  return "";
}

ojson programJson(const Program& p) {
  ojson bufs = ojson::array();
  for (const Buffer& b : p.buffers) {
    ojson j{{"name", b.name}, {"kind", bufferKindName(b.kind)}};
    putLayout(j, b.layout, true);
    if (b.kind == BufferKind::Input) j["role"] = b.role;
    if (b.kind == BufferKind::View) j["base"] = b.base;
    if (b.kind == BufferKind::Alloc) {
      j["bytes"] = b.bytes;
      j["arena_offset"] = b.arena_offset;
    }
    bufs.push_back(std::move(j));
  }
  ojson steps = ojson::array();
  for (const Step& s : p.steps) steps.push_back(stepJson(s));
  ojson outs = ojson::array();
  for (const ProgramOutput& o : p.outputs) outs.push_back({{"role", o.role}, {"buffer", o.buffer}});
  // Moved in, not listed in an initializer list (which copies).
  ojson j = ojson::object();
  j["buffers"] = std::move(bufs);
  j["steps"] = std::move(steps);
  j["outputs"] = std::move(outs);
  j["arena_bytes"] = p.arena_bytes;
  j["alloc_bytes_unplanned"] = p.alloc_bytes_unplanned;
  j["ir"] = p.ir;
  return j;
}

// ------------------------------------------------------------------ reader

/// Reads one untrusted manifest; every failure is one line naming the file and field.
class Reader {
 public:
  Reader(const std::string& file, int64_t maxElements) : file_(file), maxElements_(maxElements) {}

  [[noreturn]] void fail(const std::string& field, const std::string& msg) const {
    throw UserError(SourceLoc{file_, field, ""}, "malformed manifest: " + msg);
  }
  static std::string at(const std::string& where, const char* key) { return where.empty() ? key : where + "." + key; }

  const json& field(const json& o, const std::string& where, const char* key) const {
    if (!o.is_object() || !o.contains(key)) fail(at(where, key), "missing");
    return o[key];
  }
  const json& array(const json& o, const std::string& where, const char* key) const {
    if (!o.is_object() || !o.contains(key) || !o[key].is_array()) fail(at(where, key), "missing or not an array");
    return o[key];
  }
  const json& object(const json& o, const std::string& where, const char* key) const {
    if (!o.is_object() || !o.contains(key) || !o[key].is_object()) fail(at(where, key), "missing or not an object");
    return o[key];
  }
  std::string string(const json& o, const std::string& where, const char* key) const {
    if (!o.is_object() || !o.contains(key) || !o[key].is_string()) fail(at(where, key), "missing or not a string");
    return o[key].get<std::string>();
  }
  std::string name(const json& o, const std::string& where, const char* key) const {
    if (!o.is_object() || !o.contains(key) || !o[key].is_string() || !validName(o[key].get<std::string>()))
      fail(at(where, key), "missing or not a valid name");
    return o[key].get<std::string>();
  }
  bool boolean(const json& o, const std::string& where, const char* key) const {
    if (!o.is_object() || !o.contains(key) || !o[key].is_boolean()) fail(at(where, key), "missing or not a boolean");
    return o[key].get<bool>();
  }
  int64_t integer(const json& o, const std::string& where, const char* key, int64_t lo, int64_t hi) const {
    if (!o.is_object() || !o.contains(key) || !o[key].is_number_integer()) fail(at(where, key), "missing or not an integer");
    const json& v = o[key];
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) fail(at(where, key), "out of range");
    int64_t x = v.get<int64_t>();
    if (x < lo || x > hi) fail(at(where, key), cat("holds ", x, ", outside [", lo, ", ", hi, "]"));
    return x;
  }
  double number(const json& o, const std::string& where, const char* key) const {
    if (!o.is_object() || !o.contains(key) || !o[key].is_number()) fail(at(where, key), "missing or not a number");
    return o[key].get<double>();
  }
  Ints ints(const json& o, const std::string& where, const char* key, int64_t lo, int64_t hi, size_t maxLen = 64) const {
    const json& a = array(o, where, key);
    if (a.size() > maxLen) fail(at(where, key), cat("has ", a.size(), " entries (at most ", maxLen, ")"));
    Ints r;
    for (const json& x : a) {
      if (!x.is_number_integer() || (x.is_number_unsigned() && x.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)))
        fail(at(where, key), "holds " + x.dump() + ", not an integer");
      int64_t v = x.get<int64_t>();
      if (v < lo || v > hi) fail(at(where, key), "holds " + x.dump() + ", not a size");
      r.push_back(v);
    }
    return r;
  }
  DType dtype(const json& o, const std::string& where, const char* key = "dtype") const {
    if (!o.is_object() || !o.contains(key) || !o[key].is_string() || !parseDType(o[key].get<std::string>()))
      fail(at(where, key), "missing or not a dtype aotc knows");
    return *parseDType(o[key].get<std::string>());
  }
  Ints shape(const json& o, const std::string& where, const char* key = "shape") const {
    if (!o.is_object() || !o.contains(key) || !o[key].is_array()) fail(at(where, key), "missing or not an array");
    int64_t numel = 1;
    Ints r;
    for (const json& d : o[key]) {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > static_cast<uint64_t>(maxElements_))
        fail(at(where, key), "holds " + d.dump() + ", not a size");
      numel *= std::max<int64_t>(d.get<int64_t>(), 1);
      if (numel > maxElements_)
        fail(at(where, key), cat(o[key].dump(), " is larger than ",
                                 maxElements_ == (int64_t{1} << 31) ? "the CPU runtimes hold (2^31 elements)" : "this runtime handles"));
      r.push_back(d.get<int64_t>());
    }
    if (r.size() > 64) fail(at(where, key), "more than 64 dims");
    return r;
  }
  /// A layout: strides of the shape's rank, non-negative, offset >= 0, and a
  /// span that stays within maxElements.
  Layout layout(const json& o, const std::string& where, bool withOffset, const char* shapeKey = "shape") const {
    Layout l;
    l.dtype = dtype(o, where);
    l.shape = shape(o, where, shapeKey);
    l.strides = ints(o, where, "strides", 0, maxElements_);
    if (l.strides.size() != l.shape.size()) fail(at(where, "strides"), "has a different rank from the shape");
    if (withOffset && o.contains("offset")) l.offset = integer(o, where, "offset", 0, maxElements_);
    if (l.span() > 4 * maxElements_) fail(where, "its layout reaches beyond the tensors this runtime holds");
    return l;
  }
  /// A file of the artifact: relative, no "..", no backslash or NUL.
  std::string path(const json& o, const std::string& where, const char* key) const {
    if (!o.is_object() || !o.contains(key) || !o[key].is_string()) fail(at(where, key), "missing or not a path");
    const std::string p = o[key].get<std::string>();
    fs::path fp(p);
    bool ok = !p.empty() && fp.is_relative() && p.find('\\') == std::string::npos && p.find('\0') == std::string::npos;
    for (auto& part : fp) ok = ok && part != ".." && part != ".";
    if (!ok) fail(at(where, key), "path '" + p + "' leaves the artifact directory");
    return p;
  }
  template <typename E>
  E oneOf(const json& o, const std::string& where, const char* key, std::initializer_list<std::pair<const char*, E>> allowed) const {
    if (o.is_object() && o.contains(key) && o[key].is_string())
      for (auto& [s, e] : allowed)
        if (o[key] == s) return e;
    fail(at(where, key), "missing or not one of the known values");
  }

  ViewOp viewOp(const json& o, const std::string& where) const {
    ViewOp v;
    v.op = string(o, where, "op");
    auto k = opFromName(v.op);
    if (!k || opInfo(*k).category != OpCategory::View) fail(at(where, "op"), "'" + v.op + "' is not a view op");
    for (auto& [key, x] : o.items()) {
      if (key == "op") continue;
      if (x.is_boolean()) v.attrs[key] = x.get<bool>();
      else if (x.is_number_integer() && !(x.is_number_unsigned() && x.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))) v.attrs[key] = x.get<int64_t>();
      else if (x.is_number_float()) v.attrs[key] = x.get<double>();
      else if (x.is_string()) v.attrs[key] = x.get<std::string>();
      else if (x.is_array()) v.attrs[key] = ints(o, where, key.c_str(), INT64_MIN / 2, INT64_MAX / 2);
      else fail(at(where, key.c_str()), "not an attribute value");
    }
    return v;
  }
  ViewChain chain(const json& o, const std::string& where) const {
    ViewChain c;
    const json& a = array(o, where, "view_chain");
    for (size_t i = 0; i < a.size(); ++i) c.push_back(viewOp(a[i], cat(at(where, "view_chain"), "[", i, "]")));
    return c;
  }

  MatrixOperand operand(const json& o, const std::string& where, bool batched) const {
    if (!o.is_object()) fail(where, "missing or not an object");
    MatrixOperand m;
    m.buffer = name(o, where, "buffer");
    m.offset = integer(o, where, "offset", 0, maxElements_);
    m.ld = integer(o, where, "ld", 1, maxElements_);
    if (batched) m.stride = integer(o, where, "stride", 0, maxElements_);
    return m;
  }
  ConvTensor convTensor(const json& o, const std::string& where) const {
    if (!o.is_object()) fail(where, "missing or not an object");
    ConvTensor t;
    t.buffer = name(o, where, "buffer");
    t.offset = integer(o, where, "offset", 0, maxElements_);
    t.dims = shape(o, where, "dims");
    t.strides = ints(o, where, "strides", 0, maxElements_);
    if (t.dims.size() != 4 || t.strides.size() != 4) fail(where, "a convolution tensor has 4 dims and 4 strides");
    return t;
  }

  Step step(const json& o, const std::string& where) const {
    if (!o.is_object()) fail(where, "not an object");
    const std::string op = string(o, where, "op");
    if (op == "launch") {
      Launch l;
      l.kernel = name(o, where, "kernel");
      Ints grid = ints(o, where, "grid", 1, INT32_MAX, 3), block = ints(o, where, "block", 1, 1024, 3);
      if (grid.size() != 3 || block.size() != 3) fail(at(where, "grid"), "grid and block have three entries");
      std::copy(grid.begin(), grid.end(), l.grid.begin());
      std::copy(block.begin(), block.end(), l.block.begin());
      l.shared_bytes = integer(o, where, "shared_bytes", 0, int64_t{1} << 20);
      const json& args = array(o, where, "args");
      for (size_t i = 0; i < args.size(); ++i) {
        if (!args[i].is_string() || !validName(args[i].get<std::string>())) fail(cat(where, ".args[", i, "]"), "not a buffer name");
        l.args.push_back(args[i].get<std::string>());
      }
      if (o.contains("scalars")) l.scalars = ints(o, where, "scalars", 0, INT64_MAX, 8);
      if (o.contains("epilogue")) {
        const json& e = object(o, where, "epilogue");
        std::string ew = at(where, "epilogue");
        Epilogue ep;
        ep.input = name(e, ew, "input");
        ep.phase = oneOf<Phase>(e, ew, "phase", {{"forward", Phase::Forward}, {"backward", Phase::Backward}});
        if (e.contains("region")) ep.region = viewOp(e["region"], at(ew, "region"));
        if (l.args.empty()) fail(at(where, "args"), "an epilogue launch writes its first argument");
        l.epilogue = ep;
      }
      if (o.contains("work")) {
        const json& w = object(o, where, "work");
        const std::string ww = at(where, "work");
        l.work = LaunchWork{integer(w, ww, "bytes", 0, INT64_MAX), integer(w, ww, "blocks", 0, INT32_MAX),
                            integer(w, ww, "serial", 0, INT64_MAX), integer(w, ww, "split", 1, INT32_MAX)};
        if (w.contains("vector")) l.work->vector = integer(w, ww, "vector", 1, 16);
      }
      return l;
    }
    if (op == "gemm" || op == "gemm_batched") {
      Gemm g;
      const bool batched = op == "gemm_batched";
      std::string call = string(o, where, "call");
      if (batched && call == "cublasGemmStridedBatchedEx") g.call = GemmCall::GemmStridedBatchedEx;
      else if (!batched && call == "cublasGemmEx") g.call = GemmCall::GemmEx;
      else if (!batched && call == "cublasLtMatmul") g.call = GemmCall::LtMatmulBias;
      else fail(at(where, "call"), "'" + call + "' is not a GEMM call aotc makes");
      if (o.contains("node")) g.node = string(o, where, "node");
      g.transa = oneOf<bool>(o, where, "transa", {{"N", false}, {"T", true}});
      g.transb = oneOf<bool>(o, where, "transb", {{"N", false}, {"T", true}});
      g.m = integer(o, where, "m", 0, maxElements_);
      g.n = integer(o, where, "n", 0, maxElements_);
      g.k = integer(o, where, "k", 0, maxElements_);
      if (batched) g.batch = integer(o, where, "batch", 0, maxElements_);
      g.alpha = number(o, where, "alpha");
      g.beta = number(o, where, "beta");
      g.A = operand(field(o, where, "A"), at(where, "A"), batched);
      g.B = operand(field(o, where, "B"), at(where, "B"), batched);
      g.C = operand(field(o, where, "C"), at(where, "C"), batched);
      auto d = dtypeOfLibraryType(string(o, where, "Ctype"), &LibraryTypes::cuda);
      if (!d) fail(at(where, "Ctype"), "not a data type aotc emits");
      g.dtype = *d;
      for (const char* k : {"Atype", "Btype"})
        if (string(o, where, k) != cudaDataType(g.dtype)) fail(at(where, k), "differs from Ctype");
      if (g.call == GemmCall::LtMatmulBias) {
        const std::string epi = string(o, where, "epilogue");
        if (epi != "CUBLASLT_EPILOGUE_BIAS" && epi != "CUBLASLT_EPILOGUE_RELU_BIAS") fail(at(where, "epilogue"), "not an epilogue aotc emits");
        g.relu = epi == "CUBLASLT_EPILOGUE_RELU_BIAS";
        const json& b = object(o, where, "bias");
        MatrixOperand bias;
        bias.buffer = name(b, at(where, "bias"), "buffer");
        bias.offset = integer(b, at(where, "bias"), "offset", 0, maxElements_);
        g.bias = bias;
      }
      return g;
    }
    if (op == "conv") {
      Conv c;
      if (o.contains("node")) c.node = string(o, where, "node");
      c.call = oneOf<ConvCall>(o, where, "call",
                               {{"cudnnConvolutionForward", ConvCall::Forward},
                                {"cudnnConvolutionBackwardData", ConvCall::BackwardData},
                                {"cudnnConvolutionBackwardFilter", ConvCall::BackwardFilter}});
      c.pad = ints(o, where, "pad", 0, INT32_MAX, 2);
      c.stride = ints(o, where, "stride", 1, INT32_MAX, 2);
      c.dilation = ints(o, where, "dilation", 1, INT32_MAX, 2);
      if (c.pad.size() != 2 || c.stride.size() != 2 || c.dilation.size() != 2) fail(where, "pad, stride and dilation have two entries");
      c.groups = integer(o, where, "groups", 1, INT32_MAX);
      c.nhwc = oneOf<bool>(o, where, "format", {{"CUDNN_TENSOR_NCHW", false}, {"CUDNN_TENSOR_NHWC", true}});
      auto d = dtypeOfLibraryType(string(o, where, "dataType"), &LibraryTypes::cudnn);
      if (!d) fail(at(where, "dataType"), "not a data type aotc emits");
      c.dtype = *d;
      c.alpha = number(o, where, "alpha");
      c.beta = number(o, where, "beta");
      auto t = [&](const char* k) { return convTensor(field(o, where, k), at(where, k)); };
      switch (c.call) {
        case ConvCall::Forward: c.a = t("x"); c.b = t("w"); c.out = t("y"); break;
        case ConvCall::BackwardData: c.a = t("dy"); c.b = t("w"); c.out = t("dx"); break;
        case ConvCall::BackwardFilter: c.a = t("dy"); c.b = t("x"); c.out = t("dw"); break;
      }
      // cuDNN reads a filter packed in its format, whatever strides say.
      if (!denseIn(c.call == ConvCall::BackwardFilter ? c.out : c.b, c.nhwc))
        fail(at(where, c.call == ConvCall::BackwardFilter ? "dw" : "w"), cat("the filter's strides are not packed ", c.nhwc ? "NHWC" : "NCHW"));
      return c;
    }
    fail(at(where, "op"), "unknown step '" + op + "'");
  }

  Program program(const json& m, const char* which) const {
    const json& o = object(m, "", which);
    const std::string w = which;
    Program p;
    p.ir = path(o, w, "ir");
    p.arena_bytes = integer(o, w, "arena_bytes", 0, 8 * maxElements_);
    p.alloc_bytes_unplanned = integer(o, w, "alloc_bytes_unplanned", 0, INT64_MAX);
    std::set<std::string> names;
    const json& bufs = array(o, w, "buffers");
    for (size_t i = 0; i < bufs.size(); ++i) {
      std::string f = cat(w, ".buffers[", i, "]");
      Buffer b;
      b.name = name(bufs[i], f, "name");
      b.kind = oneOf<BufferKind>(bufs[i], f, "kind", {{"input", BufferKind::Input}, {"alloc", BufferKind::Alloc}, {"view", BufferKind::View}});
      b.layout = layout(bufs[i], f, true);
      if (b.kind == BufferKind::Input) b.role = string(bufs[i], f, "role");
      if (b.kind == BufferKind::View) {
        b.base = name(bufs[i], f, "base");
        const Buffer* base = nullptr;
        for (const Buffer& x : p.buffers)
          if (x.name == b.base) base = &x;
        if (!base || base->kind == BufferKind::View) fail(at(f, "base"), "'" + b.base + "' is not a root buffer declared before it");
      }
      if (b.kind == BufferKind::Alloc) {
        b.bytes = integer(bufs[i], f, "bytes", 0, 8 * maxElements_);
        b.arena_offset = integer(bufs[i], f, "arena_offset", 0, p.arena_bytes);
        if (b.arena_offset + b.bytes > p.arena_bytes) fail(at(f, "arena_offset"), "the buffer ends past the arena");
        if (b.layout.span() * dtypeSize(b.layout.dtype) > b.bytes) fail(at(f, "bytes"), "smaller than its layout");
      }
      if (!names.insert(b.name).second) fail(at(f, "name"), "'" + b.name + "' is declared twice");
      p.buffers.push_back(std::move(b));
    }
    const json& steps = array(o, w, "steps");
    for (size_t i = 0; i < steps.size(); ++i) {
      std::string f = cat(w, ".steps[", i, "]");
      p.steps.push_back(step(steps[i], f));
      for (const std::string& b : stepBuffers(p.steps.back()))
        if (!names.count(b)) fail(f, "uses buffer '" + b + "', which the program does not declare");
    }
    const json& outs = array(o, w, "outputs");
    for (size_t i = 0; i < outs.size(); ++i) {
      std::string f = cat(w, ".outputs[", i, "]");
      ProgramOutput po{string(outs[i], f, "role"), name(outs[i], f, "buffer")};
      if (!names.count(po.buffer)) fail(at(f, "buffer"), "'" + po.buffer + "' is not declared");
      p.outputs.push_back(po);
    }
    return p;
  }

  Manifest manifest(const json& m) const {
    if (!m.is_object()) fail("", "not a JSON object");
    if (m.value("format", "") != "aotc.manifest") fail("format", "not an aotc manifest");
    if (!m.contains("version") || !m["version"].is_number_integer() || m["version"].get<int64_t>() != kManifestVersion) {
      // Note [Manifest versions]: a runtime reads exactly its own versions and
      // says which side is older.
      const std::string runs = cat("this aotc runs manifests of versions ", kManifestVersion, " and ", kSymbolicManifestVersion);
      if (m.contains("version") && m["version"].is_number_integer() && m["version"].get<int64_t>() > kSymbolicManifestVersion)
        fail("version", cat("manifest version ", m["version"].get<int64_t>(), " was written by a newer aotc; ", runs, " (use a newer runtime)"));
      if (m.contains("version") && m["version"].is_number_integer())
        fail("version", cat("manifest version ", m["version"].get<int64_t>(), " was written by an older aotc; ", runs, " (compile the model again)"));
      fail("version", runs);
    }
    Manifest r;
    const json& model = object(m, "", "model");
    r.model_name = string(model, "model", "name");
    r.model_source = model.contains("source") ? string(model, "model", "source") : "";
    if (model.contains("arguments")) r.arguments = model["arguments"];
    const json& compiler = object(m, "", "compiler");
    r.compiler_version = string(compiler, "compiler", "version");
    if (compiler.contains("nvrtc")) r.nvrtc_version = string(compiler, "compiler", "nvrtc");
    if (compiler.contains("flags")) r.flags = compiler["flags"];
    for (const json& a : array(m, "", "archs")) {
      if (!a.is_string()) fail("archs", "holds a non-string");
      r.archs.push_back(a.get<std::string>());
    }
    std::set<std::string> names;
    const json& ins = array(m, "", "inputs");
    for (size_t i = 0; i < ins.size(); ++i) {
      std::string f = cat("inputs[", i, "]");
      InputSpec in;
      in.name = name(ins[i], f, "name");
      if (!names.insert(in.name).second) fail(f, "input '" + in.name + "' is listed twice");
      in.layout = layout(ins[i], f, false);
      in.role = string(ins[i], f, "role");
      in.mutation = oneOf<Mutation>(ins[i], f, "mutation",
                                    {{"none", Mutation::None}, {"forward", Mutation::Forward}, {"backward", Mutation::Backward}, {"both", Mutation::Both}});
      in.requires_grad = boolean(ins[i], f, "requires_grad");
      if (ins[i].contains("aliases"))
        for (auto& a : array(ins[i], f, "aliases")) {
          if (!a.is_string() || !validName(a.get<std::string>())) fail(f + ".aliases", "holds an invalid name " + a.dump());
          if (!names.insert(a.get<std::string>()).second) fail(f + ".aliases", "'" + a.get<std::string>() + "' names two inputs");
          in.aliases.push_back(a.get<std::string>());
        }
      if (ins[i].contains("metadata_after_forward")) {
        const json& mc = object(ins[i], f, "metadata_after_forward");
        std::string mw = at(f, "metadata_after_forward");
        MetadataChange c;
        c.shape = shape(mc, mw);
        c.strides = ints(mc, mw, "strides", 0, maxElements_);
        c.offset = integer(mc, mw, "offset", 0, maxElements_);
        c.view_chain = chain(mc, mw);
        in.metadata_after_forward = c;
      }
      if (ins[i].contains("initial")) {
        if (string(ins[i], f, "initial") != "zeros") fail(f + ".initial", "must be \"zeros\"");
        if (in.role == "user_input") fail(f + ".initial", "a user input has no initial value");
        in.zero_init = true;
      }
      r.inputs.push_back(std::move(in));
    }
    const json& outs = array(m, "", "outputs");
    for (size_t i = 0; i < outs.size(); ++i) {
      std::string f = cat("outputs[", i, "]");
      if (!outs[i].is_object() || !outs[i].contains("index") || !outs[i]["index"].is_number_integer() ||
          outs[i]["index"].get<int64_t>() != static_cast<int64_t>(i))
        fail(f + ".index", cat("must be ", i));
      OutputSpec o;
      o.index = i;
      o.buffer = name(outs[i], f, "buffer");
      o.dtype = dtype(outs[i], f);
      o.shape = shape(outs[i], f);
      if (!outs[i].contains("tangent") || !(outs[i]["tangent"].is_null() || outs[i]["tangent"].is_string()))
        fail(f + ".tangent", "must be null or a name");
      if (outs[i]["tangent"].is_string()) o.tangent = name(outs[i], f, "tangent");
      bool alias = oneOf<bool>(outs[i], f, "kind", {{"fresh", false}, {"alias_of_input", true}});
      if (alias) {
        const json& a = object(outs[i], f, "alias");
        AliasRecipe rec{name(a, at(f, "alias"), "input"), chain(a, at(f, "alias"))};
        if (!names.count(rec.input)) fail(f + ".alias.input", "names no input");
        o.alias = rec;
      }
      if (outs[i].contains("path")) o.path = string(outs[i], f, "path");
      r.outputs.push_back(std::move(o));
    }
    for (auto& g : array(m, "", "grads")) {
      GradSpec gs{name(g, "grads", "input"), name(g, "grads", "buffer")};
      if (!names.count(gs.input)) fail("grads", "names no input: " + g.dump());
      r.grads.push_back(gs);
    }
    for (auto& s : array(m, "", "saved")) r.saved.push_back(SavedSpec{name(s, "saved", "name"), layout(s, "saved", true)});
    r.forward = program(m, "forward");
    r.backward = program(m, "backward");
    for (auto& mod : array(m, "", "modules")) {
      ModuleSpec ms;
      ms.name = name(mod, "modules", "name");
      for (auto& k : array(mod, "modules", "kernels")) {
        if (!k.is_string() || !validName(k.get<std::string>())) fail("modules.kernels", "holds " + k.dump());
        ms.kernels.push_back(k.get<std::string>());
      }
      for (const char* kind : {"ptx", "cubin"}) {
        const json& files = object(mod, "modules", kind);
        for (auto& [arch, p] : files.items()) (kind[0] == 'p' ? ms.ptx : ms.cubin)[arch] = path(files, cat("modules.", kind), arch.c_str());
      }
      r.modules.push_back(std::move(ms));
    }
    std::set<std::string> kernelNames;
    for (auto& k : array(m, "", "kernels")) {
      KernelSpec ks;
      ks.name = name(k, "kernels", "name");
      ks.source = path(k, "kernels", "source");
      if (k.contains("module")) ks.module = name(k, "kernels", "module");
      if (k.contains("index_checked")) {
        if (!k["index_checked"].is_boolean()) fail("kernels.index_checked", "is not a boolean");
        ks.index_checked = k["index_checked"].get<bool>();
      }
      if (k.contains("nodes"))
        for (auto& n : array(k, "kernels", "nodes")) {
          if (!n.is_string()) fail("kernels.nodes", "holds " + n.dump());
          ks.nodes.push_back(n.get<std::string>());
        }
      kernelNames.insert(ks.name);
      r.kernels.push_back(std::move(ks));
    }
    for (const Program* p : {&r.forward, &r.backward})
      for (size_t i = 0; i < p->steps.size(); ++i)
        if (const Launch* l = std::get_if<Launch>(&p->steps[i]); l && !kernelNames.count(l->kernel))
          fail(cat(p == &r.forward ? "forward" : "backward", ".steps[", i, "].kernel"), "'" + l->kernel + "' is not a listed kernel");
    r.prelude = path(m, "", "prelude");
    if (m.contains("weights")) r.weights = path(m, "", "weights");
    const json& rc = object(m, "", "runtime_checks");
    for (auto& i : array(rc, "runtime_checks", "no_create_graph_inputs")) {
      if (!i.is_number_unsigned() || i.get<uint64_t>() >= ins.size())
        fail("runtime_checks.no_create_graph_inputs", "holds " + i.dump() + ", not an input index");
      r.runtime_checks.no_create_graph_inputs.push_back(i.get<size_t>());
    }
    r.runtime_checks.input_alignment_bytes = integer(rc, "runtime_checks", "input_alignment_bytes", 1, 4096);
    if (m.contains("precision")) {
      r.precision = string(m, "", "precision");
      if (!parseOption<Precision>(r.precision))  // Note [Option names]
        fail("precision", "must be " + optionChoices<Precision>() + ", not '" + r.precision + "'");
    }
    if (m.contains("loss_scaling")) {
      const json& l = object(m, "", "loss_scaling");
      LossScalingSpec s;
      auto positive = [&](const char* key) {
        const json& v = l.contains(key) ? l[key] : json();
        if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
          fail(std::string("loss_scaling.") + key, "must be a positive finite number");
        return v.get<double>();
      };
      s.init_scale = positive("init_scale");
      s.growth_factor = positive("growth_factor");
      s.backoff_factor = positive("backoff_factor");
      s.growth_interval = integer(l, "loss_scaling", "growth_interval", 1, int64_t{1} << 31);
      auto state = [&](const char* key, const char* dtype) {
        std::string n = string(l, "loss_scaling", key);
        auto in = std::find_if(r.inputs.begin(), r.inputs.end(), [&](const InputSpec& i) { return i.name == n; });
        if (in == r.inputs.end() || in->mutation != Mutation::Backward || !in->layout.shape.empty() || dtypeName(in->layout.dtype) != std::string(dtype))
          fail(std::string("loss_scaling.") + key, "'" + n + "' is not a 0-dim " + dtype + " input the backward writes");
        return n;
      };
      s.scale = state("scale", "f32");
      s.growth_tracker = state("growth_tracker", "i32");
      s.found_inf = state("found_inf", "f32");
      r.loss_scaling = std::move(s);
    }
    return r;
  }

 private:
  std::string file_;
  int64_t maxElements_;
};

}  // namespace

std::string JsonPath::str() const {
  if (!parent) return "";
  std::string p = parent->str();
  if (key) return p.empty() ? *key : p + "." + *key;
  return cat(p, "[", index, "]");
}

std::string differentiableOutputsHint(const std::vector<OutputSpec>& outputs) {
  std::string list;
  for (const OutputSpec& o : outputs)
    if (o.tangent) list += cat(list.empty() ? "" : ", ", o.index);
  if (list.empty()) return " (no output of this artifact is differentiable)";
  return cat(" (the differentiable outputs: ", list, "; an output that no input requiring grad reaches takes no gradient)");
}

std::vector<std::string> stepBuffers(const Step& s) {
  if (const Launch* l = std::get_if<Launch>(&s)) return l->args;
  if (const Gemm* g = std::get_if<Gemm>(&s)) {
    std::vector<std::string> r{g->A.buffer, g->B.buffer, g->C.buffer};
    if (g->bias) r.push_back(g->bias->buffer);
    return r;
  }
  const Conv& c = std::get<Conv>(s);
  return {c.a.buffer, c.b.buffer, c.out.buffer};
}

std::string stepLabel(const Step& s) {
  if (const Launch* l = std::get_if<Launch>(&s)) return "launch " + l->kernel;
  if (const Gemm* g = std::get_if<Gemm>(&s)) return std::string("gemm (") + gemmCallName(g->call) + ")";
  return std::string("conv (") + convCallName(std::get<Conv>(s).call) + ")";
}

ojson toJson(const Manifest& m) {
  ojson j;
  j["format"] = "aotc.manifest";
  j["version"] = kManifestVersion;
  j["compiler"] = {{"name", "aotc"}, {"version", m.compiler_version}, {"nvrtc", m.nvrtc_version}, {"flags", m.flags}};
  j["model"] = {{"name", m.model_name}, {"source", m.model_source}};
  if (!m.arguments.is_null() && !m.arguments.empty()) j["model"]["arguments"] = m.arguments;
  j["archs"] = m.archs;
  ojson ins = ojson::array();
  for (const InputSpec& in : m.inputs) {
    ojson e{{"name", in.name}, {"role", in.role}};
    putLayout(e, in.layout, false);
    e["requires_grad"] = in.requires_grad;
    e["mutation"] = mutationName(in.mutation);
    if (!in.aliases.empty()) e["aliases"] = in.aliases;
    if (in.metadata_after_forward) {
      const MetadataChange& c = *in.metadata_after_forward;
      e["metadata_after_forward"] = {{"shape", c.shape}, {"strides", c.strides}, {"offset", c.offset}, {"view_chain", chainJson(c.view_chain)}};
    }
    if (in.zero_init) e["initial"] = "zeros";
    ins.push_back(std::move(e));
  }
  j["inputs"] = std::move(ins);
  ojson outs = ojson::array();
  for (const OutputSpec& o : m.outputs) {
    ojson e{{"index", o.index}, {"buffer", o.buffer}, {"dtype", dtypeName(o.dtype)}, {"shape", o.shape},
            {"kind", o.alias ? "alias_of_input" : "fresh"}, {"tangent", o.tangent ? ojson(*o.tangent) : ojson(nullptr)}};
    if (o.alias) e["alias"] = {{"input", o.alias->input}, {"view_chain", chainJson(o.alias->view_chain)}};
    if (o.path) e["path"] = *o.path;
    outs.push_back(std::move(e));
  }
  j["outputs"] = std::move(outs);
  ojson grads = ojson::array();
  for (const GradSpec& g : m.grads) grads.push_back({{"input", g.input}, {"buffer", g.buffer}});
  j["grads"] = std::move(grads);
  ojson saved = ojson::array();
  for (const SavedSpec& s : m.saved) {
    ojson e{{"name", s.name}};
    putLayout(e, s.layout, true);
    saved.push_back(std::move(e));
  }
  j["saved"] = std::move(saved);
  j["forward"] = programJson(m.forward);
  j["backward"] = programJson(m.backward);
  ojson mods = ojson::array();
  for (const ModuleSpec& ms : m.modules) {
    ojson ptx = ojson::object(), cubin = ojson::object();
    for (auto& [a, p] : ms.ptx) ptx[a] = p;
    for (auto& [a, p] : ms.cubin) cubin[a] = p;
    mods.push_back({{"name", ms.name}, {"kernels", ms.kernels}, {"ptx", ptx}, {"cubin", cubin}});
  }
  j["modules"] = std::move(mods);
  ojson kernels = ojson::array();
  for (const KernelSpec& k : m.kernels) {
    kernels.push_back({{"name", k.name}, {"source", k.source}, {"module", k.module}, {"nodes", k.nodes}});
    if (k.index_checked) kernels.back()["index_checked"] = true;
  }
  j["kernels"] = std::move(kernels);
  j["prelude"] = m.prelude;
  if (!m.weights.empty()) j["weights"] = m.weights;
  j["runtime_checks"] = {{"no_create_graph_inputs", m.runtime_checks.no_create_graph_inputs},
                         {"input_alignment_bytes", m.runtime_checks.input_alignment_bytes}};
  if (m.precision != "fp32") j["precision"] = m.precision;
  if (m.loss_scaling) {
    const LossScalingSpec& s = *m.loss_scaling;
    j["loss_scaling"] = {{"init_scale", s.init_scale}, {"growth_factor", s.growth_factor}, {"backoff_factor", s.backoff_factor},
                         {"growth_interval", s.growth_interval}, {"scale", s.scale}, {"growth_tracker", s.growth_tracker},
                         {"found_inf", s.found_inf}};
  }
  return j;
}


Manifest readStaticManifest(const json& j, const std::string& file, int64_t maxElements) { return Reader(file, maxElements).manifest(j); }

Manifest manifestFromJson(const json& j, const std::string& file, int64_t maxElements) {
  try {
    if (j.is_object() && j.contains("version") && j["version"] == kSymbolicManifestVersion) {
      std::shared_ptr<const SymbolicManifest> s = symbolicManifestFromJson(j, file);
      return instantiateManifest(s, hintBinding(*s), file, maxElements);
    }
    return Reader(file, maxElements).manifest(j);
  } catch (const json::exception& e) {
    throw UserError(SourceLoc{file, "", ""}, std::string("malformed manifest: ") + e.what());
  }
}

Manifest readManifest(const std::string& dir, int64_t maxElements) {
  const fs::path file = fs::path(dir) / "manifest.json";
  std::ifstream f(file, std::ios::binary);
  if (!f) throw UserError(SourceLoc{file.string(), "", ""}, "cannot read file (is this an aotc artifact directory?)");
  std::ostringstream ss;
  ss << f.rdbuf();
  json j;
  try {
    j = json::parse(ss.str());
  } catch (const json::exception& e) {
    throw UserError(SourceLoc{file.string(), "", ""}, std::string("malformed manifest: ") + e.what());
  }
  return manifestFromJson(j, file.string(), maxElements);
}

Layout applyViewChain(const Layout& base, const ViewChain& chain) {
  TensorType t{base.dtype, base.shape, base.strides, base.offset};
  for (const ViewOp& v : chain) {
    auto k = opFromName(v.op);
    AOTC_CHECK(k && opInfo(*k).category == OpCategory::View, "not a view op: ", v.op);
    t = inferTypes(*k, {t}, v.attrs).at(0);
  }
  return Layout{t.dtype, t.sizes, t.strides, t.offset};
}

}  // namespace aotc::plan
