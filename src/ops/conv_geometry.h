// Sliding-window geometry shared by Conv, ConvTranspose and the pools: auto_pad modes, output
// sizes and the pads actually applied, for static sizes (kernels) and symbolic dims (schemas).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/check.h"
#include "ir/checked_math.h"
#include "ir/graph.h"
#include "ir/type.h"

namespace switchyard::ops {

enum class AutoPad { NotSet, SameUpper, SameLower, Valid };

/// The auto_pad mode for its ONNX spelling, or nullopt when unknown.
inline std::optional<AutoPad> parse_auto_pad(const std::string& s) {
  if (s == "NOTSET" || s.empty()) return AutoPad::NotSet;
  if (s == "SAME_UPPER") return AutoPad::SameUpper;
  if (s == "SAME_LOWER") return AutoPad::SameLower;
  if (s == "VALID") return AutoPad::Valid;
  return std::nullopt;
}

/// One spatial dim of a window op (Conv, pools): the output size for input size `in`, kernel
/// `k`, stride `s`, dilation `d`. `pad_begin`/`pad_end` hold the explicit pads on entry (used
/// for NOTSET) and the pads applied on return; with ceil_mode, pad_end grows to cover the last
/// partial window. Returns a value < 1 when the window does not fit.
inline int64_t window_output_size(int64_t in, int64_t k, int64_t s, int64_t d, AutoPad mode,
                                  bool ceil_mode, int64_t& pad_begin, int64_t& pad_end) {
  // Every value may come from a model file: the arithmetic is overflow-checked.
  using ir::checked_add, ir::checked_mul, ir::checked_sub;
  int64_t extent = checked_add(checked_mul(k - 1, d, "window extent"), 1, "window extent");
  switch (mode) {
    case AutoPad::Valid: {
      pad_begin = pad_end = 0;
      return in < extent ? 0 : (in - extent) / s + 1;
    }
    case AutoPad::SameUpper:
    case AutoPad::SameLower: {
      int64_t out = checked_add(in, s - 1, "output size") / s;
      int64_t reach = checked_add(checked_mul(out - 1, s, "window reach"), extent, "window reach");
      int64_t total = std::max<int64_t>(0, reach - in);
      pad_begin = mode == AutoPad::SameUpper ? total / 2 : total - total / 2;
      pad_end = total - pad_begin;
      return out;
    }
    case AutoPad::NotSet:
      break;
  }
  int64_t padded = checked_add(checked_add(in, pad_begin, "padded size"), pad_end, "padded size");
  int64_t span = padded - extent;
  if (span < 0) return 0;
  int64_t out = span / s + 1;
  if (ceil_mode && span % s != 0) {
    ++out;
    // The last window must start inside the input or the begin padding.
    if ((out - 1) * s >= in + pad_begin) --out;
  }
  int64_t reach = checked_add(checked_mul(out - 1, s, "window reach"), extent, "window reach");
  pad_end = std::max<int64_t>(pad_end, reach - in - pad_begin);
  return out;
}

/// The symbolic counterpart: a static result for a static input, the input's symbol where the
/// window keeps the size (stride 1 with SAME, or a 1-wide window without pads), else unknown.
inline ir::Dim window_output_dim(const ir::Dim& in, int64_t k, int64_t s, int64_t d, AutoPad mode,
                                 bool ceil_mode, int64_t pad_begin, int64_t pad_end) {
  if (in.is_static()) {
    int64_t pb = pad_begin, pe = pad_end;
    return ir::Dim(window_output_size(in.value, k, s, d, mode, ceil_mode, pb, pe));
  }
  bool same = mode == AutoPad::SameUpper || mode == AutoPad::SameLower;
  bool keeps =
      s == 1 && (same || (k == 1 && (mode == AutoPad::Valid || (pad_begin == 0 && pad_end == 0))));
  return keeps ? in : ir::Dim();
}

/// Window attributes of a node, validated: every list has one entry per spatial dim (pads two).
struct WindowAttrs {
  AutoPad auto_pad = AutoPad::NotSet;
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads;  ///< begins then ends
  bool ceil_mode = false;
  size_t spatial() const { return kernel.size(); }
};

/// Reads auto_pad, strides, dilations, pads and ceil_mode for a window of size `kernel`
/// (attribute kernel_shape, when present, must agree with it). Throws InvalidModel naming the
/// node on bad values.
inline WindowAttrs read_window_attrs(const ir::Node& node, std::vector<int64_t> kernel) {
  WindowAttrs a;
  size_t n = kernel.size();
  auto mode = parse_auto_pad(node.attr_string("auto_pad", "NOTSET"));
  SY_CHECK(mode.has_value(), InvalidModel,
           "{}: auto_pad '{}' is not one of NOTSET, SAME_UPPER, "
           "SAME_LOWER, VALID",
           node.describe(), node.attr_string("auto_pad", ""));
  a.auto_pad = *mode;
  if (node.has_attribute("kernel_shape")) {
    auto ks = node.attr_ints("kernel_shape");
    SY_CHECK(ks == kernel, InvalidModel,
             "{}: kernel_shape {} does not match the weight's "
             "spatial dims {}",
             node.describe(), ks, kernel);
  }
  for (int64_t k : kernel)
    SY_CHECK(k >= 1, InvalidModel, "{}: kernel dims must be >= 1, got {}", node.describe(), kernel);
  a.kernel = std::move(kernel);
  a.strides = node.attr_ints("strides", std::vector<int64_t>(n, 1));
  a.dilations = node.attr_ints("dilations", std::vector<int64_t>(n, 1));
  a.pads = node.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  SY_CHECK(a.strides.size() == n, InvalidModel, "{}: strides has {} values, expected {}",
           node.describe(), a.strides.size(), n);
  SY_CHECK(a.dilations.size() == n, InvalidModel, "{}: dilations has {} values, expected {}",
           node.describe(), a.dilations.size(), n);
  SY_CHECK(a.pads.size() == 2 * n, InvalidModel, "{}: pads has {} values, expected {}",
           node.describe(), a.pads.size(), 2 * n);
  for (size_t i = 0; i < n; ++i) {
    SY_CHECK(a.strides[i] >= 1, InvalidModel, "{}: strides must be >= 1, got {}", node.describe(),
             a.strides);
    SY_CHECK(a.dilations[i] >= 1, InvalidModel, "{}: dilations must be >= 1, got {}",
             node.describe(), a.dilations);
  }
  for (int64_t p : a.pads)
    SY_CHECK(p >= 0, InvalidModel, "{}: pads must be >= 0, got {}", node.describe(), a.pads);
  int64_t ceil = node.attr_int("ceil_mode", 0);
  SY_CHECK(ceil == 0 || ceil == 1, InvalidModel, "{}: ceil_mode must be 0 or 1, got {}",
           node.describe(), ceil);
  a.ceil_mode = ceil == 1;
  return a;
}

/// MaxUnpool's default output size of spatial dim `i` for input size `in`:
/// (in - 1) * stride + kernel - pad_begin - pad_end. Throws InvalidModel when it overflows int64.
inline int64_t unpooled_size(int64_t in, const WindowAttrs& a, size_t i) {
  const char* what = "MaxUnpool output size";
  int64_t size = ir::checked_add(ir::checked_mul(in - 1, a.strides[i], what), a.kernel[i], what);
  size = ir::checked_sub(size, a.pads[i], what);
  return ir::checked_sub(size, a.pads[i + a.spatial()], what);
}

/// Concrete geometry of one call: output sizes and the pads applied (ceil_mode may grow ends).
struct WindowGeometry {
  std::vector<int64_t> out;
  std::vector<int64_t> pad_begin;
  std::vector<int64_t> pad_end;
};

/// Output sizes for concrete spatial input sizes; entries < 1 mean the window does not fit.
inline WindowGeometry window_geometry(const WindowAttrs& a, const std::vector<int64_t>& in) {
  WindowGeometry g;
  size_t n = a.spatial();
  for (size_t i = 0; i < n; ++i) {
    int64_t pb = a.pads[i], pe = a.pads[i + n];
    g.out.push_back(window_output_size(in[i], a.kernel[i], a.strides[i], a.dilations[i], a.auto_pad,
                                       a.ceil_mode, pb, pe));
    g.pad_begin.push_back(pb);
    g.pad_end.push_back(pe);
  }
  return g;
}

/// A forward convolution resolved for concrete X [N, C, in...] and W [M, C/group, k...].
struct ConvDims {
  int64_t batch = 0;
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  int64_t group = 1;
  std::vector<int64_t> in, kernel, out, strides, dilations, pad_begin, pad_end;

  int64_t in_size() const;                 ///< product of input spatial dims
  int64_t out_size() const;                ///< product of output spatial dims
  int64_t kernel_size() const;             ///< product of kernel dims
  std::vector<int64_t> out_shape() const;  ///< [N, M, out...]
  bool symmetric_pads() const { return pad_begin == pad_end; }
};

/// The node's `group` attribute (default 1); throws InvalidModel naming the node when below 1.
int64_t read_group(const ir::Node& node);

/// Validates X's and W's shapes against each other, `group` and the node's window attributes
/// (InvalidArgument naming the node on a mismatch, the same words on every device) and resolves
/// the output size and pads.
ConvDims conv_dims(const ir::Node& node, const std::vector<int64_t>& x,
                   const std::vector<int64_t>& w, int64_t group);

}  // namespace switchyard::ops
