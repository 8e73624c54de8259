// Axis-aligned boxes in pixel coordinates (x, y = top-left).
#pragma once
#include <algorithm>
#include <vector>

namespace veil {

struct Box {
  float x = 0, y = 0, w = 0, h = 0;
  float x2() const { return x + w; }
  float y2() const { return y + h; }
  float cx() const { return x + w / 2; }
  float cy() const { return y + h / 2; }
  float area() const { return std::max(0.f, w) * std::max(0.f, h); }
  Box Scaled(float sx, float sy) const { return {x * sx, y * sy, w * sx, h * sy}; }
  // Grows each side by `frac` of the box's own width/height plus `px` pixels.
  Box Expanded(float frac, float px_x = 0, float px_y = 0) const {
    const float dx = w * frac + px_x, dy = h * frac + px_y;
    return {x - dx, y - dy, w + 2 * dx, h + 2 * dy};
  }
};

inline float IntersectionArea(const Box& a, const Box& b) {
  const float iw = std::min(a.x2(), b.x2()) - std::max(a.x, b.x);
  const float ih = std::min(a.y2(), b.y2()) - std::max(a.y, b.y);
  return (iw > 0 && ih > 0) ? iw * ih : 0.f;
}

inline float IoU(const Box& a, const Box& b) {
  const float inter = IntersectionArea(a, b);
  const float uni = a.area() + b.area() - inter;
  return uni > 0 ? inter / uni : 0.f;
}

struct Detection {
  Box box;
  float score = 0;
  // A second look (vision/second_look.h) did not see a face here: the tracker may let it keep an
  // existing track alive, but never starts a track from it.
  bool doubtful = false;
};
using Detections = std::vector<Detection>;

// Greedy non-maximum suppression: keeps the best-scoring box of each cluster
// whose IoU exceeds `iou_threshold`. Output sorted by descending score.
Detections Nms(Detections dets, float iou_threshold);

}  // namespace veil
