//===- executor.cpp - One executor over a Device (Note [One executor]) -----===//
#include "aotc/runtime/executor.h"

#include <algorithm>

#include <cstring>
#include <filesystem>
#include <set>

#include "aotc/ir/safetensors.h"
#include "aotc/support/diag.h"

namespace aotc {

namespace fs = std::filesystem;

namespace {

/// Visits each element of a strided layout: (row-major index, storage element offset).
template <typename F>
void forLayout(const plan::Layout& l, F f) {
  const int64_t n = l.numel();
  Ints c(l.shape.size(), 0);
  for (int64_t e = 0; e < n; ++e) {
    int64_t off = l.offset;
    for (size_t d = 0; d < c.size(); ++d) off += c[d] * l.strides[d];
    f(e, off);
    for (size_t d = c.size(); d-- > 0;) {
      if (++c[d] < l.shape[d]) break;
      c[d] = 0;
    }
  }
}

size_t spanBytes(const plan::Layout& l) { return static_cast<size_t>(std::max<int64_t>(l.span(), 0) * dtypeSize(l.dtype)); }

std::string dims(const Ints& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

HostTensor readDeviceTensor(Device& dev, const DeviceTensor& t) {
  plan::Layout l = t.layout();
  std::vector<unsigned char> host(spanBytes(l) + 1);
  if (spanBytes(l)) dev.copyToHost(host.data(), t.data, spanBytes(l));
  HostTensor r = HostTensor::zeros(t.dtype, t.shape);
  const int64_t es = dtypeSize(t.dtype);
  forLayout(l, [&](int64_t e, int64_t off) { r.data[static_cast<size_t>(e)] = loadElement(t.dtype, host.data() + off * es); });
  return r;
}

void writeDeviceTensor(Device& dev, const DeviceTensor& t, const HostTensor& v) {
  plan::Layout l = t.layout();
  AOTC_CHECK(v.sizes == t.shape, "writeDeviceTensor: shape mismatch");
  std::vector<unsigned char> host(spanBytes(l) + 1);
  // Read first: a strided tensor need not cover its span.
  if (spanBytes(l)) dev.copyToHost(host.data(), t.data, spanBytes(l));
  const int64_t es = dtypeSize(t.dtype);
  forLayout(l, [&](int64_t e, int64_t off) { storeElement(t.dtype, host.data() + off * es, v.data[static_cast<size_t>(e)]); });
  if (spanBytes(l)) dev.copyToDevice(t.data, host.data(), spanBytes(l));
}

DeviceTensor uploadTensor(Device& dev, const plan::Layout& layout, const HostTensor& v, std::vector<DevicePtr>& owned) {
  DeviceTensor t{dev.allocate(std::max<size_t>(spanBytes(layout), 1)), layout.dtype, layout.shape, layout.strides, 0};
  owned.push_back(t.data);
  writeDeviceTensor(dev, t, v);
  return t;
}

/// One program's memory: its arena and the root pointer of every buffer.
struct Session::Arena {
  Device& dev;
  DevicePtr base = 0;
  std::map<std::string, DevicePtr> root;  ///< buffer name -> root pointer
  explicit Arena(Device& d) : dev(d) {}
  ~Arena() {
    if (base) dev.release(base);
  }
};

Session::Session(plan::Manifest manifest, std::string dir, Device& device) : m_(std::move(manifest)), dir_(std::move(dir)), dev_(device) {
  dev_.loadKernels(m_, dir_);
}

Session::~Session() {
  fwd_.reset();
  bwd_.reset();
  for (DevicePtr p : owned_) dev_.release(p);
}

namespace {

/// Note [Binding checks]: a tensor the caller binds must have the dtype and
/// shape the artifact takes, its layout (strides matter only along dims
/// longer than one), offset 0 and an aligned, non-null data pointer; `whose`
/// names what it is checked against.
void checkBinding(const std::string& name, const DeviceTensor& t, const plan::Layout& want, int64_t align, const char* whose) {
  auto fail = [&](const std::string& msg) { throw UserError(SourceLoc{"", name, "bind"}, msg); };
  if (t.dtype != want.dtype) fail(cat("dtype ", dtypeName(t.dtype), " does not match ", whose, " ", dtypeName(want.dtype)));
  if (t.shape != want.shape) fail("shape " + dims(t.shape) + " does not match " + whose + " " + dims(want.shape));
  if (t.strides.size() != t.shape.size()) fail("strides and shape have different ranks");
  for (size_t d = 0; d < t.shape.size(); ++d)
    if (t.shape[d] > 1 && t.strides[d] != want.strides[d])
      fail("strides " + dims(t.strides) + " do not match " + whose + " " + dims(want.strides) + " (give a tensor with this layout)");
  if (t.offset != 0) fail("has an element offset; bind the tensor's data pointer (offset 0)");
  if (t.data == 0 && want.numel() > 0) fail("null data pointer");
  if (t.data % static_cast<uint64_t>(align) != 0)
    fail(cat("data pointer is not ", align, "-byte aligned (the kernels use ", align, "-byte accesses)"));
}

}  // namespace

void Session::bind(const std::string& name, const DeviceTensor& t) {
  const plan::InputSpec* in = m_.input(name);
  if (!in) throw UserError(SourceLoc{"", name, "bind"}, "the artifact has no input of this name");
  if (m_.symbolic && t.shape != in->layout.shape) {
    // Note [Symbolic manifest]: a new size rebinds the symbols; the inputs
    // bound before must agree with it.
    std::map<std::string, Ints> shapes;
    for (auto& [n, b] : bound_) shapes[n] = b.shape;
    shapes[in->name] = t.shape;
    sym::Bindings nb = plan::bindSymbols(*m_.symbolic, shapes, (fs::path(dir_) / "manifest.json").string(), &m_.binding);
    if (nb != m_.binding) {
      std::shared_ptr<const plan::SymbolicManifest> s = m_.symbolic;
      m_ = plan::instantiateManifest(s, nb, (fs::path(dir_) / "manifest.json").string(), int64_t{1} << 40);
      fwd_.reset();
      bwd_.reset();
      gradOutputs_.clear();
      for (auto& [tangent, p] : zeros_) {
        dev_.release(p);
        owned_.erase(std::remove(owned_.begin(), owned_.end(), p), owned_.end());
      }
      zeros_.clear();
      in = m_.input(name);
    }
  }
  checkBinding(name, t, in->layout, m_.runtime_checks.input_alignment_bytes, "the artifact's");
  DeviceTensor b = t;
  b.strides = in->layout.strides;
  bound_[in->name] = b;
  forwardDone_ = backwardDone_ = false;
}

void Session::bindGradOutput(size_t index, const DeviceTensor& t) {
  const std::string name = cat("grad_output.", index);
  if (index >= m_.outputs.size() || !m_.outputs[index].tangent)
    throw UserError(SourceLoc{"", name, "bind"}, "no differentiable output has this index");
  const plan::Buffer* b = m_.backward.buffer(*m_.outputs[index].tangent);
  if (!b) throw UserError(SourceLoc{"", name, "bind"}, "the backward does not read this grad output");
  checkBinding(name, t, b->layout, m_.runtime_checks.input_alignment_bytes, "the output's");
  gradOutputs_[index] = t;
  backwardDone_ = false;
}

void Session::uploadWeights() {
  // Note [Artifact weights]: the file holds each tensor under its input's
  // name; it is read once, for every input the caller has not bound.
  std::vector<const plan::InputSpec*> need;
  for (const plan::InputSpec& in : m_.inputs)
    if (in.role != "user_input" && !bound_.count(in.name) && !weights_.count(in.name)) need.push_back(&in);
  if (need.empty() || m_.weights.empty()) return;
  const std::string file = (fs::path(dir_) / m_.weights).string();
  std::map<std::string, HostTensor> all = readSafetensors(file);
  for (const plan::InputSpec* in : need) {
    auto it = all.find(in->name);
    if (it == all.end()) continue;  // reported when the input is needed
    if (it->second.sizes != in->layout.shape || it->second.dtype != in->layout.dtype)
      throw UserError(SourceLoc{file, in->name, "weights"}, "does not match the input's dtype and shape");
    weights_[in->name] = uploadTensor(dev_, plan::Layout{in->layout.dtype, in->layout.shape, in->layout.strides, 0}, it->second, owned_).data;
  }
}

DevicePtr Session::root(const plan::InputSpec& in) const {
  if (auto it = bound_.find(in.name); it != bound_.end()) return it->second.data;
  if (auto it = weights_.find(in.name); it != weights_.end()) return it->second;
  throw UserError(SourceLoc{"", in.name, "input"},
                  m_.weights.empty() || in.role == "user_input"
                      ? std::string("no tensor bound to this input")
                      : "no tensor bound to this input, and the artifact's " + m_.weights + " does not hold it");
}

void Session::run(plan::Phase phase, const std::map<std::string, DevicePtr>& roots) {
  const plan::Program& prog = m_.program(phase);
  const std::string pname = phase == plan::Phase::Forward ? "forward" : "backward";
  auto arena = std::make_unique<Arena>(dev_);
  if (prog.arena_bytes > 0) arena->base = dev_.allocate(static_cast<size_t>(prog.arena_bytes));
  for (const plan::Buffer& b : prog.buffers) {
    switch (b.kind) {
      case plan::BufferKind::Input: {
        auto it = roots.find(b.name);
        AOTC_CHECK(it != roots.end(), pname, ": input buffer '", b.name, "' is not bound");
        arena->root[b.name] = it->second;
        break;
      }
      case plan::BufferKind::Alloc: arena->root[b.name] = arena->base + static_cast<DevicePtr>(b.arena_offset); break;
      case plan::BufferKind::View: arena->root[b.name] = arena->root.at(b.base); break;
    }
  }
  auto ptr = [&](const std::string& name) { return arena->root.at(name); };
  for (size_t i = 0; i < prog.steps.size(); ++i) {
    const plan::Step& st = prog.steps[i];
    if (progress_) progress_(pname, i, prog.steps.size());
    try {
      if (const plan::Launch* l = std::get_if<plan::Launch>(&st)) {
        std::vector<DevicePtr> args;
        for (const std::string& a : l->args) args.push_back(ptr(a));
        dev_.launch(*l, args);
      } else if (const plan::Gemm* g = std::get_if<plan::Gemm>(&st)) {
        dev_.gemm(*g, ptr(g->A.buffer), ptr(g->B.buffer), ptr(g->C.buffer), g->bias ? ptr(g->bias->buffer) : 0);
      } else {
        const plan::Conv& c = std::get<plan::Conv>(st);
        dev_.conv(c, ptr(c.a.buffer), ptr(c.b.buffer), ptr(c.out.buffer));
      }
    } catch (const UserError& e) {
      // Every step error names the program, the step, the kernel or call and
      // the graph nodes it came from.
      std::string nodes;
      if (const plan::Launch* l = std::get_if<plan::Launch>(&st)) {
        if (const plan::KernelSpec* k = m_.kernel(l->kernel))
          for (const std::string& n : k->nodes) nodes += (nodes.empty() ? "" : ", ") + n;
      } else if (const plan::Gemm* g = std::get_if<plan::Gemm>(&st)) {
        nodes = g->node;
      } else {
        nodes = std::get<plan::Conv>(st).node;
      }
      throw UserError(SourceLoc{pname, nodes, dev_.name()},
                      cat("step ", i, " (", plan::stepLabel(st), "): ", e.diagnostics().front().message));
    }
  }
  dev_.synchronize();
  (phase == plan::Phase::Forward ? fwd_ : bwd_) = std::move(arena);
}

void Session::forward() {
  uploadWeights();
  std::map<std::string, DevicePtr> roots;
  for (const plan::InputSpec& in : m_.inputs) roots[in.name] = root(in);
  bwd_.reset();
  fwd_.reset();
  run(plan::Phase::Forward, roots);
  forwardDone_ = true;
  backwardDone_ = false;
}

void Session::backward() {
  if (!forwardDone_) throw UserError(SourceLoc{"", "", "backward"}, "run the forward first");
  std::map<std::string, DevicePtr> roots;
  for (const plan::Buffer& b : m_.backward.buffers) {
    if (b.kind != plan::BufferKind::Input) continue;
    if (b.role == "saved") {
      // The saved tensor stays where the forward computed it; the backward
      // reads it with the same layout (checked).
      const plan::Buffer* f = m_.forward.buffer(b.name);
      AOTC_CHECK(f && f->layout == b.layout, "backward: saved tensor '", b.name, "' has another layout in the forward");
      roots[b.name] = fwd_->root.at(b.name);
    } else if (b.role == "tangent") {
      DevicePtr p = 0;
      for (const plan::OutputSpec& o : m_.outputs)
        if (o.tangent == b.name) {
          auto it = gradOutputs_.find(o.index);
          if (it != gradOutputs_.end()) p = it->second.data;
        }
      if (!p) {  // a grad output not given is zero (one zeroed buffer per tangent, kept for the session)
        auto z = zeros_.find(b.name);
        if (z == zeros_.end()) {
          z = zeros_.emplace(b.name, dev_.allocate(std::max<size_t>(spanBytes(b.layout), 1))).first;
          owned_.push_back(z->second);
        }
        p = z->second;
      }
      roots[b.name] = p;
    } else {
      roots[b.name] = root(*m_.input(b.name));
    }
  }
  run(plan::Phase::Backward, roots);
  backwardDone_ = true;
}

DeviceTensor Session::output(size_t index) const {
  AOTC_CHECK(forwardDone_, "output: run the forward first");
  AOTC_CHECK(index < m_.outputs.size(), "output ", index, " of ", m_.outputs.size());
  const plan::OutputSpec& o = m_.outputs[index];
  if (o.alias) {
    // A view of the caller's tensor, regenerated by replaying the view chain
    // on the tensor as bound (its original metadata).
    const plan::InputSpec* in = m_.input(o.alias->input);
    plan::Layout l = plan::applyViewChain(plan::Layout{in->layout.dtype, in->layout.shape, in->layout.strides, 0}, o.alias->view_chain);
    return DeviceTensor{root(*in), l.dtype, l.shape, l.strides, l.offset};
  }
  const plan::Buffer* b = m_.forward.buffer(o.buffer);
  AOTC_CHECK(b, "output buffer '", o.buffer, "' is not in the forward");
  return DeviceTensor{fwd_->root.at(o.buffer), b->layout.dtype, b->layout.shape, b->layout.strides, b->layout.offset};
}

DeviceTensor Session::input(const std::string& name) const {
  const plan::InputSpec* in = m_.input(name);
  AOTC_CHECK(in, "no input '", name, "'");
  const DevicePtr data = root(*in);
  if (forwardDone_ && in->metadata_after_forward) {
    // The view chain replayed on the tensor as bound (as the reference runtime
    // does); the recorded sizes must agree.
    plan::Layout l = plan::applyViewChain(plan::Layout{in->layout.dtype, in->layout.shape, in->layout.strides, 0},
                                          in->metadata_after_forward->view_chain);
    AOTC_CHECK(l.shape == in->metadata_after_forward->shape, "input '", name, "': the metadata view chain gives another shape");
    return DeviceTensor{data, l.dtype, l.shape, l.strides, l.offset};
  }
  return DeviceTensor{data, in->layout.dtype, in->layout.shape, in->layout.strides, 0};
}

DeviceTensor Session::grad(const std::string& input) const {
  AOTC_CHECK(backwardDone_, "grad: run the backward first");
  for (const plan::GradSpec& g : m_.grads)
    if (g.input == input) {
      const plan::Buffer* b = m_.backward.buffer(g.buffer);
      AOTC_CHECK(b, "grad buffer '", g.buffer, "' is not in the backward");
      return DeviceTensor{bwd_->root.at(g.buffer), b->layout.dtype, b->layout.shape, b->layout.strides, b->layout.offset};
    }
  throw UserError(SourceLoc{"", input, "grad"}, "the artifact computes no gradient for this input");
}

}  // namespace aotc
