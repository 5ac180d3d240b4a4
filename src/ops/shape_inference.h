// Helpers shared by the families' inference functions.
#pragma once

#include <optional>
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
/// A dim that is the product of the given dims, or unknown if any is not static.
ir::Dim multiply_dims(const std::vector<ir::Dim>& dims);

/// Common dtype lists.
const std::vector<ir::DType>& float_dtypes();    ///< f16, bf16, f32, f64
const std::vector<ir::DType>& numeric_dtypes();  ///< floats and all integers
const std::vector<ir::DType>& all_dtypes();      ///< numeric, bool, string

}  // namespace switchyard::ops
