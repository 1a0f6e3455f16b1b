//===- onnx/tensors.cpp - ONNX tensors and element types --------------------===//
//
// TensorProto -> HostTensor (inline data, or external data that must stay in
// the model's directory), and ONNX's element types as aotc's dtypes.
//===----------------------------------------------------------------------===//
#include <fstream>

#include "node.h"

namespace aotc::onnx_fe {

namespace fs = std::filesystem;

std::optional<DType> dtypeOfOnnx(int t) {
  switch (t) {
    case onnx::TensorProto::FLOAT: return DType::F32;
    case onnx::TensorProto::DOUBLE: return DType::F64;
    case onnx::TensorProto::FLOAT16: return DType::F16;
    case onnx::TensorProto::BFLOAT16: return DType::BF16;
    case onnx::TensorProto::INT64: return DType::I64;
    case onnx::TensorProto::INT32: return DType::I32;
    case onnx::TensorProto::BOOL: return DType::Bool;
    case onnx::TensorProto::INT8: return DType::I8;
    case onnx::TensorProto::INT16: return DType::I16;
    case onnx::TensorProto::UINT8: return DType::U8;
    case onnx::TensorProto::UINT16: return DType::U16;
    case onnx::TensorProto::UINT32: return DType::U32;
    case onnx::TensorProto::UINT64: return DType::U64;
    default: return std::nullopt;
  }
}

/// The element types newer ONNX releases define (ONNX 1.12's protobuf
/// classes know up to BFLOAT16 = 16): named, with why aotc has no such dtype.
std::string onnxTypeName(int t) {
  static const std::map<int, const char*> newer = {
      {17, "FLOAT8E4M3FN (an 8-bit float: aotc has no FP8 dtype)"}, {18, "FLOAT8E4M3FNUZ (an 8-bit float: aotc has no FP8 dtype)"},
      {19, "FLOAT8E5M2 (an 8-bit float: aotc has no FP8 dtype)"},   {20, "FLOAT8E5M2FNUZ (an 8-bit float: aotc has no FP8 dtype)"},
      {21, "UINT4 (a packed 4-bit integer: aotc has no 4-bit dtype)"}, {22, "INT4 (a packed 4-bit integer: aotc has no 4-bit dtype)"},
      {23, "FLOAT4E2M1 (a packed 4-bit float: aotc has no FP4 dtype)"}, {24, "FLOAT8E8M0 (an 8-bit scale: aotc has no FP8 dtype)"},
      {25, "UINT2 (a packed 2-bit integer: aotc has no 2-bit dtype)"}, {26, "INT2 (a packed 2-bit integer: aotc has no 2-bit dtype)"},
      {27, "FLOAT6E2M3 (a 6-bit float: aotc has no FP6 dtype)"},     {28, "FLOAT6E3M2 (a 6-bit float: aotc has no FP6 dtype)"}};
  if (auto it = newer.find(t); it != newer.end()) return it->second;
  if (t == onnx::TensorProto::STRING) return "STRING (aotc has no string dtype)";
  if (t == onnx::TensorProto::COMPLEX64 || t == onnx::TensorProto::COMPLEX128)
    return onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(t)) + " (aotc has no complex dtype)";
  return onnx::TensorProto::DataType_IsValid(t) ? onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(t))
                                                : cat("type ", t);
}

bool declaredAgrees(const onnx::TypeProto::Tensor& tt, const TensorType& t) {
  bool same = tt.elem_type() == 0 || dtypeOfOnnx(tt.elem_type()) == t.dtype;
  if (tt.has_shape()) {
    same = same && tt.shape().dim_size() == t.rank();
    for (int k = 0; same && k < tt.shape().dim_size(); ++k)
      if (tt.shape().dim(k).has_dim_value()) same = tt.shape().dim(k).dim_value() == t.sizes[static_cast<size_t>(k)];
  }
  return same;
}

std::string declaredText(const onnx::TypeProto::Tensor& tt) {
  std::string d = onnxTypeName(tt.elem_type());
  if (tt.has_shape()) {
    d += "[";
    for (int k = 0; k < tt.shape().dim_size(); ++k) {
      const auto& x = tt.shape().dim(k);
      d += (k ? ", " : "") + (x.has_dim_value() ? std::to_string(x.dim_value()) : x.dim_param().empty() ? "?" : x.dim_param());
    }
    d += "]";
  }
  return d;
}

/// External data must stay inside the model's directory: a relative path
/// without `..`.
bool safeExternalLocation(const std::string& location) {
  fs::path rel(location);
  bool safe = !location.empty() && rel.is_relative();
  for (const auto& part : rel) safe = safe && part != "..";
  return safe;
}

namespace {

/// How many inline values a TensorProto holds in the field its dtype uses.
int64_t inlineValues(const onnx::TensorProto& t, DType dt) {
  switch (dt) {
    case DType::F32: return t.float_data_size();
    case DType::F64: return t.double_data_size();
    case DType::I64: return t.int64_data_size();
    case DType::U32: case DType::U64: return t.uint64_data_size();
    default: return t.int32_data_size();  // int32, bool, 8- and 16-bit ints, f16/bf16 bits
  }
}

}  // namespace

/// Reads a TensorProto (inline or external data) into a HostTensor.
HostTensor readTensor(const onnx::TensorProto& t, const fs::path& dir, const SourceLoc& loc, const std::string& what) {
  auto dt = dtypeOfOnnx(t.data_type());
  if (!dt) throw UserError(loc, cat(what, " has element type ", onnxTypeName(t.data_type()), ", which aotc does not support"));
  HostTensor h;
  h.dtype = *dt;
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || d > kMaxExtent) throw UserError(loc, cat(what, " has a bad dim ", d));
    h.sizes.push_back(d);
    n = mulSize(n, d);
  }
  if (n > kMaxElements) throw UserError(loc, cat(what, " has ", n, " elements, beyond aotc's bound"));
  const size_t bytes = static_cast<size_t>(n) * static_cast<size_t>(dtypeSize(*dt));
  std::string raw;
  const std::string* data = nullptr;
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto& kv : t.external_data()) {
      if (kv.key() == "location") location = kv.value();
      else if (kv.key() == "offset" || kv.key() == "length") {
        int64_t v = 0;
        try {
          size_t used = 0;
          v = std::stoll(kv.value(), &used);
          if (used != kv.value().size() || v < 0) throw std::invalid_argument("");
        } catch (const std::exception&) {
          throw UserError(loc, cat(what, ": external data ", kv.key(), " '", kv.value(), "' is not a non-negative integer"));
        }
        (kv.key() == "offset" ? offset : length) = v;
      }
    }
    if (!safeExternalLocation(location))
      throw UserError(loc, cat(what, ": external data location '", location, "' must be a relative path inside the model's directory"));
    fs::path file = dir / location;
    std::ifstream f(file, std::ios::binary);
    if (!f) throw UserError(loc, cat(what, ": cannot open external data file ", file.string()));
    std::error_code ec;
    uint64_t size = fs::file_size(file, ec);
    if (ec) throw UserError(loc, cat(what, ": cannot read external data file ", file.string()));
    uint64_t want = length >= 0 ? static_cast<uint64_t>(length) : bytes;
    if (want != bytes) throw UserError(loc, cat(what, ": external data length ", want, " does not match its ", bytes, " bytes"));
    if (static_cast<uint64_t>(offset) > size || size - static_cast<uint64_t>(offset) < want)
      throw UserError(loc, cat(what, ": external data file ", file.string(), " holds ", size, " bytes, too few for offset ", offset,
                               " and length ", want));
    raw.resize(want);
    f.seekg(offset);
    f.read(raw.data(), static_cast<std::streamsize>(want));
    if (!f) throw UserError(loc, cat(what, ": cannot read external data file ", file.string()));
    data = &raw;
  } else if (t.has_raw_data()) {
    if (t.raw_data().size() != bytes)
      throw UserError(loc, cat(what, ": raw data holds ", t.raw_data().size(), " bytes, its shape needs ", bytes));
    data = &t.raw_data();
  } else if (inlineValues(t, *dt) != n) {
    // Checked before anything is allocated: the dims alone promise nothing
    // (a fuzzed 5x5 tensor with mangled dims asked for 147 GB here).
    throw UserError(loc, cat(what, " holds ", inlineValues(t, *dt), " values, its shape needs ", n));
  }
  h.data.resize(static_cast<size_t>(n));
  if (data) {
    const auto* p = reinterpret_cast<const unsigned char*>(data->data());
    for (size_t i = 0; i < h.data.size(); ++i) h.data[i] = loadElement(*dt, p + i * static_cast<size_t>(dtypeSize(*dt)));
  } else {
    switch (*dt) {
      case DType::F32:
        for (int64_t i = 0; i < n; ++i) h.data[static_cast<size_t>(i)] = t.float_data(static_cast<int>(i));
        break;
      case DType::F64:
        for (int64_t i = 0; i < n; ++i) h.data[static_cast<size_t>(i)] = t.double_data(static_cast<int>(i));
        break;
      case DType::I64:
        for (int64_t i = 0; i < n; ++i) h.data[static_cast<size_t>(i)] = static_cast<double>(t.int64_data(static_cast<int>(i)));
        break;
      case DType::I32:
      case DType::Bool:
      case DType::I8:
      case DType::I16:
      case DType::U8:
      case DType::U16:
        for (int64_t i = 0; i < n; ++i) h.data[static_cast<size_t>(i)] = roundTo(*dt, t.int32_data(static_cast<int>(i)));
        break;
      case DType::U32:
      case DType::U64:
        for (int64_t i = 0; i < n; ++i) h.data[static_cast<size_t>(i)] = roundTo(*dt, static_cast<double>(t.uint64_data(static_cast<int>(i))));
        break;
      case DType::F16:
      case DType::BF16:
        for (int64_t i = 0; i < n; ++i) {
          uint16_t bits = static_cast<uint16_t>(t.int32_data(static_cast<int>(i)));
          unsigned char b[2] = {static_cast<unsigned char>(bits & 0xff), static_cast<unsigned char>(bits >> 8)};
          h.data[static_cast<size_t>(i)] = loadElement(*dt, b);
        }
        break;
    }
  }
  // Note [Exact integers]: aotc's CPU runtimes hold elements as doubles, so
  // an int64 beyond 2^53 cannot be held exactly.  Such values (INT64_MAX as
  // "to the end" of a Slice) are saturated to +-2^62 here; compile-time uses
  // saturate them anyway, and a tensor holding one is refused where it would
  // reach a runtime (materialize).
  if (*dt == DType::I64)
    for (double& v : h.data) v = std::clamp(v, -0x1p62, 0x1p62);
  return h;
}

bool isSplat(const HostTensor& t) {
  for (double v : t.data)
    if (!(v == t.data[0] || (v != v && t.data[0] != t.data[0]))) return false;
  return true;
}

}  // namespace aotc::onnx_fe
