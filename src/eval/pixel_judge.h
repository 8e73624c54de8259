// Judges processed pixels against the lossless picture they came from, with the criteria of the
// independent instrument ../shared/tools/leakcheck (score.py), reimplemented here so that
// `veil eval` measures what the privacy stage writes, not the rectangles it reports:
//  - a face is visible when the SSIM of its luma box (both patches resized to 64x64) over its
//    best-preserved half (left, right, top or bottom) is >= kLeakSsim;
//  - over-blur: the share of the master's textured pixels (local luma std >= 10) outside every
//    face box grown by 50% per side whose local SSIM fell below 0.3;
//  - a whole-frame mosaic: SSIM over the textured pixels outside the 20%-grown face boxes < 0.5.
// SSIM: Gaussian window 11x11, sigma 1.5, 8-bit constants. tests/unit/eval/pixel_judge_test.cpp
// checks these numbers against leakcheck's own Python on the same images.
#pragma once
#include <vector>

#include <opencv2/core.hpp>

namespace veil {

inline constexpr double kLeakSsim = 0.91;       // leakcheck's calibrated T_SSIM
inline constexpr double kMosaicFrameSsim = 0.5;  // leakcheck's MOSAIC_SSIM
inline constexpr double kTextureStd = 10.0;      // leakcheck's TEXTURE_STD
inline constexpr double kOverblurSsim = 0.3;     // leakcheck's OVERBLUR_SSIM
inline constexpr double kOverblurGrow = 0.5;     // leakcheck's OVERBLUR_GROW

// Face boxes in frame pixels (x, y, w, h; may reach past the frame).
using FaceBoxes = std::vector<cv::Rect2d>;

// The box as leakcheck's int_box rounds and clips it (empty when nothing is left).
cv::Rect ClipBoxLikeLeakcheck(const cv::Rect2d& b, cv::Size frame);

// SSIM of one face's luma patch over its best-preserved half; master and processed are 8-bit
// single-channel images of one size.
double BestHalfSsim(const cv::Mat& master, const cv::Mat& processed, const cv::Rect2d& face);

struct FrameJudgement {
  double overblur = 0;     // share of textured non-face pixels destroyed (0..1)
  double frame_ssim = 1;   // SSIM over textured pixels outside the faces
  int judged_pixels = 0;   // the over-blur's denominator: textured pixels outside the grown faces
  cv::Mat destroyed;       // 255 where such a pixel was destroyed (the over-blur's numerator)
  bool whole_frame_mosaic() const { return frame_ssim < kMosaicFrameSsim; }
};

// Over-blur and whole-frame SSIM of one processed frame against its master (8-bit luma).
FrameJudgement JudgeFrame(const cv::Mat& master, const cv::Mat& processed, const FaceBoxes& faces);

}  // namespace veil
