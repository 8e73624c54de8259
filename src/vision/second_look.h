// A second look at YuNet's uncertain detections (issue 14).
//
// YuNet scores faces it barely sees and texture (livery, an animal's back, print) alike at
// 0.15-0.5. On a leakcheck clip (scripts/second-opinion-study.py, ground truth, no detector as
// judge), the same network shown a crop around such a detection, scaled up so the box is seen
// larger, scored >= 0.3 for 68% of the ones on faces and 23% of the strays. So every detection
// under `below` gets that second look, on the detection image itself (no full-resolution frame
// is needed, so it works for local and remote targets alike), and is marked doubtful when no box
// of the second look scores `score` with its centre inside the detection. The tracker starts no
// track from a doubtful detection (vision/tracker.h).
#pragma once
#include <memory>

#include "vision/detector.h"
#include "vision/second_look_params.h"

namespace veil {

// The crop of `image` (BGR) a second look at `box` sees: a square `context` x the box's larger
// side around its centre, zero outside the image, scaled to side x side. `scale` receives
// crop pixels per image pixel, `origin` the crop's top-left in image pixels.
cv::Mat SecondLookCrop(const cv::Mat& image, const Box& box, const SecondLookParams& p, float* scale,
                       cv::Point2f* origin);

// Wraps `inner` (any detector whose Detect takes side x side images). Counts what it did.
class SecondLookDetector : public Detector {
 public:
  SecondLookDetector(std::unique_ptr<Detector> inner, SecondLookParams p) : inner_(std::move(inner)), p_(p) {}
  std::string name() const override { return inner_->name() + " + second look"; }
  bool native_batch() const override { return inner_->native_batch(); }
  Result<std::vector<Detections>> Detect(const std::vector<cv::Mat>& images, float score_threshold) override;
  Result<std::vector<std::vector<cv::Mat>>> Forward(const std::vector<cv::Mat>& images) override {
    return inner_->Forward(images);
  }
  struct Counts {
    int64_t asked = 0, kept = 0, doubted = 0, unasked = 0;
  };
  const Counts& counts() const { return counts_; }

 private:
  std::unique_ptr<Detector> inner_;
  SecondLookParams p_;
  Counts counts_;
};

}  // namespace veil
