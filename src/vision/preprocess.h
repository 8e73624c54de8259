// Builds the small BGR copy of an I420 frame that detection runs on.
#pragma once
#include <opencv2/core.hpp>

#include "core/frame.h"

namespace veil {

// Largest even size with the frame's aspect ratio that fits in `box`.
cv::Size FitSize(int frame_w, int frame_h, cv::Size box);

// Scales the I420 planes down to `size` (even) and converts to BGR. Scratch
// buffers are reused across calls (no per-frame allocation after the first).
void DownscaleToBgr(const Frame& f, cv::Size size, cv::Mat& bgr);

// Tiny luma thumbnail (block means on a sparse grid), for scene-cut detection.
constexpr int kThumbW = 32, kThumbH = 18;
void LumaThumbnail(const Frame& f, uint8_t out[kThumbW * kThumbH]);

}  // namespace veil
