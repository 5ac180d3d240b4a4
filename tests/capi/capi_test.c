/* The C API (include/switchyard/c_api.h) from a C99 program: a loaded model and a graph built
 * through sy_builder_op (and one with a variable and a control dependency), compiled with
 * options, run and checked against a plain C reference;
 * explain, .syx and ONNX save/load; error paths with their status and message; everything
 * freed (run under valgrind to check leaks). */
#include "switchyard/c_api.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

/* A call that must succeed; on failure prints the library's message. */
#define OK(call)                                                                                   \
  do {                                                                                             \
    sy_status status_ = (call);                                                                    \
    if (status_ != SY_OK) {                                                                        \
      fprintf(stderr, "%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call, sy_status_name(status_), \
              sy_last_error_message());                                                            \
      ++failures;                                                                                  \
      return;                                                                                      \
    }                                                                                              \
  } while (0)

/* Seeded values in [-1, 1), none exactly zero. */
static void fill_random(float* data, size_t n, uint32_t seed) {
  uint32_t state = seed * 2654435761u + 1u;
  for (size_t i = 0; i < n; ++i) {
    state = state * 1664525u + 1013904223u;
    data[i] = ((float)(state >> 8) / (float)(1u << 24)) * 2.0f - 0.999f;
  }
}

static int contains(const char* text, const char* part) { return strstr(text, part) != NULL; }

static void test_loaded_model(void) {
  const char* path = "/usr/share/libonnx-testdata/data/node/test_add/model.onnx";
  if (access(path, R_OK) != 0) {
    printf("skipping the loaded model: %s is not installed\n", path);
    return;
  }
  sy_model* model = NULL;
  sy_executable* exe = NULL;
  OK(sy_model_load(path, &model));
  const char* options[] = {"device=cpu", "num_threads=1"};
  OK(sy_model_compile(model, options, 2, &exe));
  sy_model_free(model);

  float x[60], y[60];
  fill_random(x, 60, 1);
  fill_random(y, 60, 2);
  int64_t shape[] = {3, 4, 5};
  sy_tensor inputs[2] = {{SY_DTYPE_FLOAT32, 3, shape, x, NULL, NULL},
                         {SY_DTYPE_FLOAT32, 3, shape, y, NULL, NULL}};
  const char* names[] = {"x", "y"};
  sy_tensor* outputs = NULL;
  size_t n_outputs = 0;
  OK(sy_executable_run(exe, names, inputs, 2, &outputs, &n_outputs));
  CHECK(n_outputs == 1);
  CHECK(outputs[0].dtype == SY_DTYPE_FLOAT32 && outputs[0].rank == 3);
  const float* sum = (const float*)outputs[0].data;
  for (size_t i = 0; i < 60; ++i) CHECK(sum[i] == x[i] + y[i]);
  sy_tensor_free(outputs, n_outputs);
  sy_executable_free(exe);
}

/* y = relu(x @ w) for x [batch, 4], w [4, 3]. */
static sy_status build_matmul_relu(const float* w, sy_model** model) {
  sy_builder* b = NULL;
  sy_status s = sy_builder_new("mlp", &b);
  if (s != SY_OK) return s;
  int64_t dims[] = {-1, 4};
  const char* symbols[] = {"batch", NULL};
  int64_t w_shape[] = {4, 3};
  sy_tensor w_tensor = {SY_DTYPE_FLOAT32, 2, w_shape, (void*)w, NULL, NULL};
  sy_value x, wv, mm, y;
  const char* out_names[] = {"y"};
  if ((s = sy_builder_placeholder(b, "x", SY_DTYPE_FLOAT32, dims, symbols, 2, &x)) != SY_OK ||
      (s = sy_builder_constant(b, "w", &w_tensor, &wv)) != SY_OK)
    goto done;
  {
    sy_value mm_inputs[] = {x, wv};
    if ((s = sy_builder_op(b, "MatMul", NULL, mm_inputs, 2, NULL, 0, 1, &mm)) != SY_OK ||
        (s = sy_builder_op(b, "Relu", "", &mm, 1, NULL, 0, 1, &y)) != SY_OK ||
        (s = sy_builder_outputs(b, out_names, &y, 1)) != SY_OK)
      goto done;
  }
  s = sy_builder_build(b, model);
done:
  sy_builder_free(b);
  return s;
}

static void reference_matmul_relu(const float* x, const float* w, int64_t batch, float* y) {
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      float acc = 0.0f;
      for (int64_t k = 0; k < 4; ++k) acc += x[i * 4 + k] * w[k * 3 + j];
      y[i * 3 + j] = acc > 0.0f ? acc : 0.0f;
    }
}

static void expect_matches_reference(const sy_executable* exe, const float* w) {
  float x[5 * 4], expected[5 * 3];
  fill_random(x, 20, 7);
  reference_matmul_relu(x, w, 5, expected);
  int64_t shape[] = {5, 4};
  sy_tensor input = {SY_DTYPE_FLOAT32, 2, shape, x, NULL, NULL};
  const char* names[] = {"x"};
  sy_tensor* outputs = NULL;
  size_t n_outputs = 0;
  OK(sy_executable_run(exe, names, &input, 1, &outputs, &n_outputs));
  CHECK(n_outputs == 1);
  CHECK(strcmp(outputs[0].name, "y") == 0);
  CHECK(outputs[0].rank == 2 && outputs[0].shape[0] == 5 && outputs[0].shape[1] == 3);
  const float* y = (const float*)outputs[0].data;
  int positives = 0;
  for (size_t i = 0; i < 15; ++i) {
    CHECK(fabsf(y[i] - expected[i]) <= 1e-5f * (1.0f + fabsf(expected[i])));
    positives += expected[i] > 0.0f;
  }
  CHECK(positives > 0 && positives < 15); /* relu clipped some, kept some */
  sy_tensor_free(outputs, n_outputs);
}

static void test_built_graph(const char* folder) {
  float w[12];
  fill_random(w, 12, 3);
  sy_model* model = NULL;
  OK(build_matmul_relu(w, &model));

  char onnx_path[512], syx_path[512];
  snprintf(onnx_path, sizeof onnx_path, "%s/built.onnx", folder);
  snprintf(syx_path, sizeof syx_path, "%s/built.syx", folder);
  OK(sy_model_save_onnx(model, onnx_path));

  sy_executable* exe = NULL;
  const char* options[] = {"device=cpu",          "num_threads=2", "fallback=allow",
                           "precision=fp32",      "sim_devices=1", "pin=op:Relu=cpu",
                           "memory_limit=cpu=64M"};
  OK(sy_model_compile(model, options, 7, &exe));
  sy_model_free(model);
  expect_matches_reference(exe, w);

  char* text = NULL;
  OK(sy_executable_explain(exe, "text", &text));
  CHECK(contains(text, "cpu"));
  sy_string_free(text);
  text = NULL;
  OK(sy_executable_explain(exe, "json", &text));
  CHECK(text[0] == '{');
  sy_string_free(text);

  OK(sy_executable_save(exe, syx_path));
  sy_executable_free(exe);
  exe = NULL;
  const char* load_options[] = {"num_threads=1"};
  OK(sy_executable_load(syx_path, load_options, 1, &exe));
  expect_matches_reference(exe, w);
  sy_executable_free(exe);

  /* The ONNX file saved before compiling loads and runs the same. */
  exe = NULL;
  model = NULL;
  OK(sy_model_load(onnx_path, &model));
  OK(sy_model_compile(model, NULL, 0, &exe));
  sy_model_free(model);
  expect_matches_reference(exe, w);
  sy_executable_free(exe);
  remove(onnx_path);
  remove(syx_path);
}

/* acc += x through an assign, y = relu(x) ordered after it; the variable read, written, saved
 * and loaded through the C API, against a plain C reference. */
static void test_state(const char* folder) {
  sy_builder* b = NULL;
  OK(sy_builder_new("state", &b));
  int64_t three[] = {3};
  float initial[3] = {1.0f, -2.0f, 0.5f};
  sy_tensor init = {SY_DTYPE_FLOAT32, 1, three, initial, NULL, NULL};
  sy_value x, acc, sum, assigned, y, ordered;
  OK(sy_builder_placeholder(b, "x", SY_DTYPE_FLOAT32, three, NULL, 1, &x));
  OK(sy_builder_variable(b, "acc", &init, &acc));
  sy_value add_in[] = {acc, x};
  OK(sy_builder_op(b, "Add", NULL, add_in, 2, NULL, 0, 1, &sum));
  OK(sy_builder_assign(b, acc, sum, &assigned));
  OK(sy_builder_op(b, "Relu", NULL, &x, 1, NULL, 0, 1, &y));
  OK(sy_builder_control_dependency(b, &y, 1, &assigned, 1, &ordered));
  CHECK(sy_builder_assign(b, x, sum, NULL) == SY_INVALID_ARGUMENT); /* x is no variable */
  CHECK(contains(sy_last_error_message(), "'x' is not a variable"));
  const char* names[] = {"y"};
  OK(sy_builder_outputs(b, names, &ordered, 1));
  sy_model* model = NULL;
  OK(sy_builder_build(b, &model));
  sy_builder_free(b);
  sy_executable* exe = NULL;
  const char* options[] = {"sim_devices=1", "device=sim:0", "pin=*=sim:0"};
  OK(sy_model_compile(model, options, 3, &exe));
  sy_model_free(model);

  float xv[3], expected[3];
  fill_random(xv, 3, 11);
  for (int i = 0; i < 3; ++i) expected[i] = initial[i];
  const char* in_names[] = {"x"};
  sy_tensor in = {SY_DTYPE_FLOAT32, 1, three, xv, NULL, NULL};
  for (int run = 0; run < 2; ++run) {
    sy_tensor* outputs = NULL;
    size_t n_outputs = 0;
    OK(sy_executable_run(exe, in_names, &in, 1, &outputs, &n_outputs));
    CHECK(n_outputs == 1); /* the assign is no output */
    for (int i = 0; i < 3; ++i)
      CHECK(((const float*)outputs[0].data)[i] == (xv[i] > 0 ? xv[i] : 0.0f));
    sy_tensor_free(outputs, n_outputs);
    for (int i = 0; i < 3; ++i) expected[i] += xv[i];
  }
  sy_tensor* value = NULL;
  OK(sy_executable_variable(exe, "acc", &value));
  CHECK(value->rank == 1 && value->shape[0] == 3 && strcmp(value->name, "acc") == 0);
  for (int i = 0; i < 3; ++i) CHECK(fabsf(((const float*)value->data)[i] - expected[i]) < 1e-6f);
  sy_tensor_free(value, 1);

  float reset[3] = {10.0f, 20.0f, 30.0f};
  sy_tensor fresh = {SY_DTYPE_FLOAT32, 1, three, reset, NULL, NULL};
  OK(sy_executable_set_variable(exe, "acc", &fresh));
  char syx_path[512];
  snprintf(syx_path, sizeof syx_path, "%s/state.syx", folder);
  OK(sy_executable_save(exe, syx_path));
  sy_executable_free(exe);
  exe = NULL;
  const char* load_options[] = {"sim_devices=1"};
  OK(sy_executable_load(syx_path, load_options, 1, &exe));
  value = NULL;
  OK(sy_executable_variable(exe, "acc", &value));
  for (int i = 0; i < 3; ++i) CHECK(((const float*)value->data)[i] == reset[i]);
  sy_tensor_free(value, 1);

  value = NULL;
  CHECK(sy_executable_variable(exe, "nope", &value) == SY_INVALID_ARGUMENT);
  CHECK(contains(sy_last_error_message(), "'nope'") && value == NULL);
  int64_t two[] = {2};
  sy_tensor wrong = {SY_DTYPE_FLOAT32, 1, two, reset, NULL, NULL};
  CHECK(sy_executable_set_variable(exe, "acc", &wrong) == SY_INVALID_ARGUMENT);
  CHECK(contains(sy_last_error_message(), "acc"));
  sy_executable_free(exe);
  remove(syx_path);
}

static void test_errors(void) {
  float w[12];
  fill_random(w, 12, 4);
  sy_model* model = NULL;
  sy_executable* exe = NULL;
  OK(build_matmul_relu(w, &model));

  const char* bad[] = {"device=cpu", "no_such_option=1"};
  CHECK(sy_model_compile(model, bad, 2, &exe) == SY_INVALID_ARGUMENT);
  CHECK(contains(sy_last_error_message(), "no_such_option"));
  CHECK(exe == NULL);
  const char* bad_int[] = {"num_threads=two"};
  CHECK(sy_model_compile(model, bad_int, 1, &exe) == SY_INVALID_ARGUMENT);
  CHECK(contains(sy_last_error_message(), "num_threads"));

  CHECK(sy_model_save_onnx(model, "/nonexistent-folder-of-switchyard/m.onnx") ==
        SY_INVALID_ARGUMENT);
  CHECK(contains(sy_last_error_message(), "/nonexistent-folder-of-switchyard/m.onnx"));

  OK(sy_model_compile(model, NULL, 0, &exe));
  CHECK(sy_model_compile(model, NULL, 0, &exe) == SY_INVALID_ARGUMENT); /* consumed */
  sy_model_free(model);

  sy_tensor* outputs = NULL;
  size_t n_outputs = 0;
  CHECK(sy_executable_run(exe, NULL, NULL, 0, &outputs, &n_outputs) == SY_INVALID_ARGUMENT);
  CHECK(contains(sy_last_error_message(), "'x'"));
  CHECK(outputs == NULL && n_outputs == 0);

  int32_t ints[8] = {0};
  int64_t shape[] = {2, 4};
  sy_tensor wrong = {SY_DTYPE_INT32, 2, shape, ints, NULL, NULL};
  const char* names[] = {"x"};
  CHECK(sy_executable_run(exe, names, &wrong, 1, &outputs, &n_outputs) == SY_INVALID_ARGUMENT);
  CHECK(contains(sy_last_error_message(), "x"));
  CHECK(outputs == NULL);

  char* text = NULL;
  CHECK(sy_executable_explain(exe, "pdf", &text) != SY_OK);
  CHECK(text == NULL);
  sy_executable_free(exe);

  CHECK(sy_model_load("/nonexistent-folder-of-switchyard/m.onnx", &model) == SY_INVALID_ARGUMENT);
  CHECK(contains(sy_last_error_message(), "/nonexistent-folder-of-switchyard/m.onnx"));

  /* A bad op is refused as it is added, naming the op. */
  sy_builder* b = NULL;
  OK(sy_builder_new(NULL, &b));
  int64_t dims[] = {2, 3};
  sy_value x, y;
  OK(sy_builder_placeholder(b, "x", SY_DTYPE_FLOAT32, dims, NULL, 2, &x));
  sy_value mm_inputs[] = {x, x};
  CHECK(sy_builder_op(b, "MatMul", NULL, mm_inputs, 2, NULL, 0, 1, &y) == SY_INVALID_ARGUMENT);
  CHECK(contains(sy_last_error_message(), "MatMul"));
  CHECK(sy_builder_op(b, "Relu", "com.example", &x, 1, NULL, 0, 1, &y) == SY_UNSUPPORTED);
  CHECK(contains(sy_last_error_message(), "com.example"));
  sy_attribute axis = {"axis", SY_ATTR_INT, 1, 0.0f, NULL, NULL, NULL, 0};
  OK(sy_builder_op(b, "Softmax", NULL, &x, 1, &axis, 1, 1, &y));
  CHECK(sy_builder_op(b, "Relu", NULL, &(sy_value){99}, 1, NULL, 0, 1, &y) == SY_INVALID_ARGUMENT);
  CHECK(sy_builder_build(b, &model) == SY_INVALID_ARGUMENT); /* no outputs */
  CHECK(sy_builder_op(b, "Relu", NULL, &x, 1, NULL, 0, 1, &y) == SY_INVALID_ARGUMENT);
  sy_builder_free(b);

  CHECK(strcmp(sy_status_name(SY_DEVICE_MISMATCH), "DeviceMismatch") == 0);
}

int main(void) {
  char folder[] = "/tmp/sy_capi_XXXXXX";
  if (mkdtemp(folder) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  test_loaded_model();
  test_built_graph(folder);
  test_state(folder);
  test_errors();
  rmdir(folder);
  if (failures > 0) {
    fprintf(stderr, "capi_test: %d checks failed\n", failures);
    return 1;
  }
  printf("capi_test: all checks passed\n");
  return 0;
}
