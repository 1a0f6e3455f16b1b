/*===- aotc/runtime/c_api.h - The aotc deployment runtime, C ABI -----------===*
 *
 * For FFI from any language.  Link with aotc::runtime (CMake package
 * aotc_runtime).  Every function returning int returns 0 on success and
 * non-zero on error; the error's one-line message is aotc_error(rt) (for
 * aotc_open: written into `err`).  Tensors are device pointers (host pointers
 * on the emulate device) with shapes and strides in elements.
 *
 *   aotc_runtime* rt;  char err[512];
 *   if (aotc_open("art", "auto", &rt, err, sizeof err)) { puts(err); return 1; }
 *   aotc_bind(rt, "x", &x);  aotc_forward(rt);  aotc_output(rt, 0, &y);
 *   aotc_bind_grad_output(rt, 0, &gy);  aotc_backward(rt);  aotc_grad(rt, "fc.weight", &gw);
 *   aotc_close(rt);
 *
 * Streams (Note [Prepared plan]): by default aotc_forward and aotc_backward
 * return when their results are ready (they run on a stream of the
 * runtime's own).  After aotc_set_stream(rt, s) they enqueue their work
 * after what is already on the caller's stream s, make s wait for it, and
 * return at once; aotc_synchronize(rt) waits for it (and reports an index
 * error of any step since, naming the step, kernel and nodes).  Every call
 * that hands data to the host (aotc_copy_to_host) is ordered after the
 * runtime's work.  The first forward and backward prepare their phases
 * (arenas, library descriptors and algorithms, CUDA graph capture); later
 * ones only enqueue, unless a dynamic-shape binding changes the sizes.
 *
 * Misuse (Note [C ABI misuse], c_api.cpp): no call sequence or argument
 * aborts the caller's process.  A call out of order (aotc_output before
 * aotc_forward or after a later aotc_bind, aotc_grad before aotc_backward,
 * aotc_backward before aotc_forward), a NULL argument, an unknown name or
 * index, a binding outside a dynamic dim's range, aotc_free of a pointer
 * that is not a live aotc_alloc allocation of this runtime (NULL included),
 * a bind or copy running past the end of an aotc_alloc allocation, and a
 * forward with an input whose memory was freed (aotc_free forgets the
 * bindings inside what it frees) each return non-zero with a one-line
 * aotc_error(rt) naming the function; the runtime's state is unchanged.  With rt NULL every
 * int function returns 2, aotc_error(NULL) is a fixed line, and the size_t /
 * pointer functions return 0 / NULL ("" for aotc_device_name).  aotc_close(NULL)
 * does nothing; aotc_close frees the handle, so a handle used after it
 * (a second aotc_close included) is undefined behaviour, as with free() --
 * the runtime keeps no registry of live handles to detect it.  Memory the
 * runtime did not allocate (the caller's own device or host pointers) is
 * trusted: it must hold the tensor's extent.
 *
 * Threads: one aotc_runtime is used by one thread at a time, any thread
 * (its device's context is made current on each call).  Distinct runtimes,
 * of one artifact or several, on one device or several, may be used from
 * distinct threads at the same time.
 *===----------------------------------------------------------------------===*/
#ifndef AOTC_RUNTIME_C_API_H
#define AOTC_RUNTIME_C_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AOTC_C_API_VERSION 3  /* 2: aotc_set_stream, aotc_synchronize, aotc_set_graphs, "cuda:<n>"; 3: aotc_loss_scale */
#define AOTC_MAX_DIMS 16

typedef enum aotc_dtype {
  AOTC_F32 = 0,
  AOTC_F64 = 1,
  AOTC_F16 = 2,
  AOTC_BF16 = 3,
  AOTC_I64 = 4,
  AOTC_I32 = 5,
  AOTC_BOOL = 6,
  AOTC_I8 = 7,
  AOTC_I16 = 8,
  AOTC_U8 = 9,
  AOTC_U16 = 10,
  AOTC_U32 = 11,
  AOTC_U64 = 12
} aotc_dtype;

/** A tensor the caller gives: data is the tensor's first element. */
typedef struct aotc_tensor {
  void* data;
  aotc_dtype dtype;
  int32_t ndim;
  const int64_t* shape;
  const int64_t* strides; /* NULL: contiguous */
} aotc_tensor;

/** A tensor the runtime returns: data is the root pointer, offset in elements. */
typedef struct aotc_tensor_view {
  void* data;
  aotc_dtype dtype;
  int32_t ndim;
  int64_t shape[AOTC_MAX_DIMS];
  int64_t strides[AOTC_MAX_DIMS];
  int64_t offset;
} aotc_tensor_view;

typedef struct aotc_runtime aotc_runtime;

/** device: "cuda" (GPU 0), "cuda:<n>" (GPU n), "emulate" or "auto" (cuda when a GPU is usable, else emulate). */
int aotc_open(const char* artifact_dir, const char* device, aotc_runtime** out, char* err, size_t err_len);
void aotc_close(aotc_runtime* rt);
const char* aotc_error(const aotc_runtime* rt);
const char* aotc_device_name(const aotc_runtime* rt);

size_t aotc_num_inputs(const aotc_runtime* rt);
const char* aotc_input_name(const aotc_runtime* rt, size_t i);
size_t aotc_num_outputs(const aotc_runtime* rt);

/** Binds an input by signature name; checked against the manifest (dtype, shape, strides, alignment).
 *  Parameters, buffers and constants not bound come from the artifact's weights.  A dynamic-shape
 *  artifact (manifest version 11) takes any size its symbols' ranges and guards allow: a tensor of a
 *  new size rebinds the symbols (the inputs bound before must agree with it, and a size outside a
 *  range or guard is refused naming the input and dim); outputs and grads then have that size. */
int aotc_bind(aotc_runtime* rt, const char* name, const aotc_tensor* t);
/** Binds grad_output.<index>; a grad output not bound is zero. */
int aotc_bind_grad_output(aotc_runtime* rt, size_t index, const aotc_tensor* t);
/** Sets a one-element input (f32, f64, i32, i64) to `value`: an --optimizer artifact's learning rate
 *  "optim.lr" (or "optim.param_group.<i>.lr"), "optim.momentum" or "optim.beta1" between training steps.  Enqueued in order with the
 *  runtime's work (no synchronization, no new CUDA graph capture); on a bound input it writes the
 *  caller's tensor. */
int aotc_set_scalar(aotc_runtime* rt, const char* name, double value);
int aotc_forward(aotc_runtime* rt);
int aotc_backward(aotc_runtime* rt);
/** A whole training step of an artifact whose one differentiable output is a scalar loss: forward,
 *  backward with the loss's gradient seeded with 1 (a grad output bound before is replaced), and the
 *  optimizer's update when it was compiled with --optimizer; under CUDA graphs one graph launch. */
int aotc_train_step(aotc_runtime* rt);
/** The caller's stream (a CUstream / cudaStream_t; CU_STREAM_LEGACY, (void*)1, is the legacy default
 *  stream) for every later forward and backward: they enqueue and return.  NULL: the runtime's own
 *  stream, and forward and backward return when done (the default).  Ignored on the emulate device. */
int aotc_set_stream(aotc_runtime* rt, void* stream);
/** Waits for the runtime's work; non-zero if a step since the last wait met an index outside its dim. */
int aotc_synchronize(aotc_runtime* rt);
/** CUDA graphs (default on): each phase is captured once per size binding and replayed as one launch.
 *  0 turns them off (every step is enqueued each run).  AOTC_CUDA_GRAPHS=0 in the environment does too;
 *  AOTC_SYNC_STEPS=1 synchronizes and checks after every step (debugging, like CUDA_LAUNCH_BLOCKING).
 *  Convolution algorithms: cuDNN's heuristic, deterministic ones only unless AOTC_CUDNN_NONDETERMINISTIC=1;
 *  AOTC_CUDNN_BENCHMARK=1 times the candidates once per problem, AOTC_CUDNN_CACHE=FILE keeps the choices. */
int aotc_set_graphs(aotc_runtime* rt, int enabled);
/** Output <index>: a view into the runtime's memory (valid until the next run), or of the caller's input it aliases. */
int aotc_output(aotc_runtime* rt, size_t index, aotc_tensor_view* out);
int aotc_grad(aotc_runtime* rt, const char* input, aotc_tensor_view* out);
/** The caller's input as it is now (mutations applied, metadata changed by the forward). */
int aotc_input(aotc_runtime* rt, const char* name, aotc_tensor_view* out);

/** Loss scaling (an artifact compiled with --precision fp16 for training, or --loss-scaling dynamic; see
 *  aotc_loss_scaling): the backward scales the incoming gradient, unscales every gradient and updates the
 *  scale on the device, as torch.cuda.amp.GradScaler does, with no host synchronization.  The state lives in
 *  the inputs "aotc.loss_scale", "aotc.growth_tracker" and "aotc.found_inf" (the runtime's own from the
 *  artifact's initial values unless bound, kept from step to step).  aotc_loss_scale waits for the
 *  runtime's work and reads them: *found_inf = 1 when the last backward's gradients held an inf or NaN
 *  (skip that optimizer step), *scale = the scale the next backward uses.  Either pointer may be NULL.
 *  aotc_loss_scaling returns 1 when the artifact scales its loss, 0 when not (aotc_loss_scale then fails). */
int aotc_loss_scaling(const aotc_runtime* rt);
int aotc_loss_scale(aotc_runtime* rt, float* scale, int* found_inf);

/** Device memory helpers (256-byte aligned, zeroed).  aotc_free takes only a pointer aotc_alloc returned on this
 *  runtime and not yet freed; an input or grad output bound inside it is unbound (a parameter falls back to the
 *  artifact's weight; results already computed stay readable).  Memory not freed is released by aotc_close.
 *  A copy of 0 bytes does nothing. */
int aotc_alloc(aotc_runtime* rt, size_t bytes, void** out);
int aotc_free(aotc_runtime* rt, void* p);
int aotc_copy_to_device(aotc_runtime* rt, void* dst, const void* src, size_t bytes);
int aotc_copy_to_host(aotc_runtime* rt, void* dst, const void* src, size_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* AOTC_RUNTIME_C_API_H */
