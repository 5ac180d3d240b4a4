#include "tooling/inputs.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>

#include "ir/check.h"

namespace switchyard::tooling {

namespace {

// A dim as ValueInfo spells it: digits are a static size, "?" unknown, anything else a symbol.
ir::Dim parse_dim(const std::string& text) {
  ir::Dim d;
  if (text == "?" || text.empty()) return d;
  if (text.find_first_not_of("0123456789") == std::string::npos && text.size() < 19) {
    d.value = std::stoll(text);
  } else {
    d.symbol = text;
  }
  return d;
}

}  // namespace

Declared declared_of(const ValueInfo& info) {
  ir::Type tensor;  // unknown: the model declares nothing
  if (info.dtype != DType::Undefined || info.has_shape) {
    std::optional<ir::Shape> shape;
    if (info.has_shape) {
      shape.emplace();
      for (const std::string& d : info.dims) shape->push_back(parse_dim(d));
    }
    tensor = ir::Type::tensor(info.dtype, std::move(shape));
  }
  if (info.kind == "sequence") return {info.name, ir::Type::sequence(std::move(tensor))};
  if (info.kind == "optional") return {info.name, ir::Type::optional(std::move(tensor))};
  return {info.name, std::move(tensor)};
}

std::vector<Declared> declared_of(const std::vector<ValueInfo>& values) {
  std::vector<Declared> out;
  for (const ValueInfo& v : values) out.push_back(declared_of(v));
  return out;
}

std::vector<Declared> declared_of(const std::vector<ir::Value*>& values) {
  std::vector<Declared> out;
  for (const ir::Value* v : values) out.push_back({v->name(), v->type()});
  return out;
}

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

std::vector<int64_t> resolve_input_shape(const Declared& input, const InputSpec& spec) {
  const ir::Type* type = &input.type;
  if (type->is_optional() && type->element) type = type->element.get();
  SY_CHECK(type->is_tensor(), InvalidArgument, "input '{}' is a {}; give it in the inputs file",
           input.name, type->to_string());
  auto given = spec.shapes.find(input.name);
  if (given != spec.shapes.end()) {
    const std::vector<int64_t>& shape = given->second;
    if (type->shape) {
      SY_CHECK(shape.size() == type->shape->size(), InvalidArgument,
               "--shape {}: rank {} given, the model declares {}", input.name, shape.size(),
               ir::shape_to_string(*type->shape));
      for (size_t i = 0; i < shape.size(); ++i) {
        const ir::Dim& d = (*type->shape)[i];
        SY_CHECK(!d.is_static() || d.value == shape[i], InvalidArgument,
                 "--shape {}: dim {} is {}, the model declares {}", input.name, i, shape[i],
                 ir::shape_to_string(*type->shape));
      }
    }
    return shape;
  }
  SY_CHECK(type->shape.has_value(), InvalidArgument,
           "input '{}' has no declared shape; give it with --shape {}=DIMS", input.name,
           input.name);
  std::vector<int64_t> shape;
  for (size_t i = 0; i < type->shape->size(); ++i) {
    const ir::Dim& d = (*type->shape)[i];
    if (d.is_static()) {
      shape.push_back(d.value);
    } else if (d.is_symbolic()) {
      auto it = spec.dims.find(d.symbol);
      SY_CHECK(it != spec.dims.end(), InvalidArgument,
               "input '{}' dim {} is '{}'; give it with --dim {}=N or --shape {}=DIMS", input.name,
               i, d.symbol, d.symbol, input.name);
      SY_CHECK(it->second >= 0, InvalidArgument, "--dim {}={} is negative", d.symbol, it->second);
      shape.push_back(it->second);
    } else {
      SY_THROW(InvalidArgument, "input '{}' dim {} is unknown; give it with --shape {}=DIMS",
               input.name, i, input.name);
    }
  }
  checked_numel(shape);
  return shape;
}

ir::Tensor make_seeded_input(const Declared& input, size_t position, const InputSpec& spec) {
  std::vector<int64_t> shape = resolve_input_shape(input, spec);
  const ir::Type* type = &input.type;
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

namespace {

// The tensor type of an input (an optional's element), or nullptr for other kinds.
const ir::Type* tensor_type_of(const Declared& input) {
  const ir::Type* type = &input.type;
  if (type->is_optional() && type->element) type = type->element.get();
  return type->is_tensor() ? type : nullptr;
}

std::string names_of(const std::vector<Declared>& values) {
  std::string out;
  for (const Declared& v : values) out += (out.empty() ? "" : ", ") + v.name;
  return out.empty() ? "none" : out;
}

std::string keys_of(const std::map<std::string, ir::Tensor>& arrays) {
  std::string out;
  for (const auto& kv : arrays) out += (out.empty() ? "" : ", ") + kv.first;
  return out.empty() ? "none" : out;
}

// Checks an array given for `input` against its declared dtype and the --shape / --dim the
// user gave; binds the symbolic dims it fixes into `dims` (for the inputs that are seeded).
void check_given(const Declared& input, const ir::Tensor& array, const std::string& key,
                 const std::string& source, const InputSpec& spec,
                 std::map<std::string, int64_t>& dims) {
  const ir::Type* type = tensor_type_of(input);
  SY_CHECK(type != nullptr || input.type.is_unknown(), InvalidArgument,
           "{}: array '{}' is a tensor, but input '{}' is a {}", source, key, input.name,
           input.type.to_string());
  if (!type) return;
  SY_CHECK(type->dtype == ir::DType::Undefined || type->dtype == array.dtype(), InvalidArgument,
           "{}: array '{}' has dtype {}, but the model declares input '{}' as {}", source, key,
           ir::dtype_name(array.dtype()), input.name, ir::dtype_name(type->dtype));
  const std::string shape = ir::shape_to_string(array.shape());
  auto wanted = spec.shapes.find(input.name);
  if (wanted != spec.shapes.end()) {
    SY_CHECK(wanted->second == array.shape(), InvalidArgument,
             "{}: array '{}' has shape {}, which contradicts --shape {}={}", source, key, shape,
             input.name, fmt::join(wanted->second, "x"));
  }
  if (!type->shape || type->shape->size() != array.shape().size()) return;  // run() refuses it
  for (size_t i = 0; i < type->shape->size(); ++i) {
    const ir::Dim& d = (*type->shape)[i];
    if (!d.is_symbolic()) continue;
    int64_t got = array.shape()[i];
    auto bound = spec.dims.find(d.symbol);
    SY_CHECK(
        bound == spec.dims.end() || bound->second == got, InvalidArgument,
        "{}: array '{}' has shape {}, whose dim {} ('{}') is {}, which contradicts --dim {}={}",
        source, key, shape, i, d.symbol, got, d.symbol,
        bound == spec.dims.end() ? 0 : bound->second);
    dims.emplace(d.symbol, got);
  }
}

}  // namespace

ResolvedInputs resolve_inputs(const std::vector<Declared>& inputs,
                              const std::vector<Declared>& outputs,
                              const std::map<std::string, ir::Tensor>& given,
                              const std::string& source, const InputSpec& spec, bool seed_given) {
  // Every --shape and --dim must bind something.
  std::set<std::string> symbols;
  for (const Declared& v : inputs) {
    if (const ir::Type* t = tensor_type_of(v); t && t->shape)
      for (const ir::Dim& d : *t->shape)
        if (d.is_symbolic()) symbols.insert(d.symbol);
  }
  for (const auto& [name, shape] : spec.shapes) {
    bool known = std::any_of(inputs.begin(), inputs.end(),
                             [&](const Declared& v) { return v.name == name; });
    SY_CHECK(known, InvalidArgument,
             "--shape {}: the model has no input named '{}'; its inputs: {}", name, name,
             names_of(inputs));
  }
  for (const auto& [name, value] : spec.dims) {
    SY_CHECK(symbols.count(name), InvalidArgument,
             "--dim {}={}: no input of the model has a dim named '{}'; its symbolic dims: {}", name,
             value, name, symbols.empty() ? "none" : fmt::format("{}", fmt::join(symbols, ", ")));
  }

  // Each key names one input (by name or as in.<name>) or, as out.<name>, one output.
  std::map<std::string, std::string> key_of;  // input name -> key
  ResolvedInputs result;
  for (const auto& [key, array] : given) {
    const Declared* match = nullptr;
    for (const Declared& v : inputs)
      if (key == v.name || key == "in." + v.name) match = &v;
    if (!match) {
      bool reference_output = key.rfind("out.", 0) == 0 &&
                              std::any_of(outputs.begin(), outputs.end(), [&](const Declared& v) {
                                return "out." + v.name == key;
                              });
      SY_CHECK(reference_output, InvalidArgument,
               "{}: array '{}' names no input of the model; its inputs: {} (keys are input "
               "names or in.<name>)",
               source, key, names_of(inputs));
      result.ignored_keys.push_back(key);
      continue;
    }
    auto [it, fresh] = key_of.emplace(match->name, key);
    SY_CHECK(fresh, InvalidArgument, "{}: arrays '{}' and '{}' both give input '{}'", source,
             it->second, key, match->name);
  }

  InputSpec seeded = spec;
  for (const auto& [name, key] : key_of) {
    const Declared& v = *std::find_if(inputs.begin(), inputs.end(),
                                      [&](const Declared& x) { return x.name == name; });
    check_given(v, given.at(key), key, source, spec, seeded.dims);
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Declared& v = inputs[i];
    auto it = key_of.find(v.name);
    if (it != key_of.end()) {
      result.values.emplace_back(given.at(it->second));
      result.origins.push_back("from " + source);
      continue;
    }
    SY_CHECK(source.empty() || seed_given, InvalidArgument,
             "input '{}' is not in {} (its keys: {}); add it as '{}' or '{}', or pass --seed N "
             "to seed the inputs the file lacks",
             v.name, source, keys_of(given), v.name, "in." + v.name);
    result.values.emplace_back(make_seeded_input(v, i, seeded));
    result.origins.push_back(source.empty() ? fmt::format("seed {}", spec.seed)
                                            : fmt::format("seed {}, not in {}", spec.seed, source));
  }
  return result;
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

}  // namespace switchyard::tooling
