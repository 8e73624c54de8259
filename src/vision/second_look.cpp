#include "vision/second_look.h"

#include <algorithm>
#include <cmath>

#include <opencv2/imgproc.hpp>

namespace veil {

Status Validate(const SecondLookParams& p) {
  if (!(p.score >= 0.f && p.score < 1.f)) return Status::Error("detector.second_look must be in [0 (off), 1)");
  if (!(p.below > 0.f && p.below <= 1.f)) return Status::Error("detector.second_look_below must be in (0, 1]");
  if (p.side < 32 || p.side > 640 || p.side % 32 != 0)
    return Status::Error("detector.second_look_side must be a multiple of 32 in [32, 640]");
  if (!(p.context >= 1.f && p.context <= 8.f)) return Status::Error("detector.second_look_context must be in [1, 8]");
  if (p.max_crops < 1 || p.max_crops > 64) return Status::Error("detector.second_look_crops must be in [1, 64]");
  return Status::Ok();
}

cv::Mat SecondLookCrop(const cv::Mat& image, const Box& box, const SecondLookParams& p, float* scale,
                       cv::Point2f* origin) {
  const float c = std::max(1.f, p.context * std::max(box.w, box.h));
  const int n = std::max(1, int(std::lround(c)));
  const int x0 = int(std::lround(box.cx() - c / 2)), y0 = int(std::lround(box.cy() - c / 2));
  cv::Mat square(n, n, image.type(), cv::Scalar::all(0));
  const cv::Rect want(x0, y0, n, n);
  const cv::Rect have = want & cv::Rect(0, 0, image.cols, image.rows);
  if (have.area() > 0) image(have).copyTo(square(have - want.tl()));
  cv::Mat out;
  cv::resize(square, out, cv::Size(p.side, p.side), 0, 0, n > p.side ? cv::INTER_AREA : cv::INTER_LINEAR);
  *scale = float(p.side) / float(n);
  *origin = cv::Point2f(float(x0), float(y0));
  return out;
}

Result<std::vector<Detections>> SecondLookDetector::Detect(const std::vector<cv::Mat>& images, float score_threshold) {
  auto first = inner_->Detect(images, score_threshold);
  if (!first || p_.score <= 0.f) return first;
  struct Ask {
    size_t image, det;
    float scale;
    cv::Point2f origin;
  };
  std::vector<Ask> asks;
  std::vector<cv::Mat> crops;
  for (size_t i = 0; i < first->size(); ++i) {
    const Detections& ds = (*first)[i];
    // Detections come sorted by score: the first max_crops uncertain ones are asked.
    int n = 0;
    for (size_t k = 0; k < ds.size(); ++k) {
      if (ds[k].score >= p_.below) continue;
      if (n++ >= p_.max_crops) {
        ++counts_.unasked;
        continue;
      }
      Ask a{i, k, 0.f, {}};
      crops.push_back(SecondLookCrop(images[i], ds[k].box, p_, &a.scale, &a.origin));
      asks.push_back(a);
    }
  }
  if (asks.empty()) return first;
  auto second = inner_->Detect(crops, p_.score);
  // A second look that failed asks nothing away: the first pass stands (fail-safe: more masks).
  if (!second || second->size() != crops.size()) return first;
  for (size_t j = 0; j < asks.size(); ++j) {
    const Ask& a = asks[j];
    Detection& det = (*first)[a.image][a.det];
    const Box& b = det.box;
    bool seen = false;
    for (const Detection& d : (*second)[j]) {
      const float cx = d.box.cx() / a.scale + a.origin.x, cy = d.box.cy() / a.scale + a.origin.y;
      if (d.score >= p_.score && cx >= b.x && cx <= b.x2() && cy >= b.y && cy <= b.y2()) seen = true;
    }
    ++counts_.asked;
    if (seen) ++counts_.kept;
    else {
      ++counts_.doubted;
      det.doubtful = true;
    }
  }
  return first;
}

}  // namespace veil
