// GraphBuilder (include/switchyard/builder.hpp): graphs built in C++, with If and Loop control
// flow, each run on the cpu and on a simulated device, saved as .syx and loaded again, and
// compared with a plain C++ reference on seeded random data.
#include "switchyard/builder.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>

#include "support/op_test_util.h"
#include "switchyard/switchyard.hpp"

namespace switchyard::testing {
namespace {

namespace fs = std::filesystem;
using Feeds = std::map<std::string, Tensor>;
using MakeGraph = std::function<void(GraphBuilder&)>;
using Reference = std::function<Feeds(const Feeds&)>;

std::vector<Options> configurations() {
  Options cpu;
  cpu.device = "cpu";
  Options sim;
  sim.sim_devices = 1;
  sim.device = "sim:0";
  sim.pins = {"*=sim:0"};  // every node it can run, however small (else copies would cost more)
  return {cpu, sim};
}

Executable compile_built(const MakeGraph& make, const Options& options) {
  GraphBuilder b;
  make(b);
  return std::move(b).build().compile(options);
}

void expect_outputs_near(const Feeds& actual, const Feeds& expected, double rtol, double atol,
                         const std::string& where) {
  ASSERT_EQ(actual.size(), expected.size()) << where;
  for (const auto& [name, e] : expected) {
    auto it = actual.find(name);
    ASSERT_NE(it, actual.end()) << where << ": no output " << name;
    EXPECT_TENSOR_NEAR(it->second, e, rtol, atol) << where << ": output " << name;
  }
}

// Builds the graph for each configuration, runs every feed, compares with the reference; then
// saves the executable, loads it and expects the same bits.
void check_everywhere(const MakeGraph& make, const std::vector<Feeds>& feeds,
                      const Reference& reference, double rtol = 1e-5, double atol = 1e-6) {
  for (const Options& options : configurations()) {
    std::string where = options.device;
    Executable exe = compile_built(make, options);
    if (options.device == "sim:0") {
      // Every node, If and Loop included, runs on the simulated device.
      EXPECT_EQ(exe.placement_summary().rfind("sim:0: ", 0), 0u) << exe.placement_summary();
      EXPECT_EQ(exe.placement_summary().find("cpu:"), std::string::npos) << exe.placement_summary();
    }
    EXPECT_FALSE(exe.explain("json").empty());
    std::vector<Feeds> first;
    for (const Feeds& f : feeds) {
      first.push_back(exe.run(f));
      expect_outputs_near(first.back(), reference(f), rtol, atol, where);
    }
    fs::path file = fs::path(::testing::TempDir()) /
                    fmt::format("builder_{}_{}.syx", getpid(), options.sim_devices);
    exe.save(file.string());
    Executable loaded = Executable::load(file.string(), options);
    for (size_t i = 0; i < feeds.size(); ++i) {
      Feeds again = loaded.run(feeds[i]);
      ASSERT_EQ(again.size(), first[i].size());
      for (const auto& [name, t] : first[i])
        EXPECT_TRUE(same_bits(again.at(name), t)) << where << ": loaded .syx, output " << name;
    }
    fs::remove(file);
  }
}

std::vector<float> values_of(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

Tensor float_tensor(std::vector<int64_t> shape, const std::vector<float>& values) {
  Tensor t(DType::Float32, std::move(shape));
  std::copy(values.begin(), values.end(), t.data<float>());
  return t;
}

TEST(Builder, IfElseTakesBothBranches) {
  MakeGraph make = [](GraphBuilder& b) {
    Value x = b.placeholder("x", DType::Float32, {3, 4});
    Value y = b.placeholder("y", DType::Float32, {3, 4});
    Value positive = b.greater(b.reduce_sum(x), b.scalar(DType::Float32, 0));
    std::vector<Value> out = b.if_else(
        positive, [&](GraphBuilder& t) { return std::vector<Value>{t.add(x, y)}; },
        [&](GraphBuilder& e) { return std::vector<Value>{e.sub(x, y)}; });
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].dtype(), DType::Float32);
    EXPECT_EQ(out[0].shape(), (std::vector<Dim>{3, 4}));
    b.outputs({{"z", out[0]}});
  };
  Reference reference = [](const Feeds& f) {
    std::vector<float> x = values_of(f.at("x")), y = values_of(f.at("y"));
    float sum = 0;
    for (float v : x) sum += v;
    std::vector<float> z(x.size());
    for (size_t i = 0; i < x.size(); ++i) z[i] = sum > 0 ? x[i] + y[i] : x[i] - y[i];
    return Feeds{{"z", float_tensor({3, 4}, z)}};
  };
  Feeds positive{{"x", random_tensor(DType::Float32, {3, 4}, 1, 0.1, 1.0)},
                 {"y", random_tensor(DType::Float32, {3, 4}, 2)}};
  Feeds negative{{"x", random_tensor(DType::Float32, {3, 4}, 3, -1.0, -0.1)},
                 {"y", random_tensor(DType::Float32, {3, 4}, 4)}};
  check_everywhere(make, {positive, negative}, reference);
}

TEST(Builder, ForLoopMultipliesAndCountsTheIndex) {
  MakeGraph make = [](GraphBuilder& b) {
    Value x = b.placeholder("x", DType::Float32, {5});
    Value w = b.placeholder("w", DType::Float32, {5});
    Value n = b.placeholder("n", DType::Int64, {});
    Value total = b.scalar(DType::Float32, 0.5);
    std::vector<Value> out =
        b.for_loop(n, {x, total}, [&](GraphBuilder& body, Value index, std::vector<Value> c) {
          return std::vector<Value>{body.mul(c[0], w),
                                    body.add(c[1], body.cast(index, DType::Float32))};
        });
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].shape(), (std::vector<Dim>{5}));
    b.outputs({{"product", out[0]}, {"index_sum", out[1]}});
  };
  Reference reference = [](const Feeds& f) {
    std::vector<float> x = values_of(f.at("x")), w = values_of(f.at("w"));
    int64_t n = f.at("n").data<int64_t>()[0];
    float total = 0.5f;
    for (int64_t i = 0; i < n; ++i) {
      for (size_t k = 0; k < x.size(); ++k) x[k] *= w[k];
      total += static_cast<float>(i);
    }
    return Feeds{{"product", float_tensor({5}, x)}, {"index_sum", float_tensor({}, {total})}};
  };
  Feeds four{{"x", random_tensor(DType::Float32, {5}, 5)},
             {"w", random_tensor(DType::Float32, {5}, 6, 0.5, 2.0)},
             {"n", int64_scalar(4)}};
  Feeds none{{"x", random_tensor(DType::Float32, {5}, 7)},
             {"w", random_tensor(DType::Float32, {5}, 8, 0.5, 2.0)},
             {"n", int64_scalar(0)}};
  check_everywhere(make, {four, none}, reference);
}

// before(s) = (sum(s) < 100, {s + 1}); after(r) = {2 r}: the result is the last before's
// results, so a first false condition returns before(initial)'s results, x + 1.
TEST(Builder, WhileLoopDoublesUntilThresholdAndMayRunZeroTimes) {
  MakeGraph make = [](GraphBuilder& b) {
    Value x = b.placeholder("x", DType::Float32, {4});
    Value limit = b.scalar(DType::Float32, 100);
    Value one = b.scalar(DType::Float32, 1);
    Value two = b.scalar(DType::Float32, 2);
    std::vector<Value> out = b.while_loop(
        {x},
        [&](GraphBuilder& g, std::vector<Value> s) {
          Value cond = g.less(g.reduce_sum(s[0], {}, false), limit);
          return std::make_pair(cond, std::vector<Value>{g.add(s[0], one)});
        },
        [&](GraphBuilder& g, std::vector<Value> r) {
          return std::vector<Value>{g.mul(r[0], two)};
        });
    ASSERT_EQ(out.size(), 1u);
    b.outputs({{"y", out[0]}});
  };
  Reference reference = [](const Feeds& f) {
    std::vector<float> s = values_of(f.at("x"));
    while (true) {
      float sum = 0;
      for (float v : s) sum += v;
      std::vector<float> r = s;
      for (float& v : r) v += 1;
      if (!(sum < 100)) return Feeds{{"y", float_tensor({4}, r)}};
      for (size_t k = 0; k < s.size(); ++k) s[k] = 2 * r[k];
    }
  };
  Feeds runs{{"x", random_tensor(DType::Float32, {4}, 9, 0.1, 1.0)}};
  Feeds zero_times{{"x", random_tensor(DType::Float32, {4}, 10, 30.0, 40.0)}};
  check_everywhere(make, {runs, zero_times}, reference);
}

// An If inside a Loop body reads a value two graphs out (w) and one of the body (the index).
TEST(Builder, NestedControlFlowReadsOuterValues) {
  MakeGraph make = [](GraphBuilder& b) {
    Value x = b.placeholder("x", DType::Float32, {"n"});
    Value w = b.placeholder("w", DType::Float32, {"n"});
    Value two = b.scalar(DType::Int64, 2);
    Value zero = b.scalar(DType::Int64, 0);
    std::vector<Value> out = b.for_loop(
        b.scalar(DType::Int64, 5), {x}, [&](GraphBuilder& body, Value i, std::vector<Value> c) {
          Value even = body.equal(body.op("Mod", {i, two})[0], zero);
          return body.if_else(
              even, [&](GraphBuilder& t) { return std::vector<Value>{t.mul(c[0], w)}; },
              [&](GraphBuilder& e) { return std::vector<Value>{e.add(c[0], w)}; });
        });
    EXPECT_EQ(out[0].shape(), (std::vector<Dim>{"n"}));
    b.outputs({{"y", out[0]}});
  };
  Reference reference = [](const Feeds& f) {
    std::vector<float> x = values_of(f.at("x")), w = values_of(f.at("w"));
    for (int i = 0; i < 5; ++i)
      for (size_t k = 0; k < x.size(); ++k) x[k] = i % 2 == 0 ? x[k] * w[k] : x[k] + w[k];
    return Feeds{{"y", float_tensor({static_cast<int64_t>(x.size())}, x)}};
  };
  check_everywhere(make,
                   {{{"x", random_tensor(DType::Float32, {6}, 24)},
                     {"w", random_tensor(DType::Float32, {6}, 25)}}},
                   reference);
}

TEST(Builder, EmbeddingLookupWithGatherNd) {
  Tensor table = random_tensor(DType::Float32, {10, 6}, 11);
  MakeGraph make = [&](GraphBuilder& b) {
    Value ids = b.placeholder("ids", DType::Int64, {"batch", 1});
    Value rows = b.gather_nd(b.constant(table, "table"), ids);
    EXPECT_EQ(rows.shape(), (std::vector<Dim>{"batch", 6}));
    b.outputs({{"rows", rows}});
  };
  Reference reference = [&](const Feeds& f) {
    const Tensor& ids = f.at("ids");
    Tensor out(DType::Float32, {ids.dim(0), 6});
    for (int64_t i = 0; i < ids.dim(0); ++i)
      for (int64_t k = 0; k < 6; ++k)
        out.data<float>()[i * 6 + k] = table.data<float>()[ids.data<int64_t>()[i] * 6 + k];
    return Feeds{{"rows", out}};
  };
  check_everywhere(make,
                   {{{"ids", random_tensor(DType::Int64, {7, 1}, 12, 0, 9.4)}},
                    {{"ids", random_tensor(DType::Int64, {3, 1}, 13, 0, 9.4)}}},
                   reference);
}

TEST(Builder, Conv2dWithBiasAndRelu) {
  Tensor weights = random_tensor(DType::Float32, {3, 2, 3, 3}, 14);
  Tensor bias = random_tensor(DType::Float32, {3}, 15);
  MakeGraph make = [&](GraphBuilder& b) {
    Value x = b.placeholder("x", DType::Float32, {1, 2, 6, 6});
    Conv2dOptions geometry;
    geometry.pads = {1, 1, 1, 1};
    Value y = b.relu(b.conv2d(x, b.constant(weights), b.constant(bias), geometry));
    EXPECT_EQ(y.shape(), (std::vector<Dim>{1, 3, 6, 6}));
    b.outputs({{"y", y}});
  };
  Reference reference = [&](const Feeds& f) {
    const float* x = f.at("x").data<float>();
    const float* w = weights.data<float>();
    Tensor out(DType::Float32, {1, 3, 6, 6});
    for (int o = 0; o < 3; ++o)
      for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 6; ++j) {
          float acc = bias.data<float>()[o];
          for (int c = 0; c < 2; ++c)
            for (int ki = 0; ki < 3; ++ki)
              for (int kj = 0; kj < 3; ++kj) {
                int si = i + ki - 1, sj = j + kj - 1;
                if (si < 0 || sj < 0 || si >= 6 || sj >= 6) continue;
                acc += x[(c * 6 + si) * 6 + sj] * w[((o * 2 + c) * 3 + ki) * 3 + kj];
              }
          out.data<float>()[(o * 6 + i) * 6 + j] = std::max(acc, 0.0f);
        }
    return Feeds{{"y", out}};
  };
  check_everywhere(make, {{{"x", random_tensor(DType::Float32, {1, 2, 6, 6}, 16)}}}, reference,
                   1e-4, 1e-5);
}

TEST(Builder, TypedHelpers) {
  MakeGraph make = [](GraphBuilder& b) {
    Value x = b.placeholder("x", DType::Float32, {2, 3});
    Value y = b.placeholder("y", DType::Float32, {2, 3});
    Value flat = b.reshape(b.transpose(x, {1, 0}), {6});
    EXPECT_EQ(flat.shape(), (std::vector<Dim>{6}));
    Value stacked = b.concat({b.sigmoid(x), b.tanh(x)}, 0);
    EXPECT_EQ(stacked.shape(), (std::vector<Dim>{4, 3}));
    Value smaller = b.where(b.less(x, y), x, y);
    Value ratio = b.div(x, y);
    Value same = b.cast(b.equal(x, x), DType::Float32);
    b.outputs({{"softmax", b.softmax(x, 1)},
               {"flat", flat},
               {"stacked", stacked},
               {"min", smaller},
               {"ratio", ratio},
               {"same", same}});
  };
  Reference reference = [](const Feeds& f) {
    std::vector<float> x = values_of(f.at("x")), y = values_of(f.at("y"));
    std::vector<float> softmax(6), flat(6), stacked(12), mins(6), ratio(6), same(6, 1.0f);
    for (int i = 0; i < 2; ++i) {
      float mx = std::max({x[i * 3], x[i * 3 + 1], x[i * 3 + 2]}), sum = 0;
      for (int j = 0; j < 3; ++j) sum += std::exp(x[i * 3 + j] - mx);
      for (int j = 0; j < 3; ++j) softmax[i * 3 + j] = std::exp(x[i * 3 + j] - mx) / sum;
      for (int j = 0; j < 3; ++j) flat[j * 2 + i] = x[i * 3 + j];
    }
    for (int k = 0; k < 6; ++k) {
      stacked[k] = 1.0f / (1.0f + std::exp(-x[k]));
      stacked[6 + k] = std::tanh(x[k]);
      mins[k] = std::min(x[k], y[k]);
      ratio[k] = x[k] / y[k];
    }
    return Feeds{{"softmax", float_tensor({2, 3}, softmax)}, {"flat", float_tensor({6}, flat)},
                 {"stacked", float_tensor({4, 3}, stacked)}, {"min", float_tensor({2, 3}, mins)},
                 {"ratio", float_tensor({2, 3}, ratio)},     {"same", float_tensor({2, 3}, same)}};
  };
  check_everywhere(make,
                   {{{"x", random_tensor(DType::Float32, {2, 3}, 17)},
                     {"y", random_tensor(DType::Float32, {2, 3}, 18, 0.5, 1.5)}}},
                   reference, 1e-5, 1e-6);
}

TEST(Builder, SymbolicDimsPropagate) {
  Tensor w = random_tensor(DType::Float32, {4, 8}, 19);
  MakeGraph make = [&](GraphBuilder& b) {
    Value x = b.placeholder("x", DType::Float32, {"batch", 4});
    EXPECT_EQ(x.shape(), (std::vector<Dim>{"batch", 4}));
    Value y = b.matmul(x, b.constant(w, "w"));
    EXPECT_EQ(y.dtype(), DType::Float32);
    ASSERT_TRUE(y.has_shape());
    EXPECT_EQ(y.shape(), (std::vector<Dim>{"batch", 8}));
    EXPECT_EQ(y.type_string(), "float[batch,8]");
    b.outputs({{"y", y}});
  };
  {
    GraphBuilder b;
    make(b);
    Model model = std::move(b).build();
    ASSERT_EQ(model.inputs().size(), 1u);
    EXPECT_EQ(model.inputs()[0].dims, (std::vector<std::string>{"batch", "4"}));
    ASSERT_EQ(model.outputs().size(), 1u);
    EXPECT_EQ(model.outputs()[0].name, "y");
    EXPECT_EQ(model.outputs()[0].dims, (std::vector<std::string>{"batch", "8"}));
  }
  Reference reference = [&](const Feeds& f) {
    const Tensor& x = f.at("x");
    Tensor out(DType::Float32, {x.dim(0), 8});
    for (int64_t i = 0; i < x.dim(0); ++i)
      for (int64_t j = 0; j < 8; ++j) {
        float acc = 0;
        for (int64_t k = 0; k < 4; ++k)
          acc += x.data<float>()[i * 4 + k] * w.data<float>()[k * 8 + j];
        out.data<float>()[i * 8 + j] = acc;
      }
    return Feeds{{"y", out}};
  };
  check_everywhere(make,
                   {{{"x", random_tensor(DType::Float32, {3, 4}, 20)}},
                    {{"x", random_tensor(DType::Float32, {5, 4}, 21)}}},
                   reference, 1e-5, 1e-6);
}

TEST(Builder, BadUsesThrowNamingTheOpAndInputs) {
  GraphBuilder b;
  Value a = b.placeholder("a", DType::Float32, {2, 3});
  Value c = b.placeholder("c", DType::Float32, {4, 5});
  expect_error([&] { b.matmul(a, c); }, ErrorCode::InvalidArgument, "[MatMul]");
  expect_error([&] { b.matmul(a, c); }, ErrorCode::InvalidArgument, "'c' float[4,5]");
  expect_error([&] { b.op("NoSuchOp", {a}); }, ErrorCode::InvalidArgument, "NoSuchOp");
  expect_error([&] { b.op("Relu", {}); }, ErrorCode::InvalidArgument, "[Relu]");
  expect_error([&] { b.placeholder("a", DType::Float32, {1}); }, ErrorCode::InvalidArgument,
               "already used");
  // If needs a one-element bool predicate.
  expect_error(
      [&] {
        b.if_else(
            a, [&](GraphBuilder&) { return std::vector<Value>{a}; },
            [&](GraphBuilder&) { return std::vector<Value>{a}; });
      },
      ErrorCode::InvalidArgument, "[If]");
  // A body's values stay in the body, and bodies declare no placeholders.
  Value leaked;
  Value n = b.scalar(DType::Int64, 2);
  b.for_loop(n, {a}, [&](GraphBuilder& body, Value, std::vector<Value> c) {
    leaked = body.relu(c[0]);
    return std::vector<Value>{leaked};
  });
  expect_error([&] { b.relu(leaked); }, ErrorCode::InvalidArgument, "belongs to another");
  expect_error(
      [&] {
        b.for_loop(n, {a}, [&](GraphBuilder& body, Value, std::vector<Value>) {
          return std::vector<Value>{body.placeholder("p", DType::Float32, {1})};
        });
      },
      ErrorCode::InvalidArgument, "placeholder");
  expect_error(
      [&] {
        b.for_loop(n, {a},
                   [&](GraphBuilder&, Value, std::vector<Value>) { return std::vector<Value>{}; });
      },
      ErrorCode::InvalidArgument, "returns 0 values for 1");
  // The rejected nodes left nothing behind: the builder still builds and runs.
  Value relu = b.relu(a);
  b.outputs({{"r", relu}});
  expect_error([&] { b.outputs({{"r", relu}}); }, ErrorCode::InvalidArgument, "already used");
  Executable exe = std::move(b).build().compile();
  Tensor in = random_tensor(DType::Float32, {2, 3}, 22);
  Tensor expected = in.clone();
  for (int64_t i = 0; i < 6; ++i) expected.data<float>()[i] = std::max(0.0f, in.data<float>()[i]);
  Feeds out = exe.run({{"a", in}, {"c", random_tensor(DType::Float32, {4, 5}, 23)}});
  EXPECT_TENSOR_NEAR(out.at("r"), expected, 0, 0);
}

TEST(Builder, BuildNeedsOutputs) {
  GraphBuilder b;
  b.placeholder("a", DType::Float32, {2});
  expect_error([&] { std::move(b).build(); }, ErrorCode::InvalidArgument, "no outputs");
}

TEST(Builder, StencilWithClampPaddingAndStrides) {
  Tensor weights = random_tensor(DType::Float32, {3, 3}, 30);
  MakeGraph make = [&](GraphBuilder& b) {
    Value x = b.placeholder("x", DType::Float32, {2, 3, 7, 8});
    StencilOptions o;
    o.padding = "clamp";
    o.strides = {2, 1};
    o.pads = {1, 1, 1, 1};
    Value y = b.stencil(x, b.constant(weights), o);
    EXPECT_EQ(y.shape(), (std::vector<Dim>{2, 3, 4, 8}));
    b.outputs({{"y", y}});
  };
  Reference reference = [&](const Feeds& f) {
    const float* x = f.at("x").data<float>();
    const float* w = weights.data<float>();
    Tensor out(DType::Float32, {2, 3, 4, 8});
    for (int p = 0; p < 6; ++p)
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 8; ++j) {
          float acc = 0;
          for (int ki = 0; ki < 3; ++ki)
            for (int kj = 0; kj < 3; ++kj) {
              int si = std::clamp(2 * i + ki - 1, 0, 6), sj = std::clamp(j + kj - 1, 0, 7);
              acc += x[(p * 7 + si) * 8 + sj] * w[ki * 3 + kj];
            }
          out.data<float>()[(p * 4 + i) * 8 + j] = acc;
        }
    return Feeds{{"y", out}};
  };
  check_everywhere(make, {{{"x", random_tensor(DType::Float32, {2, 3, 7, 8}, 31)}}}, reference,
                   1e-5, 1e-5);
  GraphBuilder b;
  Value x = b.placeholder("x", DType::Float32, {1, 1, 4, 4});
  StencilOptions bad;
  bad.strides = {0, 1};
  expect_error([&] { b.stencil(x, b.constant(weights), bad); }, ErrorCode::InvalidArgument,
               "strides[0] is 0");
}

}  // namespace
}  // namespace switchyard::testing
