// TensorProto → ir::Tensor, TypeProto → ir::Type.

#include <bit>
#include <cstring>
#include <optional>
#include <vector>

#include "onnx/external_data.h"
#include "onnx/proto_convert.h"

namespace switchyard::onnx_import::detail {

static_assert(std::endian::native == std::endian::little,
              "ONNX raw_data is little-endian; a big-endian host would need byte swapping");

namespace {

// The deepest sequence/optional nesting accepted in a TypeProto.
constexpr int kMaxTypeNesting = 32;

// Copies every value of a typed field into the tensor, converting each with `convert`.
template <typename T, typename Field, typename Convert>
void copy_field(ir::Tensor& out, const Field& field, Convert convert) {
  T* dst = out.data<T>();
  for (int i = 0; i < field.size(); ++i) dst[i] = convert(field.Get(i));
}

// The typed field that stores `dtype` when raw_data is not used, and its name.
struct TypedField {
  const char* name;
  int count;
};

TypedField typed_field_of(const onnx::TensorProto& t, ir::DType dtype) {
  using ir::DType;
  switch (dtype) {
    case DType::Float32:
      return {"float_data", t.float_data_size()};
    case DType::Float64:
      return {"double_data", t.double_data_size()};
    case DType::Int64:
      return {"int64_data", t.int64_data_size()};
    case DType::UInt32:
    case DType::UInt64:
      return {"uint64_data", t.uint64_data_size()};
    case DType::String:
      return {"string_data", t.string_data_size()};
    default:
      return {"int32_data", t.int32_data_size()};
  }
}

void fill_from_typed_field(ir::Tensor& out, const onnx::TensorProto& t) {
  using ir::DType;
  auto narrow16 = [](int32_t v) { return static_cast<uint16_t>(static_cast<uint32_t>(v)); };
  switch (out.dtype()) {
    case DType::Float32:
      copy_field<float>(out, t.float_data(), [](float v) { return v; });
      break;
    case DType::Float64:
      copy_field<double>(out, t.double_data(), [](double v) { return v; });
      break;
    case DType::Int64:
      copy_field<int64_t>(out, t.int64_data(), [](int64_t v) { return v; });
      break;
    case DType::UInt32:
      copy_field<uint32_t>(out, t.uint64_data(), [](uint64_t v) { return uint32_t(v); });
      break;
    case DType::UInt64:
      copy_field<uint64_t>(out, t.uint64_data(), [](uint64_t v) { return v; });
      break;
    case DType::Int32:
      copy_field<int32_t>(out, t.int32_data(), [](int32_t v) { return v; });
      break;
    case DType::Int16:
      copy_field<int16_t>(out, t.int32_data(), [](int32_t v) { return int16_t(v); });
      break;
    case DType::Int8:
      copy_field<int8_t>(out, t.int32_data(), [](int32_t v) { return int8_t(v); });
      break;
    // Half-precision values travel as their 16 bits in the low half of an int32.
    case DType::UInt16:
    case DType::Float16:
    case DType::BFloat16:
      copy_field<uint16_t>(out, t.int32_data(), narrow16);
      break;
    case DType::UInt8:
      copy_field<uint8_t>(out, t.int32_data(), [](int32_t v) { return uint8_t(v); });
      break;
    case DType::Bool:
      copy_field<bool>(out, t.int32_data(), [](int32_t v) { return v != 0; });
      break;
    case DType::String:
      copy_field<std::string>(out, t.string_data(), [](const std::string& v) { return v; });
      break;
    default:
      SY_ASSERT(false);
  }
}

ir::Type type_from_proto_at(const onnx::TypeProto& type, const std::string& context, int depth) {
  SY_CHECK(depth <= kMaxTypeNesting, InvalidModel, "{}: type nests more than {} levels", context,
           kMaxTypeNesting);
  switch (type.value_case()) {
    case onnx::TypeProto::kTensorType: {
      const auto& tt = type.tensor_type();
      ir::DType dtype =
          tt.elem_type() == 0 ? ir::DType::Undefined : dtype_from_proto(tt.elem_type(), context);
      if (!tt.has_shape()) return ir::Type::tensor(dtype);
      ir::Shape shape;
      for (const auto& d : tt.shape().dim()) {
        // Some exporters write a negative dim_value for "dynamic": it carries no size.
        if (d.has_dim_value() && d.dim_value() >= 0) {
          shape.emplace_back(d.dim_value());
        } else if (d.has_dim_param() && !d.dim_param().empty()) {
          shape.emplace_back(d.dim_param());
        } else {
          shape.emplace_back();
        }
      }
      return ir::Type::tensor(dtype, std::move(shape));
    }
    case onnx::TypeProto::kSequenceType: {
      const auto& st = type.sequence_type();
      if (!st.has_elem_type()) return ir::Type::sequence(ir::Type{});
      return ir::Type::sequence(type_from_proto_at(st.elem_type(), context, depth + 1));
    }
    case onnx::TypeProto::kOptionalType: {
      const auto& ot = type.optional_type();
      if (!ot.has_elem_type()) return ir::Type::optional(ir::Type{});
      return ir::Type::optional(type_from_proto_at(ot.elem_type(), context, depth + 1));
    }
    case onnx::TypeProto::kMapType:
      SY_THROW(Unsupported, "{}: map types (ONNX-ML) are not supported", context);
    case onnx::TypeProto::kSparseTensorType:
      SY_THROW(Unsupported, "{}: sparse tensor types are not supported", context);
    default:
      return ir::Type{};
  }
}

}  // namespace

ir::DType dtype_from_proto(int32_t data_type, const std::string& context) {
  SY_CHECK(data_type >= 1 && data_type <= static_cast<int32_t>(ir::DType::BFloat16), Unsupported,
           "{}: data type {} is not supported (newer than ONNX 1.12's types, or invalid)", context,
           data_type);
  return static_cast<ir::DType>(data_type);
}

ir::Tensor tensor_from_proto(const onnx::TensorProto& t, const std::string& base_dir,
                             const std::string& context, const ExternalDataResolver* external) {
  SY_CHECK(!t.has_segment(), Unsupported, "{}: segmented tensors are not supported", context);
  SY_CHECK(t.data_type() != 0, InvalidModel, "{}: data_type is not set", context);
  ir::DType dtype = dtype_from_proto(t.data_type(), context);
  SY_CHECK(ir::dtype_is_known(dtype), Unsupported, "{}: {} tensors are not supported", context,
           ir::dtype_name(dtype));
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  for (int64_t d : dims) {
    SY_CHECK(d >= 0, InvalidModel, "{}: negative dimension {} in dims [{}]", context, d,
             fmt::join(dims, ","));
  }
  int64_t numel = with_context(context, [&] { return ir::checked_numel(dims); });
  std::string shape_text = ir::shape_to_string(dims);

  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    SY_CHECK(dtype != ir::DType::String, InvalidModel,
             "{}: string tensors cannot use external data", context);
    size_t nbytes = with_context(context, [&] { return ir::checked_nbytes(dtype, numel); });
    if (external && *external) {
      ExternalRef ref = parse_external_ref(t, nbytes, context);
      ExternalBytes bytes =
          with_context(context, [&] { return (*external)(ref.location, ref.offset, ref.length); });
      SY_CHECK(bytes.data != nullptr || nbytes == 0, InvalidModel,
               "{}: external data '{}' has no bytes", context, ref.location);
      return ir::Tensor::wrap(dtype, std::move(dims), std::move(bytes.owner), bytes.data);
    }
    ExternalRegion region(t, base_dir, nbytes, context);
    ir::Tensor out(dtype, std::move(dims));
    region.read_into(out.raw());
    return out;
  }

  if (t.has_raw_data()) {
    SY_CHECK(dtype != ir::DType::String, InvalidModel,
             "{}: string tensors cannot use raw_data (use string_data)", context);
    size_t nbytes = with_context(context, [&] { return ir::checked_nbytes(dtype, numel); });
    SY_CHECK(t.raw_data().size() == nbytes, InvalidModel,
             "{}: raw_data has {} bytes, expected {} ({} of shape {})", context,
             t.raw_data().size(), nbytes, ir::dtype_name(dtype), shape_text);
    ir::Tensor out(dtype, std::move(dims));
    if (nbytes > 0) std::memcpy(out.raw(), t.raw_data().data(), nbytes);
    return out;
  }

  TypedField field = typed_field_of(t, dtype);
  SY_CHECK(field.count == numel, InvalidModel, "{}: {} has {} values, expected {} ({} of shape {})",
           context, field.name, field.count, numel, ir::dtype_name(dtype), shape_text);
  ir::Tensor out(dtype, std::move(dims));
  fill_from_typed_field(out, t);
  return out;
}

ir::Type type_from_proto(const onnx::TypeProto& type, const std::string& context) {
  return type_from_proto_at(type, context, 0);
}

}  // namespace switchyard::onnx_import::detail
