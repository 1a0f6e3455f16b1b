//===- kernel_text.cpp - The CUDA C text op rows are written in -----------===//
#include "aotc/ops/kernel_text.h"

#include <cmath>
#include <cstdint>
#include <sstream>

#include "aotc/ir/host_tensor.h"

namespace aotc::ktext {

const char* storageType(DType d) {
  switch (d) {
    case DType::F32: return "float";
    case DType::F64: return "double";
    case DType::I64: return "long long";
    case DType::I32: return "int";
    case DType::Bool: return "bool";
    case DType::F16: return "__half";  // computed in float
    case DType::BF16: return "__nv_bfloat16";
    case DType::I8: return "signed char";
    case DType::I16: return "short";
    case DType::U8: return "unsigned char";
    case DType::U16: return "unsigned short";
    case DType::U32: return "unsigned int";
    case DType::U64: return "unsigned long long";
  }
  return "float";
}
const char* computeType(DType d) {
  switch (d) {
    case DType::F64: return "double";
    case DType::I64: return "long long";
    case DType::I32: return "int";
    case DType::Bool: return "bool";
    // The narrow integers compute in C++'s promoted int and are cast back to
    // their type where each value is defined (valueCast), which wraps like
    // the reference (Note [Integer wrap]).
    case DType::I8: case DType::I16: case DType::U8: case DType::U16: case DType::U32: case DType::U64:
      return storageType(d);
    default: return "float";
  }
}

std::string valueCast(DType d) {
  if (d == DType::F16 || d == DType::BF16) return std::string("(float)(") + storageType(d) + ")(float)";
  return std::string("(") + computeType(d) + ")";
}

std::string literal(double v, DType d) {
  std::ostringstream os;
  os.precision(17);
  if (!isFloating(d)) {
    if (d == DType::Bool) return v != 0 ? "true" : "false";
    v = roundTo(d, v);
    if (d == DType::U64) {
      os << static_cast<unsigned long long>(v >= 0x1p64 ? UINT64_MAX : static_cast<unsigned long long>(v)) << "ULL";
      return os.str();
    }
    os << static_cast<long long>(v);
    if (d == DType::I64) return v == -0x1p63 ? "(-9223372036854775807LL - 1)" : os.str() + "LL";
    if (d == DType::I32) return os.str();
    return std::string("(") + computeType(d) + ")" + os.str() + (isUnsigned(d) ? "U" : "");
  }
  // Note [Half precision values]: a float16 or bfloat16 constant is its
  // dtype's value (bf16(0.1) = 0.10009765625), as the reference holds it and
  // as eager's x > 0.1 compares a bfloat16 x with; the literal was the float
  // nearest 0.1, so a bf16 0.10009765625 > 0.1 came out true on emulate
  // (difffuzz mixed-2920113).
  if (d == DType::F16 || d == DType::BF16) v = roundTo(d, v);
  if (std::isinf(v)) return v > 0 ? "(1.0/0.0)" : "(-1.0/0.0)";
  if (std::isnan(v)) return "(0.0/0.0)";
  os << v;
  std::string s = os.str();
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return d == DType::F64 ? s : s + "f";
}

std::string at(const TensorType& t, const std::vector<std::string>& c) {
  std::string e = "(" + std::to_string(t.offset);
  for (size_t d = 0; d < c.size(); ++d)
    if (t.sizes[d] != 1 && t.strides[d] != 0) e += " + (" + c[d] + ") * " + std::to_string(t.strides[d]);
  return e + ")";
}

std::vector<std::string> coords(size_t rank, const char* var) {
  std::vector<std::string> v;
  for (size_t d = 0; d < rank; ++d) v.push_back(std::string(var) + "[" + std::to_string(d) + "]");
  return v;
}

}  // namespace aotc::ktext
