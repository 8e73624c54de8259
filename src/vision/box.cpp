#include "vision/box.h"

namespace veil {

Detections Nms(Detections dets, float iou_threshold) {
  std::stable_sort(dets.begin(), dets.end(),
                   [](const Detection& a, const Detection& b) { return a.score > b.score; });
  Detections keep;
  keep.reserve(dets.size());
  for (const auto& d : dets) {
    bool suppressed = false;
    for (const auto& k : keep) {
      if (IoU(d.box, k.box) > iou_threshold) {
        suppressed = true;
        break;
      }
    }
    if (!suppressed) keep.push_back(d);
  }
  return keep;
}

}  // namespace veil
