//===- fake_cuda.cpp - Test-only recording fake of CUDA, cuBLAS(Lt), cuDNN -===//
//
// Built four times into libcuda.so.1, libcublas.so.13, libcublasLt.so.13 and
// libcudnn.so.9 (-DFAKE_CUDA_DRIVER / _CUBLAS / _CUBLASLT / _CUDNN; none
// defined exports every family).  A test puts their directory first on
// LD_LIBRARY_PATH, so the runtime's dlopen finds them instead of the real
// libraries, and names a log file in AOTC_FAKE_CUDA_LOG: every call appends
// one line "<symbol> key=value ..." (" rc=<n>" when it fails).  See README.md.
//
// Device memory is host memory (cuMemAlloc_v2 = aligned_alloc + zero), copies
// and memsets are real, so weights go up and results come back; kernels,
// GEMMs, convolutions and graph launches compute nothing.  Every stream
// operation runs at once (outside capture), so a stream is always idle.
//
// Every exported function is defined under the name the toolkit's headers
// declare (the expansion of cuda.h's version macros: cuMemAlloc_v2,
// cuGraphInstantiateWithFlags, ...), with C linkage, so a prototype that does
// not match the header is a compile error.  Legacy unversioned names (the
// cuMemAlloc, cuEventElapsedTime, cuGraphInstantiate of old ABIs) are not
// exported on purpose: a runtime that dlsyms one fails here as it would
// misbehave on a real driver.
//
// Stream capture follows the driver's rules closely enough to catch misuse:
// work on a capturing stream is recorded as graph nodes (copies and memsets
// are deferred to cuGraphLaunch), and a potentially unsafe call (allocation,
// free, synchronous copy, synchronization) while a global or thread-local
// capture is under way fails with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and
// invalidates the capture.
//===----------------------------------------------------------------------===//
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda.h>
#include <cudnn.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#if !defined(FAKE_CUDA_DRIVER) && !defined(FAKE_CUDA_CUBLAS) && !defined(FAKE_CUDA_CUBLASLT) && !defined(FAKE_CUDA_CUDNN)
#define FAKE_CUDA_DRIVER
#define FAKE_CUDA_CUBLAS
#define FAKE_CUDA_CUBLASLT
#define FAKE_CUDA_CUDNN
#endif

namespace {

//===--- The log -----------------------------------------------------------===//

std::mutex logMu;
int logFd = -1;
std::string logPath;

// One line, one write(): the four libraries share the file (O_APPEND).  The
// variable is read on every call, so a test may point it elsewhere between cases.
void emit(const char* fn, const char* detail, int rc) {
  char line[2048];
  int n = std::snprintf(line, sizeof line - 32, "%s%s%s", fn, *detail ? " " : "", detail);
  if (n < 0) return;
  if (n > static_cast<int>(sizeof line) - 32) n = static_cast<int>(sizeof line) - 32;
  if (rc != 0) n += std::snprintf(line + n, 24, " rc=%d", rc);
  line[n++] = '\n';
  std::lock_guard<std::mutex> lock(logMu);
  const char* path = std::getenv("AOTC_FAKE_CUDA_LOG");
  if (!path || !*path) return;
  if (logFd < 0 || logPath != path) {
    if (logFd >= 0) ::close(logFd);
    logFd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    logPath = path;
  }
  if (logFd >= 0 && ::write(logFd, line, static_cast<size_t>(n)) < 0) {
    // a test reading the log sees the gap; the call itself goes on
  }
}

// Logs the call with printf-style details and returns its status.
template <typename R>
[[gnu::format(printf, 3, 4)]] R ret(const char* fn, R rc, const char* fmt, ...) {
  char detail[1536];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  emit(fn, detail, static_cast<int>(rc));
  return rc;
}
template <typename R>
R ret0(const char* fn, R rc) {
  emit(fn, "", static_cast<int>(rc));
  return rc;
}
#define RET(rc, ...) ret(__func__, rc, __VA_ARGS__)
#define RET0(rc) ret0(__func__, rc)
#define LOG0() emit(__func__, "", 0)

//===--- Fake handles ------------------------------------------------------===//
// Every handle is a small heap object with a magic word and a per-kind id
// (logged, so a test can tell streams apart).  The four libraries compile the
// same layouts, so cuDNN can read a stream the driver created.

constexpr uint64_t kMagic = 0x41445543454b4146ull;  // "FAKECUDA" in memory
enum class Kind : uint32_t { Context, Stream, Event, Module, Function, Graph, GraphExec, Node, Cublas, Lt, LtDesc, LtLayout, LtPref, Cudnn, Tensor, Filter, Conv, Backend, Count };
std::atomic<int> nextIds[static_cast<int>(Kind::Count)];

struct Obj {
  uint64_t magic;
  Kind kind;
  int id;
  explicit Obj(Kind k) : magic(kMagic), kind(k), id(++nextIds[static_cast<int>(k)]) {}
  ~Obj() { magic = 0; }
};
template <typename T>
T* as(const void* h) {
  auto* o = static_cast<T*>(const_cast<void*>(h));
  return o && reinterpret_cast<uintptr_t>(o) > 0x10 && o->magic == kMagic && o->kind == T::kKind ? o : nullptr;
}
template <typename H, typename T>
H handle(T* o) {
  return reinterpret_cast<H>(o);
}
template <typename T>
int idOf(const void* h) {
  T* o = as<T>(h);
  return o ? o->id : 0;
}

struct Context : Obj {
  static constexpr Kind kKind = Kind::Context;
  CUdevice dev;
  int refs = 0;
  explicit Context(CUdevice d) : Obj(kKind), dev(d) {}
};

// A recorded graph node: a kernel, a copy, a memset or a library call.
struct Node : Obj {
  static constexpr Kind kKind = Kind::Node;
  enum Op { Kernel, Copy, Memset, Library } op;
  CUDA_KERNEL_NODE_PARAMS kernel{};
  void* dst = nullptr;
  const void* src = nullptr;
  size_t bytes = 0, count = 0;
  unsigned value = 0, elem = 0;
  std::string name;
  explicit Node(Op o) : Obj(kKind), op(o) {}
};

struct Graph : Obj {
  static constexpr Kind kKind = Kind::Graph;
  std::mutex mu;
  std::vector<Node*> nodes;
  Graph() : Obj(kKind) {}
  ~Graph() {
    for (Node* n : nodes) delete n;
  }
  void add(Node* n) {
    std::lock_guard<std::mutex> lock(mu);
    nodes.push_back(n);
  }
  int count(Node::Op op) {
    std::lock_guard<std::mutex> lock(mu);
    int c = 0;
    for (Node* n : nodes) c += n->op == op;
    return c;
  }
};

struct Stream : Obj {
  static constexpr Kind kKind = Kind::Stream;
  unsigned flags;
  std::atomic<bool> capturing{false};
  bool invalidated = false;
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  std::thread::id captureThread;
  Graph* graph = nullptr;
  explicit Stream(unsigned f) : Obj(kKind), flags(f) {}
};

// "stream=<id> capture=<0|1>": 0 is the NULL stream; legacy and per_thread
// the special handles; foreign a pointer this fake did not make.
struct StreamName {
  char text[48];
};
StreamName streamName(const void* s) {
  StreamName r;
  Stream* st = as<Stream>(s);
  const char* special = s == nullptr ? "0" : s == CU_STREAM_LEGACY ? "legacy" : s == CU_STREAM_PER_THREAD ? "per_thread" : st ? nullptr : "foreign";
  if (special)
    std::snprintf(r.text, sizeof r.text, "stream=%s capture=0", special);
  else
    std::snprintf(r.text, sizeof r.text, "stream=%d capture=%d", st->id, st->capturing.load() ? 1 : 0);
  return r;
}
// Records a library call as a node when its stream is capturing.
void recordLibraryCall(const void* s, const char* fn) {
  Stream* st = as<Stream>(s);
  if (st && st->capturing.load() && st->graph) {
    Node* n = new Node(Node::Library);
    n->name = fn;
    st->graph->add(n);
  }
}

}  // namespace

//===--- CUDA driver -------------------------------------------------------===//
#ifdef FAKE_CUDA_DRIVER
namespace {

std::atomic<bool> initialized{false};
int deviceCount() {
  const char* e = std::getenv("AOTC_FAKE_CUDA_DEVICES");
  return e && *e ? std::atoi(e) : 1;
}
constexpr size_t kTotalMem = 80ull << 30;

std::mutex stateMu;  // guards the maps below
std::map<uintptr_t, size_t> allocs;  // device (and pinned host) allocations: base -> bytes
size_t allocated = 0;
std::map<CUdevice, std::unique_ptr<Context>> primary;  // kept while loaded: a released context may still be current
std::set<Stream*> capturing;
std::atomic<int> globalCaptures{0};
thread_local std::vector<Context*> ctxStack;
thread_local int ownCaptures = 0;  // non-relaxed captures begun by this thread
thread_local CUstreamCaptureMode threadMode = CU_STREAM_CAPTURE_MODE_GLOBAL;

bool validDevice(CUdevice d) { return d >= 0 && d < deviceCount(); }
Context* current() { return ctxStack.empty() ? nullptr : ctxStack.back(); }

// A call that may not run while a capture is under way (the driver's
// "potentially unsafe API"): invalidates the captures and fails.
bool captureForbids() {
  if (ownCaptures == 0 && !(globalCaptures.load() > 0 && threadMode == CU_STREAM_CAPTURE_MODE_GLOBAL)) return false;
  std::lock_guard<std::mutex> lock(stateMu);
  for (Stream* s : capturing) s->invalidated = true;
  return true;
}

// The status every context-needing call starts with (0 when it may go on).
CUresult precheck(bool unsafeInCapture) {
  if (!initialized.load()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!current()) return CUDA_ERROR_INVALID_CONTEXT;
  if (unsafeInCapture && captureForbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  return CUDA_SUCCESS;
}
// For enqueue calls: the legacy stream may not be used while this thread captures.
CUresult precheckStream(CUstream s) {
  if (CUresult r = precheck(false)) return r;
  if (s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD && !as<Stream>(s)) return CUDA_ERROR_INVALID_HANDLE;
  if ((s == nullptr || s == CU_STREAM_LEGACY) && captureForbids()) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  return CUDA_SUCCESS;
}
Graph* captureGraph(CUstream s) {
  Stream* st = as<Stream>(s);
  return st && st->capturing.load() ? st->graph : nullptr;
}

// Whether [p, p+n) lies in one allocation.
bool inRange(CUdeviceptr p, size_t n) {
  std::lock_guard<std::mutex> lock(stateMu);
  auto it = allocs.upper_bound(static_cast<uintptr_t>(p));
  if (it == allocs.begin()) return false;
  --it;
  return p >= it->first && p + n <= it->first + it->second;
}
void* hostAlloc(size_t bytes) {
  size_t n = (bytes + 255) / 256 * 256;
  void* p = std::aligned_alloc(256, n);
  if (!p) return nullptr;
  std::memset(p, 0, n);
  std::lock_guard<std::mutex> lock(stateMu);
  allocs[reinterpret_cast<uintptr_t>(p)] = bytes;
  allocated += n;
  return p;
}
bool hostFree(uintptr_t p) {
  {
    std::lock_guard<std::mutex> lock(stateMu);
    auto it = allocs.find(p);
    if (it == allocs.end()) return false;
    allocated -= (it->second + 255) / 256 * 256;
    allocs.erase(it);
  }
  std::free(reinterpret_cast<void*>(p));
  return true;
}

// Copies (or records the copy when the stream captures).
CUresult copy(void* dst, const void* src, size_t n, CUstream s) {
  if (Graph* g = captureGraph(s)) {
    Node* node = new Node(Node::Copy);
    node->dst = dst;
    node->src = src;
    node->bytes = n;
    g->add(node);
  } else if (n) {
    std::memmove(dst, src, n);
  }
  return CUDA_SUCCESS;
}
void fill(void* dst, unsigned value, unsigned elem, size_t count) {
  auto* p = static_cast<unsigned char*>(dst);
  if (elem == 1) {
    std::memset(p, static_cast<int>(value & 0xff), count);
    return;
  }
  for (size_t i = 0; i < count; ++i) std::memcpy(p + i * elem, &value, elem);  // little-endian: the low bytes
}
CUresult memset(CUdeviceptr dst, unsigned value, unsigned elem, size_t count, CUstream s) {
  if (!inRange(dst, count * elem)) return CUDA_ERROR_INVALID_VALUE;
  if (Graph* g = captureGraph(s)) {
    Node* node = new Node(Node::Memset);
    node->dst = reinterpret_cast<void*>(dst);
    node->value = value;
    node->elem = elem;
    node->count = count;
    g->add(node);
  } else {
    fill(reinterpret_cast<void*>(dst), value, elem, count);
  }
  return CUDA_SUCCESS;
}

struct Function;
struct Module : Obj {
  static constexpr Kind kKind = Kind::Module;
  std::mutex mu;  // guards fns and indexError
  void* indexError = nullptr;
  std::map<std::string, Function*> fns;
  Module() : Obj(kKind) {}
  ~Module();
};
struct Function : Obj {
  static constexpr Kind kKind = Kind::Function;
  Module* module;
  std::string name;
  Function(Module* m, std::string n) : Obj(kKind), module(m), name(std::move(n)) {}
};
Module::~Module() {
  for (auto& [n, f] : fns) delete f;
  if (indexError) hostFree(reinterpret_cast<uintptr_t>(indexError));
}
struct Event : Obj {
  static constexpr Kind kKind = Kind::Event;
  unsigned flags;
  explicit Event(unsigned f) : Obj(kKind), flags(f) {}
};
struct GraphExec : Obj {
  static constexpr Kind kKind = Kind::GraphExec;
  std::vector<Node> nodes;  // a snapshot of the graph's nodes
  GraphExec() : Obj(kKind) {}
};

const char* fnName(CUfunction f) {
  Function* fn = as<Function>(f);
  return fn ? fn->name.c_str() : "?";
}

}  // namespace

extern "C" {

CUresult cuInit(unsigned int Flags) {
  if (Flags != 0) return RET(CUDA_ERROR_INVALID_VALUE, "flags=%u", Flags);
  if (deviceCount() <= 0) return RET0(CUDA_ERROR_NO_DEVICE);  // as a driver without a GPU answers
  initialized = true;
  return RET0(CUDA_SUCCESS);
}
CUresult cuDriverGetVersion(int* driverVersion) {
  *driverVersion = CUDA_VERSION;
  return RET(CUDA_SUCCESS, "version=%d", CUDA_VERSION);
}
CUresult cuGetErrorString(CUresult error, const char** pStr) {
  switch (error) {
    case CUDA_SUCCESS: *pStr = "no error"; break;
    case CUDA_ERROR_INVALID_VALUE: *pStr = "invalid argument"; break;
    case CUDA_ERROR_OUT_OF_MEMORY: *pStr = "out of memory"; break;
    case CUDA_ERROR_NOT_INITIALIZED: *pStr = "initialization error"; break;
    case CUDA_ERROR_NO_DEVICE: *pStr = "no CUDA-capable device is detected"; break;
    case CUDA_ERROR_INVALID_DEVICE: *pStr = "invalid device ordinal"; break;
    case CUDA_ERROR_INVALID_CONTEXT: *pStr = "invalid device context"; break;
    case CUDA_ERROR_INVALID_HANDLE: *pStr = "invalid resource handle"; break;
    case CUDA_ERROR_NOT_FOUND: *pStr = "named symbol not found"; break;
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: *pStr = "operation not permitted when stream is capturing"; break;
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: *pStr = "operation failed due to a previous error during capture"; break;
    case CUDA_ERROR_STREAM_CAPTURE_IMPLICIT: *pStr = "operation would make the legacy stream depend on a capturing blocking stream"; break;
    default: *pStr = "unknown error (aotc fake CUDA driver)"; break;
  }
  return RET(CUDA_SUCCESS, "error=%d", static_cast<int>(error));
}
CUresult cuGetErrorName(CUresult error, const char** pStr) {
  *pStr = error == CUDA_SUCCESS ? "CUDA_SUCCESS" : "CUDA_ERROR_FAKE";
  return RET(CUDA_SUCCESS, "error=%d", static_cast<int>(error));
}

// Devices.
CUresult cuDeviceGetCount(int* count) {
  if (!initialized) return RET0(CUDA_ERROR_NOT_INITIALIZED);
  *count = deviceCount();
  return RET(CUDA_SUCCESS, "count=%d", *count);
}
CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (!initialized) return RET0(CUDA_ERROR_NOT_INITIALIZED);
  if (!validDevice(ordinal)) return RET(CUDA_ERROR_INVALID_DEVICE, "ordinal=%d", ordinal);
  *device = ordinal;
  return RET(CUDA_SUCCESS, "ordinal=%d", ordinal);
}
CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  if (!validDevice(dev) || len <= 0) return RET(CUDA_ERROR_INVALID_VALUE, "dev=%d", dev);
  std::snprintf(name, static_cast<size_t>(len), "NVIDIA H100 80GB HBM3 (aotc fake %d)", dev);
  return RET(CUDA_SUCCESS, "dev=%d", dev);
}
CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  if (!validDevice(dev)) return RET(CUDA_ERROR_INVALID_DEVICE, "dev=%d attr=%d", dev, static_cast<int>(attrib));
  int v = 0;
  switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: v = 132; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: v = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: v = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: v = 49152; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: v = 232448; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: v = 233472; break;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: v = 2048; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: v = 32; break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: v = 1980000; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: v = 2619000; break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: v = 5120; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: v = 52428800; break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: v = 3; break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: v = 0x18 + dev; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: v = CU_COMPUTEMODE_DEFAULT; break;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED: case CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: v = 1; break;
    default: v = 0; break;
  }
  *pi = v;
  return RET(CUDA_SUCCESS, "dev=%d attr=%d value=%d", dev, static_cast<int>(attrib), v);
}
CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  if (!validDevice(dev)) return RET(CUDA_ERROR_INVALID_DEVICE, "dev=%d", dev);
  *bytes = kTotalMem;
  return RET(CUDA_SUCCESS, "dev=%d bytes=%zu", dev, kTotalMem);
}
CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  if (!validDevice(dev)) return RET(CUDA_ERROR_INVALID_DEVICE, "dev=%d", dev);
  std::memset(uuid->bytes, 0, sizeof uuid->bytes);
  std::memcpy(uuid->bytes, "aotcfake", 8);
  uuid->bytes[15] = static_cast<char>(dev);
  return RET(CUDA_SUCCESS, "dev=%d", dev);
}

// Contexts: one primary context per device; the current context is per thread.
CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  if (!initialized) return RET0(CUDA_ERROR_NOT_INITIALIZED);
  if (!validDevice(dev)) return RET(CUDA_ERROR_INVALID_DEVICE, "dev=%d", dev);
  std::lock_guard<std::mutex> lock(stateMu);
  std::unique_ptr<Context>& slot = primary[dev];
  if (!slot) slot = std::make_unique<Context>(dev);
  Context* c = slot.get();
  ++c->refs;
  *pctx = handle<CUcontext>(c);
  return RET(CUDA_SUCCESS, "dev=%d ctx=%d refs=%d", dev, c->id, c->refs);
}
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  std::lock_guard<std::mutex> lock(stateMu);
  auto it = primary.find(dev);
  if (it == primary.end() || it->second->refs == 0) return RET(CUDA_ERROR_INVALID_CONTEXT, "dev=%d", dev);
  --it->second->refs;
  return RET(CUDA_SUCCESS, "dev=%d ctx=%d refs=%d", dev, it->second->id, it->second->refs);
}
CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  std::lock_guard<std::mutex> lock(stateMu);
  auto it = primary.find(dev);
  *flags = 0;
  *active = it != primary.end() && it->second->refs > 0;
  return RET(CUDA_SUCCESS, "dev=%d active=%d", dev, *active);
}
CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) { return RET(CUDA_SUCCESS, "dev=%d flags=%u", dev, flags); }
CUresult cuCtxSetCurrent(CUcontext ctx) {
  Context* c = as<Context>(ctx);
  if (ctx && !c) return RET0(CUDA_ERROR_INVALID_CONTEXT);
  if (ctxStack.empty()) {
    if (c) ctxStack.push_back(c);
  } else if (c) {
    ctxStack.back() = c;
  } else {
    ctxStack.pop_back();
  }
  return RET(CUDA_SUCCESS, "ctx=%d", c ? c->id : 0);
}
CUresult cuCtxGetCurrent(CUcontext* pctx) {
  *pctx = handle<CUcontext>(current());
  return RET(CUDA_SUCCESS, "ctx=%d", current() ? current()->id : 0);
}
CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  Context* c = as<Context>(ctx);
  if (!c) return RET0(CUDA_ERROR_INVALID_CONTEXT);
  ctxStack.push_back(c);
  return RET(CUDA_SUCCESS, "ctx=%d depth=%zu", c->id, ctxStack.size());
}
CUresult cuCtxPopCurrent_v2(CUcontext* pctx) {
  if (ctxStack.empty()) return RET0(CUDA_ERROR_INVALID_CONTEXT);
  Context* c = ctxStack.back();
  ctxStack.pop_back();
  if (pctx) *pctx = handle<CUcontext>(c);
  return RET(CUDA_SUCCESS, "ctx=%d depth=%zu", c->id, ctxStack.size());
}
CUresult cuCtxGetDevice(CUdevice* device) {
  if (CUresult r = precheck(false)) return RET0(r);
  *device = current()->dev;
  return RET(CUDA_SUCCESS, "dev=%d", *device);
}
CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int* version) {
  *version = 13000;
  return RET(CUDA_SUCCESS, "ctx=%d", idOf<Context>(ctx));
}
CUresult cuCtxSynchronize(void) { return RET0(precheck(true)); }
CUresult cuCtxSetLimit(CUlimit limit, size_t value) { return RET(precheck(false), "limit=%d value=%zu", static_cast<int>(limit), value); }
CUresult cuCtxGetLimit(size_t* pvalue, CUlimit limit) {
  *pvalue = limit == CU_LIMIT_STACK_SIZE ? 1024 : 0;
  return RET(precheck(false), "limit=%d", static_cast<int>(limit));
}
CUresult cuCtxGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  if (leastPriority) *leastPriority = 0;
  if (greatestPriority) *greatestPriority = -5;
  return RET0(CUDA_SUCCESS);
}

// Memory.
CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  if (CUresult r = precheck(true)) return RET(r, "bytes=%zu", bytesize);
  if (bytesize == 0) return RET(CUDA_ERROR_INVALID_VALUE, "bytes=0");
  void* p = hostAlloc(bytesize);
  if (!p) return RET(CUDA_ERROR_OUT_OF_MEMORY, "bytes=%zu", bytesize);
  *dptr = reinterpret_cast<CUdeviceptr>(p);
  return RET(CUDA_SUCCESS, "bytes=%zu", bytesize);
}
CUresult cuMemFree_v2(CUdeviceptr dptr) {
  if (CUresult r = precheck(true)) return RET0(r);
  if (dptr == 0) return RET0(CUDA_SUCCESS);
  size_t bytes = 0;
  {
    std::lock_guard<std::mutex> lock(stateMu);
    auto it = allocs.find(dptr);
    if (it != allocs.end()) bytes = it->second;
  }
  if (!hostFree(dptr)) return RET(CUDA_ERROR_INVALID_VALUE, "error=not_allocated");
  return RET(CUDA_SUCCESS, "bytes=%zu", bytes);
}
CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  if (CUresult r = precheckStream(hStream)) return RET(r, "bytes=%zu %s", bytesize, streamName(hStream).text);
  void* p = bytesize ? hostAlloc(bytesize) : nullptr;
  if (!p) return RET(CUDA_ERROR_INVALID_VALUE, "bytes=%zu", bytesize);
  *dptr = reinterpret_cast<CUdeviceptr>(p);
  return RET(CUDA_SUCCESS, "bytes=%zu %s", bytesize, streamName(hStream).text);
}
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  if (CUresult r = precheckStream(hStream)) return RET(r, "%s", streamName(hStream).text);
  return RET(hostFree(dptr) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE, "%s", streamName(hStream).text);
}
CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  if (CUresult r = precheck(false)) return RET0(r);
  std::lock_guard<std::mutex> lock(stateMu);
  *total = kTotalMem;
  *free = kTotalMem > allocated ? kTotalMem - allocated : 0;
  return RET(CUDA_SUCCESS, "free=%zu total=%zu", *free, *total);
}
CUresult cuMemAllocHost_v2(void** pp, size_t bytesize) {
  if (CUresult r = precheck(true)) return RET(r, "bytes=%zu", bytesize);
  *pp = hostAlloc(bytesize ? bytesize : 1);
  return RET(*pp ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY, "bytes=%zu", bytesize);
}
CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  if (CUresult r = precheck(true)) return RET(r, "bytes=%zu", bytesize);
  *pp = hostAlloc(bytesize ? bytesize : 1);
  return RET(*pp ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY, "bytes=%zu flags=%u", bytesize, Flags);
}
CUresult cuMemFreeHost(void* p) {
  if (CUresult r = precheck(true)) return RET0(r);
  return RET0(hostFree(reinterpret_cast<uintptr_t>(p)) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE);
}

// Copies: the synchronous ones run on the legacy stream (unsafe in capture);
// device ranges must lie in one allocation.
#define FAKE_CHECK_RANGE(p, n)                                                         \
  if (!inRange(p, n)) return RET(CUDA_ERROR_INVALID_VALUE, "bytes=%zu error=bad_pointer", n)
CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount) {
  if (CUresult r = precheck(true)) return RET(r, "bytes=%zu", ByteCount);
  FAKE_CHECK_RANGE(dstDevice, ByteCount);
  return RET(copy(reinterpret_cast<void*>(dstDevice), srcHost, ByteCount, nullptr), "bytes=%zu", ByteCount);
}
CUresult cuMemcpyDtoH_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  if (CUresult r = precheck(true)) return RET(r, "bytes=%zu", ByteCount);
  FAKE_CHECK_RANGE(srcDevice, ByteCount);
  return RET(copy(dstHost, reinterpret_cast<const void*>(srcDevice), ByteCount, nullptr), "bytes=%zu", ByteCount);
}
CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  if (CUresult r = precheck(true)) return RET(r, "bytes=%zu", ByteCount);
  FAKE_CHECK_RANGE(dstDevice, ByteCount);
  FAKE_CHECK_RANGE(srcDevice, ByteCount);
  return RET(copy(reinterpret_cast<void*>(dstDevice), reinterpret_cast<const void*>(srcDevice), ByteCount, nullptr), "bytes=%zu", ByteCount);
}
CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  if (CUresult r = precheck(true)) return RET(r, "bytes=%zu", ByteCount);
  return RET(copy(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), ByteCount, nullptr), "bytes=%zu", ByteCount);
}
#define FAKE_CHECK_STREAM(s, n)   \
  if (CUresult r = precheckStream(s)) return RET(r, "bytes=%zu %s", n, streamName(s).text)
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount, CUstream hStream) {
  FAKE_CHECK_STREAM(hStream, ByteCount);
  FAKE_CHECK_RANGE(dstDevice, ByteCount);
  return RET(copy(reinterpret_cast<void*>(dstDevice), srcHost, ByteCount, hStream), "bytes=%zu %s", ByteCount, streamName(hStream).text);
}
CUresult cuMemcpyDtoHAsync_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream) {
  FAKE_CHECK_STREAM(hStream, ByteCount);
  FAKE_CHECK_RANGE(srcDevice, ByteCount);
  return RET(copy(dstHost, reinterpret_cast<const void*>(srcDevice), ByteCount, hStream), "bytes=%zu %s", ByteCount, streamName(hStream).text);
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream) {
  FAKE_CHECK_STREAM(hStream, ByteCount);
  FAKE_CHECK_RANGE(dstDevice, ByteCount);
  FAKE_CHECK_RANGE(srcDevice, ByteCount);
  return RET(copy(reinterpret_cast<void*>(dstDevice), reinterpret_cast<const void*>(srcDevice), ByteCount, hStream), "bytes=%zu %s", ByteCount,
             streamName(hStream).text);
}
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream) {
  FAKE_CHECK_STREAM(hStream, ByteCount);
  return RET(copy(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), ByteCount, hStream), "bytes=%zu %s", ByteCount,
             streamName(hStream).text);
}
CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  if (CUresult r = precheck(true)) return RET(r, "bytes=%zu", N);
  return RET(memset(dstDevice, uc, 1, N, nullptr), "bytes=%zu value=%u", N, uc);
}
CUresult cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us, size_t N) {
  if (CUresult r = precheck(true)) return RET(r, "bytes=%zu", N * 2);
  return RET(memset(dstDevice, us, 2, N, nullptr), "bytes=%zu value=%u", N * 2, us);
}
CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N) {
  if (CUresult r = precheck(true)) return RET(r, "bytes=%zu", N * 4);
  return RET(memset(dstDevice, ui, 4, N, nullptr), "bytes=%zu value=%u", N * 4, ui);
}
CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
  FAKE_CHECK_STREAM(hStream, N);
  return RET(memset(dstDevice, uc, 1, N, hStream), "bytes=%zu value=%u %s", N, uc, streamName(hStream).text);
}
CUresult cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream) {
  FAKE_CHECK_STREAM(hStream, N * 2);
  return RET(memset(dstDevice, us, 2, N, hStream), "bytes=%zu value=%u %s", N * 2, us, streamName(hStream).text);
}
CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream) {
  FAKE_CHECK_STREAM(hStream, N * 4);
  return RET(memset(dstDevice, ui, 4, N, hStream), "bytes=%zu value=%u %s", N * 4, ui, streamName(hStream).text);
}

// Modules and kernels: any image loads, any name resolves.
CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  if (CUresult r = precheck(false)) return RET0(r);
  Module* m = new Module;
  *module = handle<CUmodule>(m);
  const bool elf = std::memcmp(image, "\x7f" "ELF", 4) == 0;
  return RET(CUDA_SUCCESS, "module=%d image=%s", m->id, elf ? "cubin" : "ptx");
}
CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int numOptions, CUjit_option*, void**) {
  if (CUresult r = precheck(false)) return RET0(r);
  Module* m = new Module;
  *module = handle<CUmodule>(m);
  const bool elf = std::memcmp(image, "\x7f" "ELF", 4) == 0;
  return RET(CUDA_SUCCESS, "module=%d image=%s options=%u", m->id, elf ? "cubin" : "ptx", numOptions);
}
CUresult cuModuleUnload(CUmodule hmod) {
  Module* m = as<Module>(hmod);
  if (!m) return RET0(CUDA_ERROR_INVALID_HANDLE);
  const int id = m->id;
  delete m;
  return RET(CUDA_SUCCESS, "module=%d", id);
}
CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
  Module* m = as<Module>(hmod);
  if (!m) return RET(CUDA_ERROR_INVALID_HANDLE, "name=%s", name);
  std::lock_guard<std::mutex> lock(m->mu);
  Function*& f = m->fns[name];
  if (!f) f = new Function(m, name);
  *hfunc = handle<CUfunction>(f);
  return RET(CUDA_SUCCESS, "module=%d name=%s", m->id, name);
}
CUresult cuModuleGetGlobal_v2(CUdeviceptr* dptr, size_t* bytes, CUmodule hmod, const char* name) {
  Module* m = as<Module>(hmod);
  if (!m) return RET(CUDA_ERROR_INVALID_HANDLE, "name=%s", name);
  if (std::strcmp(name, "aotc_index_error") != 0) return RET(CUDA_ERROR_NOT_FOUND, "module=%d name=%s", m->id, name);
  std::lock_guard<std::mutex> lock(m->mu);
  if (!m->indexError) m->indexError = hostAlloc(4);
  if (dptr) *dptr = reinterpret_cast<CUdeviceptr>(m->indexError);
  if (bytes) *bytes = 4;
  return RET(CUDA_SUCCESS, "module=%d name=%s bytes=4", m->id, name);
}
CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
  if (!as<Function>(hfunc)) return RET0(CUDA_ERROR_INVALID_HANDLE);
  return RET(CUDA_SUCCESS, "fn=%s attr=%d value=%d", fnName(hfunc), static_cast<int>(attrib), value);
}
CUresult cuFuncGetAttribute(int* pi, CUfunction_attribute attrib, CUfunction hfunc) {
  if (!as<Function>(hfunc)) return RET0(CUDA_ERROR_INVALID_HANDLE);
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = 32; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = 90; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *pi = 49152; break;
    default: *pi = 0; break;
  }
  return RET(CUDA_SUCCESS, "fn=%s attr=%d value=%d", fnName(hfunc), static_cast<int>(attrib), *pi);
}
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize) {
  *numBlocks = blockSize > 0 ? std::max(1, std::min(32, 2048 / blockSize)) : 0;
  return RET(CUDA_SUCCESS, "fn=%s block=%d shared=%zu blocks=%d", fnName(func), blockSize, dynamicSMemSize, *numBlocks);
}
CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,
                        unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, void** kernelParams,
                        void** extra) {
#define FAKE_LAUNCH_FMT "fn=%s grid=%u,%u,%u block=%u,%u,%u shared=%u %s"
#define FAKE_LAUNCH_ARGS fnName(f), gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, streamName(hStream).text
  if (CUresult r = precheckStream(hStream)) return RET(r, FAKE_LAUNCH_FMT, FAKE_LAUNCH_ARGS);
  if (!as<Function>(f)) return RET(CUDA_ERROR_INVALID_HANDLE, FAKE_LAUNCH_FMT, FAKE_LAUNCH_ARGS);
  if (blockDimX * blockDimY * blockDimZ > 1024 || blockDimX * blockDimY * blockDimZ == 0 || gridDimX * gridDimY * gridDimZ == 0 ||
      gridDimY > 65535 || gridDimZ > 65535 || blockDimZ > 64)
    return RET(CUDA_ERROR_INVALID_VALUE, FAKE_LAUNCH_FMT, FAKE_LAUNCH_ARGS);
  if (Graph* g = captureGraph(hStream)) {
    Node* n = new Node(Node::Kernel);
    n->kernel = CUDA_KERNEL_NODE_PARAMS{f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, nullptr, nullptr, nullptr, nullptr};
    n->name = fnName(f);
    g->add(n);
  }
  return RET(CUDA_SUCCESS, FAKE_LAUNCH_FMT " params=%s", FAKE_LAUNCH_ARGS, kernelParams ? "set" : extra ? "extra" : "null");
#undef FAKE_LAUNCH_FMT
#undef FAKE_LAUNCH_ARGS
}

// Streams and events: work is done when enqueued, so both are always complete.
CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  if (CUresult r = precheck(false)) return RET0(r);
  Stream* s = new Stream(Flags);
  *phStream = handle<CUstream>(s);
  return RET(CUDA_SUCCESS, "stream=%d flags=%u", s->id, Flags);
}
CUresult cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags, int priority) {
  if (CUresult r = precheck(false)) return RET0(r);
  Stream* s = new Stream(flags);
  *phStream = handle<CUstream>(s);
  return RET(CUDA_SUCCESS, "stream=%d flags=%u priority=%d", s->id, flags, priority);
}
CUresult cuStreamDestroy_v2(CUstream hStream) {
  Stream* s = as<Stream>(hStream);
  if (!s) return RET0(CUDA_ERROR_INVALID_HANDLE);
  const int id = s->id;
  if (s->capturing) {  // an abandoned capture
    if (s->mode == CU_STREAM_CAPTURE_MODE_GLOBAL) --globalCaptures;
    if (s->mode != CU_STREAM_CAPTURE_MODE_RELAXED && s->captureThread == std::this_thread::get_id()) --ownCaptures;
    std::lock_guard<std::mutex> lock(stateMu);
    capturing.erase(s);
    delete s->graph;
  }
  delete s;
  return RET(CUDA_SUCCESS, "stream=%d", id);
}
CUresult cuStreamSynchronize(CUstream hStream) {
  if (CUresult r = precheck(false)) return RET(r, "%s", streamName(hStream).text);
  Stream* s = as<Stream>(hStream);
  if ((s && s->capturing) || captureForbids()) {
    std::lock_guard<std::mutex> lock(stateMu);
    if (s) s->invalidated = true;
    return RET(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "%s", streamName(hStream).text);
  }
  return RET(CUDA_SUCCESS, "%s", streamName(hStream).text);
}
CUresult cuStreamQuery(CUstream hStream) {
  Stream* s = as<Stream>(hStream);
  if (s && s->capturing) return RET(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "%s", streamName(hStream).text);
  return RET(CUDA_SUCCESS, "%s", streamName(hStream).text);
}
CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  if (CUresult r = precheckStream(hStream)) return RET(r, "event=%d %s", idOf<Event>(hEvent), streamName(hStream).text);
  if (!as<Event>(hEvent)) return RET(CUDA_ERROR_INVALID_HANDLE, "%s", streamName(hStream).text);
  return RET(CUDA_SUCCESS, "event=%d flags=%u %s", idOf<Event>(hEvent), Flags, streamName(hStream).text);
}
CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  CUstreamCaptureMode old = threadMode;
  threadMode = *mode;
  *mode = old;
  return RET(CUDA_SUCCESS, "mode=%d", static_cast<int>(threadMode));
}
CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
  Stream* s = as<Stream>(hStream);
  if (!s) return RET(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "%s", streamName(hStream).text);  // the NULL stream cannot capture
  if (s->capturing) return RET(CUDA_ERROR_ILLEGAL_STATE, "%s", streamName(hStream).text);
  {
    std::lock_guard<std::mutex> lock(stateMu);
    s->graph = new Graph;
    s->mode = mode;
    s->invalidated = false;
    s->captureThread = std::this_thread::get_id();
    capturing.insert(s);
  }
  if (mode == CU_STREAM_CAPTURE_MODE_GLOBAL) ++globalCaptures;
  if (mode != CU_STREAM_CAPTURE_MODE_RELAXED) ++ownCaptures;
  s->capturing = true;
  return RET(CUDA_SUCCESS, "stream=%d mode=%d graph=%d", s->id, static_cast<int>(mode), s->graph->id);
}
CUresult cuStreamEndCapture(CUstream hStream, CUgraph* phGraph) {
  Stream* s = as<Stream>(hStream);
  if (!s || !s->capturing) return RET(CUDA_ERROR_ILLEGAL_STATE, "%s", streamName(hStream).text);
  if (s->captureThread != std::this_thread::get_id() && s->mode != CU_STREAM_CAPTURE_MODE_RELAXED)
    return RET(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, "stream=%d", s->id);
  s->capturing = false;
  if (s->mode == CU_STREAM_CAPTURE_MODE_GLOBAL) --globalCaptures;
  if (s->mode != CU_STREAM_CAPTURE_MODE_RELAXED) --ownCaptures;
  Graph* g;
  bool invalid;
  {
    std::lock_guard<std::mutex> lock(stateMu);
    capturing.erase(s);
    g = s->graph;
    s->graph = nullptr;
    invalid = s->invalidated;
  }
  if (invalid) {
    delete g;
    *phGraph = nullptr;
    return RET(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "stream=%d", s->id);
  }
  *phGraph = handle<CUgraph>(g);
  return RET(CUDA_SUCCESS, "stream=%d graph=%d nodes=%zu kernels=%d", s->id, g->id, g->nodes.size(), g->count(Node::Kernel));
}
CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus* captureStatus) {
  Stream* s = as<Stream>(hStream);
  *captureStatus = !s || !s->capturing ? CU_STREAM_CAPTURE_STATUS_NONE
                   : s->invalidated    ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                       : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  return RET(CUDA_SUCCESS, "%s status=%d", streamName(hStream).text, static_cast<int>(*captureStatus));
}
CUresult cuEventCreate(CUevent* phEvent, unsigned int Flags) {
  if (CUresult r = precheck(false)) return RET0(r);
  Event* e = new Event(Flags);
  *phEvent = handle<CUevent>(e);
  return RET(CUDA_SUCCESS, "event=%d flags=%u", e->id, Flags);
}
CUresult cuEventDestroy_v2(CUevent hEvent) {
  Event* e = as<Event>(hEvent);
  if (!e) return RET0(CUDA_ERROR_INVALID_HANDLE);
  const int id = e->id;
  delete e;
  return RET(CUDA_SUCCESS, "event=%d", id);
}
CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
  if (CUresult r = precheckStream(hStream)) return RET(r, "event=%d %s", idOf<Event>(hEvent), streamName(hStream).text);
  if (!as<Event>(hEvent)) return RET(CUDA_ERROR_INVALID_HANDLE, "%s", streamName(hStream).text);
  return RET(CUDA_SUCCESS, "event=%d %s", idOf<Event>(hEvent), streamName(hStream).text);
}
CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags) {
  if (CUresult r = precheckStream(hStream)) return RET(r, "event=%d %s", idOf<Event>(hEvent), streamName(hStream).text);
  if (!as<Event>(hEvent)) return RET(CUDA_ERROR_INVALID_HANDLE, "%s", streamName(hStream).text);
  return RET(CUDA_SUCCESS, "event=%d flags=%u %s", idOf<Event>(hEvent), flags, streamName(hStream).text);
}
CUresult cuEventQuery(CUevent hEvent) { return RET(as<Event>(hEvent) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE, "event=%d", idOf<Event>(hEvent)); }
CUresult cuEventSynchronize(CUevent hEvent) {
  if (CUresult r = precheck(true)) return RET(r, "event=%d", idOf<Event>(hEvent));
  return RET(as<Event>(hEvent) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE, "event=%d", idOf<Event>(hEvent));
}
CUresult cuEventElapsedTime_v2(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  Event *a = as<Event>(hStart), *b = as<Event>(hEnd);
  if (!a || !b) return RET0(CUDA_ERROR_INVALID_HANDLE);
  if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING) return RET(CUDA_ERROR_INVALID_HANDLE, "start=%d end=%d error=timing_disabled", a->id, b->id);
  *pMilliseconds = 0.001f;
  return RET(CUDA_SUCCESS, "start=%d end=%d", a->id, b->id);
}

// Graphs: an executable graph is a snapshot of the captured nodes; a launch
// replays its copies and memsets (kernels and library calls compute nothing).
CUresult cuGraphCreate(CUgraph* phGraph, unsigned int flags) {
  Graph* g = new Graph;
  *phGraph = handle<CUgraph>(g);
  return RET(CUDA_SUCCESS, "graph=%d flags=%u", g->id, flags);
}
CUresult cuGraphDestroy(CUgraph hGraph) {
  Graph* g = as<Graph>(hGraph);
  if (!g) return RET0(CUDA_ERROR_INVALID_VALUE);
  const int id = g->id;
  delete g;
  return RET(CUDA_SUCCESS, "graph=%d", id);
}
CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode* nodes, size_t* numNodes) {
  Graph* g = as<Graph>(hGraph);
  if (!g || !numNodes) return RET0(CUDA_ERROR_INVALID_VALUE);
  std::lock_guard<std::mutex> lock(g->mu);
  if (nodes)
    for (size_t i = 0; i < *numNodes; ++i) nodes[i] = i < g->nodes.size() ? handle<CUgraphNode>(g->nodes[i]) : nullptr;
  *numNodes = g->nodes.size();
  return RET(CUDA_SUCCESS, "graph=%d nodes=%zu", g->id, *numNodes);
}
CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType* type) {
  Node* n = as<Node>(hNode);
  if (!n) return RET0(CUDA_ERROR_INVALID_VALUE);
  *type = n->op == Node::Copy ? CU_GRAPH_NODE_TYPE_MEMCPY : n->op == Node::Memset ? CU_GRAPH_NODE_TYPE_MEMSET : CU_GRAPH_NODE_TYPE_KERNEL;
  return RET(CUDA_SUCCESS, "node=%d type=%d", n->id, static_cast<int>(*type));
}
CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  Node* n = as<Node>(hNode);
  if (!n || n->op == Node::Copy || n->op == Node::Memset) return RET0(CUDA_ERROR_INVALID_VALUE);
  *nodeParams = n->kernel;
  return RET(CUDA_SUCCESS, "node=%d fn=%s", n->id, n->name.c_str());
}
CUresult cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph, unsigned long long flags) {
  if (CUresult r = precheck(false)) return RET0(r);
  Graph* g = as<Graph>(hGraph);
  if (!g) return RET0(CUDA_ERROR_INVALID_VALUE);
  GraphExec* e = new GraphExec;
  {
    std::lock_guard<std::mutex> lock(g->mu);
    for (Node* n : g->nodes) e->nodes.push_back(*n);
  }
  *phGraphExec = handle<CUgraphExec>(e);
  return RET(CUDA_SUCCESS, "graph=%d exec=%d nodes=%zu flags=%llu", g->id, e->id, e->nodes.size(), flags);
}
CUresult cuGraphInstantiateWithParams(CUgraphExec* phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams) {
  if (CUresult r = precheck(false)) return RET0(r);
  Graph* g = as<Graph>(hGraph);
  if (!g) return RET0(CUDA_ERROR_INVALID_VALUE);
  GraphExec* e = new GraphExec;
  {
    std::lock_guard<std::mutex> lock(g->mu);
    for (Node* n : g->nodes) e->nodes.push_back(*n);
  }
  *phGraphExec = handle<CUgraphExec>(e);
  if (instantiateParams) instantiateParams->result_out = CUDA_GRAPH_INSTANTIATE_SUCCESS;
  return RET(CUDA_SUCCESS, "graph=%d exec=%d nodes=%zu", g->id, e->id, e->nodes.size());
}
CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
  GraphExec* e = as<GraphExec>(hGraphExec);
  if (!e) return RET0(CUDA_ERROR_INVALID_VALUE);
  const int id = e->id;
  delete e;
  return RET(CUDA_SUCCESS, "exec=%d", id);
}
CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  GraphExec* e = as<GraphExec>(hGraphExec);
  Node* n = as<Node>(hNode);
  if (!e || !n || !nodeParams) return RET0(CUDA_ERROR_INVALID_VALUE);
  return RET(CUDA_SUCCESS, "exec=%d node=%d fn=%s grid=%u,%u,%u block=%u,%u,%u", e->id, n->id, fnName(nodeParams->func), nodeParams->gridDimX,
             nodeParams->gridDimY, nodeParams->gridDimZ, nodeParams->blockDimX, nodeParams->blockDimY, nodeParams->blockDimZ);
}
CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphExecUpdateResultInfo* resultInfo) {
  GraphExec* e = as<GraphExec>(hGraphExec);
  Graph* g = as<Graph>(hGraph);
  if (!e || !g) return RET0(CUDA_ERROR_INVALID_VALUE);
  {
    std::lock_guard<std::mutex> lock(g->mu);
    e->nodes.clear();
    for (Node* n : g->nodes) e->nodes.push_back(*n);
  }
  if (resultInfo) *resultInfo = CUgraphExecUpdateResultInfo{CU_GRAPH_EXEC_UPDATE_SUCCESS, nullptr, nullptr};
  return RET(CUDA_SUCCESS, "exec=%d graph=%d nodes=%zu", e->id, g->id, e->nodes.size());
}
CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream) {
  if (CUresult r = precheckStream(hStream)) return RET(r, "%s", streamName(hStream).text);
  return RET(as<GraphExec>(hGraphExec) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE, "exec=%d %s", idOf<GraphExec>(hGraphExec), streamName(hStream).text);
}
CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  if (CUresult r = precheckStream(hStream)) return RET(r, "exec=%d %s", idOf<GraphExec>(hGraphExec), streamName(hStream).text);
  GraphExec* e = as<GraphExec>(hGraphExec);
  if (!e) return RET(CUDA_ERROR_INVALID_VALUE, "%s", streamName(hStream).text);
  int kernels = 0, library = 0;
  for (const Node& n : e->nodes) {
    if (n.op == Node::Copy && n.bytes) std::memmove(n.dst, n.src, n.bytes);
    if (n.op == Node::Memset) fill(n.dst, n.value, n.elem, n.count);
    kernels += n.op == Node::Kernel;
    library += n.op == Node::Library;
  }
  return RET(CUDA_SUCCESS, "exec=%d %s nodes=%zu kernels=%d library=%d", e->id, streamName(hStream).text, e->nodes.size(), kernels, library);
}

}  // extern "C"
#endif  // FAKE_CUDA_DRIVER

//===--- cuBLAS ------------------------------------------------------------===//
#ifdef FAKE_CUDA_CUBLAS
namespace {
struct CublasHandle : Obj {
  static constexpr Kind kKind = Kind::Cublas;
  cudaStream_t stream = nullptr;
  size_t workspace = 0;
  bool workspaceSet = false;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
  cublasPointerMode_t pointerMode = CUBLAS_POINTER_MODE_HOST;
  CublasHandle() : Obj(kKind) {}
};
// "workspace=<bytes>|default" (default: cuBLAS would allocate its own).
struct WsName {
  char text[40];
};
WsName wsName(const CublasHandle* h) {
  WsName r;
  if (h->workspaceSet)
    std::snprintf(r.text, sizeof r.text, "workspace=%zu", h->workspace);
  else
    std::snprintf(r.text, sizeof r.text, "workspace=default");
  return r;
}
}  // namespace

extern "C" {
cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  CublasHandle* h = new CublasHandle;
  *handle = ::handle<cublasHandle_t>(h);
  return RET(CUBLAS_STATUS_SUCCESS, "handle=%d", h->id);
}
cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  CublasHandle* h = as<CublasHandle>(handle);
  if (!h) return RET0(CUBLAS_STATUS_NOT_INITIALIZED);
  const int id = h->id;
  delete h;
  return RET(CUBLAS_STATUS_SUCCESS, "handle=%d", id);
}
cublasStatus_t cublasGetVersion_v2(cublasHandle_t, int* version) {
  *version = CUBLAS_VERSION;
  return RET(CUBLAS_STATUS_SUCCESS, "version=%d", CUBLAS_VERSION);
}
const char* cublasGetStatusString(cublasStatus_t status) {
  emit(__func__, "", 0);
  return status == CUBLAS_STATUS_SUCCESS ? "success" : "cuBLAS error (aotc fake)";
}
const char* cublasGetStatusName(cublasStatus_t status) {
  emit(__func__, "", 0);
  return status == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS" : "CUBLAS_STATUS_FAKE_ERROR";
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId) {
  CublasHandle* h = as<CublasHandle>(handle);
  if (!h) return RET0(CUBLAS_STATUS_NOT_INITIALIZED);
  h->stream = streamId;
  return RET(CUBLAS_STATUS_SUCCESS, "handle=%d %s", h->id, streamName(streamId).text);
}
cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* streamId) {
  CublasHandle* h = as<CublasHandle>(handle);
  if (!h) return RET0(CUBLAS_STATUS_NOT_INITIALIZED);
  *streamId = h->stream;
  return RET(CUBLAS_STATUS_SUCCESS, "handle=%d", h->id);
}
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, size_t workspaceSizeInBytes) {
  CublasHandle* h = as<CublasHandle>(handle);
  if (!h) return RET0(CUBLAS_STATUS_NOT_INITIALIZED);
  if (workspaceSizeInBytes && !workspace) return RET(CUBLAS_STATUS_INVALID_VALUE, "handle=%d bytes=%zu", h->id, workspaceSizeInBytes);
  h->workspace = workspaceSizeInBytes;
  h->workspaceSet = true;
  return RET(CUBLAS_STATUS_SUCCESS, "handle=%d bytes=%zu", h->id, workspaceSizeInBytes);
}
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  CublasHandle* h = as<CublasHandle>(handle);
  if (!h) return RET0(CUBLAS_STATUS_NOT_INITIALIZED);
  h->math = mode;
  return RET(CUBLAS_STATUS_SUCCESS, "handle=%d mode=%d", h->id, static_cast<int>(mode));
}
cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
  CublasHandle* h = as<CublasHandle>(handle);
  if (!h) return RET0(CUBLAS_STATUS_NOT_INITIALIZED);
  *mode = h->math;
  return RET(CUBLAS_STATUS_SUCCESS, "handle=%d", h->id);
}
cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode) {
  CublasHandle* h = as<CublasHandle>(handle);
  if (!h) return RET0(CUBLAS_STATUS_NOT_INITIALIZED);
  h->pointerMode = mode;
  return RET(CUBLAS_STATUS_SUCCESS, "handle=%d mode=%d", h->id, static_cast<int>(mode));
}
// The 32-bit overloads (C linkage); the header's C++ overloads of the same
// names are inline wrappers of the _64 entry points, not exported symbols.
cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, const void*,
                            const void*, cudaDataType Atype, int, const void*, cudaDataType, int, const void*, void*, cudaDataType, int,
                            cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  CublasHandle* h = as<CublasHandle>(handle);
  if (!h) return RET0(CUBLAS_STATUS_NOT_INITIALIZED);
  if (m < 0 || n < 0 || k < 0) return RET(CUBLAS_STATUS_INVALID_VALUE, "m=%d n=%d k=%d", m, n, k);
  recordLibraryCall(h->stream, __func__);
  return RET(CUBLAS_STATUS_SUCCESS, "handle=%d m=%d n=%d k=%d ta=%d tb=%d type=%d compute=%d algo=%d %s %s", h->id, m, n, k,
             static_cast<int>(transa), static_cast<int>(transb), static_cast<int>(Atype), static_cast<int>(computeType),
             static_cast<int>(algo), wsName(h).text, streamName(h->stream).text);
}
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
                                          const void*, const void*, cudaDataType Atype, int, long long int, const void*, cudaDataType, int,
                                          long long int, const void*, void*, cudaDataType, int, long long int, int batchCount,
                                          cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  CublasHandle* h = as<CublasHandle>(handle);
  if (!h) return RET0(CUBLAS_STATUS_NOT_INITIALIZED);
  if (m < 0 || n < 0 || k < 0 || batchCount < 0) return RET(CUBLAS_STATUS_INVALID_VALUE, "m=%d n=%d k=%d batch=%d", m, n, k, batchCount);
  recordLibraryCall(h->stream, __func__);
  return RET(CUBLAS_STATUS_SUCCESS, "handle=%d m=%d n=%d k=%d batch=%d ta=%d tb=%d type=%d compute=%d algo=%d %s %s", h->id, m, n, k, batchCount,
             static_cast<int>(transa), static_cast<int>(transb), static_cast<int>(Atype), static_cast<int>(computeType),
             static_cast<int>(algo), wsName(h).text, streamName(h->stream).text);
}
cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t, cublasOperation_t, int m, int n, int k, const float*, const float*, int,
                              const float*, int, const float*, float*, int) {
  CublasHandle* h = as<CublasHandle>(handle);
  if (!h) return RET0(CUBLAS_STATUS_NOT_INITIALIZED);
  recordLibraryCall(h->stream, __func__);
  return RET(CUBLAS_STATUS_SUCCESS, "handle=%d m=%d n=%d k=%d %s %s", h->id, m, n, k, wsName(h).text, streamName(h->stream).text);
}
cublasStatus_t cublasDgemm_v2(cublasHandle_t handle, cublasOperation_t, cublasOperation_t, int m, int n, int k, const double*, const double*,
                              int, const double*, int, const double*, double*, int) {
  CublasHandle* h = as<CublasHandle>(handle);
  if (!h) return RET0(CUBLAS_STATUS_NOT_INITIALIZED);
  recordLibraryCall(h->stream, __func__);
  return RET(CUBLAS_STATUS_SUCCESS, "handle=%d m=%d n=%d k=%d %s %s", h->id, m, n, k, wsName(h).text, streamName(h->stream).text);
}
}  // extern "C"
#endif  // FAKE_CUDA_CUBLAS

//===--- cuBLASLt ----------------------------------------------------------===//
#ifdef FAKE_CUDA_CUBLASLT
namespace {
constexpr uint64_t kAlgoMagic = 0x4f474c41454b4146ull;  // "FAKEALGO" in memory
struct LtHandle : Obj {
  static constexpr Kind kKind = Kind::Lt;
  LtHandle() : Obj(kKind) {}
};
struct LtDesc : Obj {
  static constexpr Kind kKind = Kind::LtDesc;
  cublasComputeType_t compute;
  cudaDataType_t scale;
  int transa = 0, transb = 0, epilogue = 1;
  LtDesc(cublasComputeType_t c, cudaDataType_t s) : Obj(kKind), compute(c), scale(s) {}
};
struct LtLayout : Obj {
  static constexpr Kind kKind = Kind::LtLayout;
  cudaDataType type;
  uint64_t rows, cols;
  int64_t ld;
  int batch = 1;
  LtLayout(cudaDataType t, uint64_t r, uint64_t c, int64_t l) : Obj(kKind), type(t), rows(r), cols(c), ld(l) {}
};
struct LtPref : Obj {
  static constexpr Kind kKind = Kind::LtPref;
  uint64_t maxWorkspace = 0;
  LtPref() : Obj(kKind) {}
};
int readInt(const void* buf, size_t n) {
  int32_t v = 0;
  std::memcpy(&v, buf, std::min(n, sizeof v));
  return v;
}
// "m=.. n=.. k=.. batch=.." from the layouts (k from A and the desc's transa).
struct Shape {
  char text[96];
};
Shape shape(const LtDesc* d, const LtLayout* a, const LtLayout* c) {
  Shape r;
  const uint64_t k = !a ? 0 : d && d->transa ? a->rows : a->cols;
  std::snprintf(r.text, sizeof r.text, "m=%llu n=%llu k=%llu batch=%d epilogue=%d", c ? static_cast<unsigned long long>(c->rows) : 0ull,
                c ? static_cast<unsigned long long>(c->cols) : 0ull, static_cast<unsigned long long>(k), c ? c->batch : 0, d ? d->epilogue : 0);
  return r;
}
}  // namespace

extern "C" {
cublasStatus_t cublasLtCreate(cublasLtHandle_t* lightHandle) {
  LtHandle* h = new LtHandle;
  *lightHandle = handle<cublasLtHandle_t>(h);
  return RET(CUBLAS_STATUS_SUCCESS, "handle=%d", h->id);
}
cublasStatus_t cublasLtDestroy(cublasLtHandle_t lightHandle) {
  LtHandle* h = as<LtHandle>(lightHandle);
  if (!h) return RET0(CUBLAS_STATUS_NOT_INITIALIZED);
  const int id = h->id;
  delete h;
  return RET(CUBLAS_STATUS_SUCCESS, "handle=%d", id);
}
size_t cublasLtGetVersion(void) {
  LOG0();
  return CUBLAS_VERSION;
}
const char* cublasLtGetStatusName(cublasStatus_t status) {
  LOG0();
  return status == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS" : "CUBLAS_STATUS_FAKE_ERROR";
}
const char* cublasLtGetStatusString(cublasStatus_t status) {
  LOG0();
  return status == CUBLAS_STATUS_SUCCESS ? "success" : "cuBLASLt error (aotc fake)";
}
cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* matmulDesc, cublasComputeType_t computeType, cudaDataType_t scaleType) {
  LtDesc* d = new LtDesc(computeType, scaleType);
  *matmulDesc = handle<cublasLtMatmulDesc_t>(d);
  return RET(CUBLAS_STATUS_SUCCESS, "desc=%d compute=%d scale=%d", d->id, static_cast<int>(computeType), static_cast<int>(scaleType));
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc) {
  LtDesc* d = as<LtDesc>(matmulDesc);
  if (!d) return RET0(CUBLAS_STATUS_INVALID_VALUE);
  const int id = d->id;
  delete d;
  return RET(CUBLAS_STATUS_SUCCESS, "desc=%d", id);
}
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc, cublasLtMatmulDescAttributes_t attr, const void* buf,
                                              size_t sizeInBytes) {
  LtDesc* d = as<LtDesc>(matmulDesc);
  if (!d || !buf) return RET(CUBLAS_STATUS_INVALID_VALUE, "attr=%d", static_cast<int>(attr));
  if (attr == CUBLASLT_MATMUL_DESC_TRANSA) d->transa = readInt(buf, sizeInBytes);
  if (attr == CUBLASLT_MATMUL_DESC_TRANSB) d->transb = readInt(buf, sizeInBytes);
  if (attr == CUBLASLT_MATMUL_DESC_EPILOGUE) d->epilogue = readInt(buf, sizeInBytes);
  return RET(CUBLAS_STATUS_SUCCESS, "desc=%d attr=%d bytes=%zu", d->id, static_cast<int>(attr), sizeInBytes);
}
cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t matmulDesc, cublasLtMatmulDescAttributes_t attr, void* buf,
                                              size_t sizeInBytes, size_t* sizeWritten) {
  LtDesc* d = as<LtDesc>(matmulDesc);
  if (!d) return RET(CUBLAS_STATUS_INVALID_VALUE, "attr=%d", static_cast<int>(attr));
  int32_t v = attr == CUBLASLT_MATMUL_DESC_TRANSA ? d->transa : attr == CUBLASLT_MATMUL_DESC_TRANSB ? d->transb
              : attr == CUBLASLT_MATMUL_DESC_EPILOGUE ? d->epilogue : 0;
  if (buf && sizeInBytes) std::memcpy(buf, &v, std::min(sizeInBytes, sizeof v));
  if (sizeWritten) *sizeWritten = sizeof v;
  return RET(CUBLAS_STATUS_SUCCESS, "desc=%d attr=%d", d->id, static_cast<int>(attr));
}
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* matLayout, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld) {
  LtLayout* l = new LtLayout(type, rows, cols, ld);
  *matLayout = handle<cublasLtMatrixLayout_t>(l);
  return RET(CUBLAS_STATUS_SUCCESS, "layout=%d type=%d rows=%llu cols=%llu ld=%lld", l->id, static_cast<int>(type),
             static_cast<unsigned long long>(rows), static_cast<unsigned long long>(cols), static_cast<long long>(ld));
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout) {
  LtLayout* l = as<LtLayout>(matLayout);
  if (!l) return RET0(CUBLAS_STATUS_INVALID_VALUE);
  const int id = l->id;
  delete l;
  return RET(CUBLAS_STATUS_SUCCESS, "layout=%d", id);
}
cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout, cublasLtMatrixLayoutAttribute_t attr, const void* buf,
                                                size_t sizeInBytes) {
  LtLayout* l = as<LtLayout>(matLayout);
  if (!l || !buf) return RET(CUBLAS_STATUS_INVALID_VALUE, "attr=%d", static_cast<int>(attr));
  if (attr == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT) l->batch = readInt(buf, sizeInBytes);
  return RET(CUBLAS_STATUS_SUCCESS, "layout=%d attr=%d bytes=%zu", l->id, static_cast<int>(attr), sizeInBytes);
}
cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  LtPref* p = new LtPref;
  *pref = handle<cublasLtMatmulPreference_t>(p);
  return RET(CUBLAS_STATUS_SUCCESS, "pref=%d", p->id);
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  LtPref* p = as<LtPref>(pref);
  if (!p) return RET0(CUBLAS_STATUS_INVALID_VALUE);
  const int id = p->id;
  delete p;
  return RET(CUBLAS_STATUS_SUCCESS, "pref=%d", id);
}
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                                                    size_t sizeInBytes) {
  LtPref* p = as<LtPref>(pref);
  if (!p || !buf) return RET(CUBLAS_STATUS_INVALID_VALUE, "attr=%d", static_cast<int>(attr));
  if (attr == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES) std::memcpy(&p->maxWorkspace, buf, std::min(sizeInBytes, sizeof p->maxWorkspace));
  return RET(CUBLAS_STATUS_SUCCESS, "pref=%d attr=%d bytes=%zu", p->id, static_cast<int>(attr), sizeInBytes);
}
// One result: a fake algorithm needing min(1 MiB, the preference's maximum) of workspace.
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc, cublasLtMatrixLayout_t Adesc,
                                              cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                                              cublasLtMatmulPreference_t preference, int requestedAlgoCount,
                                              cublasLtMatmulHeuristicResult_t heuristicResultsArray[], int* returnAlgoCount) {
  LtDesc* d = as<LtDesc>(operationDesc);
  LtPref* p = as<LtPref>(preference);
  if (!as<LtHandle>(lightHandle)) return RET0(CUBLAS_STATUS_NOT_INITIALIZED);
  if (!d || !p || !as<LtLayout>(Adesc) || !as<LtLayout>(Bdesc) || !as<LtLayout>(Cdesc) || !as<LtLayout>(Ddesc) || requestedAlgoCount < 1)
    return RET0(CUBLAS_STATUS_INVALID_VALUE);
  cublasLtMatmulHeuristicResult_t& r = heuristicResultsArray[0];
  std::memset(&r, 0, sizeof r);
  r.algo.data[0] = kAlgoMagic;
  r.algo.data[1] = 1;
  r.workspaceSize = std::min<uint64_t>(p->maxWorkspace, 1u << 20);
  r.state = CUBLAS_STATUS_SUCCESS;
  r.wavesCount = 1.0f;
  *returnAlgoCount = 1;
  return RET(CUBLAS_STATUS_SUCCESS, "%s requested=%d returned=1 workspace=%zu", shape(d, as<LtLayout>(Adesc), as<LtLayout>(Cdesc)).text,
             requestedAlgoCount, r.workspaceSize);
}
cublasStatus_t cublasLtMatmulAlgoGetIds(cublasLtHandle_t lightHandle, cublasComputeType_t, cudaDataType_t, cudaDataType_t, cudaDataType_t,
                                        cudaDataType_t, cudaDataType_t, int requestedAlgoCount, int algoIdsArray[], int* returnAlgoCount) {
  if (!as<LtHandle>(lightHandle) || requestedAlgoCount < 1) return RET0(CUBLAS_STATUS_INVALID_VALUE);
  algoIdsArray[0] = 1;
  *returnAlgoCount = 1;
  return RET(CUBLAS_STATUS_SUCCESS, "requested=%d returned=1", requestedAlgoCount);
}
cublasStatus_t cublasLtMatmulAlgoInit(cublasLtHandle_t lightHandle, cublasComputeType_t, cudaDataType_t, cudaDataType_t, cudaDataType_t,
                                      cudaDataType_t, cudaDataType_t, int algoId, cublasLtMatmulAlgo_t* algo) {
  if (!as<LtHandle>(lightHandle) || !algo) return RET0(CUBLAS_STATUS_INVALID_VALUE);
  std::memset(algo, 0, sizeof *algo);
  algo->data[0] = kAlgoMagic;
  algo->data[1] = static_cast<uint64_t>(algoId);
  return RET(CUBLAS_STATUS_SUCCESS, "id=%d", algoId);
}
cublasStatus_t cublasLtMatmulAlgoConfigSetAttribute(cublasLtMatmulAlgo_t* algo, cublasLtMatmulAlgoConfigAttributes_t attr, const void*, size_t sizeInBytes) {
  return RET(algo ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE, "attr=%d bytes=%zu", static_cast<int>(attr), sizeInBytes);
}
cublasStatus_t cublasLtMatmulAlgoConfigGetAttribute(const cublasLtMatmulAlgo_t* algo, cublasLtMatmulAlgoConfigAttributes_t attr, void* buf,
                                                    size_t sizeInBytes, size_t* sizeWritten) {
  if (!algo) return RET0(CUBLAS_STATUS_INVALID_VALUE);
  const int32_t v = attr == CUBLASLT_ALGO_CONFIG_ID ? static_cast<int32_t>(algo->data[1]) : 0;
  if (buf && sizeInBytes) std::memcpy(buf, &v, std::min(sizeInBytes, sizeof v));
  if (sizeWritten) *sizeWritten = sizeof v;
  return RET(CUBLAS_STATUS_SUCCESS, "attr=%d", static_cast<int>(attr));
}
cublasStatus_t cublasLtMatmulAlgoCheck(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc, cublasLtMatrixLayout_t Adesc,
                                       cublasLtMatrixLayout_t, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t* algo,
                                       cublasLtMatmulHeuristicResult_t* result) {
  if (!as<LtHandle>(lightHandle) || !algo || !result) return RET0(CUBLAS_STATUS_INVALID_VALUE);
  const cublasLtMatmulAlgo_t copy = *algo;  // algo may point into result
  std::memset(result, 0, sizeof *result);
  result->algo = copy;
  result->workspaceSize = 1u << 20;
  result->state = CUBLAS_STATUS_SUCCESS;
  result->wavesCount = 1.0f;
  return RET(CUBLAS_STATUS_SUCCESS, "%s workspace=%zu", shape(as<LtDesc>(operationDesc), as<LtLayout>(Adesc), as<LtLayout>(Cdesc)).text,
             result->workspaceSize);
}
cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc, const void*, const void*, cublasLtMatrixLayout_t Adesc,
                              const void*, cublasLtMatrixLayout_t Bdesc, const void*, const void*, cublasLtMatrixLayout_t Cdesc, void*,
                              cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspaceSizeInBytes,
                              cudaStream_t stream) {
  LtDesc* d = as<LtDesc>(computeDesc);
  if (!as<LtHandle>(lightHandle)) return RET0(CUBLAS_STATUS_NOT_INITIALIZED);
  if (!d || !as<LtLayout>(Adesc) || !as<LtLayout>(Bdesc) || !as<LtLayout>(Cdesc) || !as<LtLayout>(Ddesc) || (workspaceSizeInBytes && !workspace))
    return RET(CUBLAS_STATUS_INVALID_VALUE, "%s", streamName(stream).text);
  recordLibraryCall(stream, __func__);
  return RET(CUBLAS_STATUS_SUCCESS, "%s algo=%s workspace=%zu %s", shape(d, as<LtLayout>(Adesc), as<LtLayout>(Cdesc)).text, algo ? "set" : "null",
             workspaceSizeInBytes, streamName(stream).text);
}
}  // extern "C"
#endif  // FAKE_CUDA_CUBLASLT

//===--- cuDNN -------------------------------------------------------------===//
#ifdef FAKE_CUDA_CUDNN
namespace {
constexpr size_t kConvWorkspace = 1u << 20;
struct CudnnHandle : Obj {
  static constexpr Kind kKind = Kind::Cudnn;
  cudaStream_t stream = nullptr;
  CudnnHandle() : Obj(kKind) {}
};
struct TensorDesc : Obj {
  static constexpr Kind kKind = Kind::Tensor;
  int dims[8] = {};
  int nd = 0;
  TensorDesc() : Obj(kKind) {}
};
struct FilterDesc : Obj {
  static constexpr Kind kKind = Kind::Filter;
  int dims[8] = {};
  int nd = 0;
  FilterDesc() : Obj(kKind) {}
};
struct ConvDesc : Obj {
  static constexpr Kind kKind = Kind::Conv;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  int groups = 1;
  ConvDesc() : Obj(kKind) {}
};
struct BackendDesc : Obj {
  static constexpr Kind kKind = Kind::Backend;
  cudnnBackendDescriptorType_t type;
  explicit BackendDesc(cudnnBackendDescriptorType_t t) : Obj(kKind), type(t) {}
};
template <typename T, typename H>
int createDesc(H* out) {
  T* d = new T;
  *out = handle<H>(d);
  return d->id;
}
template <typename T>
bool destroyDesc(void* h, int* id) {
  T* d = as<T>(h);
  if (!d) return false;
  *id = d->id;
  delete d;
  return true;
}
template <typename Perf>
int fillPerf(Perf* p, int requested, const cudnnConvolutionDescriptor_t cd, float time) {
  // Two candidates, as cuDNN's heuristics list several math types: algo 0
  // with tensor ops (TF32 for float32) first, then algo 1 in the
  // descriptor's own math type.  Under FMA math the runtime must take algo 1
  // (a convolution run with algo 0 under FMA math fails: Note [One math type]).
  ConvDesc* c = as<ConvDesc>(cd);
  const cudnnMathType_t own = c ? c->math : CUDNN_DEFAULT_MATH;
  const int n = std::min(requested, 2);
  for (int i = 0; i < n; ++i) {
    std::memset(&p[i], 0, sizeof p[i]);
    p[i].algo = static_cast<decltype(p[i].algo)>(i);
    p[i].status = CUDNN_STATUS_SUCCESS;
    p[i].time = time;
    p[i].memory = kConvWorkspace;
    p[i].determinism = CUDNN_DETERMINISTIC;
    p[i].mathType = i == 0 ? CUDNN_TENSOR_OP_MATH : own;
  }
  return n;
}
// "n=..,..,.. " of a tensor or filter descriptor.
struct Dims {
  char text[80];
};
template <typename D>
Dims dims(const void* h) {
  Dims r{};
  D* d = as<D>(h);
  int n = 0;
  for (int i = 0; d && i < d->nd && n < 70; ++i) n += std::snprintf(r.text + n, sizeof r.text - static_cast<size_t>(n), i ? ",%d" : "%d", d->dims[i]);
  if (n == 0) std::snprintf(r.text, sizeof r.text, "?");
  return r;
}
#define FAKE_CONV_RET(handle, xDesc, wDesc, convDesc, algo, bytes)                                                                         \
  do {                                                                                                                                     \
    CudnnHandle* h_ = as<CudnnHandle>(handle);                                                                                             \
    if (!h_) return RET0(CUDNN_STATUS_BAD_PARAM);                                                                                          \
    ConvDesc* c_ = as<ConvDesc>(convDesc);                                                                                                 \
    if (c_ && c_->math == CUDNN_FMA_MATH && static_cast<int>(algo) == 0)                                                                   \
      return RET(CUDNN_STATUS_BAD_PARAM, "algo=0 is the fake's tensor-op candidate, run under FMA math");                                \
    recordLibraryCall(h_->stream, __func__);                                                                                               \
    return RET(CUDNN_STATUS_SUCCESS, "x=%s w=%s algo=%d workspace=%zu %s", dims<TensorDesc>(xDesc).text, dims<FilterDesc>(wDesc).text,   \
               static_cast<int>(algo), bytes, streamName(h_->stream).text);                                                                \
  } while (0)
}  // namespace

extern "C" {
cudnnStatus_t cudnnCreate(cudnnHandle_t* handle) {
  CudnnHandle* h = new CudnnHandle;
  *handle = ::handle<cudnnHandle_t>(h);
  return RET(CUDNN_STATUS_SUCCESS, "handle=%d", h->id);
}
cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  int id = 0;
  const bool ok = destroyDesc<CudnnHandle>(handle, &id);
  return RET(ok ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM, "handle=%d", id);
}
size_t cudnnGetVersion(void) {
  LOG0();
  return CUDNN_VERSION;
}
const char* cudnnGetErrorString(cudnnStatus_t status) {
  LOG0();
  switch (status) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    default: return "CUDNN_STATUS_FAKE_ERROR";
  }
}
cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t streamId) {
  CudnnHandle* h = as<CudnnHandle>(handle);
  if (!h) return RET0(CUDNN_STATUS_BAD_PARAM);
  h->stream = streamId;
  return RET(CUDNN_STATUS_SUCCESS, "handle=%d %s", h->id, streamName(streamId).text);
}
cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t* streamId) {
  CudnnHandle* h = as<CudnnHandle>(handle);
  if (!h) return RET0(CUDNN_STATUS_BAD_PARAM);
  *streamId = h->stream;
  return RET(CUDNN_STATUS_SUCCESS, "handle=%d", h->id);
}

// Descriptors.
cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* tensorDesc) {
  const int id = createDesc<TensorDesc>(tensorDesc);
  return RET(CUDNN_STATUS_SUCCESS, "desc=%d", id);
}
cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t tensorDesc) {
  int id = 0;
  const bool ok = destroyDesc<TensorDesc>(tensorDesc, &id) || !tensorDesc;
  return RET(ok ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM, "desc=%d", id);
}
cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t tensorDesc, cudnnDataType_t dataType, int nbDims, const int dimA[], const int strideA[]) {
  TensorDesc* d = as<TensorDesc>(tensorDesc);
  if (!d || nbDims < 1 || nbDims > 8 || !dimA || !strideA) return RET(CUDNN_STATUS_BAD_PARAM, "nd=%d", nbDims);
  d->nd = nbDims;
  for (int i = 0; i < nbDims; ++i) d->dims[i] = dimA[i];
  return RET(CUDNN_STATUS_SUCCESS, "desc=%d type=%d dims=%s", d->id, static_cast<int>(dataType), dims<TensorDesc>(d).text);
}
cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t tensorDesc, cudnnTensorFormat_t format, cudnnDataType_t dataType, int n, int c,
                                         int h, int w) {
  TensorDesc* d = as<TensorDesc>(tensorDesc);
  if (!d) return RET0(CUDNN_STATUS_BAD_PARAM);
  d->nd = 4;
  d->dims[0] = n, d->dims[1] = c, d->dims[2] = h, d->dims[3] = w;
  return RET(CUDNN_STATUS_SUCCESS, "desc=%d format=%d type=%d dims=%s", d->id, static_cast<int>(format), static_cast<int>(dataType), dims<TensorDesc>(d).text);
}
cudnnStatus_t cudnnSetTensor4dDescriptorEx(cudnnTensorDescriptor_t tensorDesc, cudnnDataType_t dataType, int n, int c, int h, int w, int, int, int, int) {
  TensorDesc* d = as<TensorDesc>(tensorDesc);
  if (!d) return RET0(CUDNN_STATUS_BAD_PARAM);
  d->nd = 4;
  d->dims[0] = n, d->dims[1] = c, d->dims[2] = h, d->dims[3] = w;
  return RET(CUDNN_STATUS_SUCCESS, "desc=%d type=%d dims=%s", d->id, static_cast<int>(dataType), dims<TensorDesc>(d).text);
}
cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* filterDesc) {
  const int id = createDesc<FilterDesc>(filterDesc);
  return RET(CUDNN_STATUS_SUCCESS, "desc=%d", id);
}
cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t filterDesc) {
  int id = 0;
  const bool ok = destroyDesc<FilterDesc>(filterDesc, &id) || !filterDesc;
  return RET(ok ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM, "desc=%d", id);
}
cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType, cudnnTensorFormat_t format, int k, int c, int h, int w) {
  FilterDesc* d = as<FilterDesc>(filterDesc);
  if (!d) return RET0(CUDNN_STATUS_BAD_PARAM);
  d->nd = 4;
  d->dims[0] = k, d->dims[1] = c, d->dims[2] = h, d->dims[3] = w;
  return RET(CUDNN_STATUS_SUCCESS, "desc=%d type=%d format=%d dims=%s", d->id, static_cast<int>(dataType), static_cast<int>(format), dims<FilterDesc>(d).text);
}
cudnnStatus_t cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType, cudnnTensorFormat_t format, int nbDims,
                                         const int filterDimA[]) {
  FilterDesc* d = as<FilterDesc>(filterDesc);
  if (!d || nbDims < 1 || nbDims > 8 || !filterDimA) return RET(CUDNN_STATUS_BAD_PARAM, "nd=%d", nbDims);
  d->nd = nbDims;
  for (int i = 0; i < nbDims; ++i) d->dims[i] = filterDimA[i];
  return RET(CUDNN_STATUS_SUCCESS, "desc=%d type=%d format=%d dims=%s", d->id, static_cast<int>(dataType), static_cast<int>(format), dims<FilterDesc>(d).text);
}
cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* convDesc) {
  const int id = createDesc<ConvDesc>(convDesc);
  return RET(CUDNN_STATUS_SUCCESS, "desc=%d", id);
}
cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t convDesc) {
  int id = 0;
  const bool ok = destroyDesc<ConvDesc>(convDesc, &id) || !convDesc;
  return RET(ok ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM, "desc=%d", id);
}
cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t convDesc, int pad_h, int pad_w, int u, int v, int dilation_h,
                                              int dilation_w, cudnnConvolutionMode_t mode, cudnnDataType_t computeType) {
  ConvDesc* c = as<ConvDesc>(convDesc);
  if (!c || u <= 0 || v <= 0 || dilation_h <= 0 || dilation_w <= 0) return RET0(CUDNN_STATUS_BAD_PARAM);
  return RET(CUDNN_STATUS_SUCCESS, "desc=%d pad=%d,%d stride=%d,%d dilation=%d,%d mode=%d compute=%d", c->id, pad_h, pad_w, u, v, dilation_h,
             dilation_w, static_cast<int>(mode), static_cast<int>(computeType));
}
cudnnStatus_t cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t convDesc, int arrayLength, const int[], const int[], const int[],
                                              cudnnConvolutionMode_t mode, cudnnDataType_t computeType) {
  ConvDesc* c = as<ConvDesc>(convDesc);
  if (!c) return RET0(CUDNN_STATUS_BAD_PARAM);
  return RET(CUDNN_STATUS_SUCCESS, "desc=%d nd=%d mode=%d compute=%d", c->id, arrayLength, static_cast<int>(mode), static_cast<int>(computeType));
}
cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t convDesc, int groupCount) {
  ConvDesc* c = as<ConvDesc>(convDesc);
  if (!c || groupCount < 1) return RET0(CUDNN_STATUS_BAD_PARAM);
  c->groups = groupCount;
  return RET(CUDNN_STATUS_SUCCESS, "desc=%d groups=%d", c->id, groupCount);
}
cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t convDesc, cudnnMathType_t mathType) {
  ConvDesc* c = as<ConvDesc>(convDesc);
  if (!c) return RET0(CUDNN_STATUS_BAD_PARAM);
  c->math = mathType;
  return RET(CUDNN_STATUS_SUCCESS, "desc=%d math=%d", c->id, static_cast<int>(mathType));
}

// Algorithm queries: two deterministic candidates needing 1 MiB each (fillPerf).
cudnnStatus_t cudnnGetConvolutionForwardAlgorithmMaxCount(cudnnHandle_t, int* count) {
  *count = 2;
  return RET0(CUDNN_STATUS_SUCCESS);
}
cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithmMaxCount(cudnnHandle_t, int* count) {
  *count = 2;
  return RET0(CUDNN_STATUS_SUCCESS);
}
cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(cudnnHandle_t, int* count) {
  *count = 2;
  return RET0(CUDNN_STATUS_SUCCESS);
}
cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t, const cudnnTensorDescriptor_t srcDesc, const cudnnFilterDescriptor_t filterDesc,
                                                     const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t,
                                                     const int requestedAlgoCount, int* returnedAlgoCount, cudnnConvolutionFwdAlgoPerf_t* perfResults) {
  if (requestedAlgoCount < 1) return RET0(CUDNN_STATUS_BAD_PARAM);
  *returnedAlgoCount = fillPerf(perfResults, requestedAlgoCount, convDesc, -1.0f);
  return RET(CUDNN_STATUS_SUCCESS, "x=%s w=%s requested=%d returned=%d", dims<TensorDesc>(srcDesc).text, dims<FilterDesc>(filterDesc).text, requestedAlgoCount, *returnedAlgoCount);
}
cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnnHandle_t, const cudnnFilterDescriptor_t filterDesc, const cudnnTensorDescriptor_t diffDesc,
                                                          const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t,
                                                          const int requestedAlgoCount, int* returnedAlgoCount,
                                                          cudnnConvolutionBwdDataAlgoPerf_t* perfResults) {
  if (requestedAlgoCount < 1) return RET0(CUDNN_STATUS_BAD_PARAM);
  *returnedAlgoCount = fillPerf(perfResults, requestedAlgoCount, convDesc, -1.0f);
  return RET(CUDNN_STATUS_SUCCESS, "dy=%s w=%s requested=%d returned=%d", dims<TensorDesc>(diffDesc).text, dims<FilterDesc>(filterDesc).text, requestedAlgoCount, *returnedAlgoCount);
}
cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnnHandle_t, const cudnnTensorDescriptor_t srcDesc, const cudnnTensorDescriptor_t,
                                                            const cudnnConvolutionDescriptor_t convDesc, const cudnnFilterDescriptor_t gradDesc,
                                                            const int requestedAlgoCount, int* returnedAlgoCount,
                                                            cudnnConvolutionBwdFilterAlgoPerf_t* perfResults) {
  if (requestedAlgoCount < 1) return RET0(CUDNN_STATUS_BAD_PARAM);
  *returnedAlgoCount = fillPerf(perfResults, requestedAlgoCount, convDesc, -1.0f);
  return RET(CUDNN_STATUS_SUCCESS, "x=%s dw=%s requested=%d returned=%d", dims<TensorDesc>(srcDesc).text, dims<FilterDesc>(gradDesc).text, requestedAlgoCount, *returnedAlgoCount);
}
cudnnStatus_t cudnnFindConvolutionForwardAlgorithmEx(cudnnHandle_t, const cudnnTensorDescriptor_t xDesc, const void*, const cudnnFilterDescriptor_t wDesc,
                                                     const void*, const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t, void*,
                                                     const int requestedAlgoCount, int* returnedAlgoCount, cudnnConvolutionFwdAlgoPerf_t* perfResults,
                                                     void*, size_t workSpaceSizeInBytes) {
  if (requestedAlgoCount < 1) return RET0(CUDNN_STATUS_BAD_PARAM);
  *returnedAlgoCount = fillPerf(perfResults, requestedAlgoCount, convDesc, 0.01f);
  return RET(CUDNN_STATUS_SUCCESS, "x=%s w=%s requested=%d returned=%d workspace=%zu", dims<TensorDesc>(xDesc).text, dims<FilterDesc>(wDesc).text,
             requestedAlgoCount, *returnedAlgoCount, workSpaceSizeInBytes);
}
cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithmEx(cudnnHandle_t, const cudnnFilterDescriptor_t wDesc, const void*, const cudnnTensorDescriptor_t dyDesc,
                                                          const void*, const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t, void*,
                                                          const int requestedAlgoCount, int* returnedAlgoCount,
                                                          cudnnConvolutionBwdDataAlgoPerf_t* perfResults, void*, size_t workSpaceSizeInBytes) {
  if (requestedAlgoCount < 1) return RET0(CUDNN_STATUS_BAD_PARAM);
  *returnedAlgoCount = fillPerf(perfResults, requestedAlgoCount, convDesc, 0.01f);
  return RET(CUDNN_STATUS_SUCCESS, "dy=%s w=%s requested=%d returned=%d workspace=%zu", dims<TensorDesc>(dyDesc).text, dims<FilterDesc>(wDesc).text,
             requestedAlgoCount, *returnedAlgoCount, workSpaceSizeInBytes);
}
cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithmEx(cudnnHandle_t, const cudnnTensorDescriptor_t xDesc, const void*, const cudnnTensorDescriptor_t,
                                                            const void*, const cudnnConvolutionDescriptor_t convDesc, const cudnnFilterDescriptor_t dwDesc,
                                                            void*, const int requestedAlgoCount, int* returnedAlgoCount,
                                                            cudnnConvolutionBwdFilterAlgoPerf_t* perfResults, void*, size_t workSpaceSizeInBytes) {
  if (requestedAlgoCount < 1) return RET0(CUDNN_STATUS_BAD_PARAM);
  *returnedAlgoCount = fillPerf(perfResults, requestedAlgoCount, convDesc, 0.01f);
  return RET(CUDNN_STATUS_SUCCESS, "x=%s dw=%s requested=%d returned=%d workspace=%zu", dims<TensorDesc>(xDesc).text, dims<FilterDesc>(dwDesc).text,
             requestedAlgoCount, *returnedAlgoCount, workSpaceSizeInBytes);
}
cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t, const cudnnTensorDescriptor_t, const cudnnFilterDescriptor_t,
                                                      const cudnnConvolutionDescriptor_t, const cudnnTensorDescriptor_t, cudnnConvolutionFwdAlgo_t algo,
                                                      size_t* sizeInBytes) {
  *sizeInBytes = kConvWorkspace;
  return RET(CUDNN_STATUS_SUCCESS, "algo=%d workspace=%zu", static_cast<int>(algo), kConvWorkspace);
}
cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(cudnnHandle_t, const cudnnFilterDescriptor_t, const cudnnTensorDescriptor_t,
                                                           const cudnnConvolutionDescriptor_t, const cudnnTensorDescriptor_t,
                                                           cudnnConvolutionBwdDataAlgo_t algo, size_t* sizeInBytes) {
  *sizeInBytes = kConvWorkspace;
  return RET(CUDNN_STATUS_SUCCESS, "algo=%d workspace=%zu", static_cast<int>(algo), kConvWorkspace);
}
cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnnHandle_t, const cudnnTensorDescriptor_t, const cudnnTensorDescriptor_t,
                                                             const cudnnConvolutionDescriptor_t, const cudnnFilterDescriptor_t,
                                                             cudnnConvolutionBwdFilterAlgo_t algo, size_t* sizeInBytes) {
  *sizeInBytes = kConvWorkspace;
  return RET(CUDNN_STATUS_SUCCESS, "algo=%d workspace=%zu", static_cast<int>(algo), kConvWorkspace);
}

// Executions: nothing is computed.
cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void*, const cudnnTensorDescriptor_t xDesc, const void*, const cudnnFilterDescriptor_t wDesc,
                                      const void*, const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionFwdAlgo_t algo, void*, size_t workSpaceSizeInBytes,
                                      const void*, const cudnnTensorDescriptor_t, void*) {
  FAKE_CONV_RET(handle, xDesc, wDesc, convDesc, algo, workSpaceSizeInBytes);
}
cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t handle, const void*, const cudnnFilterDescriptor_t wDesc, const void*,
                                           const cudnnTensorDescriptor_t dyDesc, const void*, const cudnnConvolutionDescriptor_t convDesc,
                                           cudnnConvolutionBwdDataAlgo_t algo, void*, size_t workSpaceSizeInBytes, const void*,
                                           const cudnnTensorDescriptor_t, void*) {
  FAKE_CONV_RET(handle, dyDesc, wDesc, convDesc, algo, workSpaceSizeInBytes);
}
cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t handle, const void*, const cudnnTensorDescriptor_t xDesc, const void*, const cudnnTensorDescriptor_t,
                                             const void*, const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionBwdFilterAlgo_t algo, void*,
                                             size_t workSpaceSizeInBytes, const void*, const cudnnFilterDescriptor_t dwDesc, void*) {
  FAKE_CONV_RET(handle, xDesc, dwDesc, convDesc, algo, workSpaceSizeInBytes);
}
cudnnStatus_t cudnnAddTensor(cudnnHandle_t handle, const void*, const cudnnTensorDescriptor_t aDesc, const void*, const void*,
                             const cudnnTensorDescriptor_t, void*) {
  CudnnHandle* h = as<CudnnHandle>(handle);
  if (!h) return RET0(CUDNN_STATUS_BAD_PARAM);
  recordLibraryCall(h->stream, __func__);
  return RET(CUDNN_STATUS_SUCCESS, "a=%s %s", dims<TensorDesc>(aDesc).text, streamName(h->stream).text);
}

// The backend (graph) API, minimally: descriptors are accepted and finalized;
// heuristics return one engine config; a plan needs 1 MiB of workspace.
cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t descriptorType, cudnnBackendDescriptor_t* descriptor) {
  BackendDesc* d = new BackendDesc(descriptorType);
  *descriptor = d;
  return RET(CUDNN_STATUS_SUCCESS, "desc=%d type=%d", d->id, static_cast<int>(descriptorType));
}
cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor) {
  int id = 0;
  const bool ok = destroyDesc<BackendDesc>(descriptor, &id);
  return RET(ok ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM, "desc=%d", id);
}
cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor, cudnnBackendAttributeName_t attributeName,
                                       cudnnBackendAttributeType_t attributeType, int64_t elementCount, const void*) {
  return RET(as<BackendDesc>(descriptor) ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM, "desc=%d attr=%d type=%d count=%lld",
             idOf<BackendDesc>(descriptor), static_cast<int>(attributeName), static_cast<int>(attributeType), static_cast<long long>(elementCount));
}
cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const descriptor, cudnnBackendAttributeName_t attributeName,
                                       cudnnBackendAttributeType_t attributeType, int64_t requestedElementCount, int64_t* elementCount,
                                       void* arrayOfElements) {
  BackendDesc* d = as<BackendDesc>(descriptor);
  if (!d) return RET0(CUDNN_STATUS_BAD_PARAM);
  int64_t n = 0;
  if (attributeName == CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE && arrayOfElements && requestedElementCount >= 1) {
    const int64_t ws = kConvWorkspace;
    std::memcpy(arrayOfElements, &ws, sizeof ws);
    n = 1;
  } else if (attributeName == CUDNN_ATTR_ENGINEHEUR_RESULTS) {
    n = 1;  // the caller passes descriptors it created; they stay as they are
  }
  if (elementCount) *elementCount = n;
  return RET(CUDNN_STATUS_SUCCESS, "desc=%d attr=%d type=%d returned=%lld", d->id, static_cast<int>(attributeName), static_cast<int>(attributeType),
             static_cast<long long>(n));
}
cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor) {
  return RET(as<BackendDesc>(descriptor) ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM, "desc=%d", idOf<BackendDesc>(descriptor));
}
cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t executionPlan, cudnnBackendDescriptor_t variantPack) {
  CudnnHandle* h = as<CudnnHandle>(handle);
  if (!h || !as<BackendDesc>(executionPlan) || !as<BackendDesc>(variantPack)) return RET0(CUDNN_STATUS_BAD_PARAM);
  recordLibraryCall(h->stream, __func__);
  return RET(CUDNN_STATUS_SUCCESS, "plan=%d pack=%d %s", idOf<BackendDesc>(executionPlan), idOf<BackendDesc>(variantPack), streamName(h->stream).text);
}
}  // extern "C"
#endif  // FAKE_CUDA_CUDNN
