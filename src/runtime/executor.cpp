//===- executor.cpp - One executor over a Device (Note [One executor]) -----===//
#include "aotc/runtime/executor.h"

#include <cmath>
#include <algorithm>

#include <cstdlib>
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

/// Note [Prepared plan]: one phase, built once per size binding.  `roots`
/// holds every buffer's root pointer at a fixed address (the device's
/// prepared steps read it); a run writes the entries of its input buffers
/// and views, nothing else.
struct Session::PhasePlan {
  /// Where an input buffer's pointer comes from at each run.
  struct Source {
    enum Kind { Input, ForwardRoot, Tangent } kind = Input;
    uint32_t buffer = 0;   ///< index in roots
    size_t input = 0;      ///< Input: the manifest input
    uint32_t from = 0;     ///< ForwardRoot: index in the forward's roots
    size_t output = 0;     ///< Tangent: the output whose gradient it is
    bool hasOutput = false;
    DevicePtr zeros = 0;   ///< Tangent: the zero tensor used when none is bound
    DevicePtr slot = 0;    ///< staged (Note [Staged inputs]): the arena slot it is copied to
    size_t bytes = 0;
  };
  Device& dev;
  plan::Phase phase;
  const plan::Program* prog = nullptr;
  DevicePtr arena = 0;
  std::vector<DevicePtr> roots;
  std::map<std::string, uint32_t> index;  ///< buffer name -> index in roots
  std::vector<Source> sources;
  std::vector<std::pair<uint32_t, uint32_t>> views;  ///< (view, its base)
  std::vector<uint32_t> inputBuffers;                ///< the graph key's buffers
  std::unique_ptr<PreparedPhase> steps;
  GraphHandle graph;
  std::vector<DevicePtr> graphKey;
  /// The backward's: Note [Training step]'s one graph of both phases, and its key.
  GraphHandle stepGraph;
  std::vector<DevicePtr> stepKey;
  PhasePlan(Device& d, plan::Phase p) : dev(d), phase(p) {}
  ~PhasePlan() {
    stepGraph.reset();
    graph.reset();
    steps.reset();
    if (arena) dev.release(arena);
  }
  DevicePtr rootOf(const std::string& name) const { return roots.at(index.at(name)); }
};

SessionOptions SessionOptions::fromEnvironment() {
  SessionOptions o;
  auto on = [](const char* v) { return v && *v && std::string(v) != "0"; };
  if (on(std::getenv("AOTC_SYNC_STEPS"))) o.sync_steps = true;
  if (const char* g = std::getenv("AOTC_CUDA_GRAPHS"); g && std::string(g) == "0") o.graphs = false;
  // Tests' switches (scripts/runtime_calls_test.py): results must not change.
  if (on(std::getenv("AOTC_POISON_ARENAS"))) o.poison_arenas = true;
  if (on(std::getenv("AOTC_STAGE_INPUTS"))) o.stage_inputs = true;
  return o;
}

Session::Session(plan::Manifest manifest, std::string dir, Device& device, SessionOptions options)
    : m_(std::move(manifest)), dir_(std::move(dir)), dev_(device), opts_(options) {
  if (opts_.after_step) opts_.sync_steps = true;
  if (opts_.sync_steps) opts_.graphs = false;
  inputRoots_.assign(m_.inputs.size(), 0);
  dev_.loadKernels(m_, dir_);
}

Session::~Session() {
  try {
    dev_.synchronize();  // nothing enqueued may outlive the memory it uses
  } catch (const std::exception&) {
  }
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

void Session::invalidate() {
  if (fwd_ || bwd_) dev_.synchronize();  // the old plans' memory may still be in use
  fwd_.reset();
  bwd_.reset();
  for (auto& [tangent, p] : zeros_) {
    dev_.release(p);
    owned_.erase(std::remove(owned_.begin(), owned_.end(), p), owned_.end());
  }
  zeros_.clear();
}

void Session::bind(const std::string& name, const DeviceTensor& t) {
  const plan::InputSpec* in = m_.input(name);
  if (!in) throw UserError(SourceLoc{"", name, "bind"}, "the artifact has no input of this name");
  if (m_.symbolic && t.shape != in->layout.shape) {
    // Note [Symbolic manifest]: a new size rebinds the symbols; the inputs
    // bound before must agree with it.  The plans are prepared again for the
    // new sizes (Note [Prepared plan]).
    std::map<std::string, Ints> shapes;
    for (auto& [n, b] : bound_) shapes[n] = b.shape;
    shapes[in->name] = t.shape;
    sym::Bindings nb = plan::bindSymbols(*m_.symbolic, shapes, (fs::path(dir_) / "manifest.json").string(), &m_.binding);
    if (nb != m_.binding) {
      std::shared_ptr<const plan::SymbolicManifest> s = m_.symbolic;
      plan::Manifest next = plan::instantiateManifest(s, nb, (fs::path(dir_) / "manifest.json").string(), int64_t{1} << 40);
      invalidate();
      gradOutputs_.clear();
      m_ = std::move(next);
      in = m_.input(name);
    }
  }
  checkBinding(name, t, in->layout, m_.runtime_checks.input_alignment_bytes, "the artifact's");
  DeviceTensor b = t;
  b.strides = in->layout.strides;
  bound_[in->name] = b;
  inputRoots_[static_cast<size_t>(in - m_.inputs.data())] = b.data;
  forwardDone_ = backwardDone_ = false;
}

void Session::bindGradOutput(size_t index, const DeviceTensor& t) {
  const std::string name = cat("grad_output.", index);
  if (index >= m_.outputs.size() || !m_.outputs[index].tangent)
    throw UserError(SourceLoc{"", name, "bind"}, cat("no differentiable output has this index", plan::differentiableOutputsHint(m_.outputs)));
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
  if (!need.empty() && !m_.weights.empty()) {
    const std::string file = (fs::path(dir_) / m_.weights).string();
    std::map<std::string, HostTensor> all = readSafetensors(file);
    for (const plan::InputSpec* in : need) {
      auto it = all.find(in->name);
      if (it == all.end()) continue;  // reported when the input is needed (or zero-initialized below)
      if (it->second.sizes != in->layout.shape || it->second.dtype != in->layout.dtype)
        throw UserError(SourceLoc{file, in->name, "weights"}, "does not match the input's dtype and shape");
      weights_[in->name] = uploadTensor(dev_, plan::Layout{in->layout.dtype, in->layout.shape, in->layout.strides, 0}, it->second, owned_).data;
    }
  }
  // Inputs that start at zeros (plan::InputSpec::zero_init): a fresh
  // allocation, which Device::allocate zeroes.
  for (const plan::InputSpec& in : m_.inputs)
    if (in.zero_init && !bound_.count(in.name) && !weights_.count(in.name)) {
      const plan::Layout l{in.layout.dtype, in.layout.shape, in.layout.strides, 0};
      const DevicePtr p = dev_.allocate(std::max<size_t>(spanBytes(l), 1));
      owned_.push_back(p);
      weights_[in.name] = p;
    }
  for (size_t i = 0; i < m_.inputs.size(); ++i)
    if (!bound_.count(m_.inputs[i].name))
      if (auto it = weights_.find(m_.inputs[i].name); it != weights_.end()) inputRoots_[i] = it->second;
}

void Session::setScalar(const std::string& name, double value) {
  const plan::InputSpec* found = m_.input(name);  // by name or alias
  if (!found) throw UserError(SourceLoc{"", name, "input"}, "the artifact has no input of this name");
  const plan::InputSpec& in = *found;
  const size_t i = static_cast<size_t>(found - m_.inputs.data());
  int64_t n = 1;
  for (int64_t d : in.layout.shape) n *= d;
  if (n != 1) throw UserError(SourceLoc{"", name, "input"}, "is not a scalar (one element): bind a tensor instead");
  if (!std::isfinite(value) && !isFloating(in.layout.dtype))
    throw UserError(SourceLoc{"", name, "input"}, cat("cannot hold ", value, " (", dtypeName(in.layout.dtype), ")"));
  uint32_t words[2] = {0, 0};
  size_t count = 1;
  switch (in.layout.dtype) {
    case DType::F32: {
      const float f = static_cast<float>(value);
      std::memcpy(words, &f, sizeof f);
      break;
    }
    case DType::F64:
      std::memcpy(words, &value, sizeof value);
      count = 2;
      break;
    case DType::I32: {
      if (value != std::trunc(value) || value < INT32_MIN || value > INT32_MAX)
        throw UserError(SourceLoc{"", name, "input"}, cat("cannot hold ", value, " (i32)"));
      const int32_t v = static_cast<int32_t>(value);
      std::memcpy(words, &v, sizeof v);
      break;
    }
    case DType::I64: {
      if (value != std::trunc(value) || std::fabs(value) > 9007199254740992.0)
        throw UserError(SourceLoc{"", name, "input"}, cat("cannot hold ", value, " exactly (i64)"));
      const int64_t v = static_cast<int64_t>(value);
      std::memcpy(words, &v, sizeof v);
      count = 2;
      break;
    }
    default:
      throw UserError(SourceLoc{"", name, "input"}, cat("a ", dtypeName(in.layout.dtype), " scalar: set it by binding a tensor"));
  }
  if (!bound_.count(in.name)) uploadWeights();
  const DevicePtr p = root(i);
  // Little-endian words, each its own 4-byte write.
  for (size_t w = 0; w < count; ++w) dev_.fillWords(p + w * sizeof(uint32_t), words[w], 1);
}

DevicePtr Session::root(size_t i) const {
  if (inputRoots_[i]) return inputRoots_[i];
  const plan::InputSpec& in = m_.inputs[i];
  throw UserError(SourceLoc{"", in.name, "input"},
                  m_.weights.empty() || in.role == "user_input"
                      ? std::string("no tensor bound to this input")
                      : "no tensor bound to this input, and the artifact's " + m_.weights + " does not hold it");
}

DevicePtr Session::root(const plan::InputSpec& in) const { return root(static_cast<size_t>(&in - m_.inputs.data())); }

namespace {

size_t alignUp(size_t v) { return (v + 255) / 256 * 256; }

/// The buffers a step names, in the order PhaseArgs gives them.
std::vector<std::string> stepArgNames(const plan::Step& st) {
  if (const plan::Launch* l = std::get_if<plan::Launch>(&st)) return l->args;
  if (const plan::Gemm* g = std::get_if<plan::Gemm>(&st)) {
    std::vector<std::string> r{g->A.buffer, g->B.buffer, g->C.buffer};
    if (g->bias) r.push_back(g->bias->buffer);
    return r;
  }
  const plan::Conv& c = std::get<plan::Conv>(st);
  return {c.a.buffer, c.b.buffer, c.out.buffer};
}

}  // namespace

// Note [Staged inputs]: a captured phase (Note [Phase graphs]) reads every
// address it was captured with.  A training loop binds a fresh batch (and
// fresh grad outputs) every step, so those tensors are copied, at the start
// of the phase, into slots of the phase's arena that the graph reads: a new
// batch costs one device-to-device copy, never a capture.  Only tensors the
// artifact does not write (no mutation, no tied names, no metadata change)
// are staged, so the caller's tensor and the slot always hold the same data;
// parameters, buffers and mutated inputs are read in place, and a graph is
// captured again only when one of those moves.
void Session::prepare() {
  uploadWeights();
  const bool stage = opts_.stage_inputs || (opts_.graphs && dev_.canCapture());
  auto build = [&](plan::Phase phase) {
    auto p = std::make_unique<PhasePlan>(dev_, phase);
    const plan::Program& prog = m_.program(phase);
    p->prog = &prog;
    p->roots.assign(prog.buffers.size(), 0);
    for (size_t i = 0; i < prog.buffers.size(); ++i) p->index[prog.buffers[i].name] = static_cast<uint32_t>(i);
    size_t bytes = static_cast<size_t>(std::max<int64_t>(prog.arena_bytes, 0));
    std::vector<std::pair<size_t, size_t>> slots;  // (source, arena offset)
    for (size_t i = 0; i < prog.buffers.size(); ++i) {
      const plan::Buffer& b = prog.buffers[i];
      if (b.kind != plan::BufferKind::Input) continue;
      PhasePlan::Source src;
      src.buffer = static_cast<uint32_t>(i);
      p->inputBuffers.push_back(src.buffer);
      bool stageIt = false;
      if (phase == plan::Phase::Backward && b.role == "saved") {
        const plan::Buffer* f = m_.forward.buffer(b.name);
        AOTC_CHECK(f && f->layout == b.layout, "backward: saved tensor '", b.name, "' has another layout in the forward");
        src.kind = PhasePlan::Source::ForwardRoot;
        src.from = fwd_->index.at(b.name);
      } else if (phase == plan::Phase::Backward && b.role == "tangent") {
        src.kind = PhasePlan::Source::Tangent;
        for (const plan::OutputSpec& o : m_.outputs)
          if (o.tangent == b.name) {
            src.output = o.index;
            src.hasOutput = true;
          }
        auto z = zeros_.find(b.name);  // a grad output not given is zero (kept for the session)
        if (z == zeros_.end()) {
          z = zeros_.emplace(b.name, dev_.allocate(std::max<size_t>(spanBytes(b.layout), 1))).first;
          owned_.push_back(z->second);
        }
        src.zeros = z->second;
        stageIt = stage;
      } else if (phase == plan::Phase::Backward && fwd_->index.count(b.name) &&
                 m_.forward.buffers[fwd_->index.at(b.name)].kind == plan::BufferKind::Input) {
        // An input the forward read too: where the forward read it (its
        // staged slot, or the caller's tensor).
        src.kind = PhasePlan::Source::ForwardRoot;
        src.from = fwd_->index.at(b.name);
      } else {
        const plan::InputSpec* in = m_.input(b.name);
        AOTC_CHECK(in, plan::phaseName(phase), ": input buffer '", b.name, "' is no input of the artifact");
        src.kind = PhasePlan::Source::Input;
        src.input = static_cast<size_t>(in - m_.inputs.data());
        stageIt = stage && in->role == "user_input" && in->mutation == plan::Mutation::None && in->aliases.empty() &&
                  !in->metadata_after_forward;
      }
      if (stageIt) {
        src.bytes = spanBytes(b.layout);
        bytes = alignUp(bytes);
        slots.emplace_back(p->sources.size(), bytes);
        bytes += std::max<size_t>(src.bytes, 1);
      }
      p->sources.push_back(src);
    }
    if (bytes > 0) p->arena = dev_.allocate(bytes);
    for (auto [s, off] : slots) p->sources[s].slot = p->arena + off;
    for (size_t i = 0; i < prog.buffers.size(); ++i) {
      const plan::Buffer& b = prog.buffers[i];
      if (b.kind == plan::BufferKind::Alloc) p->roots[i] = p->arena + static_cast<DevicePtr>(b.arena_offset);
      if (b.kind == plan::BufferKind::View) {
        auto it = p->index.find(b.base);
        AOTC_CHECK(it != p->index.end(), plan::phaseName(phase), ": view '", b.name, "' of unknown buffer '", b.base, "'");
        p->views.emplace_back(static_cast<uint32_t>(i), it->second);
      }
    }
    PhaseArgs args;
    args.roots = &p->roots;
    for (const plan::Step& st : prog.steps) {
      std::vector<uint32_t> idx;
      for (const std::string& n : stepArgNames(st)) {
        auto it = p->index.find(n);
        AOTC_CHECK(it != p->index.end(), plan::phaseName(phase), ": a step names unknown buffer '", n, "'");
        idx.push_back(it->second);
      }
      args.steps.push_back(std::move(idx));
    }
    p->steps = dev_.prepare(m_, phase, args);
    return p;
  };
  // Both phases or neither: a backward plan that failed to build must not
  // leave a forward plan that later calls would take for a prepared session.
  fwd_ = build(plan::Phase::Forward);
  try {
    bwd_ = build(plan::Phase::Backward);
  } catch (...) {
    fwd_.reset();
    throw;
  }
}

void Session::stepError(plan::Phase phase, size_t i, const std::string& message) const {
  // Every step error names the program, the step, the kernel or call and
  // the graph nodes it came from.
  const plan::Program& prog = m_.program(phase);
  AOTC_CHECK(i < prog.steps.size(), "a step error names step ", i, " of ", prog.steps.size());
  const plan::Step& st = prog.steps[i];
  std::string nodes;
  if (const plan::Launch* l = std::get_if<plan::Launch>(&st)) {
    if (const plan::KernelSpec* k = m_.kernel(l->kernel))
      for (const std::string& n : k->nodes) nodes += (nodes.empty() ? "" : ", ") + n;
  } else if (const plan::Gemm* g = std::get_if<plan::Gemm>(&st)) {
    nodes = g->node;
  } else {
    nodes = std::get<plan::Conv>(st).node;
  }
  throw UserError(SourceLoc{plan::phaseName(phase), nodes, dev_.name()}, cat("step ", i, " (", plan::stepLabel(st), "): ", message));
}

void Session::checkSynchronized(int64_t tag) const {
  if (!tag) return;
  const plan::Phase phase = tag >= (int64_t{1} << 24) ? plan::Phase::Backward : plan::Phase::Forward;
  stepError(phase, static_cast<size_t>((tag & ((int64_t{1} << 24) - 1)) - 1), "index out of range (an index tensor holds a value outside its dim)");
}

std::vector<Session::StagedCopy> Session::bindPhase(PhasePlan& p) {
  // This run's pointers: the only entries of the table that change.
  std::vector<StagedCopy> copies;
  for (const PhasePlan::Source& s : p.sources) {
    DevicePtr ptr = 0;
    switch (s.kind) {
      case PhasePlan::Source::Input: ptr = root(s.input); break;
      case PhasePlan::Source::ForwardRoot: ptr = fwd_->roots[s.from]; break;
      case PhasePlan::Source::Tangent: {
        auto it = s.hasOutput ? gradOutputs_.find(s.output) : gradOutputs_.end();
        ptr = it != gradOutputs_.end() ? it->second.data : s.zeros;
        break;
      }
    }
    if (s.slot) copies.push_back(StagedCopy{ptr, s.slot, s.bytes});
    p.roots[s.buffer] = s.slot ? s.slot : ptr;
  }
  for (auto [v, base] : p.views) p.roots[v] = p.roots[base];
  return copies;
}

void Session::runPhase(PhasePlan& p) {
  const plan::Program& prog = *p.prog;
  const std::string pname = plan::phaseName(p.phase);
  const std::vector<StagedCopy> copies = bindPhase(p);
  dev_.beginPhase();
  if (opts_.poison_arenas && prog.arena_bytes > 0) dev_.fill(p.arena, 0xFF, static_cast<size_t>(prog.arena_bytes));
  for (const StagedCopy& c : copies)
    if (c.bytes) dev_.copyAsync(c.slot, c.from, c.bytes);
  auto enqueue = [&](size_t i) {
    if (progress_) progress_(pname, i, prog.steps.size());
    try {
      p.steps->enqueue(i);
    } catch (const UserError& e) {
      stepError(p.phase, i, e.diagnostics().front().message);
    }
  };
  if (opts_.graphs && dev_.canCapture() && !prog.steps.empty()) {
    // Note [Phase graphs]: captured once per size binding (the arena fixes
    // every internal address; staged inputs fix the batch's) and replayed;
    // captured again only when a tensor read in place has moved.
    std::vector<DevicePtr> key;
    for (uint32_t b : p.inputBuffers) key.push_back(p.roots[b]);
    if (!p.graph || key != p.graphKey) {
      p.graph.reset();
      dev_.beginCapture();
      try {
        for (size_t i = 0; i < prog.steps.size(); ++i) enqueue(i);
      } catch (...) {
        dev_.endCapture();
        throw;
      }
      p.graph = dev_.endCapture();
      p.graphKey = std::move(key);
      ++captures_;
    }
    dev_.launchGraph(p.graph);
  } else {
    for (size_t i = 0; i < prog.steps.size(); ++i) {
      enqueue(i);
      if (opts_.sync_steps) checkSynchronized(dev_.synchronize());
      if (opts_.after_step) opts_.after_step(*this, p.phase, i);
    }
  }
  dev_.endPhase();
  if (!external_) checkSynchronized(dev_.synchronize());
}

// Note [Step trace]: `aotc run --trace FILE` records, after every step, the
// buffers it names; two traces of one artifact on two devices (cuda and
// emulate, which runs the same kernel text on the host) compared in step
// order (scripts/compare_traces.py) name the first step whose results part:
// the kernel, GEMM or convolution to look at, where comparing final results
// says only that something is off.
std::vector<std::pair<std::string, HostTensor>> Session::stepBuffers(plan::Phase phase, size_t step) {
  PhasePlan* p = (phase == plan::Phase::Forward ? fwd_ : bwd_).get();
  if (!p || step >= p->prog->steps.size()) throw UserError(SourceLoc{dir_}, cat("stepBuffers: no step ", step, " in the ", plan::phaseName(phase)));
  std::vector<std::pair<std::string, HostTensor>> r;
  for (const std::string& n : stepArgNames(p->prog->steps[step])) {
    const plan::Buffer* b = p->prog->buffer(n);
    AOTC_CHECK(b, "stepBuffers: unknown buffer ", n);
    const plan::Layout& l = b->layout;
    r.emplace_back(n, readDeviceTensor(dev_, DeviceTensor{p->roots[p->index.at(n)], l.dtype, l.shape, l.strides, l.offset}));
  }
  return r;
}

void Session::setStream(void* stream) {
  dev_.setStream(stream);
  external_ = stream != nullptr;
}

void Session::synchronize() { checkSynchronized(dev_.synchronize()); }

void Session::setGraphs(bool on) {
  if (on && opts_.sync_steps) return;  // stepping synchronously captures nothing
  if (opts_.graphs == on) return;
  opts_.graphs = on;
  invalidate();  // staging follows the choice
  forwardDone_ = backwardDone_ = false;
}

void Session::forward() {
  if (!fwd_ || !bwd_) prepare();
  else if (std::find(inputRoots_.begin(), inputRoots_.end(), DevicePtr{0}) != inputRoots_.end()) uploadWeights();  // unbound since
  for (size_t i = 0; i < m_.inputs.size(); ++i) root(i);  // every input has a tensor
  forwardDone_ = backwardDone_ = false;
  runPhase(*fwd_);
  forwardDone_ = true;
}

// Note [Call order]: the deployment API's callers may call anything in any
// order (c_api.h); a result asked for before the phase that makes it has run
// (or after a bind or setGraphs that made it stale) is the caller's error, a
// UserError naming what to run, never an internal check.
void Session::backward() {
  if (!forwardDone_) throw UserError(SourceLoc{}, "backward: run the forward first (after the last bind)");
  runPhase(*bwd_);
  backwardDone_ = true;
}

// Note [Training step]: with CUDA graphs, the forward's and the backward's
// steps are captured into one graph, keyed by both phases' in-place input
// pointers, and the step is one launch.  Both phases' staged copies go first:
// a staged input is a user input the program never writes, and the seed is
// the session's, so no copy can see the forward's epilogue.  Index errors
// travel as in two phases (each kernel carries its step's tag).
void Session::trainStep() {
  const plan::OutputSpec* loss = nullptr;
  std::string differentiable;
  for (const plan::OutputSpec& o : m_.outputs) {
    if (!o.tangent) continue;
    differentiable += cat(differentiable.empty() ? "" : ", ", "output.", o.index);
    if (loss) throw UserError(SourceLoc{}, "train step: the artifact has more than one differentiable output (" + differentiable +
                                               "...): bind their gradients and run forward and backward");
    loss = &o;
  }
  if (!loss)
    throw UserError(SourceLoc{}, "train step: the artifact has no differentiable output (compile a training program: --train for "
                                 "ONNX and .pt2, parameters that require grad for FX)");
  int64_t n = 1;
  for (int64_t d : loss->shape) n *= d;
  if (n != 1)
    throw UserError(SourceLoc{}, cat("train step: output.", loss->index, " is not a scalar loss (", n,
                                     " elements): bind its gradient and run forward and backward"));
  if (!seed_) {
    seed_ = dev_.allocate(8);
    owned_.push_back(seed_);
    unsigned char one[8] = {0};
    switch (loss->dtype) {
      case DType::F32: { const float f = 1.0f; std::memcpy(one, &f, sizeof f); break; }
      case DType::F64: { const double f = 1.0; std::memcpy(one, &f, sizeof f); break; }
      case DType::BF16: one[1] = 0x3f; one[0] = 0x80; break;
      case DType::F16: one[1] = 0x3c; break;
      default: throw UserError(SourceLoc{}, cat("train step: output.", loss->index, " is ", dtypeName(loss->dtype), ", not a floating loss"));
    }
    dev_.copyToDevice(seed_, one, sizeof one);
  }
  Ints strides(loss->shape.size(), 1);
  gradOutputs_[loss->index] = DeviceTensor{seed_, loss->dtype, loss->shape, strides, 0};
  if (!opts_.graphs || !dev_.canCapture()) {
    forward();
    backward();
    return;
  }
  if (!fwd_ || !bwd_) prepare();
  else if (std::find(inputRoots_.begin(), inputRoots_.end(), DevicePtr{0}) != inputRoots_.end()) uploadWeights();
  for (size_t i = 0; i < m_.inputs.size(); ++i) root(i);
  forwardDone_ = backwardDone_ = false;
  std::vector<StagedCopy> copies = bindPhase(*fwd_);
  for (const StagedCopy& c : bindPhase(*bwd_)) copies.push_back(c);
  std::vector<DevicePtr> key;
  for (const PhasePlan* p : {fwd_.get(), bwd_.get()})
    for (uint32_t b : p->inputBuffers) key.push_back(p->roots[b]);
  dev_.beginPhase();
  for (const PhasePlan* p : {fwd_.get(), bwd_.get()})
    if (opts_.poison_arenas && p->prog->arena_bytes > 0) dev_.fill(p->arena, 0xFF, static_cast<size_t>(p->prog->arena_bytes));
  for (const StagedCopy& c : copies)
    if (c.bytes) dev_.copyAsync(c.slot, c.from, c.bytes);
  if (!bwd_->stepGraph || key != bwd_->stepKey) {
    bwd_->stepGraph.reset();
    dev_.beginCapture();
    try {
      for (PhasePlan* p : {fwd_.get(), bwd_.get()})
        for (size_t i = 0; i < p->prog->steps.size(); ++i) {
          try {
            p->steps->enqueue(i);
          } catch (const UserError& e) {
            stepError(p->phase, i, e.diagnostics().front().message);
          }
        }
    } catch (...) {
      dev_.endCapture();
      throw;
    }
    bwd_->stepGraph = dev_.endCapture();
    bwd_->stepKey = std::move(key);
    ++captures_;
  }
  dev_.launchGraph(bwd_->stepGraph);
  dev_.endPhase();
  if (!external_) checkSynchronized(dev_.synchronize());
  forwardDone_ = backwardDone_ = true;
}

DeviceTensor Session::output(size_t index) const {
  if (index >= m_.outputs.size())
    throw UserError(SourceLoc{}, cat("output ", index, ": the artifact has ", m_.outputs.size(), " outputs"));
  if (!forwardDone_) throw UserError(SourceLoc{}, cat("output ", index, ": run the forward first (after the last bind)"));
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
  return DeviceTensor{fwd_->rootOf(o.buffer), b->layout.dtype, b->layout.shape, b->layout.strides, b->layout.offset};
}

DeviceTensor Session::input(const std::string& name) const {
  const plan::InputSpec* in = m_.input(name);
  if (!in) throw UserError(SourceLoc{"", name, "input"}, "the artifact has no input of this name");
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
  for (const plan::GradSpec& g : m_.grads)
    if (g.input == input) {
      if (!backwardDone_) throw UserError(SourceLoc{"", input, "grad"}, "run the backward first (after the last forward)");
      const plan::Buffer* b = m_.backward.buffer(g.buffer);
      AOTC_CHECK(b, "grad buffer '", g.buffer, "' is not in the backward");
      return DeviceTensor{bwd_->rootOf(g.buffer), b->layout.dtype, b->layout.shape, b->layout.strides, b->layout.offset};
    }
  throw UserError(SourceLoc{"", input, "grad"}, "the artifact computes no gradient for this input");
}

void Session::unbindWithin(DevicePtr lo, DevicePtr hi) {
  for (auto it = bound_.begin(); it != bound_.end();) {
    if (it->second.data < lo || it->second.data >= hi) {
      ++it;
      continue;
    }
    const plan::InputSpec* in = m_.input(it->first);
    auto w = weights_.find(it->first);
    inputRoots_[static_cast<size_t>(in - m_.inputs.data())] = w != weights_.end() ? w->second : 0;
    it = bound_.erase(it);
  }
  std::erase_if(gradOutputs_, [&](const auto& g) { return g.second.data >= lo && g.second.data < hi; });
}

}  // namespace aotc
