// Detector accuracy on annotated photos (WIDER FACE protocol as in the assets README).
#pragma once
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>

#include "eval/ground_truth.h"
#include "vision/detector.h"

namespace veil {

struct PhotoEvalOptions {
  cv::Size input{640, 640};  // the image is fitted into this box (aspect kept)
  bool letterbox = true;     // pad to exactly `input` (the model's native 640x640)
  float score = 0.6f;
  float match_iou = 0.5f;
  int max_images = 0;        // 0 = all
};

struct PhotoEvalResult {
  int images = 0;
  int gt_ge20 = 0, hit_ge20 = 0, gt_ge40 = 0, hit_ge40 = 0, gt_clear_ge40 = 0, hit_clear_ge40 = 0;
  int detections = 0, true_detections = 0;
  double ms_per_image = 0;  // preprocess + forward + decode
  // How far each matched true face (>= 40 px) reaches beyond its detected box,
  // per side, as a fraction of the detected width (left, right) or height (top,
  // bottom); negative when the detection is the larger. What a mask margin must cover.
  std::vector<float> reach_left, reach_right, reach_top, reach_bottom;
  double recall_ge20() const { return gt_ge20 ? double(hit_ge20) / gt_ge20 : 0; }
  double recall_ge40() const { return gt_ge40 ? double(hit_ge40) / gt_ge40 : 0; }
  double recall_clear_ge40() const { return gt_clear_ge40 ? double(hit_clear_ge40) / gt_clear_ge40 : 0; }
  double precision() const { return detections ? double(true_detections) / detections : 0; }
  nlohmann::json ToJson() const;
  nlohmann::json ReachJson() const;
};

// Greedy matching by descending score: each detection takes the unmatched GT
// box (any, including invalid or tiny) with the highest IoU >= match_iou.
// Returns, per GT face, whether it was matched; `true_dets` counts matches.
std::vector<bool> MatchDetections(const Detections& dets, const std::vector<GtFace>& gt, float match_iou,
                                  int* true_dets);
// The same matching; per GT face, the index of its detection or -1.
std::vector<int> MatchDetectionIndices(const Detections& dets, const std::vector<GtFace>& gt, float match_iou,
                                       int* true_dets);
// Quantile q in [0, 1] of v (nearest rank); 0 for an empty vector.
double Quantile(std::vector<float> v, double q);

Result<PhotoEvalResult> RunPhotoEval(const std::vector<GtImage>& images, Detector& det, const PhotoEvalOptions& o);

}  // namespace veil
