#include "runtime/inputs.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "ir/check.h"

namespace switchyard::runtime {

std::vector<int64_t> parse_shape(const std::string& text) {
  std::vector<int64_t> dims;
  if (text.empty() || text == "scalar") return dims;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('x', pos);
    if (end == std::string::npos) end = text.size();
    std::string part = text.substr(pos, end - pos);
    SY_CHECK(!part.empty() && part.find_first_not_of("0123456789") == std::string::npos &&
                 part.size() < 19,
             InvalidArgument, "shape '{}': '{}' is not a dimension", text, part);
    dims.push_back(std::stoll(part));
    pos = end + 1;
  }
  checked_numel(dims);
  return dims;
}

std::vector<int64_t> resolve_input_shape(const ir::Value& input, const InputSpec& spec) {
  const ir::Type* type = &input.type();
  if (type->is_optional() && type->element) type = type->element.get();
  SY_CHECK(type->is_tensor(), InvalidArgument, "input '{}' is a {}; give it in the inputs file",
           input.name(), type->to_string());
  auto given = spec.shapes.find(input.name());
  if (given != spec.shapes.end()) {
    const std::vector<int64_t>& shape = given->second;
    if (type->shape) {
      SY_CHECK(shape.size() == type->shape->size(), InvalidArgument,
               "--shape {}: rank {} given, the model declares {}", input.name(), shape.size(),
               ir::shape_to_string(*type->shape));
      for (size_t i = 0; i < shape.size(); ++i) {
        const ir::Dim& d = (*type->shape)[i];
        SY_CHECK(!d.is_static() || d.value == shape[i], InvalidArgument,
                 "--shape {}: dim {} is {}, the model declares {}", input.name(), i, shape[i],
                 ir::shape_to_string(*type->shape));
      }
    }
    return shape;
  }
  SY_CHECK(type->shape.has_value(), InvalidArgument,
           "input '{}' has no declared shape; give it with --shape {}=DIMS", input.name(),
           input.name());
  std::vector<int64_t> shape;
  for (size_t i = 0; i < type->shape->size(); ++i) {
    const ir::Dim& d = (*type->shape)[i];
    if (d.is_static()) {
      shape.push_back(d.value);
    } else if (d.is_symbolic()) {
      auto it = spec.dims.find(d.symbol);
      SY_CHECK(it != spec.dims.end(), InvalidArgument,
               "input '{}' dim {} is '{}'; give it with --dim {}=N or --shape {}=DIMS",
               input.name(), i, d.symbol, d.symbol, input.name());
      SY_CHECK(it->second >= 0, InvalidArgument, "--dim {}={} is negative", d.symbol, it->second);
      shape.push_back(it->second);
    } else {
      SY_THROW(InvalidArgument, "input '{}' dim {} is unknown; give it with --shape {}=DIMS",
               input.name(), i, input.name());
    }
  }
  checked_numel(shape);
  return shape;
}

ir::Tensor make_seeded_input(const ir::Value& input, size_t position, const InputSpec& spec) {
  std::vector<int64_t> shape = resolve_input_shape(input, spec);
  const ir::Type* type = &input.type();
  if (type->is_optional() && type->element) type = type->element.get();
  ir::Tensor t(type->dtype, shape);
  std::mt19937_64 rng(spec.seed * 1000003ULL + position);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_int_distribution<int> small(0, 15);
  int64_t n = t.numel();
  switch (t.dtype()) {
    case ir::DType::Float32:
      for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = static_cast<float>(normal(rng));
      break;
    case ir::DType::Float64:
      for (int64_t i = 0; i < n; ++i) t.data<double>()[i] = normal(rng);
      break;
    case ir::DType::Float16:
      for (int64_t i = 0; i < n; ++i)
        t.data<ir::Float16>()[i] = ir::Float16(static_cast<float>(normal(rng)));
      break;
    case ir::DType::BFloat16:
      for (int64_t i = 0; i < n; ++i)
        t.data<ir::BFloat16>()[i] = ir::BFloat16(static_cast<float>(normal(rng)));
      break;
    case ir::DType::Bool:
      for (int64_t i = 0; i < n; ++i) t.data<bool>()[i] = (rng() & 1) != 0;
      break;
    case ir::DType::String:
      for (int64_t i = 0; i < n; ++i) t.data<std::string>()[i] = std::to_string(small(rng));
      break;
    default: {
      // Integers: uniform in [0, 16), written through the widest type then narrowed.
      size_t es = ir::dtype_size(t.dtype());
      auto* bytes = static_cast<unsigned char*>(t.raw());
      for (int64_t i = 0; i < n; ++i) {
        uint64_t v = static_cast<uint64_t>(small(rng));
        std::memcpy(bytes + static_cast<size_t>(i) * es, &v, es);  // little endian
      }
    }
  }
  return t;
}

ValueSummary summarize(const std::string& name, const ir::Datum& value) {
  ValueSummary s;
  s.name = name;
  if (value.is_sequence()) {
    s.dtype = fmt::format("seq({})", ir::dtype_name(value.sequence_dtype));
    s.shape = fmt::format("[{} items]", value.sequence.size());
    return s;
  }
  if (value.is_empty()) {
    s.dtype = "optional";
    s.shape = "none";
    return s;
  }
  const ir::Tensor& t = value.tensor;
  s.dtype = std::string(ir::dtype_name(t.dtype()));
  s.shape = ir::shape_to_string(t.shape());
  if (t.dtype() == ir::DType::String || t.numel() == 0) return s;
  s.numeric = true;
  s.min = std::numeric_limits<double>::infinity();
  s.max = -s.min;
  double sum = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = t.scalar_as_double(i);
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
    sum += v;
  }
  s.mean = sum / static_cast<double>(t.numel());
  return s;
}

}  // namespace switchyard::runtime
