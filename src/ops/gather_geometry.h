// Shape rules of the gather and scatter ops, shared by every backend's kernels: which index and
// update shapes fit the data, and the output shape. Index values are checked by the kernels
// (the GPU checks them on the device). Errors are InvalidArgument naming the node, with the
// same words on every device.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace switchyard::ops {

/// GatherElements / ScatterElements: `indices` (of the data's rank) fits data on every axis but
/// `axis` (already normalized).
void check_element_indices_shape(const ir::Node& node, const std::vector<int64_t>& data,
                                 const std::vector<int64_t>& indices, size_t axis);

/// ScatterElements: data of rank >= 1; updates of the indices' shape and the data's dtype;
/// the indices' shape fits. Returns the normalized axis.
size_t check_scatter_elements(const ir::Node& node, const ir::Tensor& data,
                              const std::vector<int64_t>& indices, const ir::Tensor& updates,
                              int64_t axis);

/// GatherND with `batch_dims`: the ranks, the indices' last dim m and the batch dims agree.
/// Returns the output shape: indices' shape without its last dim, then data's dims after
/// batch_dims + m.
std::vector<int64_t> gather_nd_shape(const ir::Node& node, const std::vector<int64_t>& data,
                                     const std::vector<int64_t>& indices, int64_t batch_dims);

/// ScatterND: indices of rank >= 1 whose last dim k is at most the data's rank; updates of the
/// data's dtype and of shape indices.shape[:-1] + data.shape[k:]. Returns k.
int64_t check_scatter_nd(const ir::Node& node, const ir::Tensor& data,
                         const std::vector<int64_t>& indices, const ir::Tensor& updates);

}  // namespace switchyard::ops
