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
// driver.  Kernels that check indices (aotc_checked_index) set their module's
// aotc_index_error; the device reads and clears it after such a launch.
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

#include "aotc/runtime/device.h"
#include "aotc/support/diag.h"

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

struct Driver {
  decltype(&cuInit) init;
  decltype(&cuDeviceGetCount) deviceGetCount;
  decltype(&cuDeviceGet) deviceGet;
  decltype(&cuDeviceGetAttribute) deviceGetAttribute;
  decltype(&cuDevicePrimaryCtxRetain) primaryCtxRetain;
  decltype(&cuDevicePrimaryCtxRelease_v2) primaryCtxRelease;
  decltype(&cuCtxSetCurrent) ctxSetCurrent;
  decltype(&cuCtxSynchronize) ctxSynchronize;
  decltype(&cuMemAlloc_v2) memAlloc;
  decltype(&cuMemFree_v2) memFree;
  decltype(&cuMemsetD8_v2) memsetD8;
  decltype(&cuMemcpyHtoD_v2) memcpyHtoD;
  decltype(&cuMemcpyDtoH_v2) memcpyDtoH;
  decltype(&cuModuleLoadData) moduleLoadData;
  decltype(&cuModuleUnload) moduleUnload;
  decltype(&cuModuleGetFunction) moduleGetFunction;
  decltype(&cuModuleGetGlobal_v2) moduleGetGlobal;
  decltype(&cuLaunchKernel) launchKernel;
  decltype(&cuGetErrorString) getErrorString;
  void load(const Dl& d) {
    AOTC_SYM(d, init, cuInit);
    AOTC_SYM(d, deviceGetCount, cuDeviceGetCount);
    AOTC_SYM(d, deviceGet, cuDeviceGet);
    AOTC_SYM(d, deviceGetAttribute, cuDeviceGetAttribute);
    AOTC_SYM(d, primaryCtxRetain, cuDevicePrimaryCtxRetain);
    AOTC_SYM(d, primaryCtxRelease, cuDevicePrimaryCtxRelease_v2);
    AOTC_SYM(d, ctxSetCurrent, cuCtxSetCurrent);
    AOTC_SYM(d, ctxSynchronize, cuCtxSynchronize);
    AOTC_SYM(d, memAlloc, cuMemAlloc_v2);
    AOTC_SYM(d, memFree, cuMemFree_v2);
    AOTC_SYM(d, memsetD8, cuMemsetD8_v2);
    AOTC_SYM(d, memcpyHtoD, cuMemcpyHtoD_v2);
    AOTC_SYM(d, memcpyDtoH, cuMemcpyDtoH_v2);
    AOTC_SYM(d, moduleLoadData, cuModuleLoadData);
    AOTC_SYM(d, moduleUnload, cuModuleUnload);
    AOTC_SYM(d, moduleGetFunction, cuModuleGetFunction);
    AOTC_SYM(d, moduleGetGlobal, cuModuleGetGlobal_v2);
    AOTC_SYM(d, launchKernel, cuLaunchKernel);
    AOTC_SYM(d, getErrorString, cuGetErrorString);
  }
};

// cublasGemmEx and cublasGemmStridedBatchedEx have 64-bit overloads in C++:
// the 32-bit ones are named by their type (static_cast picks the overload, so
// a mismatch with the header is a compile error).
using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*, const void*,
                                    cudaDataType, int, const void*, cudaDataType, int, const void*, void*, cudaDataType, int,
                                    cublasComputeType_t, cublasGemmAlgo_t);
using GemmBatchedFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*, const void*,
                                         cudaDataType, int, long long, const void*, cudaDataType, int, long long, const void*, void*,
                                         cudaDataType, int, long long, int, cublasComputeType_t, cublasGemmAlgo_t);
static_assert(std::is_same_v<decltype(static_cast<GemmExFn>(&cublasGemmEx)), GemmExFn>);  // unevaluated: no link dependency
static_assert(std::is_same_v<decltype(static_cast<GemmBatchedFn>(&cublasGemmStridedBatchedEx)), GemmBatchedFn>);

struct Cublas {
  Dl lib{"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
  decltype(&cublasCreate_v2) create;
  decltype(&cublasDestroy_v2) destroy;
  GemmExFn gemmEx;
  GemmBatchedFn gemmStridedBatchedEx;
  cublasHandle_t handle = nullptr;
  Cublas() {
    if (!lib.h) fail("cuBLAS (libcublas.so.13) cannot be loaded: install the CUDA libraries to run GEMM steps");
    AOTC_SYM(lib, create, cublasCreate_v2);
    AOTC_SYM(lib, destroy, cublasDestroy_v2);
    gemmEx = lib.sym<GemmExFn>("cublasGemmEx");
    gemmStridedBatchedEx = lib.sym<GemmBatchedFn>("cublasGemmStridedBatchedEx");
    if (create(&handle) != CUBLAS_STATUS_SUCCESS) fail("cublasCreate failed");
  }
  ~Cublas() {
    if (handle) destroy(handle);
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
    AOTC_SYM(lib, matmul, cublasLtMatmul);
    if (create(&handle) != CUBLAS_STATUS_SUCCESS) fail("cublasLtCreate failed");
  }
  ~CublasLt() {
    if (handle) destroy(handle);
  }
};

struct Cudnn {
  Dl lib{"libcudnn.so.9", "libcudnn.so"};
  decltype(&cudnnCreate) create;
  decltype(&cudnnDestroy) destroy;
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
  cudnnHandle_t handle = nullptr;
  Cudnn() {
    if (!lib.h) fail("cuDNN (libcudnn.so.9) cannot be loaded: install cuDNN to run convolution steps");
    AOTC_SYM(lib, create, cudnnCreate);
    AOTC_SYM(lib, destroy, cudnnDestroy);
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
    if (create(&handle) != CUDNN_STATUS_SUCCESS) fail("cudnnCreate failed");
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
    if (n <= ordinal) fail(cat("no CUDA device ", ordinal, " (this machine has ", n, ")"));
    check(d_.deviceGet(&dev_, ordinal), "cuDeviceGet");
    check(d_.primaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain");
    check(d_.ctxSetCurrent(ctx_), "cuCtxSetCurrent");
    int major = 0, minor = 0;
    check(d_.deviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev_), "cuDeviceGetAttribute");
    check(d_.deviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev_), "cuDeviceGetAttribute");
    arch_ = major * 10 + minor;
  }
  ~CudaDevice() override {
    cublas_.reset();
    lt_.reset();
    cudnn_.reset();
    if (workspace_) d_.memFree(workspace_);
    for (auto& [p, n] : live_) d_.memFree(p);
    for (CUmodule m : modules_) d_.moduleUnload(m);
    if (ctx_) d_.primaryCtxRelease(dev_);
  }
  std::string name() const override { return cat("cuda:sm_", arch_); }

  DevicePtr allocate(size_t bytes) override {
    CUdeviceptr p = 0;
    size_t n = (bytes + 16 + 255) / 256 * 256;
    CUresult r = d_.memAlloc(&p, n);
    if (r != CUDA_SUCCESS) fail(cat("cannot allocate ", bytes, " bytes of device memory (", error(r), ")"));
    check(d_.memsetD8(p, 0, n), "cuMemsetD8");
    live_[p] = n;
    return p;
  }
  void release(DevicePtr p) override {
    if (live_.erase(p)) d_.memFree(p);
  }
  void copyToDevice(DevicePtr dst, const void* src, size_t bytes) override { check(d_.memcpyHtoD(dst, src, bytes), "cuMemcpyHtoD"); }
  void copyToHost(void* dst, DevicePtr src, size_t bytes) override { check(d_.memcpyDtoH(dst, src, bytes), "cuMemcpyDtoH"); }
  void synchronize() override { check(d_.ctxSynchronize(), "cuCtxSynchronize"); }

  void loadKernels(const plan::Manifest& m, const std::string& dir) override {
    const std::string want = cat("sm_", arch_);
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
      CUdeviceptr flag = 0;
      size_t flagBytes = 0;
      if (d_.moduleGetGlobal(&flag, &flagBytes, mod, "aotc_index_error") != CUDA_SUCCESS) flag = 0;
      for (const std::string& k : ms.kernels) {
        CUfunction fn = nullptr;
        check(d_.moduleGetFunction(&fn, mod, k.c_str()), "cuModuleGetFunction (" + k + ")");
        fns_[k] = {fn, flag};
      }
    }
    for (const plan::KernelSpec& k : m.kernels) {
      std::ifstream f(fs::path(dir) / k.source);
      std::string src((std::istreambuf_iterator<char>(f)), {});
      if (src.find("aotc_checked_index") != std::string::npos) checked_.insert(k.name);
    }
  }

  void launch(const plan::Launch& l, const std::vector<DevicePtr>& args) override {
    auto it = fns_.find(l.kernel);
    if (it == fns_.end()) fail("kernel " + l.kernel + " is in no module of the artifact");
    std::vector<CUdeviceptr> values(args.begin(), args.end());
    std::vector<long long> scalars(l.scalars.begin(), l.scalars.end());  // Note [Symbolic manifest]
    std::vector<void*> params;
    for (CUdeviceptr& v : values) params.push_back(&v);
    for (long long& v : scalars) params.push_back(&v);
    check(d_.launchKernel(it->second.fn, static_cast<unsigned>(l.grid[0]), static_cast<unsigned>(l.grid[1]), static_cast<unsigned>(l.grid[2]),
                          static_cast<unsigned>(l.block[0]), static_cast<unsigned>(l.block[1]), static_cast<unsigned>(l.block[2]),
                          static_cast<unsigned>(l.shared_bytes), nullptr, params.data(), nullptr),
          "cuLaunchKernel");
    if (checked_.count(l.kernel) && it->second.indexFlag) {
      int flag = 0;
      check(d_.memcpyDtoH(&flag, it->second.indexFlag, sizeof flag), "reading aotc_index_error");
      if (flag) {
        int zero = 0;
        check(d_.memcpyHtoD(it->second.indexFlag, &zero, sizeof zero), "clearing aotc_index_error");
        fail("index out of range (an index tensor holds a value outside its dim)");
      }
    }
  }

  void gemm(const plan::Gemm& g, DevicePtr a, DevicePtr b, DevicePtr c, DevicePtr bias) override {
    const int64_t es = dtypeSize(g.dtype);
    const cudaDataType_t t = cudaType(g.dtype);
    const bool dbl = g.dtype == DType::F64;
    const double alphaD = g.alpha, betaD = g.beta;
    const float alphaF = static_cast<float>(g.alpha), betaF = static_cast<float>(g.beta);
    const void* alpha = dbl ? static_cast<const void*>(&alphaD) : &alphaF;
    const void* beta = dbl ? static_cast<const void*>(&betaD) : &betaF;
    const cublasComputeType_t compute = dbl ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
    const cublasOperation_t ta = g.transa ? CUBLAS_OP_T : CUBLAS_OP_N, tb = g.transb ? CUBLAS_OP_T : CUBLAS_OP_N;
    void* A = reinterpret_cast<void*>(a + static_cast<DevicePtr>(g.A.offset * es));
    void* B = reinterpret_cast<void*>(b + static_cast<DevicePtr>(g.B.offset * es));
    void* C = reinterpret_cast<void*>(c + static_cast<DevicePtr>(g.C.offset * es));
    auto i32 = [](int64_t v) {
      if (v > INT32_MAX) fail("a GEMM dimension exceeds 2^31-1");
      return static_cast<int>(v);
    };
    if (g.call == plan::GemmCall::LtMatmulBias) {
      if (!lt_) lt_ = std::make_unique<CublasLt>();
      cublasLtMatmulDesc_t desc = nullptr;
      cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
      auto ok = [](cublasStatus_t s, const char* what) {
        if (s != CUBLAS_STATUS_SUCCESS) fail(cat(what, " failed (status ", static_cast<int>(s), ")"));
      };
      ok(lt_->descCreate(&desc, compute, dbl ? CUDA_R_64F : CUDA_R_32F), "cublasLtMatmulDescCreate");
      cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
      const void* biasPtr = reinterpret_cast<const void*>(bias + static_cast<DevicePtr>(g.bias->offset * es));
      ok(lt_->descSet(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "cublasLtMatmulDescSetAttribute");
      ok(lt_->descSet(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "cublasLtMatmulDescSetAttribute");
      ok(lt_->descSet(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi), "cublasLtMatmulDescSetAttribute");
      ok(lt_->descSet(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &biasPtr, sizeof biasPtr), "cublasLtMatmulDescSetAttribute");
      ok(lt_->layoutCreate(&la, t, static_cast<uint64_t>(g.transa ? g.k : g.m), static_cast<uint64_t>(g.transa ? g.m : g.k), g.A.ld), "cublasLtMatrixLayoutCreate");
      ok(lt_->layoutCreate(&lb, t, static_cast<uint64_t>(g.transb ? g.n : g.k), static_cast<uint64_t>(g.transb ? g.k : g.n), g.B.ld), "cublasLtMatrixLayoutCreate");
      ok(lt_->layoutCreate(&lc, t, static_cast<uint64_t>(g.m), static_cast<uint64_t>(g.n), g.C.ld), "cublasLtMatrixLayoutCreate");
      cublasStatus_t s = lt_->matmul(lt_->handle, desc, alpha, A, la, B, lb, beta, C, lc, C, lc, nullptr, nullptr, 0, nullptr);
      lt_->layoutDestroy(la);
      lt_->layoutDestroy(lb);
      lt_->layoutDestroy(lc);
      lt_->descDestroy(desc);
      ok(s, "cublasLtMatmul");
      return;
    }
    if (!cublas_) cublas_ = std::make_unique<Cublas>();
    cublasStatus_t s;
    if (g.call == plan::GemmCall::GemmStridedBatchedEx)
      s = cublas_->gemmStridedBatchedEx(cublas_->handle, ta, tb, i32(g.m), i32(g.n), i32(g.k), alpha, A, t, i32(g.A.ld), g.A.stride, B, t,
                                        i32(g.B.ld), g.B.stride, beta, C, t, i32(g.C.ld), g.C.stride, i32(g.batch), compute,
                                        CUBLAS_GEMM_DEFAULT);
    else
      s = cublas_->gemmEx(cublas_->handle, ta, tb, i32(g.m), i32(g.n), i32(g.k), alpha, A, t, i32(g.A.ld), B, t, i32(g.B.ld), beta, C, t,
                          i32(g.C.ld), compute, CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS) fail(cat("cuBLAS GEMM failed (status ", static_cast<int>(s), ")"));
  }

  void conv(const plan::Conv& c, DevicePtr pa, DevicePtr pb, DevicePtr pout) override {
    if (!cudnn_) cudnn_ = std::make_unique<Cudnn>();
    Cudnn& n = *cudnn_;
    const cudnnDataType_t t = cudnnType(c.dtype);
    const int64_t es = dtypeSize(c.dtype);
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
      n.check(n.setFilter4d(fd, t, CUDNN_TENSOR_NCHW, static_cast<int>(d.dims[0]), static_cast<int>(d.dims[1]), static_cast<int>(d.dims[2]),
                            static_cast<int>(d.dims[3])),
              "cudnnSetFilter4dDescriptor");
      return fd;
    };
    cudnnConvolutionDescriptor_t cd = nullptr;
    n.check(n.createConv(&cd), "cudnnCreateConvolutionDescriptor");
    n.check(n.setConv2d(cd, static_cast<int>(c.pad[0]), static_cast<int>(c.pad[1]), static_cast<int>(c.stride[0]), static_cast<int>(c.stride[1]),
                        static_cast<int>(c.dilation[0]), static_cast<int>(c.dilation[1]), CUDNN_CROSS_CORRELATION,
                        c.dtype == DType::F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT),
            "cudnnSetConvolution2dDescriptor");
    n.check(n.setGroups(cd, static_cast<int>(c.groups)), "cudnnSetConvolutionGroupCount");
    // FMA math for float32: no TF32, so results match the reference.
    n.check(n.setMath(cd, c.dtype == DType::F32 ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH), "cudnnSetConvolutionMathType");
    const double alphaD = c.alpha, betaD = c.beta;
    const float alphaF = static_cast<float>(c.alpha), betaF = static_cast<float>(c.beta);
    const void* alpha = c.dtype == DType::F64 ? static_cast<const void*>(&alphaD) : &alphaF;
    const void* beta = c.dtype == DType::F64 ? static_cast<const void*>(&betaD) : &betaF;
    auto at = [&](DevicePtr p, int64_t off) { return reinterpret_cast<void*>(p + static_cast<DevicePtr>(off * es)); };
    cudnnTensorDescriptor_t ta = nullptr, tout = nullptr;
    cudnnFilterDescriptor_t fw = nullptr;
    int found = 0;
    size_t ws = 0;
    if (c.call == plan::ConvCall::Forward) {
      ta = tensor(c.a);
      fw = filter(c.b);
      tout = tensor(c.out);
      cudnnConvolutionFwdAlgoPerf_t perf;
      n.check(n.fwdAlgo(n.handle, ta, fw, cd, tout, 1, &found, &perf), "cudnnGetConvolutionForwardAlgorithm_v7");
      n.check(n.fwdWs(n.handle, ta, fw, cd, tout, perf.algo, &ws), "cudnnGetConvolutionForwardWorkspaceSize");
      n.check(n.fwd(n.handle, alpha, ta, at(pa, c.a.offset), fw, at(pb, c.b.offset), cd, perf.algo, workspace(ws), ws, beta, tout,
                    at(pout, c.out.offset)),
              "cudnnConvolutionForward");
    } else if (c.call == plan::ConvCall::BackwardData) {
      ta = tensor(c.a);
      fw = filter(c.b);
      tout = tensor(c.out);
      cudnnConvolutionBwdDataAlgoPerf_t perf;
      n.check(n.bwdDataAlgo(n.handle, fw, ta, cd, tout, 1, &found, &perf), "cudnnGetConvolutionBackwardDataAlgorithm_v7");
      n.check(n.bwdDataWs(n.handle, fw, ta, cd, tout, perf.algo, &ws), "cudnnGetConvolutionBackwardDataWorkspaceSize");
      n.check(n.bwdData(n.handle, alpha, fw, at(pb, c.b.offset), ta, at(pa, c.a.offset), cd, perf.algo, workspace(ws), ws, beta, tout,
                        at(pout, c.out.offset)),
              "cudnnConvolutionBackwardData");
    } else {
      ta = tensor(c.a);                       // dy
      cudnnTensorDescriptor_t tx = tensor(c.b);  // x
      fw = filter(c.out);                     // dw
      cudnnConvolutionBwdFilterAlgoPerf_t perf;
      n.check(n.bwdFilterAlgo(n.handle, tx, ta, cd, fw, 1, &found, &perf), "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
      n.check(n.bwdFilterWs(n.handle, tx, ta, cd, fw, perf.algo, &ws), "cudnnGetConvolutionBackwardFilterWorkspaceSize");
      n.check(n.bwdFilter(n.handle, alpha, tx, at(pb, c.b.offset), ta, at(pa, c.a.offset), cd, perf.algo, workspace(ws), ws, beta, fw,
                          at(pout, c.out.offset)),
              "cudnnConvolutionBackwardFilter");
      n.destroyTensor(tx);
    }
    if (ta) n.destroyTensor(ta);
    if (tout) n.destroyTensor(tout);
    if (fw) n.destroyFilter(fw);
    n.destroyConv(cd);
  }

 private:
  std::string error(CUresult r) const {
    const char* s = nullptr;
    if (d_.getErrorString && d_.getErrorString(r, &s) == CUDA_SUCCESS && s) return s;
    return cat("CUresult ", static_cast<int>(r));
  }
  void check(CUresult r, const std::string& what) const {
    if (r != CUDA_SUCCESS) fail(what + " failed: " + error(r));
  }
  void* workspace(size_t bytes) {
    if (bytes > workspaceBytes_) {
      if (workspace_) d_.memFree(workspace_);
      workspace_ = 0;
      check(d_.memAlloc(&workspace_, bytes), "cuMemAlloc (workspace)");
      workspaceBytes_ = bytes;
    }
    return reinterpret_cast<void*>(workspace_);
  }

  Dl driver_;
  Driver d_{};
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  int arch_ = 0;
  struct Fn {
    CUfunction fn;
    CUdeviceptr indexFlag;
  };
  std::map<std::string, Fn> fns_;
  std::set<std::string> checked_;
  std::vector<CUmodule> modules_;
  std::map<DevicePtr, size_t> live_;
  CUdeviceptr workspace_ = 0;
  size_t workspaceBytes_ = 0;
  std::unique_ptr<Cublas> cublas_;
  std::unique_ptr<CublasLt> lt_;
  std::unique_ptr<Cudnn> cudnn_;
};

}  // namespace

std::unique_ptr<Device> makeCudaDevice(int ordinal) { return std::make_unique<CudaDevice>(ordinal); }

}  // namespace aotc
