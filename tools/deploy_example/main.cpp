// deploy_example ARTIFACT_DIR [cuda|emulate|auto] [--train K]
//
// Loads an aotc artifact with the deployment runtime (aotc::runtime), gives
// every user input a deterministic value (element i of the j-th user input:
// sin(0.37 i + j)), takes parameters and buffers from the artifact's
// weights, runs the forward, gives every differentiable output a gradient of
// ones, runs the backward, and prints each output and gradient as
//   NAME DTYPE [d0,d1,...]: v0 v1 ...
// On a machine with a GPU "auto" runs on it; elsewhere on the emulate device.
//
// --train K (an artifact compiled with --optimizer, whose one differentiable
// output is a scalar loss): a training loop of K steps, batch k's user
// inputs sin(0.37 i + j + 0.5 k), the learning rate on a schedule
// (0.01 / (k + 1), set between steps with setScalar: no recompile, no
// re-capture), each step one trainStep (forward, backward, update; one CUDA
// graph launch on a GPU); prints "step k loss L" and then every parameter and
// buffer as after.NAME.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "aotc/runtime/runtime.h"

namespace {

size_t elementSize(aotc_dtype d) {
  switch (d) {
    case AOTC_F64: case AOTC_I64: return 8;
    case AOTC_F32: case AOTC_I32: return 4;
    case AOTC_F16: case AOTC_BF16: return 2;
    case AOTC_BOOL: return 1;
  }
  return 4;
}

double load(aotc_dtype d, const unsigned char* p) {
  switch (d) {
    case AOTC_F32: { float f; std::memcpy(&f, p, 4); return f; }
    case AOTC_F64: { double f; std::memcpy(&f, p, 8); return f; }
    case AOTC_I64: { int64_t f; std::memcpy(&f, p, 8); return static_cast<double>(f); }
    case AOTC_I32: { int32_t f; std::memcpy(&f, p, 4); return f; }
    case AOTC_BOOL: return *p ? 1 : 0;
    default: throw aotc::deploy::Error("this example prints f32, f64, integer and bool tensors only");
  }
}

/// Copies a (possibly strided) device view to the host, in row-major order.
std::vector<double> fetch(aotc::deploy::Runtime& rt, const aotc::deploy::View& v) {
  int64_t span = 1;  // elements from the root to one past the last one reached
  for (size_t d = 0; d < v.shape.size(); ++d)
    if (v.shape[d] == 0) span = 0;
  if (span) {
    span = v.offset + 1;
    for (size_t d = 0; d < v.shape.size(); ++d) span += (v.shape[d] - 1) * v.strides[d];
  }
  const size_t es = elementSize(v.dtype);
  std::vector<unsigned char> host(static_cast<size_t>(span) * es + 1);
  if (span) rt.copyToHost(host.data(), v.data, static_cast<size_t>(span) * es);
  std::vector<double> out;
  std::vector<int64_t> c(v.shape.size(), 0);
  for (int64_t e = 0; e < v.numel(); ++e) {
    int64_t off = v.offset;
    for (size_t d = 0; d < c.size(); ++d) off += c[d] * v.strides[d];
    out.push_back(load(v.dtype, host.data() + off * static_cast<int64_t>(es)));
    for (size_t d = c.size(); d-- > 0;) {
      if (++c[d] < v.shape[d]) break;
      c[d] = 0;
    }
  }
  return out;
}

void print(aotc::deploy::Runtime& rt, const std::string& name, const aotc::deploy::View& v) {
  static const char* names[] = {"f32", "f64", "f16", "bf16", "i64", "i32", "bool", "i8", "i16", "u8", "u16", "u32", "u64"};
  std::printf("%s %s [", name.c_str(), names[v.dtype]);
  for (size_t d = 0; d < v.shape.size(); ++d) std::printf("%s%lld", d ? "," : "", static_cast<long long>(v.shape[d]));
  std::printf("]:");
  for (double x : fetch(rt, v)) std::printf(" %.9g", x);
  std::printf("\n");
}

/// The example's own view of the manifest: which inputs are user inputs, and
/// their shapes, read with a tiny scan of manifest.json (a real deployment
/// knows its model's signature).
struct InputInfo {
  std::string name, dtype;
  std::vector<int64_t> shape;
};

std::vector<InputInfo> userInputs(const std::string& dir) {
  std::FILE* f = std::fopen((dir + "/manifest.json").c_str(), "rb");
  if (!f) throw aotc::deploy::Error("cannot read " + dir + "/manifest.json");
  std::string text;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
  std::fclose(f);
  std::vector<InputInfo> r;
  size_t inputs = text.find("\"inputs\": [");
  size_t end = text.find("\"outputs\": [");
  for (size_t p = text.find("{", inputs); p != std::string::npos && p < end; p = text.find("\n  {", p + 1)) {
    size_t close = text.find("}", p);
    std::string entry = text.substr(p, close - p);
    auto field = [&](const char* key) {
      size_t k = entry.find(std::string("\"") + key + "\": \"");
      if (k == std::string::npos) return std::string();
      k = entry.find(": \"", k) + 3;
      return entry.substr(k, entry.find('"', k) - k);
    };
    if (field("role") != "user_input") continue;
    InputInfo in{field("name"), field("dtype"), {}};
    size_t s = entry.find("\"shape\": [") + 10;
    std::string dims = entry.substr(s, entry.find(']', s) - s);
    for (size_t q = 0; q < dims.size();) {
      size_t comma = dims.find(',', q);
      std::string d = dims.substr(q, comma == std::string::npos ? std::string::npos : comma - q);
      if (d.find_first_of("0123456789") != std::string::npos) in.shape.push_back(std::stoll(d));
      if (comma == std::string::npos) break;
      q = comma + 1;
    }
    r.push_back(in);
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || (argc > 3 && (argc != 5 || std::string(argv[3]) != "--train"))) {
    std::fprintf(stderr, "usage: %s ARTIFACT_DIR [cuda|emulate|auto] [--train K]\n", argv[0]);
    return 2;
  }
  try {
    aotc::deploy::Runtime rt(argv[1], argc > 2 ? argv[2] : "auto");
    std::printf("device %s\n", rt.device().c_str());
    std::vector<void*> owned;
    if (argc == 5) {
      const int steps = std::atoi(argv[4]);
      const std::vector<InputInfo> ins = userInputs(argv[1]);
      std::vector<void*> batch;  // one device buffer per user input, refilled each step
      for (const InputInfo& in : ins) {
        if (in.dtype != "f32") throw aotc::deploy::Error("this example feeds f32 user inputs only: " + in.name + " is " + in.dtype);
        int64_t n = 1;
        for (int64_t d : in.shape) n *= d;
        batch.push_back(rt.allocate(static_cast<size_t>(std::max<int64_t>(n, 1)) * sizeof(float)));
        rt.bind(in.name, batch.back(), AOTC_F32, in.shape);
      }
      for (int k = 0; k < steps; ++k) {
        for (size_t j = 0; j < ins.size(); ++j) {
          int64_t n = 1;
          for (int64_t d : ins[j].shape) n *= d;
          std::vector<float> host(static_cast<size_t>(n));
          for (int64_t i = 0; i < n; ++i)
            host[static_cast<size_t>(i)] = static_cast<float>(std::sin(0.37 * static_cast<double>(i) + static_cast<double>(j) + 0.5 * k));
          rt.copyToDevice(batch[j], host.data(), host.size() * sizeof(float));
        }
        rt.setScalar("optim.lr", 0.01 / (k + 1));
        rt.trainStep();
        std::printf("step %d loss %.9g\n", k, fetch(rt, rt.output(0)).at(0));
      }
      for (const std::string& name : rt.inputs()) {
        bool user = false;
        for (const InputInfo& in : ins) user = user || in.name == name;
        if (!user && name.rfind("optim.", 0) != 0) print(rt, "after." + name, rt.input(name));
      }
      for (void* p : batch) rt.release(p);
      return 0;
    }
    int j = 0;
    for (const InputInfo& in : userInputs(argv[1])) {
      if (in.dtype != "f32") throw aotc::deploy::Error("this example feeds f32 user inputs only: " + in.name + " is " + in.dtype);
      int64_t n = 1;
      for (int64_t d : in.shape) n *= d;
      std::vector<float> host(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) host[static_cast<size_t>(i)] = static_cast<float>(std::sin(0.37 * static_cast<double>(i) + j));
      void* dev = rt.allocate(host.size() * sizeof(float));
      owned.push_back(dev);
      rt.copyToDevice(dev, host.data(), host.size() * sizeof(float));
      rt.bind(in.name, dev, AOTC_F32, in.shape);
      ++j;
    }
    rt.forward();
    std::vector<aotc::deploy::View> outs;
    for (size_t i = 0; i < rt.numOutputs(); ++i) {
      outs.push_back(rt.output(i));
      print(rt, "output." + std::to_string(i), outs.back());
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      if (outs[i].dtype != AOTC_F32) continue;
      std::vector<float> ones(static_cast<size_t>(outs[i].numel()), 1.0f);
      void* dev = rt.allocate(std::max<size_t>(ones.size(), 1) * sizeof(float));
      owned.push_back(dev);
      rt.copyToDevice(dev, ones.data(), ones.size() * sizeof(float));
      try {
        rt.bindGradOutput(i, dev, AOTC_F32, outs[i].shape);
      } catch (const aotc::deploy::Error&) {
        // not a differentiable output
      }
    }
    rt.backward();
    for (const std::string& name : rt.inputs()) {
      try {
        print(rt, "grad." + name, rt.grad(name));
      } catch (const aotc::deploy::Error&) {
        // no gradient for this input
      }
    }
    for (void* p : owned) rt.release(p);
  } catch (const aotc::deploy::Error& e) {
    std::fprintf(stderr, "deploy_example: %s\n", e.what());
    return 1;
  }
  return 0;
}
