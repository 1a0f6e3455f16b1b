// aotc emulate shim: lets the host C++ compiler build the CUDA C++ that aotc
// emits.  Grid and block loops are run by the emulator; each kernel sees the
// current block and thread through these thread-local built-ins.  Kernels
// that use __syncthreads run one fiber per thread of a block (Note
// [Emulated barriers]); __shared__ memory is static: blocks run one after
// another on one host thread, so a block's fibers share it.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __shared__ static thread_local
extern "C" void __syncthreads();

struct aotc_dim3 { unsigned x = 0, y = 0, z = 0; };
extern "C" {
extern thread_local aotc_dim3 aotc_blockIdx, aotc_threadIdx, aotc_blockDim, aotc_gridDim;
}
#define blockIdx aotc_blockIdx
#define threadIdx aotc_threadIdx
#define blockDim aotc_blockDim
#define gridDim aotc_gridDim

// Note [Emulated shuffles]: __shfl_xor_sync and __shfl_sync exchange values
// between the lanes of a warp.  A kernel that shuffles runs its block's
// threads as fibers (Note [Emulated barriers]); a shuffle writes the lane's
// value to a slot per thread, waits until every thread of the block has
// written (the kernels call shuffles uniformly: every live thread of the
// block reaches the same shuffles in the same order, Note [Row kernels]),
// reads its partner's slot, and waits again before a later shuffle may
// overwrite the slots.  Exact: each lane gets its partner's bits.
inline thread_local unsigned char aotc_shfl_slots[1024 * 8];
template <typename T> inline T aotc_shfl_from(T v, unsigned src) {
  static_assert(sizeof(T) <= 8, "a shuffled value has at most 8 bytes");
  std::memcpy(aotc_shfl_slots + aotc_threadIdx.x * sizeof(T), &v, sizeof(T));
  __syncthreads();
  T r;
  std::memcpy(&r, aotc_shfl_slots + src * sizeof(T), sizeof(T));
  __syncthreads();
  return r;
}
template <typename T> inline T __shfl_xor_sync(unsigned, T v, int mask, int = 32) {
  return aotc_shfl_from(v, aotc_threadIdx.x ^ static_cast<unsigned>(mask & 31));
}
template <typename T> inline T __shfl_sync(unsigned, T v, int lane, int = 32) {
  return aotc_shfl_from(v, (aotc_threadIdx.x & ~31u) | static_cast<unsigned>(lane & 31));
}

inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
template <typename T> inline T min(T a, T b) { return b < a ? b : a; }
template <typename T> inline T max(T a, T b) { return a < b ? b : a; }
inline float expf(float x) { return std::exp(x); }
inline float logf(float x) { return std::log(x); }
inline float tanhf(float x) { return std::tanh(x); }
inline float sqrtf(float x) { return std::sqrt(x); }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float fabsf(float x) { return std::fabs(x); }
inline float sinf(float x) { return std::sin(x); }
inline float cosf(float x) { return std::cos(x); }
inline float erff(float x) { return std::erf(x); }
inline float powf(float a, float b) { return std::pow(a, b); }

// Note [Vectorized access]: a float4 access must be 16-byte aligned on the
// device; the emulator refuses one that is not, so every emulate run checks
// the code generator's alignment reasoning.
struct float4 { float x, y, z, w; };
inline void aotc_check_align16(const void* p) {
  if (reinterpret_cast<uintptr_t>(p) % 16 != 0) {
    std::fprintf(stderr, "aotc emulate: misaligned float4 access at %p\n", p);
    std::abort();
  }
}
inline float4 aotc_ld4(const float* p) { aotc_check_align16(p); float4 v; std::memcpy(&v, p, 16); return v; }
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
inline void aotc_st4(float* p, float4 v) { aotc_check_align16(p); std::memcpy(p, &v, 16); }

// Half types: storage only; arithmetic happens in float, as on the device.
struct __half {
  _Float16 v;
  __half() = default;
  __half(float f) : v(static_cast<_Float16>(f)) {}
  operator float() const { return static_cast<float>(v); }
};
struct __nv_bfloat16 {
  uint16_t bits;
  __nv_bfloat16() = default;
  __nv_bfloat16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) { bits = static_cast<uint16_t>(u >> 16 | 0x40); return; }
    u += 0x7fffu + ((u >> 16) & 1u);
    bits = static_cast<uint16_t>(u >> 16);
  }
  operator float() const { uint32_t u = static_cast<uint32_t>(bits) << 16; float f; std::memcpy(&f, &u, 4); return f; }
};
// Note [Vectorized access]: four float16 / bfloat16 values in one 8-byte
// access (two __half2 / __nv_bfloat162 on the device), which must be 8-byte
// aligned; converted as the scalar accesses convert them.
inline void aotc_check_align8(const void* p) {
  if (reinterpret_cast<uintptr_t>(p) % 8 != 0) {
    std::fprintf(stderr, "aotc emulate: misaligned 4 x 16-bit access at %p\n", p);
    std::abort();
  }
}
template <typename H> inline float4 aotc_ld4_16(const H* p) {
  aotc_check_align8(p);
  H h[4];
  std::memcpy(h, p, 8);
  return float4{float(h[0]), float(h[1]), float(h[2]), float(h[3])};
}
template <typename H> inline void aotc_st4_16(H* p, float4 v) {
  aotc_check_align8(p);
  const H h[4] = {H(v.x), H(v.y), H(v.z), H(v.w)};
  std::memcpy(p, h, 8);
}
inline float4 aotc_ld4(const __half* p) { return aotc_ld4_16(p); }
inline float4 aotc_ld4(const __nv_bfloat16* p) { return aotc_ld4_16(p); }
inline void aotc_st4(__half* p, float4 v) { aotc_st4_16(p, v); }
inline void aotc_st4(__nv_bfloat16* p, float4 v) { aotc_st4_16(p, v); }
