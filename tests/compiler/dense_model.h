// What the compiler tests (saved executables, the compile cache) share: a small dense model
// with one weight big enough for the weights section, its inputs, and whole-file I/O.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>

#include "ir/graph.h"
#include "support/op_test_util.h"

namespace switchyard::testing {

// x float[N,64] -> MatMul(W) -> Relu -> Add(b) -> Softmax, W seeded by `seed`: its 16 KiB go to a
// saved executable's weights section (and to external data), the bias stays inline.
inline std::unique_ptr<ir::Graph> dense_graph(uint64_t seed = 1) {
  auto g = std::make_unique<ir::Graph>("dense");
  ir::Value* x =
      g->add_input("x", ir::Type::tensor(ir::DType::Float32, ir::Shape{ir::Dim("N"), ir::Dim(64)}));
  ir::Value* w = g->add_constant("w", random_tensor(ir::DType::Float32, {64, 64}, seed));
  ir::Value* b = g->add_constant("b", random_tensor(ir::DType::Float32, {64}, 2));
  ir::Value* m = g->add_node("MatMul", "matmul", {x, w}, {"m"})->output(0);
  ir::Value* r = g->add_node("Relu", "relu", {m}, {"r"})->output(0);
  ir::Value* a = g->add_node("Add", "add", {r, b}, {"a"})->output(0);
  g->add_output(g->add_node("Softmax", "softmax", {a}, {"y"})->output(0));
  return g;
}

inline std::map<std::string, Tensor> dense_inputs(int64_t n = 3) {
  return {{"x", random_tensor(ir::DType::Float32, {n, 64}, 9)}};
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace switchyard::testing
