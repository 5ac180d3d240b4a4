/* switchyard/c_api.h — the C API: load or build a model, compile it, run it (C99 and C++).
 *
 *   sy_model* model = NULL;
 *   sy_executable* exe = NULL;
 *   const char* options[] = {"device=cpu", "num_threads=2"};
 *   if (sy_model_load("model.onnx", &model) != SY_OK ||
 *       sy_model_compile(model, options, 2, &exe) != SY_OK)
 *     fprintf(stderr, "%s\n", sy_last_error_message());
 *
 * Every function returns an sy_status; on failure it sets the calling thread's last error
 * message (sy_last_error_message) and leaves its out-parameters untouched. No C++ exception
 * leaves these functions.
 *
 * Ownership: handles (sy_model, sy_executable, sy_builder) are made by the library and freed
 * with their *_free function (NULL is accepted). Tensors passed in are the caller's: the
 * library reads them during the call (sy_builder_constant copies). Tensors, strings returned are
 * the library's: free them with sy_tensor_free / sy_string_free.
 *
 * Thread safety, as the C++ API's: one sy_executable may be run from several threads at once;
 * a builder or a model is used by one thread at a time. The last error message is per thread.
 */
#ifndef SWITCHYARD_C_API_H_
#define SWITCHYARD_C_API_H_

#include <stddef.h>
#include <stdint.h>

#include "switchyard/export.hpp"

#ifdef __cplusplus
extern "C" {
#endif

/** The outcome of a call: SY_OK or one of switchyard::ErrorCode's kinds. */
typedef enum sy_status {
  SY_OK = 0,
  SY_INVALID_MODEL = 1,    /**< the model file or graph is malformed */
  SY_UNSUPPORTED = 2,      /**< a valid construct this build cannot run */
  SY_PLACEMENT_FAILED = 3, /**< placement could not satisfy the policy */
  SY_INVALID_ARGUMENT = 4, /**< a caller-supplied value is wrong (input, option, path) */
  SY_OUT_OF_MEMORY = 5,    /**< an allocation failed, or a run passed a memory limit */
  SY_DEVICE_LOST = 6,      /**< a device reported a sticky fault */
  SY_INTERNAL = 7,         /**< a bug of the library's */
  SY_CANCELLED = 8,        /**< a run was cancelled or passed its deadline */
  SY_DEVICE_MISMATCH = 9   /**< a saved executable's devices are not all present */
} sy_status;

/** Element types; the values are ONNX TensorProto.DataType's (switchyard::DType). */
typedef enum sy_dtype {
  SY_DTYPE_UNDEFINED = 0,
  SY_DTYPE_FLOAT32 = 1,
  SY_DTYPE_UINT8 = 2,
  SY_DTYPE_INT8 = 3,
  SY_DTYPE_UINT16 = 4,
  SY_DTYPE_INT16 = 5,
  SY_DTYPE_INT32 = 6,
  SY_DTYPE_INT64 = 7,
  SY_DTYPE_BOOL = 9,
  SY_DTYPE_FLOAT16 = 10,
  SY_DTYPE_FLOAT64 = 11,
  SY_DTYPE_UINT32 = 12,
  SY_DTYPE_UINT64 = 13,
  SY_DTYPE_BFLOAT16 = 16
} sy_dtype;

/** A model loaded or built, before compilation. */
typedef struct sy_model sy_model;
/** A compiled model. */
typedef struct sy_executable sy_executable;
/** A graph being built. */
typedef struct sy_builder sy_builder;
/** A value of a builder's graph (an index into it); SY_NO_VALUE is an omitted optional input. */
typedef int64_t sy_value;
#define SY_NO_VALUE ((sy_value)-1)

/** A dense, row-major host tensor. Passed in: the caller's memory, read during the call (`name`
 *  and `owner_` are ignored). Returned by sy_executable_run: the library's, with `name` the
 *  output's name, valid until sy_tensor_free. String tensors are not supported. */
typedef struct sy_tensor {
  sy_dtype dtype;
  size_t rank;
  const int64_t* shape; /**< `rank` dims */
  void* data;           /**< product(shape) elements of `dtype` */
  const char* name;
  void* owner_; /**< the library's (NULL in tensors the caller makes) */
} sy_tensor;

/** An op attribute's kind. */
typedef enum sy_attribute_kind {
  SY_ATTR_INT = 0,
  SY_ATTR_FLOAT = 1,
  SY_ATTR_STRING = 2,
  SY_ATTR_INTS = 3,
  SY_ATTR_FLOATS = 4
} sy_attribute_kind;

/** One op attribute, tagged by `kind`: `i`, `f`, `s`, or `count` elements of `ints`/`floats`. */
typedef struct sy_attribute {
  const char* name;
  sy_attribute_kind kind;
  int64_t i;
  float f;
  const char* s;
  const int64_t* ints;
  const float* floats;
  size_t count;
} sy_attribute;

/** The calling thread's last error message ("<Code>: <message>"), "" when no call failed. Valid
 *  until this thread's next failing call. */
SWITCHYARD_API const char* sy_last_error_message(void);
/** The status's name: "OK", "InvalidModel", ... */
SWITCHYARD_API const char* sy_status_name(sy_status status);

/** Loads an ONNX file into *model. */
SWITCHYARD_API sy_status sy_model_load(const char* path, sy_model** model);
/** Writes the model's graph as an ONNX file (atomically); the model stays usable. */
SWITCHYARD_API sy_status sy_model_save_onnx(const sy_model* model, const char* path);
/** Compiles the model into *exe. `options` are `n_options` "key=value" strings mapping onto
 *  switchyard::Options: device, compute_units, fallback, precision, split, sim_config,
 *  cache_dir (strings); num_threads, sim_devices, min_partition_nodes, shape_cache_capacity,
 *  cache_max_bytes, max_in_flight (integers); optimize, fusion, cuda_graphs, allow_relower
 *  (0/1, true/false); pin and memory_limit (repeatable: "pin=op:MatMul=sim:0"). An unknown key
 *  or a bad value is SY_INVALID_ARGUMENT naming it. The model is consumed (free it with
 *  sy_model_free after). */
SWITCHYARD_API sy_status sy_model_compile(sy_model* model, const char* const* options,
                                          size_t n_options, sy_executable** exe);
SWITCHYARD_API void sy_model_free(sy_model* model);

/** Runs with `n_inputs` tensors named by `names`; *outputs gets an array of *n_outputs tensors
 *  in graph-output order (free with sy_tensor_free(*outputs, *n_outputs)). */
SWITCHYARD_API sy_status sy_executable_run(const sy_executable* exe, const char* const* names,
                                           const sy_tensor* inputs, size_t n_inputs,
                                           sy_tensor** outputs, size_t* n_outputs);
/** A copy of variable `name`'s current value (Executable::variable) into *value: one tensor,
 *  freed with sy_tensor_free(*value, 1). SY_INVALID_ARGUMENT naming an unknown variable. */
SWITCHYARD_API sy_status sy_executable_variable(const sy_executable* exe, const char* name,
                                                sy_tensor** value);
/** Replaces variable `name`'s value by a copy of `value` (Executable::set_variable: after any
 *  run that assigns variables; SY_INVALID_ARGUMENT naming the variable when unknown or when the
 *  dtype or shape differ). */
SWITCHYARD_API sy_status sy_executable_set_variable(const sy_executable* exe, const char* name,
                                                    const sy_tensor* value);
/** The placement report as "text", "json", "dot" or "html" (NULL: text) into *text (free with
 *  sy_string_free). */
SWITCHYARD_API sy_status sy_executable_explain(const sy_executable* exe, const char* format,
                                               char** text);
/** Writes the executable to `path` (.syx), atomically. */
SWITCHYARD_API sy_status sy_executable_save(const sy_executable* exe, const char* path);
/** Loads a saved executable; `options` as sy_model_compile's (this process's fields only). */
SWITCHYARD_API sy_status sy_executable_load(const char* path, const char* const* options,
                                            size_t n_options, sy_executable** exe);
SWITCHYARD_API void sy_executable_free(sy_executable* exe);

/** Frees an array of `count` tensors returned by sy_executable_run. */
SWITCHYARD_API void sy_tensor_free(sy_tensor* tensors, size_t count);
/** Frees a string returned by the library. */
SWITCHYARD_API void sy_string_free(char* text);

/** A builder of a graph named `graph_name` (NULL: "main") into *builder. */
SWITCHYARD_API sy_status sy_builder_new(const char* graph_name, sy_builder** builder);
/** A graph input of `rank` dims: dim i is symbols[i] when `symbols` and symbols[i] are non-NULL,
 *  else dims[i] (negative: unknown). */
SWITCHYARD_API sy_status sy_builder_placeholder(sy_builder* b, const char* name, sy_dtype dtype,
                                                const int64_t* dims, const char* const* symbols,
                                                size_t rank, sy_value* value);
/** A constant holding a copy of `tensor`; `name` may be NULL (one is picked). */
SWITCHYARD_API sy_status sy_builder_constant(sy_builder* b, const char* name,
                                             const sy_tensor* tensor, sy_value* value);
/** One node of ONNX op `op_type` (latest opset; `domain` NULL, "" or "ai.onnx") reading
 *  `inputs` (SY_NO_VALUE for an omitted optional input); writes its `n_outputs` values to
 *  `outputs`. The op is checked as it is added (SY_INVALID_ARGUMENT naming it). */
SWITCHYARD_API sy_status sy_builder_op(sy_builder* b, const char* op_type, const char* domain,
                                       const sy_value* inputs, size_t n_inputs,
                                       const sy_attribute* attrs, size_t n_attrs, size_t n_outputs,
                                       sy_value* outputs);
/** A variable (GraphBuilder::variable) starting at a copy of `initial`: state that persists
 *  across runs; *value is its value as a run reads it. */
SWITCHYARD_API sy_status sy_builder_variable(sy_builder* b, const char* name,
                                             const sy_tensor* initial, sy_value* value);
/** Assigns `value` to `variable` (a value sy_builder_variable made) when a run succeeds
 *  (GraphBuilder::assign); *assigned (may be NULL) gets the assign's value, to order after. */
SWITCHYARD_API sy_status sy_builder_assign(sy_builder* b, sy_value variable, sy_value value,
                                           sy_value* assigned);
/** Orders each of `dependents` after every value of `on` without moving data
 *  (GraphBuilder::control_dependency): outputs[i] is dependents[i] passed through an ordering
 *  node; use it instead. */
SWITCHYARD_API sy_status sy_builder_control_dependency(sy_builder* b, const sy_value* dependents,
                                                       size_t n_dependents, const sy_value* on,
                                                       size_t n_on, sy_value* outputs);
/** Names the graph outputs, in order. */
SWITCHYARD_API sy_status sy_builder_outputs(sy_builder* b, const char* const* names,
                                            const sy_value* values, size_t n);
/** The finished graph as *model. The builder is consumed, even when this fails (only
 *  sy_builder_free is left). */
SWITCHYARD_API sy_status sy_builder_build(sy_builder* b, sy_model** model);
SWITCHYARD_API void sy_builder_free(sy_builder* b);

#ifdef __cplusplus
}
#endif

#endif /* SWITCHYARD_C_API_H_ */
