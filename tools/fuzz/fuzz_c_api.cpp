//===- fuzz_c_api.cpp - libFuzzer: call sequences through the C ABI -------===//
//
// The fuzz input is a program of C ABI calls on a real artifact
// (testdata/fx/mlp, compiled once per process) opened on the emulate device
// through the shipped library: each byte picks a call, the next ones its
// arguments -- names known and unknown, NULL, indices in and out of range,
// tensors of right and wrong dtype, shape, offset and alignment on memory the
// runtime allocated or the caller's own, frees of live, freed, interior and
// foreign pointers, copies in and past an allocation.  Note [C ABI misuse]:
// whatever the order, no call may crash, and every refusal is one line naming
// its function, never an internal error.  What c_api.h calls undefined (a
// handle used after aotc_close, a view used after the next run, memory the
// caller gives that does not hold the tensor) is not generated.
//===----------------------------------------------------------------------===//
#include <cstring>
#include <string>
#include <vector>

#include "aotc/runtime/c_api.h"
#include "fuzz_artifact.h"

namespace {

/// Reads the program's bytes; past the end every read is 0.
struct Bytes {
  const uint8_t* p;
  size_t n, i = 0;
  bool more() const { return i < n; }
  uint8_t next() { return i < n ? p[i++] : 0; }
};

/// A finding: the process stops with the call and its message.
void check(bool ok, const char* what, const std::string& detail) {
  if (ok) return;
  std::fprintf(stderr, "fuzz_c_api: %s: %s\n", what, detail.c_str());
  __builtin_trap();
}

void checkStatus(aotc_runtime* rt, int rc, const char* fn) {
  if (rc == 0) return;
  const std::string e = aotc_error(rt);
  check(!e.empty(), fn, "non-zero status with no message");
  check(e.rfind(std::string(fn) + ": ", 0) == 0, fn, "message does not name the function: " + e);
  check(e.find('\n') == std::string::npos, fn, "message has several lines: " + e);
  check(e.find("internal error") == std::string::npos, fn, "internal error: " + e);
}

constexpr const char* kNames[] = {"x", "target", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "nope", "", nullptr};
constexpr int64_t kShapes[][2] = {{4, 8}, {4, 4}, {16, 8}, {16, 1}, {4, 16}, {4, 1}, {0, 8}, {8, 4}, {1, 1}};
constexpr int32_t kNdims[] = {2, 1, 0, 3, -1};
constexpr aotc_dtype kDTypes[] = {AOTC_F32, AOTC_F64, AOTC_F16, AOTC_I64, static_cast<aotc_dtype>(13)};  // 13: no dtype

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const aotc_fuzz::Artifact art = aotc_fuzz::compileOnce();
  // The caller's own memory: large enough for every tensor the artifact takes.
  alignas(256) static float host[4096];
  aotc_runtime* rt = nullptr;
  char err[512];
  check(aotc_open(art.dir.c_str(), "emulate", &rt, err, sizeof err) == 0, "aotc_open", err);
  Bytes in{data, size};
  std::vector<std::pair<char*, size_t>> pool;  // live aotc_alloc allocations and their sizes
  std::vector<char*> freed;
  const int64_t strides[2] = {8, 1};
  while (in.more() && pool.size() < 64) {
    const uint8_t op = in.next() % 16;
    auto pointer = [&]() -> char* {  // a tensor's data: an allocation at an offset, the caller's memory, NULL
      const uint8_t k = in.next();
      if (k % 4 == 3 || pool.empty()) return k % 8 == 7 ? nullptr : reinterpret_cast<char*>(host) + (k / 8 % 2) * 4;
      auto [p, n] = pool[k % pool.size()];
      return p + (in.next() % 3) * 4 % (n + 1);
    };
    auto tensor = [&](aotc_tensor& t) {
      t.data = pointer();
      t.dtype = kDTypes[in.next() % 5];
      t.ndim = kNdims[in.next() % 5];
      if (t.ndim > 2) t.ndim = 2;  // the shape arrays hold two dims
      t.shape = kShapes[in.next() % 9];
      t.strides = in.next() % 4 == 0 ? strides : nullptr;
    };
    aotc_tensor t{};
    aotc_tensor_view v{};
    switch (op) {
      case 0: {
        const char* name = kNames[in.next() % 9];
        tensor(t);
        checkStatus(rt, aotc_bind(rt, name, in.next() % 16 ? &t : nullptr), "aotc_bind");
        break;
      }
      case 1: {
        const size_t index = in.next() % 3 == 2 ? static_cast<size_t>(-1) : in.next() % 3;
        tensor(t);
        checkStatus(rt, aotc_bind_grad_output(rt, index, &t), "aotc_bind_grad_output");
        break;
      }
      case 2: checkStatus(rt, aotc_forward(rt), "aotc_forward"); break;
      case 3: checkStatus(rt, aotc_backward(rt), "aotc_backward"); break;
      case 4: {
        const size_t index = in.next() % 3;
        const bool copy = in.next() % 2;
        const int rc = aotc_output(rt, index, in.next() % 8 ? &v : nullptr);
        checkStatus(rt, rc, "aotc_output");
        if (rc == 0 && copy && v.ndim <= 2) {  // read the view's extent at once (valid until the next run)
          size_t n = 1;
          for (int32_t d = 0; d < v.ndim; ++d) n *= static_cast<size_t>(v.shape[d]);
          if (n <= 4096) checkStatus(rt, aotc_copy_to_host(rt, host, static_cast<float*>(v.data) + v.offset, n * 4), "aotc_copy_to_host");
        }
        break;
      }
      case 5: checkStatus(rt, aotc_grad(rt, kNames[in.next() % 9], in.next() % 8 ? &v : nullptr), "aotc_grad"); break;
      case 6: checkStatus(rt, aotc_input(rt, kNames[in.next() % 9], in.next() % 8 ? &v : nullptr), "aotc_input"); break;
      case 7: {
        const size_t bytes = in.next() % 16 == 15 ? static_cast<size_t>(-1) : static_cast<size_t>(in.next()) * 4;
        void* p = nullptr;
        const int rc = aotc_alloc(rt, bytes, in.next() % 16 ? &p : nullptr);
        checkStatus(rt, rc, "aotc_alloc");
        if (rc == 0 && p) pool.emplace_back(static_cast<char*>(p), bytes);
        break;
      }
      case 8: {
        const uint8_t k = in.next();
        char* p = nullptr;
        size_t at = pool.size();
        if (k % 5 == 0 && !freed.empty()) p = freed[k % freed.size()];  // freed already (or reused since)
        else if (k % 5 == 1) p = reinterpret_cast<char*>(host);          // the caller's own
        else if (k % 5 == 2) p = nullptr;
        else if (!pool.empty()) {
          at = k % pool.size();
          p = pool[at].first + (k % 5 == 3 ? 4 : 0);  // interior or start
        }
        const int rc = aotc_free(rt, p);
        checkStatus(rt, rc, "aotc_free");
        if (rc == 0)
          for (size_t i = 0; i < pool.size(); ++i)
            if (pool[i].first == p) {
              freed.push_back(p);
              pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(i));
              break;
            }
        break;
      }
      case 9:
      case 10: {
        if (pool.empty()) break;
        auto [p, n] = pool[in.next() % pool.size()];
        const size_t off = in.next() % 8 * 4, bytes = static_cast<size_t>(in.next()) * 4;
        if (op == 9) checkStatus(rt, aotc_copy_to_device(rt, p + off % (n + 1), host, std::min<size_t>(bytes, sizeof host)), "aotc_copy_to_device");
        else checkStatus(rt, aotc_copy_to_host(rt, host, p + off % (n + 1), std::min<size_t>(bytes, sizeof host)), "aotc_copy_to_host");
        break;
      }
      case 11: checkStatus(rt, aotc_set_graphs(rt, in.next() % 3), "aotc_set_graphs"); break;
      case 12: checkStatus(rt, aotc_set_stream(rt, in.next() % 2 ? reinterpret_cast<void*>(0x40) : nullptr), "aotc_set_stream"); break;
      case 13: checkStatus(rt, aotc_synchronize(rt), "aotc_synchronize"); break;
      case 14: {
        float scale;
        int found;
        checkStatus(rt, aotc_loss_scale(rt, in.next() % 2 ? &scale : nullptr, in.next() % 2 ? &found : nullptr), "aotc_loss_scale");
        break;
      }
      default: {
        const size_t i = in.next();
        (void)aotc_input_name(rt, i % 8);
        check(aotc_num_inputs(rt) == 6, "aotc_num_inputs", "not 6");
        (void)aotc_num_outputs(rt);
        (void)aotc_device_name(rt);
        (void)aotc_loss_scaling(rt);
        break;
      }
    }
  }
  aotc_close(rt);
  return 0;
}
