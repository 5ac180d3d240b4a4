// Helpers shared by the families' inference functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ops/schema.h"

namespace switchyard::ops {

/// Numpy-style broadcast of symbolic shapes; fails naming the node on incompatible dims.
ir::Shape broadcast_shapes(const InferContext& ctx, const std::vector<ir::Shape>& shapes);
/// Broadcast of concrete shapes; nullopt when incompatible.
std::optional<std::vector<int64_t>> broadcast_dims(const std::vector<std::vector<int64_t>>& shapes);
/// Maps a possibly negative axis into [0, rank); fails naming the node when out of range.
int64_t normalize_axis(const InferContext& ctx, int64_t axis, int64_t rank);
/// Same for use at run time (throws InvalidArgument naming the node).
int64_t normalize_axis(const ir::Node& node, int64_t axis, int64_t rank);
/// Output type = input i's type (dtype and shape).
void propagate_input(InferContext& ctx, size_t input, size_t output = 0);
/// Requires input i to be a tensor whose dtype is one of `allowed` (empty = any).
ir::DType require_dtype(const InferContext& ctx, size_t input,
                        const std::vector<ir::DType>& allowed);
/// Constant integer data of input i, or nullopt when absent or not known at compile time; fails
/// when the constant does not hold integers.
std::optional<std::vector<int64_t>> constant_ints(const InferContext& ctx, size_t i);
/// Length of a 1-D input when its type says so; nullopt otherwise. With `allow_scalar`, a scalar
/// counts as one value (exporters write axes so, and ONNX Runtime accepts them).
std::optional<int64_t> static_length(const InferContext& ctx, size_t i, bool allow_scalar = false);
/// Requires the int attribute (default `fallback`) to be 0 or 1.
void require_bool_attr(const InferContext& ctx, const std::string& attr, int64_t fallback);
/// A dim that is the product of the given dims, or unknown if any is not static.
ir::Dim multiply_dims(const std::vector<ir::Dim>& dims);

/// Common dtype lists.
const std::vector<ir::DType>& float_dtypes();      ///< f16, bf16, f32, f64
const std::vector<ir::DType>& numeric_dtypes();    ///< floats and all integers
const std::vector<ir::DType>& all_dtypes();        ///< numeric, bool, string
const std::vector<ir::DType>& quantized_dtypes();  ///< uint8, int8
const std::vector<ir::DType>& index_dtypes();      ///< int32, int64

/// Requires the dtypes of QLinearConv / QLinearMatMul inputs 0-7 (a, a_scale, a_zero_point, b,
/// b_scale, b_zero_point, y_scale, y_zero_point): quantized a, b and y with zero points of the
/// same dtype, float scales. Returns y's dtype.
ir::DType require_qlinear_dtypes(const InferContext& ctx);

}  // namespace switchyard::ops
