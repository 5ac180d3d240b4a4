// CPU kernels of the image family: NonMaxSuppression here; Resize in image_resize.cc, GridSample
// and Col2Im in image_sampling.cc.
#include <algorithm>
#include <numeric>

#include "backends/cpu/kernels/common.h"
#include "backends/cpu/kernels/image_internal.h"

namespace switchyard::cpu {

namespace {

struct Box {
  float y1, x1, y2, x2;
};

class NonMaxSuppressionKernel final : public runtime::Kernel {
 public:
  explicit NonMaxSuppressionKernel(const runtime::KernelInit& init) {
    center_point_box_ = init.node.attr_int("center_point_box", 0);
    SY_CHECK(center_point_box_ == 0 || center_point_box_ == 1, InvalidModel,
             "{}: center_point_box {} must be 0 or 1", init.node.describe(), center_point_box_);
  }

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& boxes = ctx.input(0);
    const ir::Tensor& scores = ctx.input(1);
    if (boxes.dtype() != DType::Float32 || scores.dtype() != DType::Float32)
      ctx.fail("boxes and scores must be float tensors");
    if (boxes.rank() != 3 || boxes.dim(2) != 4)
      ctx.fail("boxes has shape {}, expected [batches, boxes, 4]",
               ir::shape_to_string(boxes.shape()));
    if (scores.rank() != 3 || scores.dim(0) != boxes.dim(0) || scores.dim(2) != boxes.dim(1))
      ctx.fail("scores has shape {}, expected [{}, classes, {}]",
               ir::shape_to_string(scores.shape()), boxes.dim(0), boxes.dim(1));
    auto scalar = [&](size_t i, const char* what) -> const ir::Tensor* {
      if (!ctx.has_input(i) || ctx.input(i).numel() == 0) return nullptr;
      const ir::Tensor& t = ctx.input(i);
      if (t.numel() != 1)
        ctx.fail("{} must hold one value, got shape {}", what, ir::shape_to_string(t.shape()));
      return &t;
    };
    int64_t max_per_class = 0;
    if (const ir::Tensor* t = scalar(2, "max_output_boxes_per_class")) {
      if (t->dtype() != DType::Int64) ctx.fail("max_output_boxes_per_class must be int64");
      max_per_class = std::max<int64_t>(0, t->scalar_as_int(0));
    }
    float iou_threshold = 0;
    if (const ir::Tensor* t = scalar(3, "iou_threshold")) {
      iou_threshold = static_cast<float>(t->scalar_as_double(0));
      if (iou_threshold < 0 || iou_threshold > 1)
        ctx.fail("iou_threshold {} must be in [0, 1]", iou_threshold);
    }
    bool has_score_threshold = false;
    float score_threshold = 0;
    if (const ir::Tensor* t = scalar(4, "score_threshold")) {
      has_score_threshold = true;
      score_threshold = static_cast<float>(t->scalar_as_double(0));
    }

    const int64_t batches = boxes.dim(0), num_boxes = boxes.dim(1), classes = scores.dim(1);
    const float* bp = boxes.data<float>();
    const float* sp = scores.data<float>();
    std::vector<int64_t> selected;  // triples
    std::vector<int64_t> order;
    std::vector<Box> corners(static_cast<size_t>(num_boxes));
    for (int64_t b = 0; b < batches; ++b) {
      for (int64_t i = 0; i < num_boxes; ++i)
        corners[static_cast<size_t>(i)] = corner_box(bp + (b * num_boxes + i) * 4);
      for (int64_t c = 0; c < classes && max_per_class > 0; ++c) {
        const float* s = sp + (b * classes + c) * num_boxes;
        order.clear();
        for (int64_t i = 0; i < num_boxes; ++i)
          if (!std::isnan(s[i]) && (!has_score_threshold || s[i] > score_threshold))
            order.push_back(i);
        std::stable_sort(order.begin(), order.end(),
                         [&](int64_t l, int64_t r) { return s[l] > s[r]; });
        std::vector<int64_t> kept;
        for (int64_t cand : order) {
          if (static_cast<int64_t>(kept.size()) >= max_per_class) break;
          bool suppressed = false;
          for (int64_t k : kept) {
            if (iou(corners[static_cast<size_t>(k)], corners[static_cast<size_t>(cand)]) >
                iou_threshold) {
              suppressed = true;
              break;
            }
          }
          if (suppressed) continue;
          kept.push_back(cand);
          selected.insert(selected.end(), {b, c, cand});
        }
      }
    }
    const int64_t count = static_cast<int64_t>(selected.size() / 3);
    ir::Tensor& out = ctx.allocate_output(0, DType::Int64, {count, 3});
    std::copy(selected.begin(), selected.end(), out.data<int64_t>());
  }

 private:
  // Normalised corners (y1 <= y2, x1 <= x2) of either box format.
  Box corner_box(const float* p) const {
    Box b;
    if (center_point_box_) {
      float xc = p[0], yc = p[1], w = p[2], h = p[3];
      b = {yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2};
    } else {
      b = {p[0], p[1], p[2], p[3]};
    }
    if (b.y1 > b.y2) std::swap(b.y1, b.y2);
    if (b.x1 > b.x2) std::swap(b.x1, b.x2);
    return b;
  }

  static float iou(const Box& a, const Box& b) {
    float area_a = (a.y2 - a.y1) * (a.x2 - a.x1);
    float area_b = (b.y2 - b.y1) * (b.x2 - b.x1);
    if (area_a <= 0 || area_b <= 0) return 0;
    float ih = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
    float iw = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
    if (ih <= 0 || iw <= 0) return 0;
    float inter = ih * iw;
    return inter / (area_a + area_b - inter);
  }

  int64_t center_point_box_ = 0;
};

}  // namespace

void register_image_kernels(runtime::KernelRegistry& r) {
  register_image_resize_kernels(r);
  register_image_sampling_kernels(r);
  r.add<NonMaxSuppressionKernel>(ops::OpKind::NonMaxSuppression, {DType::Float32});
}

}  // namespace switchyard::cpu
