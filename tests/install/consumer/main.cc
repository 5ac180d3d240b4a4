// A program outside the project, on the installed public API alone: checks that the headers and
// the library it loads are one version, that the cpu backend is there, and, given an ONNX file
// with the ONNX test suite's Add model (x + y = sum, float[3,4,5]), runs it and checks every
// value. Prints what it checked; exits 1 on any difference.
#include <switchyard/switchyard.hpp>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

int fail(const std::string& what) {
  std::fprintf(stderr, "consumer: %s\n", what.c_str());
  return 1;
}

int run_add(const std::string& path) {
  switchyard::Options options;
  options.num_threads = 1;
  options.cache_dir = "off";
  switchyard::Executable exe = switchyard::Model::load(path).compile(options);
  const std::vector<int64_t> shape = {3, 4, 5};
  switchyard::Tensor x(switchyard::DType::Float32, shape), y(switchyard::DType::Float32, shape);
  for (int64_t i = 0; i < x.numel(); ++i) {
    x.data<float>()[i] = 0.25f * static_cast<float>(i) - 3.0f;
    y.data<float>()[i] = 0.5f * static_cast<float>((i * 7) % 11) - 1.75f;
  }
  std::map<std::string, switchyard::Tensor> outputs = exe.run({{"x", x}, {"y", y}});
  auto it = outputs.find("sum");
  if (it == outputs.end()) return fail("the Add model has no output 'sum'");
  const switchyard::Tensor& sum = it->second;
  if (sum.dtype() != switchyard::DType::Float32 || sum.shape() != shape)
    return fail("sum is " + std::string(switchyard::dtype_name(sum.dtype())) + "[" +
                switchyard::shape_to_string(sum.shape()) + "], expected float[3x4x5]");
  int64_t matching = 0;
  for (int64_t i = 0; i < sum.numel(); ++i)
    if (sum.data<float>()[i] == x.data<float>()[i] + y.data<float>()[i]) ++matching;
  std::printf("Add %s: %lld of %lld values match\n", switchyard::shape_to_string(shape).c_str(),
              static_cast<long long>(matching), static_cast<long long>(sum.numel()));
  return matching == sum.numel() ? 0 : fail("the sums differ from x + y");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (std::strcmp(switchyard::version(), SWITCHYARD_VERSION_STRING) != 0)
      return fail(std::string("headers are ") + SWITCHYARD_VERSION_STRING + ", the library " +
                  switchyard::version());
    std::printf("switchyard %s\n", switchyard::version());
    // An inline helper of the headers that calls into the library.
    if (static_cast<float>(switchyard::Float16(-2.5f)) != -2.5f)
      return fail("Float16(-2.5) does not read back as -2.5");
    bool cpu = false;
    for (const switchyard::BackendStatus& b : switchyard::backend_status())
      cpu = cpu || (b.name == "cpu" && b.loaded);
    if (!cpu) return fail("backend_status() lists no loaded cpu backend");
    std::printf("cpu backend: loaded\n");
    return argc > 1 ? run_add(argv[1]) : 0;
  } catch (const switchyard::Error& e) {
    return fail(e.what());
  }
}
