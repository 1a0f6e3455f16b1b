// aotc device prelude: included at the top of every generated kernel.  It is
// stringified into the compiler at build time (scripts/stringify.cmake) and
// must compile both under NVRTC and, later, the host emulator's shim.
typedef long long aotc_i64;

__device__ __forceinline__ float aotc_exp(float x) { return expf(x); }
__device__ __forceinline__ double aotc_exp(double x) { return exp(x); }
__device__ __forceinline__ float aotc_log(float x) { return logf(x); }
__device__ __forceinline__ double aotc_log(double x) { return log(x); }
__device__ __forceinline__ float aotc_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double aotc_tanh(double x) { return tanh(x); }
__device__ __forceinline__ float aotc_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ __forceinline__ double aotc_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
__device__ __forceinline__ float aotc_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double aotc_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float aotc_rsqrt(float x) { return rsqrtf(x); }
__device__ __forceinline__ double aotc_rsqrt(double x) { return rsqrt(x); }
template <typename T> __device__ __forceinline__ T aotc_relu(T x) { return x > T(0) ? x : T(0); }
