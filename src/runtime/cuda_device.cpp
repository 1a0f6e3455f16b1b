//===- cuda_device.cpp - The cuda Device: driver API, cuBLAS(Lt), cuDNN -----===//
//
// Note [CUDA at run time]: the driver (libcuda.so.1), cuBLAS, cuBLASLt and
// cuDNN are opened with dlopen when a cuda device is made or first needs
// them, never linked: the runtime library and every binary linking it start
// on machines with neither GPU nor driver, and `--backend cuda` there fails
// with one line saying what is missing.  Prototypes come from the toolkit's
// headers (decltype), so a signature mismatch is a compile error.
//
// Modules: the artifact's cubin for the device's arch when it has one, else
// the PTX of the highest arch not above the device's, JIT-compiled by the
// driver.  Kernels that check indices record their step's tag in their
// module's aotc_index_error; the device reads the flags when it
// synchronizes (Note [Index errors]), never after a launch.
//
// Note [Prepared plan] on the GPU: a prepared phase holds, per step, the
// CUfunction and its argument array (pointers into the executor's root
// table), or the cuBLASLt descriptors, matrix layouts and the algorithm the
// heuristic chose, or the cuDNN descriptors and the deterministic algorithm
// chosen; library workspace is one device buffer sized at prepare.  Every
// GEMM is a cublasLtMatmul with its preset algorithm.  Work runs on the
// device's own stream; a caller's stream is joined with two events per
// phase (Device::beginPhase / endPhase), so a captured graph (Note [Phase
// graphs]) can always be recorded and the caller never waits.
//===----------------------------------------------------------------------===//
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda.h>
#include <cudnn.h>
#include <dlfcn.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <type_traits>
#include <variant>
#include <cstdlib>
#include <optional>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "aotc/runtime/device.h"
#include "aotc/support/diag.h"
#include "aotc/support/options.h"

namespace aotc {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const std::string& msg) { throw UserError(SourceLoc{"", "", "cuda"}, msg); }

/// A library opened at run time; the first name that opens wins.
struct Dl {
  void* h = nullptr;
  std::string name;
  Dl() = default;
  explicit Dl(std::initializer_list<const char*> names) {
    for (const char* n : names)
      if ((h = dlopen(n, RTLD_NOW | RTLD_LOCAL))) {
        name = n;
        return;
      }
  }
  ~Dl() {
    if (h) dlclose(h);
  }
  Dl(const Dl&) = delete;
  Dl& operator=(const Dl&) = delete;
  template <typename F>
  F sym(const char* s) const {
    void* p = dlsym(h, s);
    if (!p) fail(std::string("the CUDA library ") + name + " has no symbol " + s);
    return reinterpret_cast<F>(p);
  }
};

#define AOTC_SYM(lib, var, fn) var = lib.sym<decltype(&fn)>(#fn)

#define AOTC_DRIVER_FUNCTIONS(X)                                                                                          \
  X(init, cuInit) X(deviceGetCount, cuDeviceGetCount) X(deviceGet, cuDeviceGet) X(deviceGetAttribute, cuDeviceGetAttribute)       \
  X(primaryCtxRetain, cuDevicePrimaryCtxRetain) X(primaryCtxRelease, cuDevicePrimaryCtxRelease_v2)                              \
  X(ctxSetCurrent, cuCtxSetCurrent) X(ctxGetCurrent, cuCtxGetCurrent) X(memAlloc, cuMemAlloc_v2) X(memFree, cuMemFree_v2)       \
  X(memsetD8Async, cuMemsetD8Async) X(memsetD32Async, cuMemsetD32Async) X(memcpyHtoDAsync, cuMemcpyHtoDAsync_v2)                          \
  X(memcpyDtoHAsync, cuMemcpyDtoHAsync_v2) X(memcpyDtoDAsync, cuMemcpyDtoDAsync_v2) X(moduleLoadData, cuModuleLoadData)          \
  X(moduleUnload, cuModuleUnload) X(moduleGetFunction, cuModuleGetFunction) X(moduleGetGlobal, cuModuleGetGlobal_v2)              \
  X(launchKernel, cuLaunchKernel) X(getErrorString, cuGetErrorString) X(streamCreate, cuStreamCreate)                           \
  X(streamDestroy, cuStreamDestroy_v2) X(streamSynchronize, cuStreamSynchronize) X(streamWaitEvent, cuStreamWaitEvent)          \
  X(eventCreate, cuEventCreate) X(eventDestroy, cuEventDestroy_v2) X(eventRecord, cuEventRecord)                                 \
  X(streamBeginCapture, cuStreamBeginCapture_v2) X(streamEndCapture, cuStreamEndCapture)                                         \
  X(graphInstantiate, cuGraphInstantiateWithFlags) X(graphDestroy, cuGraphDestroy) X(graphExecDestroy, cuGraphExecDestroy)      \
  X(graphLaunch, cuGraphLaunch) X(memAllocHost, cuMemAllocHost_v2) X(memFreeHost, cuMemFreeHost)

struct Driver {
#define AOTC_DECLARE(var, fn) decltype(&fn) var = nullptr;
  AOTC_DRIVER_FUNCTIONS(AOTC_DECLARE)
#undef AOTC_DECLARE
  void load(const Dl& d) {
#define AOTC_LOAD(var, fn) AOTC_SYM(d, var, fn);
    AOTC_DRIVER_FUNCTIONS(AOTC_LOAD)
#undef AOTC_LOAD
  }
};

struct CublasLt {
  Dl lib{"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"};
  decltype(&cublasLtCreate) create;
  decltype(&cublasLtDestroy) destroy;
  decltype(&cublasLtMatmulDescCreate) descCreate;
  decltype(&cublasLtMatmulDescDestroy) descDestroy;
  decltype(&cublasLtMatmulDescSetAttribute) descSet;
  decltype(&cublasLtMatrixLayoutCreate) layoutCreate;
  decltype(&cublasLtMatrixLayoutDestroy) layoutDestroy;
  decltype(&cublasLtMatrixLayoutSetAttribute) layoutSet;
  decltype(&cublasLtMatmulPreferenceCreate) prefCreate;
  decltype(&cublasLtMatmulPreferenceDestroy) prefDestroy;
  decltype(&cublasLtMatmulPreferenceSetAttribute) prefSet;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic;
  decltype(&cublasLtMatmul) matmul;
  cublasLtHandle_t handle = nullptr;
  CublasLt() {
    if (!lib.h) fail("cuBLASLt (libcublasLt.so.13) cannot be loaded: install the CUDA libraries to run GEMM steps");
    AOTC_SYM(lib, create, cublasLtCreate);
    AOTC_SYM(lib, destroy, cublasLtDestroy);
    AOTC_SYM(lib, descCreate, cublasLtMatmulDescCreate);
    AOTC_SYM(lib, descDestroy, cublasLtMatmulDescDestroy);
    AOTC_SYM(lib, descSet, cublasLtMatmulDescSetAttribute);
    AOTC_SYM(lib, layoutCreate, cublasLtMatrixLayoutCreate);
    AOTC_SYM(lib, layoutDestroy, cublasLtMatrixLayoutDestroy);
    AOTC_SYM(lib, layoutSet, cublasLtMatrixLayoutSetAttribute);
    AOTC_SYM(lib, prefCreate, cublasLtMatmulPreferenceCreate);
    AOTC_SYM(lib, prefDestroy, cublasLtMatmulPreferenceDestroy);
    AOTC_SYM(lib, prefSet, cublasLtMatmulPreferenceSetAttribute);
    AOTC_SYM(lib, heuristic, cublasLtMatmulAlgoGetHeuristic);
    AOTC_SYM(lib, matmul, cublasLtMatmul);
    if (create(&handle) != CUBLAS_STATUS_SUCCESS) fail("cublasLtCreate failed");
  }
  ~CublasLt() {
    if (handle) destroy(handle);
  }
  static void ok(cublasStatus_t s, const char* what) {
    if (s != CUBLAS_STATUS_SUCCESS) fail(cat(what, " failed (status ", static_cast<int>(s), ")"));
  }
};

struct Cudnn {
  Dl lib{"libcudnn.so.9", "libcudnn.so"};
  decltype(&cudnnCreate) create;
  decltype(&cudnnDestroy) destroy;
  decltype(&cudnnSetStream) setStream;
  decltype(&cudnnGetErrorString) errorString;
  decltype(&cudnnCreateTensorDescriptor) createTensor;
  decltype(&cudnnDestroyTensorDescriptor) destroyTensor;
  decltype(&cudnnSetTensorNdDescriptor) setTensorNd;
  decltype(&cudnnCreateFilterDescriptor) createFilter;
  decltype(&cudnnDestroyFilterDescriptor) destroyFilter;
  decltype(&cudnnSetFilter4dDescriptor) setFilter4d;
  decltype(&cudnnCreateConvolutionDescriptor) createConv;
  decltype(&cudnnDestroyConvolutionDescriptor) destroyConv;
  decltype(&cudnnSetConvolution2dDescriptor) setConv2d;
  decltype(&cudnnSetConvolutionGroupCount) setGroups;
  decltype(&cudnnSetConvolutionMathType) setMath;
  decltype(&cudnnGetConvolutionForwardAlgorithm_v7) fwdAlgo;
  decltype(&cudnnGetConvolutionForwardWorkspaceSize) fwdWs;
  decltype(&cudnnConvolutionForward) fwd;
  decltype(&cudnnGetConvolutionBackwardDataAlgorithm_v7) bwdDataAlgo;
  decltype(&cudnnGetConvolutionBackwardDataWorkspaceSize) bwdDataWs;
  decltype(&cudnnConvolutionBackwardData) bwdData;
  decltype(&cudnnGetConvolutionBackwardFilterAlgorithm_v7) bwdFilterAlgo;
  decltype(&cudnnGetConvolutionBackwardFilterWorkspaceSize) bwdFilterWs;
  decltype(&cudnnConvolutionBackwardFilter) bwdFilter;
  decltype(&cudnnFindConvolutionForwardAlgorithmEx) findFwd;
  decltype(&cudnnFindConvolutionBackwardDataAlgorithmEx) findBwdData;
  decltype(&cudnnFindConvolutionBackwardFilterAlgorithmEx) findBwdFilter;
  decltype(&cudnnGetVersion) version;
  cudnnHandle_t handle = nullptr;
  explicit Cudnn(CUstream stream) {
    if (!lib.h) fail("cuDNN (libcudnn.so.9) cannot be loaded: install cuDNN to run convolution steps");
    AOTC_SYM(lib, create, cudnnCreate);
    AOTC_SYM(lib, destroy, cudnnDestroy);
    AOTC_SYM(lib, setStream, cudnnSetStream);
    AOTC_SYM(lib, errorString, cudnnGetErrorString);
    AOTC_SYM(lib, createTensor, cudnnCreateTensorDescriptor);
    AOTC_SYM(lib, destroyTensor, cudnnDestroyTensorDescriptor);
    AOTC_SYM(lib, setTensorNd, cudnnSetTensorNdDescriptor);
    AOTC_SYM(lib, createFilter, cudnnCreateFilterDescriptor);
    AOTC_SYM(lib, destroyFilter, cudnnDestroyFilterDescriptor);
    AOTC_SYM(lib, setFilter4d, cudnnSetFilter4dDescriptor);
    AOTC_SYM(lib, createConv, cudnnCreateConvolutionDescriptor);
    AOTC_SYM(lib, destroyConv, cudnnDestroyConvolutionDescriptor);
    AOTC_SYM(lib, setConv2d, cudnnSetConvolution2dDescriptor);
    AOTC_SYM(lib, setGroups, cudnnSetConvolutionGroupCount);
    AOTC_SYM(lib, setMath, cudnnSetConvolutionMathType);
    AOTC_SYM(lib, fwdAlgo, cudnnGetConvolutionForwardAlgorithm_v7);
    AOTC_SYM(lib, fwdWs, cudnnGetConvolutionForwardWorkspaceSize);
    AOTC_SYM(lib, fwd, cudnnConvolutionForward);
    AOTC_SYM(lib, bwdDataAlgo, cudnnGetConvolutionBackwardDataAlgorithm_v7);
    AOTC_SYM(lib, bwdDataWs, cudnnGetConvolutionBackwardDataWorkspaceSize);
    AOTC_SYM(lib, bwdData, cudnnConvolutionBackwardData);
    AOTC_SYM(lib, bwdFilterAlgo, cudnnGetConvolutionBackwardFilterAlgorithm_v7);
    AOTC_SYM(lib, bwdFilterWs, cudnnGetConvolutionBackwardFilterWorkspaceSize);
    AOTC_SYM(lib, bwdFilter, cudnnConvolutionBackwardFilter);
    AOTC_SYM(lib, findFwd, cudnnFindConvolutionForwardAlgorithmEx);
    AOTC_SYM(lib, findBwdData, cudnnFindConvolutionBackwardDataAlgorithmEx);
    AOTC_SYM(lib, findBwdFilter, cudnnFindConvolutionBackwardFilterAlgorithmEx);
    AOTC_SYM(lib, version, cudnnGetVersion);
    if (create(&handle) != CUDNN_STATUS_SUCCESS) fail("cudnnCreate failed");
    check(setStream(handle, reinterpret_cast<cudaStream_t>(stream)), "cudnnSetStream");
  }
  ~Cudnn() {
    if (handle) destroy(handle);
  }
  void check(cudnnStatus_t s, const char* what) const {
    if (s != CUDNN_STATUS_SUCCESS) fail(std::string(what) + " failed: " + errorString(s));
  }
};

cudaDataType_t cudaType(DType d) {
  switch (d) {
    case DType::F64: return CUDA_R_64F;
    case DType::F16: return CUDA_R_16F;
    case DType::BF16: return CUDA_R_16BF;
    case DType::F32: return CUDA_R_32F;
    default: fail(cat("GEMM on ", dtypeName(d), " is not supported by the cuda device"));
  }
}
cudnnDataType_t cudnnType(DType d) {
  switch (d) {
    case DType::F64: return CUDNN_DATA_DOUBLE;
    case DType::F16: return CUDNN_DATA_HALF;
    case DType::BF16: return CUDNN_DATA_BFLOAT16;
    case DType::F32: return CUDNN_DATA_FLOAT;
    default: fail(cat("convolution on ", dtypeName(d), " is not supported by the cuda device"));
  }
}

/// cuBLASLt's workspace ceiling for one matmul (the heuristic chooses within it).
constexpr uint64_t kMatmulWorkspaceLimit = uint64_t{32} << 20;

bool envOn(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::string(v) != "0";
}
/// Whether the environment allows a nondeterministic convolution algorithm
/// (AOTC_CUDNN_NONDETERMINISTIC=1); by default only deterministic ones are chosen.
bool nondeterministicAllowed() { return envOn("AOTC_CUDNN_NONDETERMINISTIC"); }

/// Note [Convolution benchmark]: with AOTC_CUDNN_BENCHMARK=1 (opt-in, like
/// torch.backends.cudnn.benchmark) a convolution's algorithm is the fastest
/// (deterministic unless allowed otherwise) of cuDNN's candidates, timed once
/// when the phase is prepared on scratch tensors of its shapes.  With
/// AOTC_CUDNN_CACHE=FILE the choices are kept in FILE (JSON), keyed by the
/// GPU's name, cuDNN's version and the problem, so later sessions and runs
/// reuse them (and choose the same); the file is rewritten atomically.
class AlgoCache {
 public:
  explicit AlgoCache(std::string file) : file_(std::move(file)) {
    if (file_.empty()) return;
    std::ifstream f(file_);
    if (!f) return;
    try {
      nlohmann::json j = nlohmann::json::parse(f);
      for (auto& [k, v] : j.at("algorithms").items()) algos_[k] = v.get<int>();
    } catch (const std::exception&) {
      algos_.clear();  // a damaged cache is a cold cache
    }
  }
  std::optional<int> find(const std::string& key) const {
    auto it = algos_.find(key);
    return it == algos_.end() ? std::nullopt : std::optional<int>(it->second);
  }
  void put(const std::string& key, int algo) {
    algos_[key] = algo;
    dirty_ = true;
  }
  void save() {
    if (!dirty_ || file_.empty()) return;
    nlohmann::json j;
    j["format"] = "aotc.cudnn_algorithms";
    j["algorithms"] = algos_;
    const std::string tmp = file_ + ".tmp." + std::to_string(::getpid());
    {
      std::ofstream f(tmp);
      f << j.dump(1) << "\n";
      if (!f) return;  // a cache that cannot be written is only a cache
    }
    std::error_code ec;
    fs::rename(tmp, file_, ec);
    if (ec) fs::remove(tmp, ec);
    dirty_ = false;
  }

 private:
  std::string file_;
  std::map<std::string, int> algos_;
  bool dirty_ = false;
};

class CudaDevice;

/// One prepared step (Note [Prepared plan]).
struct LaunchPrep {
  CUfunction fn = nullptr;
  unsigned grid[3], block[3], shared = 0;
  std::vector<long long> scalars;  ///< symbols, then the step's tag when the kernel checks indices
  std::vector<void*> params;       ///< into the root table, then into scalars
};
struct GemmPrep {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspaceBytes = 0;
  int64_t offA = 0, offB = 0, offC = 0, offBias = 0;  ///< bytes
  bool bias = false;
  DevicePtr lastBias = 0;  ///< the bias pointer the descriptor holds
  double alphaD = 1, betaD = 0;
  float alphaF = 1, betaF = 0;
  bool dbl = false;
};
struct ConvPrep {
  plan::ConvCall call = plan::ConvCall::Forward;
  cudnnTensorDescriptor_t ta = nullptr, tb = nullptr;  ///< tb: backward filter's x, or forward/backward data's out
  cudnnFilterDescriptor_t fw = nullptr;
  cudnnConvolutionDescriptor_t cd = nullptr;
  int algo = 0;
  size_t workspaceBytes = 0;
  int64_t offA = 0, offB = 0, offOut = 0;  ///< bytes
  double alphaD = 1, betaD = 0;
  float alphaF = 1, betaF = 0;
  bool dbl = false;
};

// Note [One stream]
// ~~~~~~~~~~~~~~~~~
// Everything a session puts on the GPU (zeroing a fresh allocation, copies
// in and out, launches, library calls) goes on its own stream, stream_,
// created CU_STREAM_NON_BLOCKING so that it does not serialize with the
// legacy stream the caller's framework may use.  The price of that flag is
// that no call without a stream argument (cuMemsetD8, cuMemcpy, ...) is
// ordered with the session's work: those run on the legacy stream,
// asynchronously to the host for device memory.  The driver table loads
// none of them; scripts/runtime_calls_test.py fails any call the runtime
// makes on the NULL or legacy stream.
class CudaDevice final : public Device {
 public:
  explicit CudaDevice(int ordinal) : driver_{"libcuda.so.1"} {
    if (!driver_.h)
      fail("no CUDA driver on this machine (libcuda.so.1 cannot be loaded): --backend cuda needs an NVIDIA GPU and its driver");
    d_.load(driver_);
    CUresult r = d_.init(0);
    if (r != CUDA_SUCCESS) fail("the CUDA driver does not start (" + error(r) + "): --backend cuda needs an NVIDIA GPU");
    int n = 0;
    check(d_.deviceGetCount(&n), "cuDeviceGetCount");
    if (ordinal < 0 || n <= ordinal) fail(cat("no CUDA device ", ordinal, " (this machine has ", n, ")"));
    ordinal_ = ordinal;
    check(d_.deviceGet(&dev_, ordinal), "cuDeviceGet");
    check(d_.primaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain");
    check(d_.ctxSetCurrent(ctx_), "cuCtxSetCurrent");
    int major = 0, minor = 0;
    check(d_.deviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev_), "cuDeviceGetAttribute");
    check(d_.deviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev_), "cuDeviceGetAttribute");
    arch_ = major * 10 + minor;
    gpuName_ = cat("sm_", arch_);
    if (auto getName = reinterpret_cast<decltype(&cuDeviceGetName)>(dlsym(driver_.h, "cuDeviceGetName"))) {
      char buf[256] = {0};
      if (getName(buf, sizeof buf - 1, dev_) == CUDA_SUCCESS) gpuName_ = cat(buf, " sm_", arch_);
    }
    check(d_.streamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    check(d_.eventCreate(&callerReady_, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    check(d_.eventCreate(&workDone_, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  }
  ~CudaDevice() override {
    current();
    if (stream_) d_.streamSynchronize(stream_);
    lt_.reset();
    cudnn_.reset();
    for (CUdeviceptr w : workspaces_) d_.memFree(w);
    for (auto& [p, n] : live_) d_.memFree(p);
    for (CUmodule m : modules_) d_.moduleUnload(m);
    if (flagHost_) d_.memFreeHost(flagHost_);
    if (callerReady_) d_.eventDestroy(callerReady_);
    if (workDone_) d_.eventDestroy(workDone_);
    if (stream_) d_.streamDestroy(stream_);
    if (ctx_) d_.primaryCtxRelease(dev_);
  }
  std::string name() const override { return ordinal_ ? cat("cuda:", ordinal_, ":sm_", arch_) : cat("cuda:sm_", arch_); }

  DevicePtr allocate(size_t bytes) override {
    current();
    CUdeviceptr p = 0;
    if (bytes > (size_t{1} << 48)) fail(cat("cannot allocate ", bytes, " bytes of device memory"));  // the rounding below would wrap
    size_t n = (bytes + 16 + 255) / 256 * 256;
    CUresult r = d_.memAlloc(&p, n);
    if (r != CUDA_SUCCESS) fail(cat("cannot allocate ", bytes, " bytes of device memory (", error(r), ")"));
    // Note [One stream]: zeroed on the session's stream.  cuMemsetD8 (no
    // stream) runs on the legacy stream, asynchronously to the host, and a
    // non-blocking stream_ does not wait for it: on an H200 it landed after
    // the inputs copied in behind it, or in the middle of the first step, and
    // results were wrong at random (gpu_check, 2026-11-27).
    check(d_.memsetD8Async(p, 0, n, stream_), "cuMemsetD8Async");
    live_[p] = n;
    return p;
  }
  void release(DevicePtr p) override {
    current();
    if (live_.erase(p)) {
      d_.streamSynchronize(stream_);  // the memory may still be read by enqueued work
      d_.memFree(p);
    }
  }
  void copyToDevice(DevicePtr dst, const void* src, size_t bytes) override {
    current();
    check(d_.memcpyHtoDAsync(dst, src, bytes, stream_), "cuMemcpyHtoDAsync");
    check(d_.streamSynchronize(stream_), "cuStreamSynchronize");
  }
  void copyToHost(void* dst, DevicePtr src, size_t bytes) override {
    current();  // ordered after everything the session enqueued
    check(d_.memcpyDtoHAsync(dst, src, bytes, stream_), "cuMemcpyDtoHAsync");
    check(d_.streamSynchronize(stream_), "cuStreamSynchronize");
  }
  void fill(DevicePtr dst, unsigned char value, size_t bytes) override {
    current();
    check(d_.memsetD8Async(dst, value, bytes, stream_), "cuMemsetD8Async");
  }
  void copyAsync(DevicePtr dst, DevicePtr src, size_t bytes) override {
    current();
    check(d_.memcpyDtoDAsync(dst, src, bytes, stream_), "cuMemcpyDtoDAsync");
  }
  void fillWords(DevicePtr dst, uint32_t value, size_t count) override {
    current();
    check(d_.memsetD32Async(dst, value, count, stream_), "cuMemsetD32Async");
  }

  void setStream(void* stream) override { caller_ = reinterpret_cast<CUstream>(stream); }
  void beginPhase() override {
    current();
    if (caller_) {
      check(d_.eventRecord(callerReady_, caller_), "cuEventRecord");
      check(d_.streamWaitEvent(stream_, callerReady_, 0), "cuStreamWaitEvent");
    }
  }
  void endPhase() override {
    // Note [Index errors]: the flags of modules whose kernels check indices
    // travel to pinned host memory behind the phase's work; synchronize()
    // reads them after its one wait.
    for (size_t i = 0; i < flags_.size(); ++i)
      check(d_.memcpyDtoHAsync(&flagHost_[i], flags_[i], sizeof(int), stream_), "reading aotc_index_error");
    if (caller_) {
      check(d_.eventRecord(workDone_, stream_), "cuEventRecord");
      check(d_.streamWaitEvent(caller_, workDone_, 0), "cuStreamWaitEvent");
    }
  }
  int64_t synchronize() override {
    current();
    check(d_.streamSynchronize(stream_), "cuStreamSynchronize");
    // Note [Index errors]: the flags endPhase copied; a set one is cleared
    // (an error path: it may wait).  Tags grow with the step, so the
    // smallest names the first failing step of those that fired.
    int64_t tag = 0;
    for (size_t i = 0; i < flags_.size(); ++i) {
      if (!flagHost_[i]) continue;
      if (!tag || flagHost_[i] < tag) tag = flagHost_[i];
      flagHost_[i] = 0;
      check(d_.memsetD8Async(flags_[i], 0, sizeof(int), stream_), "clearing aotc_index_error");
      check(d_.streamSynchronize(stream_), "cuStreamSynchronize");
    }
    return tag;
  }

  bool canCapture() const override { return true; }
  void beginCapture() override { check(d_.streamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture"); }
  GraphHandle endCapture() override {
    CUgraph graph = nullptr;
    check(d_.streamEndCapture(stream_, &graph), "cuStreamEndCapture");
    if (!graph) fail("capturing a phase gave no graph");
    CUgraphExec exec = nullptr;
    CUresult r = d_.graphInstantiate(&exec, graph, 0);
    d_.graphDestroy(graph);
    check(r, "cuGraphInstantiate");
    auto destroy = d_.graphExecDestroy;
    return GraphHandle(exec, [destroy](void* e) { destroy(static_cast<CUgraphExec>(e)); });
  }
  void launchGraph(const GraphHandle& g) override { check(d_.graphLaunch(static_cast<CUgraphExec>(g.get()), stream_), "cuGraphLaunch"); }

  void loadKernels(const plan::Manifest& m, const std::string& dir) override {
    current();
    const std::string want = cat("sm_", arch_);
    std::set<std::string> checkedModules;
    for (const plan::KernelSpec& k : m.kernels)
      if (k.index_checked) checkedModules.insert(k.module);
    for (const plan::ModuleSpec& ms : m.modules) {
      std::string file;
      if (auto it = ms.cubin.find(want); it != ms.cubin.end()) {
        file = it->second;
      } else {
        int best = -1;  // PTX of the highest arch not above the device's (sm_<n> or PTX-only compute_<n>)
        for (auto& [a, f] : ms.ptx) {
          size_t us = a.find('_');
          int v = us == std::string::npos ? -1 : std::atoi(a.c_str() + us + 1);
          if ((a.rfind("sm_", 0) == 0 || a.rfind("compute_", 0) == 0) && v <= arch_ && v > best) {
            best = v;
            file = f;
          }
        }
        if (file.empty()) fail(cat("the artifact has no cubin for ", want, " and no PTX for an arch at or below it (compile with --arch ", want, ")"));
      }
      std::ifstream f(fs::path(dir) / file, std::ios::binary);
      if (!f) throw UserError(SourceLoc{(fs::path(dir) / file).string(), "", "cuda"}, "cannot read the module");
      std::string image((std::istreambuf_iterator<char>(f)), {});
      image.push_back('\0');  // PTX text must be NUL-terminated
      CUmodule mod = nullptr;
      check(d_.moduleLoadData(&mod, image.data()), "cuModuleLoadData (" + file + ")");
      modules_.push_back(mod);
      if (checkedModules.count(ms.name)) {
        CUdeviceptr flag = 0;
        size_t flagBytes = 0;
        if (d_.moduleGetGlobal(&flag, &flagBytes, mod, "aotc_index_error") == CUDA_SUCCESS && flag) flags_.push_back(flag);
      }
      for (const std::string& k : ms.kernels) {
        CUfunction fn = nullptr;
        check(d_.moduleGetFunction(&fn, mod, k.c_str()), "cuModuleGetFunction (" + k + ")");
        fns_[k] = fn;
      }
    }
    pinFlags();
  }

  std::unique_ptr<PreparedPhase> prepare(const plan::Manifest& m, plan::Phase phase, const PhaseArgs& args) override;

  /// Pinned host memory for the index flags (endPhase copies them there).
  void pinFlags() {
    if (flags_.size() == flagHostCount_) return;
    if (flagHost_) d_.memFreeHost(flagHost_);
    flagHost_ = nullptr;
    flagHostCount_ = flags_.size();
    void* p = nullptr;
    check(d_.memAllocHost(&p, flags_.size() * sizeof(int)), "cuMemAllocHost");
    flagHost_ = static_cast<int*>(p);
    std::fill(flagHost_, flagHost_ + flags_.size(), 0);
  }

  // What prepared phases use.
  const Driver& driver() const { return d_; }
  CUstream stream() const { return stream_; }
  CublasLt& lt() {
    if (!lt_) lt_ = std::make_unique<CublasLt>();
    return *lt_;
  }
  Cudnn& cudnn() {
    if (!cudnn_) cudnn_ = std::make_unique<Cudnn>(stream_);
    return *cudnn_;
  }
  CUfunction function(const std::string& kernel) const {
    auto it = fns_.find(kernel);
    if (it == fns_.end()) fail("kernel " + kernel + " is in no module of the artifact");
    return it->second;
  }
  /// Note [Convolution benchmark].
  bool benchmark() const { return benchmark_; }
  AlgoCache& algoCache() { return algos_; }
  std::string gpuName() const { return gpuName_; }
  /// Library workspace of at least `bytes`, reserved at prepare: a larger
  /// need allocates a larger buffer; the smaller ones stay (phases prepared
  /// before, and graphs captured from them, still use theirs).
  CUdeviceptr workspace(size_t bytes) {
    if (bytes == 0) return 0;
    if (bytes > workspaceBytes_) {
      CUdeviceptr w = 0;
      check(d_.memAlloc(&w, bytes), "cuMemAlloc (library workspace)");
      workspaces_.push_back(w);
      workspaceBytes_ = bytes;
    }
    return workspaces_.back();
  }
  void check(CUresult r, const std::string& what) const {
    if (r != CUDA_SUCCESS) fail(what + " failed: " + error(r));
  }

 private:
  /// The device's context, current on the calling thread (a session may be
  /// used from any thread, one at a time).
  void current() {
    CUcontext c = nullptr;
    if (d_.ctxGetCurrent(&c) != CUDA_SUCCESS || c != ctx_) check(d_.ctxSetCurrent(ctx_), "cuCtxSetCurrent");
  }
  std::string error(CUresult r) const {
    const char* s = nullptr;
    if (d_.getErrorString && d_.getErrorString(r, &s) == CUDA_SUCCESS && s) return s;
    return cat("CUresult ", static_cast<int>(r));
  }

  Dl driver_;
  Driver d_{};
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  int ordinal_ = 0;
  int arch_ = 0;
  CUstream stream_ = nullptr;
  CUstream caller_ = nullptr;
  CUevent callerReady_ = nullptr, workDone_ = nullptr;
  std::map<std::string, CUfunction> fns_;
  std::vector<CUdeviceptr> flags_;
  int* flagHost_ = nullptr;  ///< pinned: one int per flag
  size_t flagHostCount_ = 0;
  std::vector<CUmodule> modules_;
  std::map<DevicePtr, size_t> live_;
  std::vector<CUdeviceptr> workspaces_;
  size_t workspaceBytes_ = 0;
  std::unique_ptr<CublasLt> lt_;
  std::unique_ptr<Cudnn> cudnn_;
  bool benchmark_ = envOn("AOTC_CUDNN_BENCHMARK");
  AlgoCache algos_{std::getenv("AOTC_CUDNN_CACHE") ? std::getenv("AOTC_CUDNN_CACHE") : ""};
  std::string gpuName_;
};

/// A phase prepared on the GPU: per step, what Note [Prepared plan] lists.
class CudaPhase final : public PreparedPhase {
 public:
  CudaPhase(CudaDevice& dev, const plan::Manifest& m, plan::Phase phase, const PhaseArgs& args)
      : dev_(dev), args_(args), tf32_(parseOption<Precision>(m.precision) == Precision::Tf32) {
    const plan::Program& prog = m.program(phase);
    size_t ws = 0;
    steps_.reserve(prog.steps.size());
    for (size_t i = 0; i < prog.steps.size(); ++i) {
      const plan::Step& st = prog.steps[i];
      if (const plan::Launch* l = std::get_if<plan::Launch>(&st)) {
        steps_.emplace_back(prepareLaunch(m, phase, i, *l, args.steps[i]));
      } else if (const plan::Gemm* g = std::get_if<plan::Gemm>(&st)) {
        steps_.emplace_back(prepareGemm(*g));
        ws = std::max(ws, std::get<GemmPrep>(steps_.back()).workspaceBytes);
      } else {
        steps_.emplace_back(prepareConv(std::get<plan::Conv>(st)));
        ws = std::max(ws, std::get<ConvPrep>(steps_.back()).workspaceBytes);
      }
    }
    workspace_ = dev_.workspace(ws);
  }
  ~CudaPhase() override {
    for (auto& s : steps_) {
      if (GemmPrep* g = std::get_if<GemmPrep>(&s)) {
        CublasLt& lt = dev_.lt();
        if (g->la) lt.layoutDestroy(g->la);
        if (g->lb) lt.layoutDestroy(g->lb);
        if (g->lc) lt.layoutDestroy(g->lc);
        if (g->desc) lt.descDestroy(g->desc);
      } else if (ConvPrep* c = std::get_if<ConvPrep>(&s)) {
        Cudnn& n = dev_.cudnn();
        if (c->ta) n.destroyTensor(c->ta);
        if (c->tb) n.destroyTensor(c->tb);
        if (c->fw) n.destroyFilter(c->fw);
        if (c->cd) n.destroyConv(c->cd);
      }
    }
  }

  void enqueue(size_t i) override {
    const std::vector<DevicePtr>& roots = *args_.roots;
    const std::vector<uint32_t>& ix = args_.steps[i];
    auto at = [&](size_t k, int64_t off) { return reinterpret_cast<void*>(roots[ix[k]] + static_cast<DevicePtr>(off)); };
    auto& s = steps_[i];
    if (LaunchPrep* l = std::get_if<LaunchPrep>(&s)) {
      dev_.check(dev_.driver().launchKernel(l->fn, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2], l->shared,
                                            dev_.stream(), l->params.data(), nullptr),
                 "cuLaunchKernel");
    } else if (GemmPrep* g = std::get_if<GemmPrep>(&s)) {
      CublasLt& lt = dev_.lt();
      if (g->bias) {
        DevicePtr b = roots[ix[3]] + static_cast<DevicePtr>(g->offBias);
        if (b != g->lastBias) {  // host-side only: the descriptor holds the pointer
          const void* bp = reinterpret_cast<const void*>(b);
          CublasLt::ok(lt.descSet(g->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof bp), "cublasLtMatmulDescSetAttribute");
          g->lastBias = b;
        }
      }
      const void* alpha = g->dbl ? static_cast<const void*>(&g->alphaD) : &g->alphaF;
      const void* beta = g->dbl ? static_cast<const void*>(&g->betaD) : &g->betaF;
      void* C = at(2, g->offC);
      CublasLt::ok(lt.matmul(lt.handle, g->desc, alpha, at(0, g->offA), g->la, at(1, g->offB), g->lb, beta, C, g->lc, C, g->lc, &g->algo,
                             reinterpret_cast<void*>(workspace_), g->workspaceBytes, reinterpret_cast<cudaStream_t>(dev_.stream())),
                   "cublasLtMatmul");
    } else {
      ConvPrep& c = std::get<ConvPrep>(s);
      Cudnn& n = dev_.cudnn();
      const void* alpha = c.dbl ? static_cast<const void*>(&c.alphaD) : &c.alphaF;
      const void* beta = c.dbl ? static_cast<const void*>(&c.betaD) : &c.betaF;
      void* ws = reinterpret_cast<void*>(workspace_);
      if (c.call == plan::ConvCall::Forward)
        n.check(n.fwd(n.handle, alpha, c.ta, at(0, c.offA), c.fw, at(1, c.offB), c.cd, static_cast<cudnnConvolutionFwdAlgo_t>(c.algo), ws,
                      c.workspaceBytes, beta, c.tb, at(2, c.offOut)),
                "cudnnConvolutionForward");
      else if (c.call == plan::ConvCall::BackwardData)
        n.check(n.bwdData(n.handle, alpha, c.fw, at(1, c.offB), c.ta, at(0, c.offA), c.cd, static_cast<cudnnConvolutionBwdDataAlgo_t>(c.algo),
                          ws, c.workspaceBytes, beta, c.tb, at(2, c.offOut)),
                "cudnnConvolutionBackwardData");
      else
        n.check(n.bwdFilter(n.handle, alpha, c.tb, at(1, c.offB), c.ta, at(0, c.offA), c.cd,
                            static_cast<cudnnConvolutionBwdFilterAlgo_t>(c.algo), ws, c.workspaceBytes, beta, c.fw, at(2, c.offOut)),
                "cudnnConvolutionBackwardFilter");
    }
  }

 private:
  LaunchPrep prepareLaunch(const plan::Manifest& m, plan::Phase phase, size_t i, const plan::Launch& l, const std::vector<uint32_t>& ix) {
    LaunchPrep p;
    p.fn = dev_.function(l.kernel);
    for (int d = 0; d < 3; ++d) {
      p.grid[d] = static_cast<unsigned>(l.grid[static_cast<size_t>(d)]);
      p.block[d] = static_cast<unsigned>(l.block[static_cast<size_t>(d)]);
    }
    p.shared = static_cast<unsigned>(l.shared_bytes);
    p.scalars.assign(l.scalars.begin(), l.scalars.end());  // Note [Symbolic manifest]
    const plan::KernelSpec* k = m.kernel(l.kernel);
    if (k && k->index_checked) p.scalars.push_back(stepTag(phase, i));
    // cuLaunchKernel reads each argument through its pointer when it is
    // called: a root pointer rebound since is read as it is then.
    const std::vector<DevicePtr>& roots = *args_.roots;
    for (uint32_t b : ix) p.params.push_back(const_cast<DevicePtr*>(&roots[b]));
    for (long long& v : p.scalars) p.params.push_back(&v);
    return p;
  }

  GemmPrep prepareGemm(const plan::Gemm& g) {
    CublasLt& lt = dev_.lt();
    GemmPrep p;
    const int64_t es = dtypeSize(g.dtype);
    const cudaDataType_t t = cudaType(g.dtype);
    p.dbl = g.dtype == DType::F64;
    p.alphaD = g.alpha;
    p.betaD = g.beta;
    p.alphaF = static_cast<float>(g.alpha);
    p.betaF = static_cast<float>(g.beta);
    p.offA = g.A.offset * es;
    p.offB = g.B.offset * es;
    p.offC = g.C.offset * es;
    // float32 computes in float32, as the reference does, unless the
    // artifact was compiled with --precision tf32 (PyTorch's allow_tf32).
    const cublasComputeType_t compute = p.dbl                                ? CUBLAS_COMPUTE_64F
                                        : tf32_ && g.dtype == DType::F32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                                           : CUBLAS_COMPUTE_32F;
    const cublasOperation_t ta = g.transa ? CUBLAS_OP_T : CUBLAS_OP_N, tb = g.transb ? CUBLAS_OP_T : CUBLAS_OP_N;
    CublasLt::ok(lt.descCreate(&p.desc, compute, p.dbl ? CUDA_R_64F : CUDA_R_32F), "cublasLtMatmulDescCreate");
    CublasLt::ok(lt.descSet(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "cublasLtMatmulDescSetAttribute");
    CublasLt::ok(lt.descSet(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "cublasLtMatmulDescSetAttribute");
    if (g.bias) {
      p.bias = true;
      p.offBias = g.bias->offset * es;
      cublasLtEpilogue_t epi = g.relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;  // Note [GEMM relu epilogue]
      CublasLt::ok(lt.descSet(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi), "cublasLtMatmulDescSetAttribute");
    }
    auto layout = [&](cublasLtMatrixLayout_t* l, int64_t rows, int64_t cols, int64_t ld, int64_t stride) {
      CublasLt::ok(lt.layoutCreate(l, t, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld), "cublasLtMatrixLayoutCreate");
      if (g.batch > 1) {
        if (g.batch > INT32_MAX) fail("a batched GEMM's batch exceeds 2^31-1");
        int32_t count = static_cast<int32_t>(g.batch);
        int64_t s = stride;
        CublasLt::ok(lt.layoutSet(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count), "cublasLtMatrixLayoutSetAttribute");
        CublasLt::ok(lt.layoutSet(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &s, sizeof s), "cublasLtMatrixLayoutSetAttribute");
      }
    };
    layout(&p.la, g.transa ? g.k : g.m, g.transa ? g.m : g.k, g.A.ld, g.A.stride);
    layout(&p.lb, g.transb ? g.n : g.k, g.transb ? g.k : g.n, g.B.ld, g.B.stride);
    layout(&p.lc, g.m, g.n, g.C.ld, g.C.stride);
    cublasLtMatmulPreference_t pref = nullptr;
    CublasLt::ok(lt.prefCreate(&pref), "cublasLtMatmulPreferenceCreate");
    uint64_t limit = kMatmulWorkspaceLimit;
    cublasStatus_t st = lt.prefSet(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &limit, sizeof limit);
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    if (st == CUBLAS_STATUS_SUCCESS) st = lt.heuristic(lt.handle, p.desc, p.la, p.lb, p.lc, p.lc, pref, 1, &result, &found);
    lt.prefDestroy(pref);
    CublasLt::ok(st, "cublasLtMatmulAlgoGetHeuristic");
    if (found < 1 || result.state != CUBLAS_STATUS_SUCCESS)
      fail(cat("cuBLASLt has no algorithm for this GEMM (", g.m, "x", g.n, "x", g.k, ", batch ", g.batch, ", ", dtypeName(g.dtype), ")"));
    p.algo = result.algo;
    p.workspaceBytes = result.workspaceSize;
    return p;
  }

  /// Note [Convolution benchmark]: what a cached choice is keyed by.
  std::string convKey(const plan::Conv& c) {
    std::ostringstream k;
    auto ints = [&](const Ints& v) {
      for (size_t i = 0; i < v.size(); ++i) k << (i ? "," : "") << v[i];
    };
    auto tensor = [&](const char* what, const plan::ConvTensor& t) {
      k << "|" << what << " ";
      ints(t.dims);
      k << ":";
      ints(t.strides);
    };
    k << dev_.gpuName() << "|cudnn " << dev_.cudnn().version() << "|" << static_cast<int>(c.call) << "|" << dtypeName(c.dtype);
    tensor("a", c.a);
    tensor("b", c.b);
    tensor("out", c.out);
    k << "|pad ";
    ints(c.pad);
    k << "|stride ";
    ints(c.stride);
    k << "|dilation ";
    ints(c.dilation);
    k << "|groups " << c.groups << (nondeterministicAllowed() ? "|any" : "|deterministic");
    return k.str();
  }

  ConvPrep prepareConv(const plan::Conv& c) {
    Cudnn& n = dev_.cudnn();
    ConvPrep p;
    p.call = c.call;
    const cudnnDataType_t t = cudnnType(c.dtype);
    const int64_t es = dtypeSize(c.dtype);
    p.dbl = c.dtype == DType::F64;
    p.alphaD = c.alpha;
    p.betaD = c.beta;
    p.alphaF = static_cast<float>(c.alpha);
    p.betaF = static_cast<float>(c.beta);
    p.offA = c.a.offset * es;
    p.offB = c.b.offset * es;
    p.offOut = c.out.offset * es;
    auto tensor = [&](const plan::ConvTensor& d) {
      cudnnTensorDescriptor_t td = nullptr;
      n.check(n.createTensor(&td), "cudnnCreateTensorDescriptor");
      int dims[4], strides[4];
      for (int i = 0; i < 4; ++i) {
        dims[i] = static_cast<int>(d.dims[static_cast<size_t>(i)]);
        strides[i] = static_cast<int>(std::max<int64_t>(d.strides[static_cast<size_t>(i)], 1));
      }
      n.check(n.setTensorNd(td, t, 4, dims, strides), "cudnnSetTensorNdDescriptor");
      return td;
    };
    auto filter = [&](const plan::ConvTensor& d) {
      cudnnFilterDescriptor_t fd = nullptr;
      n.check(n.createFilter(&fd), "cudnnCreateFilterDescriptor");
      n.check(n.setFilter4d(fd, t, c.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, static_cast<int>(d.dims[0]), static_cast<int>(d.dims[1]), static_cast<int>(d.dims[2]),
                            static_cast<int>(d.dims[3])),
              "cudnnSetFilter4dDescriptor");
      return fd;
    };
    n.check(n.createConv(&p.cd), "cudnnCreateConvolutionDescriptor");
    n.check(n.setConv2d(p.cd, static_cast<int>(c.pad[0]), static_cast<int>(c.pad[1]), static_cast<int>(c.stride[0]), static_cast<int>(c.stride[1]),
                        static_cast<int>(c.dilation[0]), static_cast<int>(c.dilation[1]), CUDNN_CROSS_CORRELATION,
                        c.dtype == DType::F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT),
            "cudnnSetConvolution2dDescriptor");
    n.check(n.setGroups(p.cd, static_cast<int>(c.groups)), "cudnnSetConvolutionGroupCount");
    // FMA math for float32: no TF32, so results match the reference; tensor
    // ops (TF32) under --precision tf32.  float16 and bfloat16 ask for tensor
    // ops (accumulating in float32, computeType CUDNN_DATA_FLOAT); float64
    // has none.
    const cudnnMathType_t math = c.dtype == DType::F16 || c.dtype == DType::BF16 ? CUDNN_TENSOR_OP_MATH
                                 : c.dtype != DType::F32                         ? CUDNN_DEFAULT_MATH
                                 : tf32_                                         ? CUDNN_TENSOR_OP_MATH
                                                                                 : CUDNN_FMA_MATH;
    n.check(n.setMath(p.cd, math), "cudnnSetConvolutionMathType");
    // The algorithm: the heuristic's best deterministic one (the same
    // results run to run), unless nondeterministic ones are allowed.
    const bool anyAlgo = nondeterministicAllowed();
    constexpr int kWant = 16;
    int found = 0;
    // Note [One math type]: cuDNN's heuristics list candidates of several
    // math types (an algorithm with tensor ops, i.e. TF32 for float32,
    // beside the same algorithm without); under FMA math only those without
    // tensor ops are taken, so that --precision fp32 never computes in TF32.
    const bool noTensorOps = math == CUDNN_FMA_MATH;
    auto choose = [&](const auto* perf, const char* what) {
      for (int i = 0; i < found; ++i)
        if (perf[i].status == CUDNN_STATUS_SUCCESS && (anyAlgo || perf[i].determinism == CUDNN_DETERMINISTIC) &&
            !(noTensorOps && (perf[i].mathType == CUDNN_TENSOR_OP_MATH || perf[i].mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)))
          return static_cast<int>(perf[i].algo);
      fail(cat("cuDNN offers no ", anyAlgo ? "" : "deterministic ", noTensorOps ? "float32 (no TF32) " : "", "algorithm for ", what, " of node ", c.node,
               anyAlgo ? "" : " (AOTC_CUDNN_NONDETERMINISTIC=1 allows the others)"));
    };
    if (c.call != plan::ConvCall::BackwardFilter) {  // forward: (x, w) -> y; backward data: (dy, w) -> dx
      p.ta = tensor(c.a);
      p.fw = filter(c.b);
      p.tb = tensor(c.out);
    } else {
      p.ta = tensor(c.a);    // dy
      p.tb = tensor(c.b);    // x
      p.fw = filter(c.out);  // dw
    }
    // Note [Convolution benchmark]: timed once (or read from the cache) when asked; else cuDNN's heuristic.
    std::optional<int> algo;
    std::string key;
    if (dev_.benchmark()) {
      key = convKey(c);
      algo = dev_.algoCache().find(key);
    }
    // Scratch tensors for timing the candidates (they are written): freed when this prepare ends.
    struct Scratch {
      CudaDevice& d;
      std::vector<DevicePtr> ptrs;
      ~Scratch() {
        for (DevicePtr q : ptrs) d.release(q);
      }
      void* get(size_t bytes) {
        ptrs.push_back(d.allocate(std::max<size_t>(bytes, 1)));
        return reinterpret_cast<void*>(ptrs.back());
      }
    } scratch{dev_, {}};
    auto span = [&](const plan::ConvTensor& t) {
      int64_t e = t.offset;
      for (size_t i = 0; i < t.dims.size(); ++i) e += (t.dims[i] - 1) * std::max<int64_t>(t.strides[i], 0);
      return static_cast<size_t>(e + 1) * static_cast<size_t>(es);
    };
    constexpr size_t kFindWorkspace = size_t{256} << 20;
    const bool find = dev_.benchmark() && !algo;
    if (c.call == plan::ConvCall::Forward) {
      cudnnConvolutionFwdAlgoPerf_t perf[kWant];
      if (!algo && find)
        n.check(n.findFwd(n.handle, p.ta, scratch.get(span(c.a)), p.fw, scratch.get(span(c.b)), p.cd, p.tb, scratch.get(span(c.out)), kWant,
                          &found, perf, scratch.get(kFindWorkspace), kFindWorkspace),
                "cudnnFindConvolutionForwardAlgorithmEx");
      else if (!algo)
        n.check(n.fwdAlgo(n.handle, p.ta, p.fw, p.cd, p.tb, kWant, &found, perf), "cudnnGetConvolutionForwardAlgorithm_v7");
      if (!algo) algo = choose(perf, "the convolution");
      p.algo = *algo;
      n.check(n.fwdWs(n.handle, p.ta, p.fw, p.cd, p.tb, static_cast<cudnnConvolutionFwdAlgo_t>(p.algo), &p.workspaceBytes),
              "cudnnGetConvolutionForwardWorkspaceSize");
    } else if (c.call == plan::ConvCall::BackwardData) {
      cudnnConvolutionBwdDataAlgoPerf_t perf[kWant];
      if (!algo && find)
        n.check(n.findBwdData(n.handle, p.fw, scratch.get(span(c.b)), p.ta, scratch.get(span(c.a)), p.cd, p.tb, scratch.get(span(c.out)),
                              kWant, &found, perf, scratch.get(kFindWorkspace), kFindWorkspace),
                "cudnnFindConvolutionBackwardDataAlgorithmEx");
      else if (!algo)
        n.check(n.bwdDataAlgo(n.handle, p.fw, p.ta, p.cd, p.tb, kWant, &found, perf), "cudnnGetConvolutionBackwardDataAlgorithm_v7");
      if (!algo) algo = choose(perf, "the data gradient");
      p.algo = *algo;
      n.check(n.bwdDataWs(n.handle, p.fw, p.ta, p.cd, p.tb, static_cast<cudnnConvolutionBwdDataAlgo_t>(p.algo), &p.workspaceBytes),
              "cudnnGetConvolutionBackwardDataWorkspaceSize");
    } else {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[kWant];
      if (!algo && find)
        n.check(n.findBwdFilter(n.handle, p.tb, scratch.get(span(c.b)), p.ta, scratch.get(span(c.a)), p.cd, p.fw, scratch.get(span(c.out)),
                                kWant, &found, perf, scratch.get(kFindWorkspace), kFindWorkspace),
                "cudnnFindConvolutionBackwardFilterAlgorithmEx");
      else if (!algo)
        n.check(n.bwdFilterAlgo(n.handle, p.tb, p.ta, p.cd, p.fw, kWant, &found, perf), "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
      if (!algo) algo = choose(perf, "the filter gradient");
      p.algo = *algo;
      n.check(n.bwdFilterWs(n.handle, p.tb, p.ta, p.cd, p.fw, static_cast<cudnnConvolutionBwdFilterAlgo_t>(p.algo), &p.workspaceBytes),
              "cudnnGetConvolutionBackwardFilterWorkspaceSize");
    }
    if (find) dev_.algoCache().put(key, p.algo);
    return p;
  }

  CudaDevice& dev_;
  PhaseArgs args_;
  bool tf32_;  ///< the manifest's precision is tf32
  std::vector<std::variant<LaunchPrep, GemmPrep, ConvPrep>> steps_;
  CUdeviceptr workspace_ = 0;
};

std::unique_ptr<PreparedPhase> CudaDevice::prepare(const plan::Manifest& m, plan::Phase phase, const PhaseArgs& args) {
  current();
  auto p = std::make_unique<CudaPhase>(*this, m, phase, args);
  algos_.save();
  return p;
}

}  // namespace

std::unique_ptr<Device> makeCudaDevice(int ordinal) { return std::make_unique<CudaDevice>(ordinal); }

int cudaOrdinal(const std::string& device) {
  if (device == "cuda") return 0;
  if (device.rfind("cuda:", 0) != 0 || device.size() == 5 || device.size() > 8) return -1;
  int v = 0;
  for (char c : device.substr(5)) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

}  // namespace aotc
