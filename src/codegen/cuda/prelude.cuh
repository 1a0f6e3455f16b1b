#pragma once
// aotc device prelude: included at the top of every generated kernel.  It is
// stringified into the compiler at build time (scripts/stringify.cmake) and
// must compile both under NVRTC and, later, the host emulator's shim.
// The half types' headers are large (most of NVRTC's time on a small
// kernel): a program none of whose kernels uses them defines AOTC_NO_HALF
// (Note [Half headers], nvrtc.cpp).  The emulator's shim defines the types.
#if !defined(AOTC_EMULATE) && !defined(AOTC_NO_HALF)
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#endif
typedef long long aotc_i64;
#ifndef AOTC_EMULATE  // the emulator's shim checks the alignment
// Note [Vectorized access]: 16-byte loads and stores of four floats.
__device__ __forceinline__ float4 aotc_ld4(const float* p) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ void aotc_st4(float* p, float4 v) { *reinterpret_cast<float4*>(p) = v; }
#ifndef AOTC_NO_HALF
// Four float16 / bfloat16 values: one 8-byte access as two __half2 /
// __nv_bfloat162, widened to (or rounded from, to nearest even) float, in
// which the kernels compute: the same values as four scalar accesses.
__device__ __forceinline__ float4 aotc_ld4(const __half* p) {
  const uint2 r = *reinterpret_cast<const uint2*>(p);
  const float2 a = __half22float2(*reinterpret_cast<const __half2*>(&r.x));
  const float2 b = __half22float2(*reinterpret_cast<const __half2*>(&r.y));
  return make_float4(a.x, a.y, b.x, b.y);
}
__device__ __forceinline__ void aotc_st4(__half* p, float4 v) {
  __half2 h[2] = {__floats2half2_rn(v.x, v.y), __floats2half2_rn(v.z, v.w)};
  *reinterpret_cast<uint2*>(p) = *reinterpret_cast<const uint2*>(h);
}
__device__ __forceinline__ float4 aotc_ld4(const __nv_bfloat16* p) {
  const uint2 r = *reinterpret_cast<const uint2*>(p);
  const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&r.x));
  const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&r.y));
  return make_float4(a.x, a.y, b.x, b.y);
}
__device__ __forceinline__ void aotc_st4(__nv_bfloat16* p, float4 v) {
  __nv_bfloat162 h[2] = {__floats2bfloat162_rn(v.x, v.y), __floats2bfloat162_rn(v.z, v.w)};
  *reinterpret_cast<uint2*>(p) = *reinterpret_cast<const uint2*>(h);
}
#endif
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
template <typename T> __device__ __forceinline__ T aotc_relu(T x) { return x < T(0) ? T(0) : x; }  // NaN, -0 stay
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
__device__ __forceinline__ float aotc_expm1(float x) { return expm1f(x); }
__device__ __forceinline__ double aotc_expm1(double x) { return expm1(x); }
__device__ __forceinline__ float aotc_log1p(float x) { return log1pf(x); }
__device__ __forceinline__ double aotc_log1p(double x) { return log1p(x); }
__device__ __forceinline__ float aotc_log2(float x) { return log2f(x); }
__device__ __forceinline__ double aotc_log2(double x) { return log2(x); }
__device__ __forceinline__ float aotc_log10(float x) { return log10f(x); }
__device__ __forceinline__ double aotc_log10(double x) { return log10(x); }
__device__ __forceinline__ float aotc_tan(float x) { return tanf(x); }
__device__ __forceinline__ double aotc_tan(double x) { return tan(x); }
__device__ __forceinline__ float aotc_asin(float x) { return asinf(x); }
__device__ __forceinline__ double aotc_asin(double x) { return asin(x); }
__device__ __forceinline__ float aotc_acos(float x) { return acosf(x); }
__device__ __forceinline__ double aotc_acos(double x) { return acos(x); }
__device__ __forceinline__ float aotc_atan(float x) { return atanf(x); }
__device__ __forceinline__ double aotc_atan(double x) { return atan(x); }
__device__ __forceinline__ float aotc_sinh(float x) { return sinhf(x); }
__device__ __forceinline__ double aotc_sinh(double x) { return sinh(x); }
__device__ __forceinline__ float aotc_cosh(float x) { return coshf(x); }
__device__ __forceinline__ double aotc_cosh(double x) { return cosh(x); }
__device__ __forceinline__ float aotc_asinh(float x) { return asinhf(x); }
__device__ __forceinline__ double aotc_asinh(double x) { return asinh(x); }
__device__ __forceinline__ float aotc_acosh(float x) { return acoshf(x); }
__device__ __forceinline__ double aotc_acosh(double x) { return acosh(x); }
__device__ __forceinline__ float aotc_atanh(float x) { return atanhf(x); }
__device__ __forceinline__ double aotc_atanh(double x) { return atanh(x); }
__device__ __forceinline__ float aotc_reciprocal(float x) { return 1.0f / x; }
__device__ __forceinline__ double aotc_reciprocal(double x) { return 1.0 / x; }
// Rounding: integers are already whole (the templates); round is half to even.
template <typename T> __device__ __forceinline__ T aotc_floor(T x) { return x; }
__device__ __forceinline__ float aotc_floor(float x) { return floorf(x); }
__device__ __forceinline__ double aotc_floor(double x) { return floor(x); }
template <typename T> __device__ __forceinline__ T aotc_ceil(T x) { return x; }
__device__ __forceinline__ float aotc_ceil(float x) { return ceilf(x); }
__device__ __forceinline__ double aotc_ceil(double x) { return ceil(x); }
template <typename T> __device__ __forceinline__ T aotc_round(T x) { return x; }
__device__ __forceinline__ float aotc_round(float x) { return rintf(x); }
__device__ __forceinline__ double aotc_round(double x) { return rint(x); }
template <typename T> __device__ __forceinline__ T aotc_trunc(T x) { return x; }
__device__ __forceinline__ float aotc_trunc(float x) { return truncf(x); }
__device__ __forceinline__ double aotc_trunc(double x) { return trunc(x); }
template <typename T> __device__ __forceinline__ bool aotc_isnan(T x) { return x != x; }
template <typename T> __device__ __forceinline__ bool aotc_isinf(T) { return false; }
__device__ __forceinline__ bool aotc_isinf(float x) { return x == x && (x - x) != (x - x); }
__device__ __forceinline__ bool aotc_isinf(double x) { return x == x && (x - x) != (x - x); }
__device__ __forceinline__ float aotc_atan2(float a, float b) { return atan2f(a, b); }
__device__ __forceinline__ double aotc_atan2(double a, double b) { return atan2(a, b); }
// fmod, remainder (divisor's sign), floor division (ATen's div_floor_floating).
// Integer forms are only emitted with a non-zero constant divisor.
template <typename T> __device__ __forceinline__ T aotc_fmod(T a, T b) { return a % b; }
__device__ __forceinline__ float aotc_fmod(float a, float b) { return fmodf(a, b); }
__device__ __forceinline__ double aotc_fmod(double a, double b) { return fmod(a, b); }
template <typename T> __device__ __forceinline__ T aotc_remainder(T a, T b) {
  T m = aotc_fmod(a, b);
  return (m != T(0) && ((b < T(0)) != (m < T(0)))) ? m + b : m;
}
// mod: numpy's and Python's % (ONNX Mod, fmod=0): a zero takes the
// divisor's sign (Note [Signed zero of mod], src/ops/pointwise.cpp).
__device__ __forceinline__ float aotc_mod(float a, float b) {
  float m = aotc_remainder(a, b);
  return m == 0.0f ? copysignf(0.0f, b) : m;
}
__device__ __forceinline__ double aotc_mod(double a, double b) {
  double m = aotc_remainder(a, b);
  return m == 0.0 ? copysign(0.0, b) : m;
}
template <typename T> __device__ __forceinline__ T aotc_div_floor(T a, T b) {
  T q = a / b;
  return ((a % b != 0) && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <typename T> __device__ __forceinline__ T aotc_div_floor_fp(T a, T b) {
  if (b == T(0)) return a / b;
  T mod = aotc_fmod(a, b);
  T div = (a - mod) / b;
  if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) div -= T(1);
  if (div == T(0)) return copysign(T(0), a / b);
  T fl = floor(div);
  if (div - fl > T(0.5)) fl += T(1);
  return fl;
}
__device__ __forceinline__ float aotc_div_floor(float a, float b) { return aotc_div_floor_fp(a, b); }
__device__ __forceinline__ double aotc_div_floor(double a, double b) { return aotc_div_floor_fp(a, b); }
// Special functions (issue 36).  erfc, exp2, lgamma are the CUDA/C math
// library's; digamma and trigamma are PyTorch's calc_digamma and trigamma
// (ATen/native/Math.h, from Cephes), float in float as ATen's CPU kernels;
// erfinv is CUDA's on the device and PyTorch's CPU calc_erfinv (a rational
// start and two Newton steps) in the emulator, whose host has no erfinv.
__device__ __forceinline__ float aotc_erfc(float x) { return erfcf(x); }
__device__ __forceinline__ double aotc_erfc(double x) { return erfc(x); }
__device__ __forceinline__ float aotc_exp2(float x) { return exp2f(x); }
__device__ __forceinline__ double aotc_exp2(double x) { return exp2(x); }
__device__ __forceinline__ float aotc_lgamma(float x) { return lgammaf(x); }
__device__ __forceinline__ double aotc_lgamma(double x) { return lgamma(x); }
// (ATen recurses once for x < 0, digamma(1 - x) - pi / tan(pi x); a device
// function may not recurse, so the reflection is kept and subtracted last.)
__device__ __forceinline__ double aotc_digamma(double x) {
  if (x == 0) return copysign((double)AOTC_INF, -x);
  double reflect = 0;
  if (x < 0) {
    if (x == trunc(x)) return (double)AOTC_INF - (double)AOTC_INF;
    double q, r = modf(x, &q);
    reflect = 3.14159265358979323846 / tan(3.14159265358979323846 * r);
    x = 1 - x;
  }
  double result = 0;
  while (x < 10) { result -= 1 / x; x += 1; }
  if (x == 10) return (result + 2.25175258906672110764) - reflect;
  double y = 0;
  if (x < 1.0e17) {
    double z = 1.0 / (x * x), p = 8.33333333333333333333E-2;
    p = p * z - 2.10927960927960927961E-2; p = p * z + 7.57575757575757575758E-3; p = p * z - 4.16666666666666666667E-3;
    p = p * z + 3.96825396825396825397E-3; p = p * z - 8.33333333333333333333E-3; p = p * z + 8.33333333333333333333E-2;
    y = z * p;
  }
  return (result + log(x) - (0.5 / x) - y) - reflect;
}
__device__ __forceinline__ float aotc_digamma(float x) {
  if (x == 0) return copysignf(AOTC_INF, -x);
  float reflect = 0;
  if (x < 0) {
    if (x == truncf(x)) return AOTC_INF - AOTC_INF;
    double q, r = modf((double)x, &q);
    reflect = (float)(3.14159265358979323846 / tan(3.14159265358979323846 * r));
    x = 1 - x;
  }
  float result = 0;
  while (x < 10) { result -= 1 / x; x += 1; }
  if (x == 10) return (result + 2.25175258906672110764f) - reflect;
  float y = 0;
  if (x < 1.0e17f) {
    float z = 1 / (x * x), p = 8.33333333333333333333E-2f;
    p = p * z + -2.10927960927960927961E-2f; p = p * z + 7.57575757575757575758E-3f; p = p * z + -4.16666666666666666667E-3f;
    p = p * z + 3.96825396825396825397E-3f; p = p * z + -8.33333333333333333333E-3f; p = p * z + 8.33333333333333333333E-2f;
    y = z * p;
  }
  return (result + logf(x) - (0.5f / x) - y) - reflect;
}
template <typename T> __device__ __forceinline__ T aotc_trigamma_t(T x, T pi) {
  T sign = 1, result = 0;
  if (x < T(0.5)) {
    sign = -1;
    const T s = aotc_sin(pi * x);
    result -= (pi * pi) / (s * s);
    x = 1 - x;
  }
  for (int i = 0; i < 6; ++i) { result += 1 / (x * x); x += 1; }
  const T ixx = 1 / (x * x);
  result += (1 + 1 / (2 * x) + ixx * (T(1) / 6 - ixx * (T(1) / 30 - ixx * (T(1) / 42)))) / x;
  return sign * result;
}
__device__ __forceinline__ float aotc_trigamma(float x) { return aotc_trigamma_t(x, 3.14159265358979323846f); }
__device__ __forceinline__ double aotc_trigamma(double x) { return aotc_trigamma_t(x, 3.14159265358979323846); }
#ifdef AOTC_EMULATE
template <typename T> T aotc_erfinv_t(T y) {
  const T a[4] = {T(0.886226899), T(-1.645349621), T(0.914624893), T(-0.140543331)};
  const T b[4] = {T(-2.118377725), T(1.442710462), T(-0.329097515), T(0.012229801)};
  const T c[4] = {T(-1.970840454), T(-1.624906493), T(3.429567803), T(1.641345311)};
  const T d[2] = {T(3.543889200), T(1.637067800)};
  T x, z, num, dem, y_abs = std::abs(y);
  if (y_abs > T(1)) return T(std::nan(""));
  if (y_abs == T(1)) return std::copysign(T(AOTC_INF), y);
  if (y_abs <= static_cast<T>(0.7)) {
    z = y * y;
    num = (((a[3] * z + a[2]) * z + a[1]) * z + a[0]);
    dem = ((((b[3] * z + b[2]) * z + b[1]) * z + b[0]) * z + T(1));
    x = y * num / dem;
  } else {
    z = std::sqrt(-std::log((T(1) - y_abs) / T(2)));
    num = ((c[3] * z + c[2]) * z + c[1]) * z + c[0];
    dem = (d[1] * z + d[0]) * z + T(1);
    x = std::copysign(num, y) / dem;
  }
  const T two_over_sqrt_pi = T(2) * T(0.564189583547756286948079451560772586);
  x = x - (std::erf(x) - y) / (two_over_sqrt_pi * std::exp(-x * x));
  x = x - (std::erf(x) - y) / (two_over_sqrt_pi * std::exp(-x * x));
  return x;
}
inline float aotc_erfinv(float x) { return aotc_erfinv_t(x); }
inline double aotc_erfinv(double x) { return aotc_erfinv_t(x); }
#else
__device__ __forceinline__ float aotc_erfinv(float x) { return erfinvf(x); }
__device__ __forceinline__ double aotc_erfinv(double x) { return erfinv(x); }
#endif
// logit(x) = log(x / (1 - x)) (eps is a clamp before it, in the graph).
template <typename T> __device__ __forceinline__ T aotc_logit(T x) { return aotc_log(x / (T(1) - x)); }
__device__ __forceinline__ float aotc_copysign(float a, float b) { return copysignf(a, b); }
__device__ __forceinline__ double aotc_copysign(double a, double b) { return copysign(a, b); }
__device__ __forceinline__ float aotc_hypot(float a, float b) { return hypotf(a, b); }
__device__ __forceinline__ double aotc_hypot(double a, double b) { return hypot(a, b); }
// ATen's logaddexp2 and binary_cross_entropy (std::max's NaN order).
template <typename T> __device__ __forceinline__ T aotc_logaddexp2(T a, T b) {
  if (aotc_isinf(a) && a == b) return a;
  T m = a < b ? b : a;
  return m + aotc_log1p(aotc_exp2(-aotc_abs(a - b))) * T(1.44269504088896340736);
}
template <typename T> __device__ __forceinline__ T aotc_bce(T x, T t) {
  T l1 = aotc_log1p(-x), l0 = aotc_log(x);
  l1 = l1 < T(-100) ? T(-100) : l1;
  l0 = l0 < T(-100) ? T(-100) : l0;
  return (t - T(1)) * l1 - t * l0;
}
// Note [Index errors]: an index outside its dim (after Python's wrap of
// negatives) is an error in eager; a kernel cannot raise, so it records the
// first failing step's tag (its last argument, aotc_step) in
// aotc_index_error (a module global; the emulator's library keeps one per
// host thread) and uses index 0 so no memory outside the tensor is touched.
// A GPU runtime reads the flags when it synchronizes, never after a launch;
// the tag names the step, so the error still names the kernel and its nodes.
#ifdef AOTC_EMULATE
extern "C" thread_local int aotc_index_error;
#else
__device__ int aotc_index_error;
#endif
__device__ __forceinline__ aotc_i64 aotc_checked_index_at(aotc_i64 k, aotc_i64 size, long long step) {
  aotc_i64 w = k < 0 ? k + size : k;
  if (w < 0 || w >= size) {
#ifdef AOTC_EMULATE
    if (aotc_index_error == 0) aotc_index_error = (int)step;
#else
    atomicCAS(&aotc_index_error, 0, (int)step);
#endif
    return 0;
  }
  return w;
}
#define aotc_checked_index(k, size) aotc_checked_index_at((k), (size), aotc_step)
// maximum/minimum propagate NaN, as ATen's do.
template <typename T> __device__ __forceinline__ T aotc_max(T a, T b) { return (a != a || a > b) ? a : b; }
template <typename T> __device__ __forceinline__ T aotc_min(T a, T b) { return (a != a || a < b) ? a : b; }
template <typename T> __device__ __forceinline__ T aotc_mul(T a, T b) { return a * b; }
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
