// Builds the small BGR copy of an I420 frame that detection runs on.
#pragma once
#include <opencv2/core.hpp>

#include "core/frame.h"
#include "vision/box.h"

namespace veil {

// Largest even size with the frame's aspect ratio that fits in `box`.
cv::Size FitSize(int frame_w, int frame_h, cv::Size box);

// The part of a detection copy the detector is shown. YuNet works on a grid of 32 px and pads
// its input with zeros up to it: a 16:9 copy of 640x360 becomes 640x384, 6.7% more work on
// nothing. When trimming a side down to the grid takes at most kMaxTrimShare of it, the window
// is the copy's centred, trimmed part instead (640x352: 4 rows off at the top and 4 at the
// bottom, 8 px each of a 720p frame; privacy.detect_trim, off by default: docs/privacy.md
// "Trimming the detection copy"). `trim` false, or a side that would lose more: all of it.
constexpr int kDetectGrid = 32;
constexpr double kMaxTrimShare = 0.03;
cv::Rect DetectWindow(cv::Size copy, bool trim);

// A box found in `window` (its coordinates), in the copy's coordinates. A box that ends on a
// trimmed edge, or within the trimmed width (+1 px) of it, is extended to the copy's edge: the
// face may go on in what the detector was not shown.
Box FromWindow(const Box& b, const cv::Rect& window, cv::Size copy);

// Scales the I420 planes down to `size` (even) and converts to BGR. Scratch
// buffers are reused across calls (no per-frame allocation after the first).
void DownscaleToBgr(const Frame& f, cv::Size size, cv::Mat& bgr);

}  // namespace veil
