#pragma once
// aotc device prelude: included at the top of every generated kernel.  It is
// stringified into the compiler at build time (scripts/stringify.cmake) and
// must compile both under NVRTC and, later, the host emulator's shim.
#ifndef AOTC_EMULATE  // the emulator's shim defines the half types
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#endif
typedef long long aotc_i64;
#ifndef AOTC_EMULATE  // the emulator's shim checks the alignment
// Note [Vectorized access]: 16-byte loads and stores of four floats.
__device__ __forceinline__ float4 aotc_ld4(const float* p) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ void aotc_st4(float* p, float4 v) { *reinterpret_cast<float4*>(p) = v; }
#endif
#define AOTC_INF (__int_as_float(0x7f800000))

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
__device__ __forceinline__ float aotc_abs(float x) { return fabsf(x); }
__device__ __forceinline__ double aotc_abs(double x) { return fabs(x); }
__device__ __forceinline__ long long aotc_abs(long long x) { return x < 0 ? -x : x; }
__device__ __forceinline__ int aotc_abs(int x) { return x < 0 ? -x : x; }
template <typename T> __device__ __forceinline__ T aotc_sign(T x) { return T((x > T(0)) - (x < T(0))); }
__device__ __forceinline__ float aotc_sin(float x) { return sinf(x); }
__device__ __forceinline__ double aotc_sin(double x) { return sin(x); }
__device__ __forceinline__ float aotc_cos(float x) { return cosf(x); }
__device__ __forceinline__ double aotc_cos(double x) { return cos(x); }
__device__ __forceinline__ float aotc_erf(float x) { return erff(x); }
__device__ __forceinline__ double aotc_erf(double x) { return erf(x); }
__device__ __forceinline__ float aotc_pow(float a, float b) { return powf(a, b); }
__device__ __forceinline__ double aotc_pow(double a, double b) { return pow(a, b); }
template <typename T> __device__ __forceinline__ T aotc_pow(T a, T b) { T r = 1; for (T i = 0; i < b; ++i) r *= a; return r; }
// maximum/minimum propagate NaN, as ATen's do.
template <typename T> __device__ __forceinline__ T aotc_max(T a, T b) { return (a != a || a > b) ? a : b; }
template <typename T> __device__ __forceinline__ T aotc_min(T a, T b) { return (a != a || a < b) ? a : b; }
// Philox4x32-10: the same bits as aotc::philoxUniform on the host.
__device__ __forceinline__ float aotc_uniform(unsigned long long seed, unsigned long long offset, unsigned long long index) {
  unsigned int c0 = (unsigned int)index, c1 = (unsigned int)(index >> 32), c2 = (unsigned int)offset, c3 = (unsigned int)(offset >> 32);
  unsigned int k0 = (unsigned int)seed, k1 = (unsigned int)(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    unsigned long long p0 = 0xD2511F53ull * c0, p1 = 0xCD9E8D57ull * c2;
    unsigned int n0 = (unsigned int)(p1 >> 32) ^ c1 ^ k0, n2 = (unsigned int)(p0 >> 32) ^ c3 ^ k1;
    c1 = (unsigned int)p1; c3 = (unsigned int)p0; c0 = n0; c2 = n2;
    k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
  }
  return (float)(c0 >> 8) * (1.0f / 16777216.0f);
}
