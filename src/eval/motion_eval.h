// Privacy on a moving clip rendered from annotated photos: every photo is
// shown for a few seconds with a handheld-style pan and a slow zoom, so every
// ground-truth box moves by a known affine transform. The frames go through
// the full privacy stage (downscale, cadence, detector, tracker, mosaic) and
// each ground-truth face is checked twice: against the rectangles the stage
// reports (geometric), and against the pixels it wrote, compared with the
// lossless rendering of the same frame (eval/pixel_judge.h, leakcheck's
// criteria: a face is visible when its best-preserved half is intact). The
// pixels also give the over-blur of the textured non-face area and the
// frames that left as a whole-frame mosaic.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>

#include "eval/ground_truth.h"
#include "privacy/privacy_stage.h"

namespace veil {

struct MotionEvalOptions {
  cv::Size canvas{1280, 720};
  int frames_per_photo = 30;
  int max_photos = 0;          // 0 = all
  double min_face = 40;        // faces counted: valid, min side >= this in the frame
  double covered = 0.90;       // a face-frame leaks when less than this share of its box is pixelated
  int pixel_every = 5;         // judge over-blur and whole-frame mosaic on every Nth frame (faces: every frame);
                               // 18 ms per judged 720p frame on the 2-vCPU Xeon: every frame would double the eval
  std::string leaks_csv;       // non-empty: one row per face-frame the pixels show or the masks cover too little of (what is still missed)
};

// Scale/translation of photo `photo_index` at frame `t`: x' = s*x + tx, y' = s*y + ty.
struct Motion {
  double s, tx, ty;
};
Motion MotionAt(int photo_index, int t, int frames, cv::Size photo, cv::Size canvas);

// What destroyed a pixel of over-blur, the first that covers it in this order:
//  - a whole-frame mosaic (fail-closed, full_blur);
//  - a mask on a true face (its predicted box's centre lies in an annotated face box grown by
//    50%, the region over-blur leaves out): its predicted box, the growth for motion around it,
//    the margin around that;
//  - a stray mask (on no annotated face): a track the newest detection matched (a false positive
//    that persists, or a face the annotation lacks), a lone low-score detection not confirmed, a
//    track coasting without a match;
//  - none (the SSIM window reaching a few pixels past a mask's edge).
enum class OverblurPart {
  kWholeFrame, kFaceBox, kFaceGrowth, kFaceMargin, kStrayMatched, kStrayUnconfirmed, kStrayCoasting, kOutsideMasks,
  kCount
};
inline constexpr const char* kOverblurPartNames[] = {"whole_frame",  "face_box",          "face_growth",
                                                     "face_margin",  "stray_matched",     "stray_unconfirmed",
                                                     "stray_coasting", "outside_masks"};
inline constexpr int kOverblurParts = int(OverblurPart::kCount);

// Per pixel of `destroyed` (nonzero: destroyed), the OverblurPart that covers it; counts per part.
// `faces`: every annotated face box in frame pixels.
std::array<int64_t, kOverblurParts> SplitOverblur(const cv::Mat& destroyed, const FrameReport& rep,
                                                  const std::vector<cv::Rect2d>& faces);

struct MotionEvalResult {
  int64_t frames = 0, face_frames = 0, leaked = 0, clear_face_frames = 0, clear_leaked = 0;
  int64_t flicker = 0, clear_flicker = 0, fail_closed_frames = 0, detections_run = 0;
  double ms_detect_per_frame = 0;  // preprocess + detect, amortized over all frames
  double ms_track_per_frame = 0, ms_mosaic_per_frame = 0;
  // Judged on the pixels (eval/pixel_judge.h): face-frames whose best-preserved half is intact,
  // over-blur per judged frame, and frames that left as a whole-frame mosaic.
  int64_t pixel_leaked = 0, clear_pixel_leaked = 0, judged_frames = 0, mosaic_frames = 0, frames_overblur_gt50 = 0;
  double overblur_mean = 0, overblur_p90 = 0;
  // overblur_mean split by OverblurPart (the parts add up to it).
  std::array<double, kOverblurParts> overblur_parts{};
  double pixel_leak_rate() const { return face_frames ? double(pixel_leaked) / face_frames : 0; }
  double clear_pixel_leak_rate() const { return clear_face_frames ? double(clear_pixel_leaked) / clear_face_frames : 0; }
  double mosaic_frame_share() const { return judged_frames ? double(mosaic_frames) / judged_frames : 0; }
  double leak_rate() const { return face_frames ? double(leaked) / face_frames : 0; }
  double clear_leak_rate() const { return clear_face_frames ? double(clear_leaked) / clear_face_frames : 0; }
  nlohmann::json ToJson() const;
};

// Share of `box` covered by the union of `regions` (their pixels, rounded corners left out).
double CoveredFraction(const Box& box, const std::vector<RoundRect>& regions);

Result<MotionEvalResult> RunMotionEval(const std::vector<GtImage>& images, const PrivacyConfig& cfg,
                                       Detector* det, const MotionEvalOptions& o);

}  // namespace veil
