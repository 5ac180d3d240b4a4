// GPU-only tests of the elementwise family (src/backends/cuda/kernels/elementwise*): the
// --precision fp16/bf16 runs of every op against the cpu, the fused elementwise chains (GELU,
// Add->Relu, Mul->Add, SiLU) checked by value and by the number of CUDA kernel steps they run
// as, and integer division by zero through the partition's error word. Every op and dtype at
// fp32 against a plain reference runs in the op harness (tests/harness/cases/elementwise.cc),
// on cpu, sim:0 and cuda:0.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "gpu/gpu_test_util.h"
#include "runtime/profiler.h"
#include "switchyard/switchyard.hpp"

namespace switchyard::testing {
namespace {

using Shape = std::vector<int64_t>;

const std::vector<DType> kNumeric = {DType::Float32, DType::Float16, DType::BFloat16,
                                     DType::Float64, DType::Int32,   DType::Int64};
const std::vector<DType> kIntegers = {DType::Int8,  DType::Int16,  DType::Int32,  DType::Int64,
                                      DType::UInt8, DType::UInt16, DType::UInt32, DType::UInt64};
const std::vector<DType> kAllPod = {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64,
                                    DType::Int8,    DType::Int16,   DType::Int32,    DType::Int64,
                                    DType::UInt8,   DType::UInt16,  DType::UInt32,   DType::UInt64,
                                    DType::Bool};
const std::vector<std::string> kPrecisions = {"fp16", "bf16"};

/// Seeded values in [lo, hi) rounded to multiples of `step` (exact in float16 and bfloat16 for
/// step 1/16 and |x| < 16): no rounding of inputs differs between precisions, and discontinuous
/// ops (Floor, Round, comparisons) meet ties and equal values.
Tensor stepped(DType d, const Shape& shape, uint64_t seed, double lo, double hi,
               double step = 1.0 / 16) {
  Tensor r = random_tensor(DType::Float64, shape, seed, lo, hi);
  std::vector<double> v;
  for (int64_t i = 0; i < r.numel(); ++i)
    v.push_back(std::round(r.data<double>()[i] / step) * step);
  return tensor_of(d, shape, v);
}

/// Seeded nonzero divisors: magnitudes in [0.5, 4.5) (integers [1, 5]; with `step`, multiples
/// of it) with random signs (unsigned: positive).
Tensor divisors(DType d, const Shape& shape, uint64_t seed, double step = 0) {
  Tensor mag = random_tensor(DType::Float64, shape, seed, 0.5, 4.5);
  Tensor sign = random_tensor(DType::Bool, shape, seed + 7777);
  std::vector<double> v;
  for (int64_t i = 0; i < mag.numel(); ++i) {
    double m = mag.data<double>()[i];
    if (!ir::dtype_is_float(d)) m = std::ceil(m);
    if (step > 0) m = std::round(m / step) * step;
    v.push_back(sign.data<bool>()[i] && ir::dtype_is_signed(d) ? -m : m);
  }
  return tensor_of(d, shape, v);
}

Attribute float_attr(const std::string& name, float v) { return Attribute::make_float(name, v); }
Attribute int_attr(const std::string& name, int64_t v) { return Attribute::make_int(name, v); }

// ---- unary ----

struct UnaryOp {
  std::string op;
  double lo, hi;
  std::vector<Attribute> attrs = {};
  bool discontinuous = false;  ///< feed stepped values (ties, exact thresholds)
};

std::vector<UnaryOp> float_unary_ops() {
  return {
      {"Abs", -5, 5},
      {"Neg", -5, 5},
      {"Relu", -5, 5},
      {"LeakyRelu", -5, 5, {float_attr("alpha", 0.1f)}},
      {"LeakyRelu", -5, 5},
      {"Elu", -5, 5, {float_attr("alpha", 0.7f)}},
      {"Selu", -5, 5},
      {"Selu", -5, 5, {float_attr("alpha", 1.5f), float_attr("gamma", 0.9f)}},
      {"Celu", -5, 5, {float_attr("alpha", 1.3f)}},
      {"Sigmoid", -10, 10},
      {"HardSigmoid", -5, 5},
      {"HardSigmoid", -5, 5, {float_attr("alpha", 0.3f), float_attr("beta", 0.4f)}},
      {"HardSwish", -5, 5},
      {"Tanh", -5, 5},
      {"Exp", -8, 8},
      {"Log", 0.0625, 10},
      {"Sqrt", 0, 10},
      {"Reciprocal", 0.125, 5},
      {"Floor", -5, 5, {}, true},
      {"Ceil", -5, 5, {}, true},
      {"Round", -5, 5, {}, true},
      {"Sin", -5, 5},
      {"Cos", -5, 5},
      {"Tan", -1.375, 1.375},
      {"Asin", -0.9375, 0.9375},
      {"Acos", -0.9375, 0.9375},
      {"Atan", -5, 5},
      {"Sinh", -5, 5},
      {"Cosh", -5, 5},
      {"Asinh", -5, 5},
      {"Acosh", 1, 10},
      {"Atanh", -0.9375, 0.9375},
      {"Erf", -3, 3},
      {"Softplus", -10, 10},
      {"Softsign", -5, 5},
      {"Sign", -3, 3, {}, true},
      {"Gelu", -5, 5},
      {"Gelu", -5, 5, {Attribute::make_string("approximate", "tanh")}},
      {"Mish", -5, 5},
      {"ThresholdedRelu", -3, 3, {float_attr("alpha", 0.5f)}, true},
      {"Shrink", -3, 3, {float_attr("bias", 0.25f), float_attr("lambd", 0.75f)}, true},
      {"IsNaN", -5, 5},
      {"IsInf", -5, 5},
  };
}

TEST(CudaElementwise, FloatUnaryOpsAtReducedPrecision) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 300;
  for (const UnaryOp& u : float_unary_ops()) {
    for (const std::string& p : kPrecisions) {
      SCOPED_TRACE(u.op + " at " + p);
      Tensor x = stepped(DType::Float32, {4, 33}, seed++, u.lo, u.hi);
      expect_gpu_matches_cpu(make_case(u.op, {x}, u.attrs), 2e-2, 2e-2, p);
    }
  }
}

TEST(CudaElementwise, ClipAtReducedPrecision) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 500;
  for (const std::string& p : kPrecisions) {
    SCOPED_TRACE("Clip at " + p);
    expect_gpu_matches_cpu(
        make_case("Clip",
                  {stepped(DType::Float32, {5, 9}, seed++, -5, 5),
                   tensor_of(DType::Float32, {}, {-1.5}), tensor_of(DType::Float32, {}, {2.25})},
                  {}, 1, {false, true, true}),
        2e-2, 2e-2, p);
  }
}

// ---- binary ----

struct BinaryOp {
  std::string op;
  std::vector<DType> dtypes;
  std::vector<Attribute> attrs = {};
  bool divisor = false;  ///< input 1 must be nonzero
  bool stepped = false;  ///< coarse values so that equality happens
};

std::vector<BinaryOp> binary_ops() {
  return {
      {"Add", kNumeric},
      {"Sub", kNumeric},
      {"Mul", kNumeric},
      {"Div", kNumeric, {}, true},
      {"Max", kNumeric},
      {"Min", kNumeric},
      {"Mod", {DType::Int32, DType::Int64}, {int_attr("fmod", 0)}, true},
      {"Mod", kNumeric, {int_attr("fmod", 1)}, true},
      {"Equal", kAllPod, {}, false, true},
      {"Less", kNumeric, {}, false, true},
      {"Greater", kNumeric, {}, false, true},
      {"LessOrEqual", kNumeric, {}, false, true},
      {"GreaterOrEqual", kNumeric, {}, false, true},
      {"And", {DType::Bool}},
      {"Or", {DType::Bool}},
      {"Xor", {DType::Bool}},
      {"BitwiseAnd", kIntegers},
      {"BitwiseOr", kIntegers},
      {"BitwiseXor", kIntegers},
  };
}

TEST(CudaElementwise, BinaryOpsAtReducedPrecision) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 800;
  for (const BinaryOp& b : binary_ops()) {
    if (std::find(b.dtypes.begin(), b.dtypes.end(), DType::Float32) == b.dtypes.end()) continue;
    for (const std::string& p : kPrecisions) {
      SCOPED_TRACE(b.op + " at " + p);
      Tensor x = stepped(DType::Float32, {2, 3, 4}, seed++, -4, 4);
      Tensor y = b.divisor
                     ? divisors(DType::Float32, {4}, seed++, 1.0 / 16)
                     : stepped(DType::Float32, {4}, seed++, -4, 4, b.stepped ? 0.5 : 1.0 / 16);
      expect_gpu_matches_cpu(make_case(b.op, {x, y}, b.attrs), 2e-2, 2e-2, p);
    }
  }
}

TEST(CudaElementwise, PReluAtReducedPrecision) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 1000;
  for (const std::string& p : kPrecisions) {
    expect_gpu_matches_cpu(make_case("PRelu", {stepped(DType::Float32, {2, 3, 4}, seed++, -4, 4),
                                               stepped(DType::Float32, {3, 1}, seed++, 0, 1)}),
                           2e-2, 2e-2, p);
  }
}

TEST(CudaElementwise, PowAtReducedPrecision) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 1100;
  for (const std::string& p : kPrecisions)
    expect_gpu_matches_cpu(make_case("Pow", {stepped(DType::Float32, {3, 4}, seed++, 0.5, 3),
                                             stepped(DType::Float32, {4}, seed++, -2, 2)}),
                           2e-2, 2e-2, p);
}

// ---- variadic, Where ----

TEST(CudaElementwise, VariadicOpsAtReducedPrecision) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 1200;
  for (std::string op : {"Max", "Min", "Sum", "Mean"}) {
    for (const std::string& p : kPrecisions) {
      SCOPED_TRACE(op + " at " + p);
      expect_gpu_matches_cpu(make_case(op, {stepped(DType::Float32, {2, 3, 4}, seed++, -4, 4),
                                            stepped(DType::Float32, {4}, seed++, -4, 4),
                                            stepped(DType::Float32, {3, 1}, seed++, -4, 4)}),
                             2e-2, 2e-2, p);
    }
  }
}

TEST(CudaElementwise, WhereAtReducedPrecision) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 1300;
  for (const std::string& p : kPrecisions)
    expect_gpu_matches_cpu(make_case("Where", {random_tensor(DType::Bool, {2, 3}, seed++),
                                               stepped(DType::Float32, {2, 3}, seed++, -4, 4),
                                               stepped(DType::Float32, {3}, seed++, -4, 4)}),
                           2e-2, 2e-2, p);
}

// ---- Cast, CastLike, Expand ----

// ---- fused chains ----

/// A small graph built twice (once per backend): inputs with their feeds, constants, nodes.
struct Net {
  std::unique_ptr<ir::Graph> graph = std::make_unique<ir::Graph>("net");
  std::vector<ir::Datum> feeds;
  int nodes = 0;

  ir::Value* input(const Tensor& t) {
    feeds.emplace_back(t);
    return graph->add_input("in" + std::to_string(feeds.size()),
                            ir::Type::tensor(t.dtype(), ir::make_shape(t.shape())));
  }
  ir::Value* scalar(double v) {
    return graph->add_constant("c" + std::to_string(nodes++), tensor_of(DType::Float32, {}, {v}));
  }
  ir::Value* constant(const Tensor& t) {
    return graph->add_constant("c" + std::to_string(nodes++), t);
  }
  ir::Value* node(const std::string& op, const std::vector<ir::Value*>& ins,
                  const std::vector<Attribute>& attrs = {}) {
    std::string name = op + "_" + std::to_string(nodes++);
    ir::Node* n = graph->add_node(op, name, ins, {name + "_out"});
    for (const Attribute& a : attrs) n->set_attribute(a);
    return n->output(0);
  }
};

using NetBuilder = std::function<void(Net&)>;

std::vector<ir::Datum> run_net(const NetBuilder& build, Options options,
                               runtime::Profiler* profiler = nullptr) {
  Net net;
  build(net);
  options.num_threads = 2;
  Executable exe = Model::from_graph(std::move(net.graph)).compile(options);
  return exe.internal().run(net.feeds, nullptr, profiler);
}

/// Runs the graph on the cpu and on cuda:0 (strict), compares every output, and returns how
/// many kernel steps the CUDA partition ran.
int expect_net_matches_cpu(const NetBuilder& build, double rtol, double atol,
                           const std::string& precision = "fp32") {
  Options cpu;
  cpu.compute_units = "cpu_only";
  std::vector<ir::Datum> want = run_net(build, cpu);
  Options gpu;
  gpu.device = "cuda:0";
  gpu.fallback = "strict";
  gpu.precision = precision;
  runtime::Profiler profiler;
  std::vector<ir::Datum> got = run_net(build, gpu, &profiler);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size() && i < got.size(); ++i)
    EXPECT_TENSOR_NEAR(got[i].tensor, want[i].tensor, rtol, atol) << "output " << i;
  int steps = 0;
  for (const runtime::ProfileEvent& e : profiler.events())
    if (e.category == "Node" && e.device.rfind("cuda", 0) == 0) ++steps;
  return steps;
}

TEST(CudaElementwiseFusion, ExportedGeluChainsRunAsOneKernel) {
  SY_SKIP_WITHOUT_GPU();
  Tensor x = random_tensor(DType::Float32, {2, 3, 257}, 1600, -5, 5);
  // PyTorch's export: Div -> Erf -> Add -> Mul(x) -> Mul(0.5).
  NetBuilder div_form = [&](Net& n) {
    ir::Value* in = n.input(x);
    ir::Value* e = n.node("Erf", {n.node("Div", {in, n.scalar(1.4142135381698608)})});
    ir::Value* m = n.node("Mul", {in, n.node("Add", {e, n.scalar(1.0)})});
    n.graph->add_output(n.node("Mul", {m, n.scalar(0.5)}));
  };
  // Mul by 1/sqrt(2), constants first, the 0.5 applied before x.
  NetBuilder mul_form = [&](Net& n) {
    ir::Value* in = n.input(x);
    ir::Value* e = n.node("Erf", {n.node("Mul", {n.scalar(0.7071067690849304), in})});
    ir::Value* h = n.node("Mul", {n.node("Add", {n.scalar(1.0), e}), n.scalar(0.5)});
    n.graph->add_output(n.node("Mul", {h, in}));
  };
  // x * 0.5 computed on its own branch.
  NetBuilder half_first = [&](Net& n) {
    ir::Value* in = n.input(x);
    ir::Value* half = n.node("Mul", {in, n.scalar(0.5)});
    ir::Value* e = n.node("Erf", {n.node("Div", {in, n.scalar(1.41421)})});
    n.graph->add_output(n.node("Mul", {half, n.node("Add", {e, n.scalar(1.0)})}));
  };
  for (const auto& [name, build] : std::vector<std::pair<std::string, NetBuilder>>{
           {"div", div_form}, {"mul", mul_form}, {"half first", half_first}}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(expect_net_matches_cpu(build, 1e-5, 1e-5), 1);
    for (const std::string& p : kPrecisions) expect_net_matches_cpu(build, 2e-2, 2e-2, p);
  }
}

TEST(CudaElementwiseFusion, CommonChainsRunAsOneKernel) {
  SY_SKIP_WITHOUT_GPU();
  Tensor x = random_tensor(DType::Float32, {2, 3, 5, 7}, 1700, -3, 3);
  Tensor bias = random_tensor(DType::Float32, {7}, 1701, -1, 1);
  Tensor scale = random_tensor(DType::Float32, {3, 1, 1}, 1702, 0.5, 2);
  Tensor shift = random_tensor(DType::Float32, {3, 1, 1}, 1703, -1, 1);
  NetBuilder add_relu = [&](Net& n) {
    n.graph->add_output(n.node("Relu", {n.node("Add", {n.input(x), n.constant(bias)})}));
  };
  NetBuilder scale_shift = [&](Net& n) {
    ir::Value* s = n.input(scale);  // a tensor operand of the head
    ir::Value* t = n.input(shift);  // a tensor operand appended to the head
    n.graph->add_output(n.node("Add", {n.node("Mul", {n.input(x), s}), t}));
  };
  NetBuilder silu = [&](Net& n) {
    ir::Value* in = n.input(x);
    n.graph->add_output(n.node("Mul", {in, n.node("Sigmoid", {in})}));
  };
  // Scalars on either side of non-commutative ops, unary steps with attributes.
  NetBuilder long_chain = [&](Net& n) {
    ir::Value* v = n.node("Sub", {n.scalar(0.25), n.input(x)});
    v = n.node("LeakyRelu", {v}, {float_attr("alpha", 0.2f)});
    v = n.node("Div", {n.scalar(2.0), n.node("Add", {n.node("Abs", {v}), n.scalar(1.0)})});
    v = n.node("Pow", {v, n.scalar(1.5)});
    v = n.node("Max", {v, n.scalar(0.3)});
    n.graph->add_output(n.node("Gelu", {v}, {Attribute::make_string("approximate", "tanh")}));
  };
  for (const auto& [name, build] :
       std::vector<std::pair<std::string, NetBuilder>>{{"add relu", add_relu},
                                                       {"scale shift", scale_shift},
                                                       {"silu", silu},
                                                       {"long chain", long_chain}}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(expect_net_matches_cpu(build, 1e-5, 1e-5), 1);
    for (const std::string& p : kPrecisions) expect_net_matches_cpu(build, 2e-2, 2e-2, p);
  }
}

TEST(CudaElementwiseFusion, ValuesReadElsewhereAreNotAbsorbed) {
  SY_SKIP_WITHOUT_GPU();
  Tensor x = random_tensor(DType::Float32, {4, 9}, 1800, -3, 3);
  // The Add result is read twice: Add stays its own kernel; Relu and Tanh each one more.
  NetBuilder shared = [&](Net& n) {
    ir::Value* a = n.node("Add", {n.input(x), n.scalar(0.5)});
    n.graph->add_output(n.node("Mul", {n.node("Relu", {a}), n.node("Tanh", {a})}));
  };
  EXPECT_EQ(expect_net_matches_cpu(shared, 1e-5, 1e-5), 3);
  // An intermediate graph output is kept: Exp -> (output) -> Neg -> Sigmoid fuses Neg, Sigmoid.
  NetBuilder visible = [&](Net& n) {
    ir::Value* e = n.node("Exp", {n.input(x)});
    n.graph->add_output(e);
    n.graph->add_output(n.node("Sigmoid", {n.node("Neg", {e})}));
  };
  EXPECT_EQ(expect_net_matches_cpu(visible, 1e-5, 1e-5), 2);
  // Integer chains are not fused (the chain kernel is float-only) but still run.
  Tensor xi = random_tensor(DType::Int32, {4, 9}, 1801, -20, 20);
  NetBuilder ints = [&](Net& n) {
    n.graph->add_output(n.node("Relu", {n.node("Add", {n.input(xi), n.input(xi)})}));
  };
  EXPECT_EQ(expect_net_matches_cpu(ints, 0, 0), 2);
}

// An integer zero divisor fails the run naming the node, as on the cpu: the kernel stores the
// fault in the partition's error word (no sync per kernel), with CUDA graphs too (later runs
// replay a captured graph), and the same executable keeps working on good divisors.
TEST(CudaElementwise, IntegerDivisionByZeroFailsTheRunNamingTheNode) {
  SY_SKIP_WITHOUT_GPU();
  for (DType t : {DType::Int32, DType::Int64}) {
    Tensor a = tensor_of(t, {4}, {7, -7, 9, 3});
    Tensor zero = tensor_of(t, {4}, {2, 0, 3, 1});
    for (const char* op : {"Div", "Mod"}) {
      SCOPED_TRACE(std::string(op) + " " + std::string(ir::dtype_name(t)));
      OpCase c = make_case(op, {a, zero});
      expect_error([&] { run_op(c); }, ErrorCode::InvalidArgument, "division by zero");
      expect_error([&] { run_op_gpu(c); }, ErrorCode::InvalidArgument,
                   "integer division by zero: input 1 holds a zero (found on cuda:0");
    }
    Options o;
    o.device = "cuda:0";
    o.fallback = "strict";
    Executable exe =
        Model::from_graph(build_op_graph(make_case("Div", {a, tensor_of(t, {4}, {2, 1, 3, 1})})))
            .compile(o);
    Tensor good = tensor_of(t, {4}, {2, -2, 4, 3});
    for (int run = 0; run < 4; ++run) {
      std::vector<ir::Datum> out =
          exe.internal().run(std::vector<ir::Datum>{ir::Datum(a), ir::Datum(good)});
      EXPECT_TENSOR_NEAR(out[0].tensor, tensor_of(t, {4}, {3, 3, 2, 1}), 0, 0);
      expect_error(
          [&] {
            exe.internal().run(std::vector<ir::Datum>{ir::Datum(a), ir::Datum(zero)});
          },
          ErrorCode::InvalidArgument, "[Div]");
    }
  }
}

}  // namespace
}  // namespace switchyard::testing
