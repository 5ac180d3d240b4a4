// A graph built in C++ with switchyard::GraphBuilder (docs/api.md): a matmul, an If on the
// input's sign and a three-iteration Loop, compiled, explained, run and saved. Built with the
// project (target builder_example) against the public library only; ctest runs it.
//
// usage: builder_example [FILE.syx]   (default: built.syx in the system's temp folder)
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "switchyard/builder.hpp"
#include "switchyard/switchyard.hpp"

using namespace switchyard;

int main(int argc, char** argv) {
  try {
    Tensor w(DType::Float32, {4, 8});
    for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = 0.01f * static_cast<float>(i);

    GraphBuilder b;
    Value x = b.placeholder("x", DType::Float32, {"batch", 4});
    Value h = b.relu(b.matmul(x, b.constant(w, "w")));  // float [batch, 8]
    Value positive = b.greater(b.reduce_sum(x), b.scalar(DType::Float32, 0));
    Value y = b.if_else(
        positive, [&](GraphBuilder& t) { return std::vector<Value>{t.sigmoid(h)}; },
        [&](GraphBuilder& e) { return std::vector<Value>{e.tanh(h)}; })[0];
    Value half = b.scalar(DType::Float32, 0.5);
    Value z = b.for_loop(b.scalar(DType::Int64, 3), {y},
                         [&](GraphBuilder& body, Value index, std::vector<Value> carried) {
                           Value i = body.cast(index, DType::Float32);
                           return std::vector<Value>{body.add(body.mul(carried[0], half), i)};
                         })[0];
    b.outputs({{"y", y}, {"z", z}});
    std::printf("z: %s\n", z.type_string().c_str());

    Executable exe = std::move(b).build().compile({});
    std::printf("placement: %s\n", exe.placement_summary().c_str());
    Tensor input(DType::Float32, {2, 4});
    for (int64_t i = 0; i < input.numel(); ++i)
      input.data<float>()[i] = 0.1f * static_cast<float>(i);
    auto outputs = exe.run({{"x", input}});
    const Tensor& out = outputs.at("z");
    std::printf("z[0, 0..3] = %.6f %.6f %.6f %.6f\n", out.data<float>()[0], out.data<float>()[1],
                out.data<float>()[2], out.data<float>()[3]);

    std::string path =
        argc > 1 ? argv[1] : (std::filesystem::temp_directory_path() / "built.syx").string();
    exe.save(path);
    auto again = Executable::load(path).run({{"x", input}});
    const Tensor& reloaded = again.at("z");
    for (int64_t i = 0; i < out.numel(); ++i) {
      if (reloaded.data<float>()[i] != out.data<float>()[i]) {
        std::fprintf(stderr, "builder_example: the saved executable gives another z[%ld]\n",
                     static_cast<long>(i));
        return 1;
      }
    }
    std::printf("saved to %s and loaded: the same outputs\n", path.c_str());
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "builder_example: %s\n", e.what());
    return 1;
  }
}
