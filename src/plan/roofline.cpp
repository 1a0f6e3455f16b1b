//===- roofline.cpp - Bytes, FLOPs and lower bounds of a plan --------------===//
//
// Note [Roofline] (aotc/plan/roofline.h) says what is counted and why.
//===----------------------------------------------------------------------===//
#include "aotc/plan/roofline.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "aotc/support/diag.h"

namespace aotc::plan {

namespace {

constexpr double T = 1e12;

// Datasheet figures, dense (the sparse figures are twice these).  fp64 is
// the FP64 tensor-core figure where the GPU has one (cuBLAS's DGEMM uses it).
const std::vector<GpuSpec> kGpus = {
    {"H100 SXM", 3.35 * T, {{"fp32", 67 * T}, {"tf32", 494.7 * T}, {"bf16", 989.4 * T}, {"fp16", 989.4 * T}, {"fp64", 67 * T}},
     "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM5 80GB, HBM3); tensor-core figures halved from the sparse ones"},
    {"H100 PCIe", 2.0 * T, {{"fp32", 51 * T}, {"tf32", 378 * T}, {"bf16", 756 * T}, {"fp16", 756 * T}, {"fp64", 51 * T}},
     "NVIDIA H100 Tensor Core GPU datasheet (H100 PCIe 80GB, HBM2e); tensor-core figures halved from the sparse ones"},
    {"H200", 4.8 * T, {{"fp32", 67 * T}, {"tf32", 494.7 * T}, {"bf16", 989.4 * T}, {"fp16", 989.4 * T}, {"fp64", 67 * T}},
     "NVIDIA H200 Tensor Core GPU datasheet (H200 SXM 141GB, HBM3e); tensor-core figures halved from the sparse ones"},
    {"A100 40GB", 1.555 * T, {{"fp32", 19.5 * T}, {"tf32", 156 * T}, {"bf16", 312 * T}, {"fp16", 312 * T}, {"fp64", 19.5 * T}},
     "NVIDIA A100 Tensor Core GPU datasheet (A100 40GB SXM, HBM2)"},
    {"A100 80GB", 2.039 * T, {{"fp32", 19.5 * T}, {"tf32", 156 * T}, {"bf16", 312 * T}, {"fp16", 312 * T}, {"fp64", 19.5 * T}},
     "NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM, HBM2e)"},
    {"L4", 0.3 * T, {{"fp32", 30.3 * T}, {"tf32", 60 * T}, {"bf16", 121 * T}, {"fp16", 121 * T}, {"fp64", 0.47 * T}},
     "NVIDIA L4 Tensor Core GPU datasheet (GDDR6); tensor-core figures halved from the sparse ones; fp64 1/64 of fp32"},
    {"L40S", 0.864 * T, {{"fp32", 91.6 * T}, {"tf32", 183 * T}, {"bf16", 366 * T}, {"fp16", 366 * T}, {"fp64", 1.43 * T}},
     "NVIDIA L40S GPU datasheet (GDDR6); tensor-core figures halved from the sparse ones; fp64 1/64 of fp32"},
    {"RTX 4090", 1.008 * T, {{"fp32", 82.6 * T}, {"tf32", 82.6 * T}, {"bf16", 165.2 * T}, {"fp16", 165.2 * T}, {"fp64", 1.29 * T}},
     "NVIDIA Ada Lovelace architecture whitepaper, appendix (GeForce RTX 4090; FP16/BF16 tensor with FP32 accumulate)"},
};

/// The table's name as a user types it: lower case, '-' for ' '.
std::string slug(const std::string& s) {
  std::string r;
  for (char c : s) r += c == ' ' || c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

const char* const kMaths[] = {"fp32", "tf32", "bf16", "fp16", "fp64"};

/// The math a float GEMM or convolution of `dtype` runs in.
std::string mathOf(DType dtype, const std::string& precision) {
  switch (dtype) {
    case DType::F16: return "fp16";
    case DType::BF16: return "bf16";
    case DType::F64: return "fp64";
    default: return precision == "tf32" ? "tf32" : "fp32";
  }
}

int64_t numel(const Ints& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

/// A launch's bytes without a work record: the spans of its distinct argument buffers.
int64_t argumentBytes(const Program& prog, const Launch& l) {
  int64_t by = 0;
  std::set<std::string> seen;
  for (const std::string& a : l.args)
    if (seen.insert(a).second)
      if (const Buffer* b = prog.buffer(a)) by += b->layout.span() * dtypeSize(b->layout.dtype);
  return by;
}

std::string human(double v, const char* unit) {
  const char* prefixes[] = {"", "K", "M", "G", "T", "P"};
  int p = 0;
  while (std::abs(v) >= 1000 && p < 5) v /= 1000, ++p;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g %s%s", v, prefixes[p], unit);
  return buf;
}

std::string ms(double s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g ms", s * 1e3);
  return buf;
}

ProgramCost cost(const Manifest& m, const Program& prog, const GpuSpec& gpu) {
  ProgramCost pc;
  for (size_t i = 0; i < prog.steps.size(); ++i) {
    StepCost c = stepCost(prog, prog.steps[i], m.precision);
    c.index = i;
    if (const Launch* l = std::get_if<Launch>(&prog.steps[i]))
      if (const KernelSpec* k = m.kernel(l->kernel)) {
        std::set<std::string> seen;
        for (const std::string& n : k->nodes)
          if (seen.insert(n).second) c.nodes.push_back(n);
      }
    const double mem = gpu.bandwidth > 0 ? c.bytes / gpu.bandwidth : 0;
    double math = 0;
    if (c.flops > 0) {
      auto it = gpu.peak.find(c.math);
      math = it != gpu.peak.end() && it->second > 0 ? c.flops / it->second : 0;
    }
    c.bound_s = std::max(mem, math);
    pc.bytes += c.bytes;
    pc.flops += c.flops;
    pc.bound_s += c.bound_s;
    (c.kind == "launch" ? pc.launches : pc.library_calls) += 1;
    pc.steps.push_back(std::move(c));
  }
  return pc;
}

nlohmann::ordered_json stepJson(const StepCost& c) {
  return {{"index", c.index}, {"kind", c.kind}, {"name", c.name}, {"call", c.call}, {"math", c.math},
          {"bytes", c.bytes}, {"flops", c.flops}, {"bound_s", c.bound_s}, {"nodes", c.nodes}};
}

/// A step's nodes in a line: the first few, and how many more.
std::string nodeList(const StepCost& c) {
  std::string r;
  for (size_t i = 0; i < c.nodes.size() && i < 4; ++i) r += (i ? ", " : "") + c.nodes[i];
  if (c.nodes.size() > 4) r += " and " + std::to_string(c.nodes.size() - 4) + " more";
  return r;
}

nlohmann::ordered_json totalsJson(const ProgramCost& p) {
  return {{"bytes", p.bytes}, {"flops", p.flops}, {"bound_s", p.bound_s}, {"launches", p.launches}, {"library_calls", p.library_calls}};
}

/// The `n` largest bounds over both programs, largest first (ties: program, index).
std::vector<std::pair<const char*, const StepCost*>> largest(const Roofline& r, size_t n) {
  std::vector<std::pair<const char*, const StepCost*>> all;
  for (const StepCost& c : r.forward.steps) all.push_back({"forward", &c});
  for (const StepCost& c : r.backward.steps) all.push_back({"backward", &c});
  std::stable_sort(all.begin(), all.end(), [](auto& a, auto& b) { return a.second->bound_s > b.second->bound_s; });
  if (all.size() > n) all.resize(n);
  return all;
}

/// The fusion estimates of one program (FusionEstimate says which).
void fusionEstimates(const Program& prog, const char* name, std::vector<FusionEstimate>& out) {
  auto bytesOf = [&](const std::string& b) -> int64_t {
    const Buffer* buf = prog.buffer(b);
    return buf ? buf->layout.span() * dtypeSize(buf->layout.dtype) : 0;
  };
  std::set<std::string> kept;
  for (const ProgramOutput& o : prog.outputs) kept.insert(o.buffer);
  for (size_t i = 0; i < prog.steps.size(); ++i) {
    const Conv* c = std::get_if<Conv>(&prog.steps[i]);
    if (!c || c->call != ConvCall::Forward) continue;
    const std::string& y = c->out.buffer;
    const int64_t yb = numel(c->out.dims) * dtypeSize(c->dtype);
    std::vector<size_t> readers;
    for (size_t k = i + 1; k < prog.steps.size(); ++k) {
      const std::vector<std::string> bs = stepBuffers(prog.steps[k]);
      if (std::find(bs.begin(), bs.end(), y) != bs.end()) readers.push_back(k);
    }
    for (size_t k : readers) {
      const Launch* l = std::get_if<Launch>(&prog.steps[k]);
      if (!l || l->args.empty() || l->args[0] == y) continue;
      // Every other buffer it names is small beside y: a reduction of y alone.
      bool alone = true;
      for (const std::string& a : l->args)
        if (a != y && bytesOf(a) * 16 > yb) alone = false;
      if (alone) out.push_back(FusionEstimate{name, "genstats", i, k, c->node, yb});
    }
    if (readers.size() == 1 && !kept.count(y)) {
      const Launch* l = std::get_if<Launch>(&prog.steps[readers[0]]);
      if (l && !l->args.empty() && l->args[0] != y && bytesOf(l->args[0]) <= yb) {
        bool pointwise = true;  // its other operands are small (a per-channel scale or bias)
        for (size_t a = 1; a < l->args.size(); ++a)
          if (l->args[a] != y && bytesOf(l->args[a]) * 16 > yb) pointwise = false;
        if (pointwise && bytesOf(l->args[0]) * 16 > yb) out.push_back(FusionEstimate{name, "epilogue", i, readers[0], c->node, 2 * yb});
      }
    }
  }
}

}  // namespace

const std::vector<GpuSpec>& knownGpus() { return kGpus; }

GpuSpec gpuByNameOrFile(const std::string& nameOrFile) {
  for (const GpuSpec& g : kGpus)
    if (slug(g.name) == slug(nameOrFile)) return g;
  std::string names;
  for (const GpuSpec& g : kGpus) names += (names.empty() ? "" : ", ") + slug(g.name);
  std::ifstream f(nameOrFile, std::ios::binary);
  if (!f) throw UserError(SourceLoc{nameOrFile}, "--gpu: not a known GPU (" + names + ") nor a readable JSON file");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    throw UserError(SourceLoc{nameOrFile}, std::string("--gpu: malformed JSON: ") + e.what());
  }
  auto fail = [&](const std::string& what) {
    throw UserError(SourceLoc{nameOrFile}, "--gpu: " + what +
                                               " (expected {\"name\": ..., \"bandwidth_Bps\": B, \"peak_flops\": {\"fp32\": F, "
                                               "\"tf32\": F, \"bf16\": F, \"fp16\": F, \"fp64\": F}}, in bytes/s and FLOP/s)");
  };
  if (!j.is_object()) fail("not a JSON object");
  GpuSpec g;
  g.source = nameOrFile;
  if (!j.contains("name") || !j["name"].is_string()) fail("no string 'name'");
  g.name = j["name"];
  if (!j.contains("bandwidth_Bps") || !j["bandwidth_Bps"].is_number() || !(j["bandwidth_Bps"].get<double>() > 0))
    fail("no positive number 'bandwidth_Bps'");
  g.bandwidth = j["bandwidth_Bps"];
  if (!j.contains("peak_flops") || !j["peak_flops"].is_object()) fail("no object 'peak_flops'");
  for (auto& [k, v] : j["peak_flops"].items()) {
    if (std::find_if(std::begin(kMaths), std::end(kMaths), [&](const char* m) { return k == m; }) == std::end(kMaths))
      fail("peak_flops." + k + " is not one of fp32, tf32, bf16, fp16, fp64");
    if (!v.is_number() || !(v.get<double>() > 0)) fail("peak_flops." + k + " is not a positive number");
    g.peak[k] = v;
  }
  for (const char* m : kMaths)
    if (!g.peak.count(m)) fail(std::string("no peak_flops.") + m);
  return g;
}

std::optional<GpuSpec> defaultGpu(const std::vector<std::string>& archs) {
  // The newest arch with a default decides (an artifact for sm_80 and sm_90 is reported as on an H100).
  int best = -1;
  for (const std::string& a : archs) {
    const size_t u = a.find('_');
    if (u == std::string::npos) continue;
    int n = 0;
    for (size_t i = u + 1; i < a.size() && std::isdigit(static_cast<unsigned char>(a[i])); ++i) n = n * 10 + (a[i] - '0');
    if ((n == 90 || n == 80 || n == 89) && n > best) best = n;
  }
  const char* name = best == 90 ? "H100 SXM" : best == 89 ? "L40S" : best == 80 ? "A100 80GB" : nullptr;
  if (!name) return std::nullopt;
  return gpuByNameOrFile(name);
}

StepCost stepCost(const Program& prog, const Step& s, const std::string& precision) {
  StepCost c;
  if (const Launch* l = std::get_if<Launch>(&s)) {
    c.kind = "launch";
    c.name = l->kernel;
    c.call = "launch";
    c.math = "memory";
    // Two upper bounds on the bytes a launch touches, the smaller taken
    // (Note [Roofline]).
    const int64_t spans = argumentBytes(prog, *l);
    c.bytes = l->work && l->work->bytes < spans ? l->work->bytes : spans;
    return c;
  }
  if (const Gemm* g = std::get_if<Gemm>(&s)) {
    c.kind = "gemm";
    c.name = g->node;
    c.nodes = {g->node};
    c.call = gemmCallName(g->call);
    c.math = mathOf(g->dtype, precision);
    const int64_t e = dtypeSize(g->dtype), b = g->batch;
    c.bytes = (g->m * g->k + g->k * g->n + g->m * g->n * (g->beta != 0 ? 2 : 1)) * b * e + (g->bias ? g->m * e : 0);
    c.flops = 2.0 * static_cast<double>(g->m) * static_cast<double>(g->n) * static_cast<double>(g->k) * static_cast<double>(b);
    return c;
  }
  const Conv& v = std::get<Conv>(s);
  c.kind = "conv";
  c.name = v.node;
  c.nodes = {v.node};
  c.call = convCallName(v.call);
  c.math = mathOf(v.dtype, precision);
  const int64_t e = dtypeSize(v.dtype);
  c.bytes = (numel(v.a.dims) + numel(v.b.dims) + numel(v.out.dims) * (v.beta != 0 ? 2 : 1)) * e;
  // y: the output-activation side; w: the filter [K, C/groups, R, S...].
  const ConvTensor& y = v.call == ConvCall::Forward ? v.out : v.a;
  const ConvTensor& w = v.call == ConvCall::BackwardFilter ? v.out : v.b;
  double perOutput = 1;
  for (size_t i = 1; i < w.dims.size(); ++i) perOutput *= static_cast<double>(w.dims[i]);
  c.flops = 2.0 * static_cast<double>(numel(y.dims)) * perOutput;
  return c;
}

Roofline roofline(const Manifest& m, const GpuSpec& gpu) {
  Roofline r;
  r.gpu = gpu;
  r.dynamic_at_hints = m.symbolic != nullptr;
  r.forward = cost(m, m.forward, gpu);
  r.backward = cost(m, m.backward, gpu);
  fusionEstimates(m.forward, "forward", r.fusions);
  fusionEstimates(m.backward, "backward", r.fusions);
  for (const ProgramCost* p : {&r.forward, &r.backward}) {
    r.step.bytes += p->bytes;
    r.step.flops += p->flops;
    r.step.bound_s += p->bound_s;
    r.step.launches += p->launches;
    r.step.library_calls += p->library_calls;
  }
  return r;
}

nlohmann::ordered_json toJson(const Roofline& r, size_t n) {
  nlohmann::ordered_json peak = nlohmann::ordered_json::object();
  for (const char* m : kMaths)
    if (auto it = r.gpu.peak.find(m); it != r.gpu.peak.end()) peak[m] = it->second;
  nlohmann::ordered_json j;
  j["gpu"] = {{"name", r.gpu.name}, {"bandwidth_Bps", r.gpu.bandwidth}, {"peak_flops", peak}, {"source", r.gpu.source}};
  j["dynamic_at_hints"] = r.dynamic_at_hints;
  j["programs"] = nlohmann::ordered_json::object();
  for (const auto& [name, p] : {std::pair{"forward", &r.forward}, std::pair{"backward", &r.backward}}) {
    nlohmann::ordered_json pj = totalsJson(*p);
    pj["steps"] = nlohmann::ordered_json::array();
    for (const StepCost& c : p->steps) pj["steps"].push_back(stepJson(c));
    j["programs"][name] = pj;
  }
  j["step"] = totalsJson(r.step);
  j["fusion_estimates"] = nlohmann::ordered_json::array();
  for (const FusionEstimate& f : r.fusions)
    j["fusion_estimates"].push_back(
        {{"program", f.program}, {"kind", f.kind}, {"conv", f.conv}, {"launch", f.launch}, {"node", f.node}, {"bytes_saved", f.bytes_saved}});
  j["largest"] = nlohmann::ordered_json::array();
  for (const auto& [prog, c] : largest(r, n)) {
    nlohmann::ordered_json e = {{"program", prog}};
    e.update(stepJson(*c));
    j["largest"].push_back(e);
  }
  return j;
}

std::string roofText(const Roofline& r, size_t n, bool everyStep) {
  std::ostringstream os;
  os << "roofline on " << r.gpu.name << ": " << human(r.gpu.bandwidth, "B/s") << ";";
  for (const char* m : kMaths)
    if (auto it = r.gpu.peak.find(m); it != r.gpu.peak.end()) os << " " << m << " " << human(it->second, "FLOP/s");
  os << "\n  (" << r.gpu.source << ")\n";
  if (r.dynamic_at_hints) os << "  a dynamic-shape artifact: every figure is at the symbols' hints\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %-10s %9s %8s %12s %14s %12s\n", "program", "launches", "library", "bytes", "FLOPs", "bound");
  os << line;
  auto row = [&](const char* name, const ProgramCost& p) {
    std::snprintf(line, sizeof line, "  %-10s %9lld %8lld %12s %14s %12s\n", name, static_cast<long long>(p.launches),
                  static_cast<long long>(p.library_calls), human(static_cast<double>(p.bytes), "B").c_str(), human(p.flops, "FLOP").c_str(),
                  ms(p.bound_s).c_str());
    os << line;
  };
  row("forward", r.forward);
  row("backward", r.backward);
  row(r.backward.steps.empty() ? "inference" : "step", r.step);
  // Where the bound goes, by kind and math.
  std::map<std::string, std::pair<int64_t, double>> by;
  for (const ProgramCost* p : {&r.forward, &r.backward})
    for (const StepCost& c : p->steps) {
      auto& [count, s] = by[c.kind == "launch" ? "kernels (memory)" : c.kind + " (" + c.math + ")"];
      ++count;
      s += c.bound_s;
    }
  os << "  bound by kind:";
  for (const auto& [k, v] : by) os << "  " << k << " " << v.first << " steps " << ms(v.second);
  os << "\n  " << n << " largest bounds:\n";
  for (const auto& [prog, c] : largest(r, n)) {
    std::snprintf(line, sizeof line, "    %-8s #%-4zu %-30s %-6s %10s %12s %s  ", prog, c->index,
                  (c->kind == "launch" ? c->name : c->call).c_str(), c->math.c_str(), human(static_cast<double>(c->bytes), "B").c_str(),
                  human(c->flops, "FLOP").c_str(), ms(c->bound_s).c_str());
    os << line << nodeList(*c) << "\n";
  }
  if (!r.fusions.empty()) {
    std::map<std::string, std::pair<int64_t, int64_t>> by;
    for (const FusionEstimate& f : r.fusions) {
      auto& [count, bytes] = by[f.kind];
      ++count;
      bytes += f.bytes_saved;
    }
    os << "  fusion estimates (cuDNN graph API, not built):";
    for (const auto& [k, v] : by)
      os << "  " << k << " " << v.first << " convolutions, " << human(static_cast<double>(v.second), "B") << " saved ("
         << ms(static_cast<double>(v.second) / r.gpu.bandwidth) << ")";
    os << "\n";
  }
  if (everyStep)
    for (const auto& [name, p] : {std::pair{"forward", &r.forward}, std::pair{"backward", &r.backward}}) {
      os << "  " << name << " steps:\n";
      for (const StepCost& c : p->steps) {
        std::snprintf(line, sizeof line, "    #%-4zu %-6s %-5s %10s %12s %12s  ", c.index, c.kind.c_str(), c.math.c_str(),
                      human(static_cast<double>(c.bytes), "B").c_str(), human(c.flops, "FLOP").c_str(), ms(c.bound_s).c_str());
        os << line << (c.kind == "launch" ? c.name : c.call) << "  " << nodeList(c) << "\n";
      }
    }
  os << "  limits: a bound is what the datasheet allows, not a prediction: cuBLAS and cuDNN reach 60-90% of peak; without CUDA\n"
        "  graphs every launch adds 2-5 us of host latency no bound shows; a launch is charged the smaller of its operand views'\n"
        "  sizes and its buffers' whole spans (an overcount where it reads a slice through a broadcast or strided view), each\n"
        "  byte once (caches hold what it reads twice); kernels are charged no FLOPs (pointwise work is far below the ridge).\n";
  return os.str();
}

}  // namespace aotc::plan
