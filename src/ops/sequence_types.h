// Type algebra over the ONNX value kinds (tensor, sequence, optional), shared by the sequence and
// control_flow schemas: the union of two types (a value that may be either) and the merge of a
// type derived from a producer with the type the model declared.
#pragma once

#include <optional>

#include "ir/type.h"

namespace switchyard::ops {

/// The least specific type covering both `a` and `b`: equal dims stay, differing dims become
/// unknown, differing ranks drop the shape; optional(x) with y gives optional(x | y). An unknown
/// dtype takes the other's. Unknown if either is unknown. nullopt when the two conflict
/// (different dtypes, or value kinds that no type covers).
std::optional<ir::Type> unite_types(const ir::Type& a, const ir::Type& b);

/// Combines what a producer gives a value (`derived`) with what the model declared for it:
/// a static dim wins over a symbol or unknown, a derived symbol over a declared one, conflicting
/// static dims become unknown, differing ranks drop the shape; an optional declaration wraps a
/// plain derived value. nullopt when the dtypes or value kinds conflict.
std::optional<ir::Type> merge_declared_type(const ir::Type& derived, const ir::Type& declared);

/// Structural equality of types (dims compared by value and symbol).
bool same_type(const ir::Type& a, const ir::Type& b);

}  // namespace switchyard::ops
