// The settings of the second look (vision/second_look.h), apart so DetectorConfig can hold them.
#pragma once
#include "core/status.h"

namespace veil {

struct SecondLookParams {
  float score = 0.f;    // 0: off; a detection under `below` is kept when its second look reaches this
  float below = 0.5f;   // detections at or above are kept as they are (tracker.score)
  int side = 128;       // the crop is scaled to side x side pixels
  float context = 2.5f; // the crop's side, in the detection box's larger side
  int max_crops = 8;    // per image; further uncertain detections (the lowest scores) are kept unasked
};

Status Validate(const SecondLookParams& p);

}  // namespace veil
