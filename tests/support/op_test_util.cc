#include "support/op_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <thread>

#include "backends/cpu/cpu_kernels.h"
#include "ir/check.h"
#include "ops/schema.h"
#include "runtime/graph_program.h"

namespace switchyard::testing {

OpCase make_case(std::string op, std::vector<std::optional<ir::Tensor>> inputs,
                 std::vector<ir::Attribute> attributes, int num_outputs,
                 std::vector<bool> constant_inputs) {
  OpCase c;
  c.op = std::move(op);
  c.inputs = std::move(inputs);
  c.attributes = std::move(attributes);
  c.num_outputs = num_outputs;
  c.constant_inputs = std::move(constant_inputs);
  return c;
}

std::unique_ptr<ir::Graph> build_op_graph(const OpCase& c) {
  auto g = std::make_unique<ir::Graph>("test");
  std::vector<ir::Value*> ins;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (!c.inputs[i]) {
      ins.push_back(nullptr);
      continue;
    }
    const ir::Tensor& t = *c.inputs[i];
    std::string name = "in" + std::to_string(i);
    bool constant = i < c.constant_inputs.size() && c.constant_inputs[i];
    ins.push_back(constant
                      ? g->add_constant(name, t)
                      : g->add_input(name, ir::Type::tensor(t.dtype(), ir::make_shape(t.shape()))));
  }
  std::vector<std::string> outs;
  for (int i = 0; i < c.num_outputs; ++i) outs.push_back("out" + std::to_string(i));
  ir::Node* n = g->add_node(c.op, "node", ins, outs);
  for (const auto& a : c.attributes) n->set_attribute(a);
  for (ir::Value* v : n->outputs()) g->add_output(v);
  ops::infer_types(*g);
  ir::verify(*g);
  return g;
}

std::vector<ir::Datum> run_op(const OpCase& c) {
  auto g = build_op_graph(c);
  runtime::GraphProgram program(*g, cpu::cpu_kernels());
  std::vector<ir::Datum> inputs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    bool constant = i < c.constant_inputs.size() && c.constant_inputs[i];
    if (c.inputs[i] && !constant) inputs.emplace_back(*c.inputs[i]);
  }
  return run_program(program, std::move(inputs));
}

std::vector<ir::Datum> run_program(const runtime::GraphProgram& program,
                                   std::vector<ir::Datum> inputs, int num_threads) {
  runtime::RunState state;
  state.pool = runtime::HostPool::create(/*poison=*/true);
  state.num_threads = num_threads;
  return program.run(std::move(inputs), state);
}

std::vector<std::string> run_concurrently(int num_threads, int runs,
                                          const std::function<std::string(int, int)>& check) {
  std::vector<std::string> failures(static_cast<size_t>(num_threads));
  std::vector<std::thread> threads;
  for (int t = 0; t < num_threads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < runs; ++i) {
        std::string diff = check(t, i);
        if (!diff.empty()) failures[static_cast<size_t>(t)] = diff;
      }
    });
  }
  for (auto& th : threads) th.join();
  return failures;
}

ir::Tensor run_op1(const OpCase& c) {
  auto out = run_op(c);
  SY_ASSERT(!out.empty() && out[0].is_tensor());
  return out[0].tensor;
}

void expect_error_naming_node(const OpCase& c, const std::string& fragment) {
  try {
    run_op(c);
    ADD_FAILURE() << "expected an error containing '" << fragment << "'";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("node 'node'"), std::string::npos) << msg;
    EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
  }
}

bool same_bits(const ir::Tensor& a, const ir::Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

void expect_error(const std::function<void()>& f, ErrorCode code, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "expected an error containing '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

GraphCase::GraphCase(const std::string& graph_name)
    : graph_(std::make_unique<ir::Graph>(graph_name)) {}

GraphCase::~GraphCase() = default;

ir::Value* GraphCase::input(const std::string& name, ir::Type type, ir::Datum value) {
  feeds_.push_back(std::move(value));
  return graph_->add_input(name, std::move(type));
}

ir::Value* GraphCase::tensor(const std::string& name, const ir::Tensor& t) {
  return input(name, ir::Type::tensor(t.dtype(), ir::make_shape(t.shape())), t);
}

void GraphCase::finish(std::vector<ir::Value*> outputs) {
  for (ir::Value* v : outputs) graph_->add_output(v);
  ops::infer_types(*graph_);
  ir::verify(*graph_);
  program_ = std::make_unique<runtime::GraphProgram>(*graph_, cpu::cpu_kernels());
}

std::vector<ir::Datum> GraphCase::run() const { return run_program(*program_, feeds_); }

std::vector<ir::Datum> GraphCase::run(std::vector<ir::Value*> outputs) {
  finish(std::move(outputs));
  return run();
}

ir::Datum GraphCase::run1(ir::Value* output) { return run({output})[0]; }

void GraphCase::set_feed(size_t i, ir::Datum d) { feeds_[i] = std::move(d); }

namespace {
template <typename F>
void for_each_type(ir::DType dtype, F&& f) {
  using namespace ir;
  switch (dtype) {
    // clang-format off
    case DType::Float32: f(float{}); break;
    case DType::Float64: f(double{}); break;
    case DType::Float16: f(Float16{}); break;
    case DType::BFloat16: f(BFloat16{}); break;
    case DType::Int8: f(int8_t{}); break;
    case DType::Int16: f(int16_t{}); break;
    case DType::Int32: f(int32_t{}); break;
    case DType::Int64: f(int64_t{}); break;
    case DType::UInt8: f(uint8_t{}); break;
    case DType::UInt16: f(uint16_t{}); break;
    case DType::UInt32: f(uint32_t{}); break;
    case DType::UInt64: f(uint64_t{}); break;
    case DType::Bool: f(bool{}); break;
    default: SY_THROW(Unsupported, "test helper: dtype {}", dtype_name(dtype));
  }
  // clang-format on
}

template <typename T>
T from_double(double v) {
  if constexpr (std::is_same_v<T, ir::Float16> || std::is_same_v<T, ir::BFloat16>) {
    return T(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else {
    return static_cast<T>(v);
  }
}
}  // namespace

ir::Tensor random_tensor(ir::DType dtype, std::vector<int64_t> shape, uint64_t seed, double lo,
                         double hi) {
  ir::Tensor t(dtype, std::move(shape));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for_each_type(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      double v = dist(rng);
      if constexpr (std::is_same_v<T, bool>) {
        p[i] = (rng() & 1) != 0;
      } else if constexpr (std::is_integral_v<T>) {
        p[i] = static_cast<T>(std::floor(v));
      } else {
        p[i] = from_double<T>(v);
      }
    }
  });
  return t;
}

ir::Tensor random_any(ir::DType dtype, std::vector<int64_t> shape, uint64_t seed) {
  if (dtype != ir::DType::String) return random_tensor(dtype, shape, seed, -50, 50);
  ir::Tensor ints = random_tensor(ir::DType::Int32, shape, seed, 0, 50);
  ir::Tensor t(ir::DType::String, shape);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<std::string>()[i] = "s" + std::to_string(ints.data<int32_t>()[i]);
  return t;
}

ir::Tensor tensor_of(ir::DType dtype, std::vector<int64_t> shape,
                     const std::vector<double>& values) {
  ir::Tensor t(dtype, std::move(shape));
  SY_ASSERT(static_cast<int64_t>(values.size()) == t.numel());
  for_each_type(dtype, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t i = 0; i < t.numel(); ++i)
      t.data<T>()[i] = from_double<T>(values[static_cast<size_t>(i)]);
  });
  return t;
}

ir::Tensor int64_tensor(const std::vector<int64_t>& values) {
  ir::Tensor t(ir::DType::Int64, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) t.data<int64_t>()[i] = values[i];
  return t;
}

ir::Tensor string_tensor(std::vector<int64_t> shape, const std::vector<std::string>& values) {
  ir::Tensor t(ir::DType::String, std::move(shape));
  EXPECT_EQ(static_cast<size_t>(t.numel()), values.size());
  std::copy(values.begin(), values.end(), t.data<std::string>());
  return t;
}

std::vector<std::string> string_values(const ir::Tensor& t) {
  return {t.data<std::string>(), t.data<std::string>() + t.numel()};
}

ir::Tensor int64_scalar(int64_t value) {
  ir::Tensor t(ir::DType::Int64, {});
  t.data<int64_t>()[0] = value;
  return t;
}

ir::Tensor bool_scalar(bool value) {
  ir::Tensor t(ir::DType::Bool, {});
  t.data<bool>()[0] = value;
  return t;
}

ir::Attribute strings_attr(const std::string& name, std::vector<std::string> values) {
  ir::Attribute a;
  a.name = name;
  a.kind = ir::Attribute::Kind::Strings;
  a.strings = std::move(values);
  return a;
}

std::vector<std::string> private_attributes(const ir::Graph& g) {
  std::vector<std::string> found;
  for (const auto& n : g.nodes())
    for (const ir::Attribute& a : n->attributes())
      if (a.name.rfind("_sy", 0) == 0) found.push_back(n->name() + ": " + a.name);
  return found;
}

std::vector<double> to_doubles(const ir::Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) out[static_cast<size_t>(i)] = t.scalar_as_double(i);
  return out;
}

int64_t product(const std::vector<int64_t>& dims) {
  return std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<int64_t>());
}

std::vector<int64_t> strides_of(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t k = shape.size(); k-- > 1;) s[k - 1] = s[k] * shape[k];
  return s;
}

std::vector<int64_t> unravel(int64_t linear, const std::vector<int64_t>& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    index[k] = linear % shape[k];
    linear /= shape[k];
  }
  return index;
}

int64_t ravel(const std::vector<int64_t>& index, const std::vector<int64_t>& shape) {
  int64_t offset = 0;
  std::vector<int64_t> s = strides_of(shape);
  for (size_t k = 0; k < index.size(); ++k) offset += index[k] * s[k];
  return offset;
}

std::string compare_tensors(const ir::Tensor& actual, const ir::Tensor& expected, double rtol,
                            double atol) {
  if (actual.dtype() != expected.dtype())
    return fmt::format("dtype {} != expected {}", ir::dtype_name(actual.dtype()),
                       ir::dtype_name(expected.dtype()));
  if (actual.shape() != expected.shape())
    return fmt::format("shape {} != expected {}", ir::shape_to_string(actual.shape()),
                       ir::shape_to_string(expected.shape()));
  std::string msg;
  int bad = 0;
  if (actual.dtype() == ir::DType::String) {
    for (int64_t i = 0; i < actual.numel(); ++i) {
      if (actual.data<std::string>()[i] != expected.data<std::string>()[i] && bad++ < 5)
        msg += fmt::format("[{}] '{}' != '{}'; ", i, actual.data<std::string>()[i],
                           expected.data<std::string>()[i]);
    }
  } else {
    for (int64_t i = 0; i < actual.numel(); ++i) {
      double a = actual.scalar_as_double(i);
      double e = expected.scalar_as_double(i);
      if (std::isnan(a) && std::isnan(e)) continue;
      if (a == e) continue;
      if (!(std::fabs(a - e) <= atol + rtol * std::fabs(e)) && bad++ < 5)
        msg += fmt::format("[{}] {} != {}; ", i, a, e);
    }
  }
  if (bad) msg = fmt::format("{} of {} elements differ: {}", bad, actual.numel(), msg);
  return msg;
}

void expect_same(const ir::Tensor& a, const ir::Tensor& e) { EXPECT_TENSOR_NEAR(a, e, 0, 0); }

void expect_sequence(const ir::Datum& d, const std::vector<ir::Tensor>& expected) {
  ASSERT_TRUE(d.is_sequence());
  ASSERT_EQ(d.sequence.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) expect_same(d.sequence[i], expected[i]);
}

}  // namespace switchyard::testing
