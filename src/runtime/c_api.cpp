//===- c_api.cpp - The deployment runtime's C ABI over the executor --------===//
#include "aotc/runtime/c_api.h"

#include <cstring>
#include <exception>
#include <string>
#include <utility>

#include "aotc/runtime/executor.h"
#include "aotc/runtime/reference_runtime.h"
#include "aotc/support/diag.h"

struct aotc_runtime {
  std::unique_ptr<aotc::Device> device;
  std::unique_ptr<aotc::Session> session;
  std::string error;
  std::string deviceName;
};

namespace {

using aotc::DType;

std::string messageOf(const std::exception& e) {
  if (auto* u = dynamic_cast<const aotc::UserError*>(&e)) return u->what();
  return std::string("internal error: ") + e.what();
}

/// Runs `f`, turning any exception into a return code and the handle's error.
template <typename F>
int guarded(aotc_runtime* rt, F f) {
  if (!rt) return 2;
  try {
    f();
    rt->error.clear();
    return 0;
  } catch (const std::exception& e) {
    rt->error = messageOf(e);
    return 1;
  }
}

/// The C ABI's dtype codes and aotc's dtypes, one pair per row.
constexpr std::pair<aotc_dtype, DType> kCDTypes[] = {
    {AOTC_F32, DType::F32}, {AOTC_F64, DType::F64}, {AOTC_F16, DType::F16}, {AOTC_BF16, DType::BF16}, {AOTC_I64, DType::I64},
    {AOTC_I32, DType::I32}, {AOTC_BOOL, DType::Bool}, {AOTC_I8, DType::I8}, {AOTC_I16, DType::I16}, {AOTC_U8, DType::U8},
    {AOTC_U16, DType::U16}, {AOTC_U32, DType::U32}, {AOTC_U64, DType::U64},
};

DType toDType(aotc_dtype d) {
  for (auto [c, dt] : kCDTypes)
    if (c == d) return dt;
  throw aotc::UserError(aotc::SourceLoc{"", "", "bind"}, "unknown aotc_dtype " + std::to_string(static_cast<int>(d)));
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
  r.dtype = toDType(t->dtype);
  r.shape.assign(t->shape, t->shape + t->ndim);
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
  rt->session.reset();
  delete rt;
}

const char* aotc_error(const aotc_runtime* rt) { return rt ? rt->error.c_str() : "null runtime"; }
const char* aotc_device_name(const aotc_runtime* rt) { return rt ? rt->deviceName.c_str() : ""; }

size_t aotc_num_inputs(const aotc_runtime* rt) { return rt ? rt->session->manifest().inputs.size() : 0; }
const char* aotc_input_name(const aotc_runtime* rt, size_t i) {
  if (!rt || i >= rt->session->manifest().inputs.size()) return nullptr;
  return rt->session->manifest().inputs[i].name.c_str();
}
size_t aotc_num_outputs(const aotc_runtime* rt) { return rt ? rt->session->numOutputs() : 0; }

int aotc_bind(aotc_runtime* rt, const char* name, const aotc_tensor* t) {
  return guarded(rt, [&] { rt->session->bind(name ? name : "", fromC(t)); });
}
int aotc_bind_grad_output(aotc_runtime* rt, size_t index, const aotc_tensor* t) {
  return guarded(rt, [&] { rt->session->bindGradOutput(index, fromC(t)); });
}
int aotc_forward(aotc_runtime* rt) { return guarded(rt, [&] { rt->session->forward(); }); }
int aotc_backward(aotc_runtime* rt) { return guarded(rt, [&] { rt->session->backward(); }); }
int aotc_set_stream(aotc_runtime* rt, void* stream) {
  return guarded(rt, [&] {
    if (rt->deviceName.rfind("cuda", 0) == 0) rt->session->setStream(stream);
  });
}
int aotc_synchronize(aotc_runtime* rt) { return guarded(rt, [&] { rt->session->synchronize(); }); }
int aotc_set_graphs(aotc_runtime* rt, int enabled) { return guarded(rt, [&] { rt->session->setGraphs(enabled != 0); }); }
int aotc_output(aotc_runtime* rt, size_t index, aotc_tensor_view* out) {
  return guarded(rt, [&] {
    if (index >= rt->session->numOutputs())
      throw aotc::UserError(aotc::SourceLoc{"", "output." + std::to_string(index), ""}, "the artifact has no output of this index");
    toC(rt->session->output(index), out);
  });
}
int aotc_grad(aotc_runtime* rt, const char* input, aotc_tensor_view* out) {
  return guarded(rt, [&] { toC(rt->session->grad(input ? input : ""), out); });
}
int aotc_input(aotc_runtime* rt, const char* name, aotc_tensor_view* out) {
  return guarded(rt, [&] {
    if (!rt->session->manifest().input(name ? name : ""))
      throw aotc::UserError(aotc::SourceLoc{"", name ? name : "", ""}, "the artifact has no input of this name");
    toC(rt->session->input(name), out);
  });
}
int aotc_loss_scaling(const aotc_runtime* rt) { return rt && rt->session && rt->session->manifest().loss_scaling ? 1 : 0; }
int aotc_loss_scale(aotc_runtime* rt, float* scale, int* found_inf) {
  return guarded(rt, [&] {
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
  return guarded(rt, [&] { *out = reinterpret_cast<void*>(static_cast<uintptr_t>(rt->device->allocate(bytes))); });
}
int aotc_free(aotc_runtime* rt, void* p) {
  return guarded(rt, [&] { rt->device->release(reinterpret_cast<uintptr_t>(p)); });
}
int aotc_copy_to_device(aotc_runtime* rt, void* dst, const void* src, size_t bytes) {
  return guarded(rt, [&] { rt->device->copyToDevice(reinterpret_cast<uintptr_t>(dst), src, bytes); });
}
int aotc_copy_to_host(aotc_runtime* rt, void* dst, const void* src, size_t bytes) {
  return guarded(rt, [&] { rt->device->copyToHost(dst, reinterpret_cast<uintptr_t>(src), bytes); });
}

}  // extern "C"
