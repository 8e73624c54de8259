// Annotated face photos laid out like ../shared/assets/faces: images plus
// ground_truth.csv (WIDER FACE attributes).
#pragma once
#include <string>
#include <vector>

#include "core/status.h"
#include "vision/box.h"

namespace veil {

struct GtFace {
  Box box;
  int blur = 0, expression = 0, illumination = 0, invalid = 0, occlusion = 0, pose = 0;
  bool valid() const { return invalid == 0; }
  float min_side() const { return std::min(box.w, box.h); }
  // "Clear" faces: not heavily occluded, not heavily blurred, typical pose.
  bool clear() const { return occlusion < 2 && blur < 2 && pose == 0; }
};

struct GtImage {
  std::string path;  // absolute or relative to the working directory
  std::vector<GtFace> faces;
};

// Reads <dir>/ground_truth.csv; images are resolved relative to <dir>.
// Boxes of zero or negative width or height (the official WIDER val files hold
// a few) are skipped and counted in `skipped` when given; their image is kept.
Result<std::vector<GtImage>> LoadGroundTruth(const std::string& dir, int* skipped = nullptr);

}  // namespace veil
