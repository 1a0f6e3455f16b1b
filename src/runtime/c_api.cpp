//===- c_api.cpp - The deployment runtime's C ABI over the executor --------===//
#include "aotc/runtime/c_api.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "aotc/runtime/executor.h"
#include "aotc/runtime/reference_runtime.h"
#include "aotc/support/diag.h"

// Note [C ABI misuse]: a deployment library never takes its caller's process
// down.  Every function checks its arguments and the call order and answers a
// misuse with a non-zero status and a one-line aotc_error naming the function
// (Note [Call order] in executor.cpp for results asked for too early).  What
// cannot be checked is documented in c_api.h: a handle used after
// aotc_close (the handle is freed; no registry of live handles is kept, as
// that would be process-wide state), and device pointers the runtime did not
// allocate (the caller's own memory is trusted).  The runtime keeps the
// allocations it made with aotc_alloc, so aotc_free refuses a pointer that
// is not one of them, and forgets the bindings inside one it frees (the next
// forward asks for them rather than reading freed memory), and a bind or
// copy inside one is checked against its end.
struct aotc_runtime {
  std::unique_ptr<aotc::Device> device;
  std::unique_ptr<aotc::Session> session;
  std::string error;
  std::string deviceName;
  std::map<uintptr_t, size_t> allocs;  ///< aotc_alloc's live allocations: start -> bytes
};

namespace {

using aotc::DType;

std::string messageOf(const std::exception& e) {
  if (auto* u = dynamic_cast<const aotc::UserError*>(&e)) return u->what();
  return std::string("internal error: ") + e.what();
}

[[noreturn]] void refuse(const std::string& message) { throw aotc::UserError(aotc::SourceLoc{}, message); }

/// Runs `f`, turning any exception into a return code and the handle's error
/// (prefixed with the function's name).  A null handle returns 2 (its error
/// is aotc_error(NULL)'s fixed text).
template <typename F>
int guarded(aotc_runtime* rt, const char* fn, F f) {
  if (!rt) return 2;
  try {
    f();
    rt->error.clear();
    return 0;
  } catch (const std::exception& e) {
    rt->error = std::string(fn) + ": " + messageOf(e);
  } catch (...) {
    rt->error = std::string(fn) + ": internal error: an exception of unknown type";
  }
  return 1;
}

/// The aotc_alloc allocation holding `p` ({start, bytes}), its end included
/// (a pointer one past the end holds nothing), if any.
std::optional<std::pair<uintptr_t, size_t>> allocationOf(const aotc_runtime* rt, uintptr_t p) {
  auto it = rt->allocs.upper_bound(p);
  if (it == rt->allocs.begin()) return std::nullopt;
  --it;
  if (p - it->first <= it->second) return *it;
  return std::nullopt;
}

/// Refuses [p, p + bytes) when it starts inside an aotc_alloc allocation and
/// runs past its end (memory the runtime did not allocate is trusted).
void checkInside(const aotc_runtime* rt, uintptr_t p, uint64_t bytes, const std::string& what) {
  auto a = allocationOf(rt, p);
  if (!a) return;
  const uint64_t room = a->second - (p - a->first);
  if (bytes > room)
    refuse(what + " reaches " + std::to_string(bytes) + " bytes from its pointer, past the end of its aotc_alloc allocation (" +
           std::to_string(room) + " bytes left)");
}

/// The bytes from a tensor's data pointer to the end of its last element, or
/// nullopt when the shape or strides overflow (or a stride is negative).
std::optional<uint64_t> reachBytes(const aotc::DeviceTensor& t) {
  uint64_t last = 0;
  for (size_t d = 0; d < t.shape.size(); ++d) {
    if (t.shape[d] == 0) return 0;
    if (t.shape[d] < 0 || (t.shape[d] > 1 && t.strides[d] < 0)) return std::nullopt;  // a size-1 dim's stride is unread
  }
  for (size_t d = 0; d < t.shape.size(); ++d) {
    uint64_t step = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(t.shape[d] - 1), static_cast<uint64_t>(t.strides[d]), &step) ||
        __builtin_add_overflow(last, step, &last))
      return std::nullopt;
  }
  uint64_t bytes = 0;
  if (__builtin_add_overflow(last, uint64_t{1}, &last) ||
      __builtin_mul_overflow(last, static_cast<uint64_t>(aotc::dtypeSize(t.dtype)), &bytes))
    return std::nullopt;
  return bytes;
}

/// A tensor to bind: inside an aotc_alloc allocation it must end before the
/// allocation does.
void checkBound(const aotc_runtime* rt, const aotc::DeviceTensor& t, const std::string& name) {
  if (!allocationOf(rt, t.data)) return;
  auto reach = reachBytes(t);
  if (!reach) refuse(name + ": shape and strides overflow or are negative");
  checkInside(rt, t.data, *reach, name);
}

/// The C ABI's dtype codes and aotc's dtypes, one pair per row.
constexpr std::pair<aotc_dtype, DType> kCDTypes[] = {
    {AOTC_F32, DType::F32}, {AOTC_F64, DType::F64}, {AOTC_F16, DType::F16}, {AOTC_BF16, DType::BF16}, {AOTC_I64, DType::I64},
    {AOTC_I32, DType::I32}, {AOTC_BOOL, DType::Bool}, {AOTC_I8, DType::I8}, {AOTC_I16, DType::I16}, {AOTC_U8, DType::U8},
    {AOTC_U16, DType::U16}, {AOTC_U32, DType::U32}, {AOTC_U64, DType::U64},
};

/// A dtype code as the caller stored it: read as the int it is in C, since a
/// C caller may store any int there and loading an enum outside its values
/// is undefined in C++.
DType toDType(const aotc_dtype* p) {
  static_assert(sizeof(aotc_dtype) == sizeof(int));
  int d = 0;
  std::memcpy(&d, p, sizeof d);
  for (auto [c, dt] : kCDTypes)
    if (static_cast<int>(c) == d) return dt;
  throw aotc::UserError(aotc::SourceLoc{"", "", "bind"}, "unknown aotc_dtype " + std::to_string(d));
}

aotc_dtype fromDType(DType d) {
  for (auto [c, dt] : kCDTypes)
    if (dt == d) return c;
  return AOTC_F32;  // unreachable: every DType has a row
}

aotc::DeviceTensor fromC(const aotc_tensor* t) {
  if (!t) throw aotc::UserError(aotc::SourceLoc{"", "", "bind"}, "null tensor");
  if (t->ndim < 0 || t->ndim > AOTC_MAX_DIMS || (t->ndim && !t->shape))
    throw aotc::UserError(aotc::SourceLoc{"", "", "bind"}, "bad ndim or shape");
  aotc::DeviceTensor r;
  r.data = reinterpret_cast<uintptr_t>(t->data);
  r.dtype = toDType(&t->dtype);
  r.shape.assign(t->shape, t->shape + t->ndim);
  int64_t n = 1;
  for (int64_t d : r.shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n))
      throw aotc::UserError(aotc::SourceLoc{"", "", "bind"}, "shape has a negative dim or more elements than int64 holds");
  if (t->strides) r.strides.assign(t->strides, t->strides + t->ndim);
  else r.strides = aotc::TensorType::contiguousStrides(r.shape);
  return r;
}

void toC(const aotc::DeviceTensor& t, aotc_tensor_view* out) {
  if (!out) throw aotc::UserError(aotc::SourceLoc{}, "null output view");
  if (t.shape.size() > AOTC_MAX_DIMS) throw aotc::UserError(aotc::SourceLoc{}, "tensor has more than AOTC_MAX_DIMS dims");
  std::memset(out, 0, sizeof *out);
  out->data = reinterpret_cast<void*>(static_cast<uintptr_t>(t.data));
  out->dtype = fromDType(t.dtype);
  out->ndim = static_cast<int32_t>(t.shape.size());
  for (size_t i = 0; i < t.shape.size(); ++i) {
    out->shape[i] = t.shape[i];
    out->strides[i] = t.strides[i];
  }
  out->offset = t.offset;
}

}  // namespace

extern "C" {

int aotc_open(const char* dir, const char* device, aotc_runtime** out, char* err, size_t err_len) {
  auto report = [&](const std::string& m) {
    if (err && err_len) {
      std::strncpy(err, m.c_str(), err_len - 1);
      err[err_len - 1] = '\0';
    }
  };
  if (!dir || !out) {
    report("aotc_open: null argument");
    return 2;
  }
  *out = nullptr;
  try {
    auto rt = std::make_unique<aotc_runtime>();
    std::string want = device ? device : "auto";
    if (int ordinal = aotc::cudaOrdinal(want); ordinal >= 0) {
      rt->device = aotc::makeCudaDevice(ordinal);
    } else if (want == "emulate") {
      rt->device = aotc::makeEmulateDevice(aotc::EmulateOptions{});
    } else if (want == "auto") {
      try {
        rt->device = aotc::makeCudaDevice(0);
      } catch (const aotc::UserError&) {
        rt->device = aotc::makeEmulateDevice(aotc::EmulateOptions{});
      }
    } else {
      throw aotc::UserError(aotc::SourceLoc{}, "unknown device '" + want + "' (cuda, cuda:<n>, emulate or auto)");
    }
    rt->deviceName = rt->device->name();
    rt->session = std::make_unique<aotc::Session>(aotc::loadManifest(dir), dir, *rt->device);
    *out = rt.release();
    return 0;
  } catch (const std::exception& e) {
    report(messageOf(e));
    return 1;
  }
}

void aotc_close(aotc_runtime* rt) {
  if (!rt) return;
  try {
    rt->session.reset();
  } catch (...) {  // ~Session swallows its own; nothing may escape a C function
  }
  delete rt;
}

const char* aotc_error(const aotc_runtime* rt) {
  return rt ? rt->error.c_str() : "null runtime handle (aotc_open failed, or was not called)";
}
const char* aotc_device_name(const aotc_runtime* rt) { return rt ? rt->deviceName.c_str() : ""; }

size_t aotc_num_inputs(const aotc_runtime* rt) { return rt ? rt->session->manifest().inputs.size() : 0; }
const char* aotc_input_name(const aotc_runtime* rt, size_t i) {
  if (!rt || i >= rt->session->manifest().inputs.size()) return nullptr;
  return rt->session->manifest().inputs[i].name.c_str();
}
size_t aotc_num_outputs(const aotc_runtime* rt) { return rt ? rt->session->numOutputs() : 0; }

int aotc_bind(aotc_runtime* rt, const char* name, const aotc_tensor* t) {
  return guarded(rt, "aotc_bind", [&] {
    if (!name) refuse("null input name");
    aotc::DeviceTensor d = fromC(t);
    // The manifest's refusals name the cause better (a wrong dtype or shape
    // also overruns): the extent is checked once those pass.
    const aotc::plan::Manifest& m = rt->session->manifest();
    const aotc::plan::InputSpec* in = m.input(name);
    if (in && in->layout.dtype == d.dtype && (m.symbolic || in->layout.shape == d.shape))
      checkBound(rt, d, std::string("input '") + name + "'");
    rt->session->bind(name, d);
  });
}
int aotc_bind_grad_output(aotc_runtime* rt, size_t index, const aotc_tensor* t) {
  return guarded(rt, "aotc_bind_grad_output", [&] {
    aotc::DeviceTensor d = fromC(t);
    const aotc::plan::Manifest& m = rt->session->manifest();
    if (index < m.outputs.size() && m.outputs[index].dtype == d.dtype && (m.symbolic || m.outputs[index].shape == d.shape))
      checkBound(rt, d, "grad_output." + std::to_string(index));
    rt->session->bindGradOutput(index, d);
  });
}
int aotc_forward(aotc_runtime* rt) { return guarded(rt, "aotc_forward", [&] { rt->session->forward(); }); }
int aotc_backward(aotc_runtime* rt) { return guarded(rt, "aotc_backward", [&] { rt->session->backward(); }); }
int aotc_train_step(aotc_runtime* rt) { return guarded(rt, "aotc_train_step", [&] { rt->session->trainStep(); }); }
int aotc_set_stream(aotc_runtime* rt, void* stream) {
  return guarded(rt, "aotc_set_stream", [&] {
    if (rt->deviceName.rfind("cuda", 0) == 0) rt->session->setStream(stream);
  });
}
int aotc_synchronize(aotc_runtime* rt) { return guarded(rt, "aotc_synchronize", [&] { rt->session->synchronize(); }); }
int aotc_set_graphs(aotc_runtime* rt, int enabled) {
  return guarded(rt, "aotc_set_graphs", [&] { rt->session->setGraphs(enabled != 0); });
}
int aotc_output(aotc_runtime* rt, size_t index, aotc_tensor_view* out) {
  return guarded(rt, "aotc_output", [&] {
    if (!out) refuse("null output view");
    toC(rt->session->output(index), out);
  });
}
int aotc_grad(aotc_runtime* rt, const char* input, aotc_tensor_view* out) {
  return guarded(rt, "aotc_grad", [&] {
    if (!input) refuse("null input name");
    if (!out) refuse("null output view");
    toC(rt->session->grad(input), out);
  });
}
int aotc_input(aotc_runtime* rt, const char* name, aotc_tensor_view* out) {
  return guarded(rt, "aotc_input", [&] {
    if (!name) refuse("null input name");
    if (!out) refuse("null output view");
    if (!rt->session->manifest().input(name ? name : ""))
      throw aotc::UserError(aotc::SourceLoc{"", name ? name : "", ""}, "the artifact has no input of this name");
    toC(rt->session->input(name), out);
  });
}
int aotc_loss_scaling(const aotc_runtime* rt) { return rt && rt->session && rt->session->manifest().loss_scaling ? 1 : 0; }
int aotc_set_scalar(aotc_runtime* rt, const char* name, double value) {
  return guarded(rt, "aotc_set_scalar", [&] {
    if (!name) refuse("null input name");
    rt->session->setScalar(name, value);
  });
}
int aotc_loss_scale(aotc_runtime* rt, float* scale, int* found_inf) {
  return guarded(rt, "aotc_loss_scale", [&] {
    const auto& ls = rt->session->manifest().loss_scaling;
    if (!ls)
      throw aotc::UserError(aotc::SourceLoc{"", "", "loss scaling"},
                            "the artifact does not scale its loss (compile it with --precision fp16, or --loss-scaling dynamic)");
    rt->session->synchronize();
    auto read = [&](const std::string& name) {
      const aotc::DeviceTensor t = rt->session->input(name);
      float v = 0;
      rt->device->copyToHost(&v, t.data + static_cast<uintptr_t>(t.offset) * sizeof v, sizeof v);
      return v;
    };
    if (scale) *scale = read(ls->scale);
    if (found_inf) *found_inf = read(ls->found_inf) > 0 ? 1 : 0;
  });
}
int aotc_alloc(aotc_runtime* rt, size_t bytes, void** out) {
  return guarded(rt, "aotc_alloc", [&] {
    if (!out) refuse("null result pointer");
    *out = nullptr;
    const uintptr_t p = static_cast<uintptr_t>(rt->device->allocate(bytes));
    rt->allocs[p] = bytes;
    *out = reinterpret_cast<void*>(p);
  });
}
int aotc_free(aotc_runtime* rt, void* p) {
  return guarded(rt, "aotc_free", [&] {
    const uintptr_t u = reinterpret_cast<uintptr_t>(p);
    if (!p) refuse("null pointer");
    auto it = rt->allocs.find(u);
    if (it == rt->allocs.end())
      refuse(allocationOf(rt, u) ? "the pointer is inside an aotc_alloc allocation, not its start"
                                 : "the pointer was not allocated by aotc_alloc on this runtime (or is already freed)");
    rt->session->unbindWithin(u, u + it->second + 1);  // a later forward never reads freed memory
    rt->device->release(u);
    rt->allocs.erase(it);
  });
}
int aotc_copy_to_device(aotc_runtime* rt, void* dst, const void* src, size_t bytes) {
  return guarded(rt, "aotc_copy_to_device", [&] {
    if (!bytes) return;
    if (!dst || !src) refuse("null pointer");
    checkInside(rt, reinterpret_cast<uintptr_t>(dst), bytes, "the copy");
    rt->device->copyToDevice(reinterpret_cast<uintptr_t>(dst), src, bytes);
  });
}
int aotc_copy_to_host(aotc_runtime* rt, void* dst, const void* src, size_t bytes) {
  return guarded(rt, "aotc_copy_to_host", [&] {
    if (!bytes) return;
    if (!dst || !src) refuse("null pointer");
    checkInside(rt, reinterpret_cast<uintptr_t>(src), bytes, "the copy");
    rt->device->copyToHost(dst, reinterpret_cast<uintptr_t>(src), bytes);
  });
}

}  // extern "C"
