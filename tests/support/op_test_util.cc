#include "support/op_test_util.h"

#include <cmath>

#include "backends/cpu/cpu_kernels.h"
#include "backends/executor.h"
#include "ir/check.h"
#include "ops/schema.h"

namespace switchyard::testing {

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
    ins.push_back(constant ? g->add_constant(name, t)
                           : g->add_input(name, ir::Type::tensor(t.dtype(),
                                                                 ir::make_shape(t.shape()))));
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
  backends::GraphProgram program(*g, cpu::cpu_kernels());
  backends::RunState state;
  state.pool = backends::HostPool::create(/*poison=*/true);
  state.num_threads = 2;
  std::vector<ir::Datum> inputs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    bool constant = i < c.constant_inputs.size() && c.constant_inputs[i];
    if (c.inputs[i] && !constant) inputs.emplace_back(*c.inputs[i]);
  }
  return program.run(std::move(inputs), state);
}

ir::Tensor run_op1(const OpCase& c) {
  auto out = run_op(c);
  SY_ASSERT(!out.empty() && out[0].is_tensor());
  return out[0].tensor;
}

namespace {
template <typename F>
void for_each_type(ir::DType dtype, F&& f) {
  using namespace ir;
  switch (dtype) {
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

std::vector<double> to_doubles(const ir::Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) out[static_cast<size_t>(i)] = t.scalar_as_double(i);
  return out;
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

}  // namespace switchyard::testing
