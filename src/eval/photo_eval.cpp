#include "eval/photo_eval.h"

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>

#include "core/clock.h"

namespace veil {

nlohmann::json PhotoEvalResult::ToJson() const {
  return {{"images", images},
          {"recall_ge20", recall_ge20()},
          {"recall_ge40", recall_ge40()},
          {"recall_clear_ge40", recall_clear_ge40()},
          {"precision", precision()},
          {"faces_ge20", gt_ge20},
          {"matched_ge20", hit_ge20},
          {"faces_ge40", gt_ge40},
          {"matched_ge40", hit_ge40},
          {"detections", detections},
          {"true_detections", true_detections},
          {"ms_per_image", ms_per_image},
          {"reach_beyond_detection", ReachJson()}};
}

double Quantile(std::vector<float> v, double q) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, size_t(std::max(0.0, std::ceil(q * double(v.size())) - 1)));
  std::nth_element(v.begin(), v.begin() + long(k), v.end());
  return v[k];
}

nlohmann::json PhotoEvalResult::ReachJson() const {
  nlohmann::json j = {{"faces", reach_left.size()}};
  const std::pair<const char*, const std::vector<float>*> sides[] = {
      {"left", &reach_left}, {"right", &reach_right}, {"top", &reach_top}, {"bottom", &reach_bottom}};
  for (const auto& [name, v] : sides)
    j[name] = {{"p50", Quantile(*v, 0.5)}, {"p90", Quantile(*v, 0.9)}, {"p95", Quantile(*v, 0.95)},
               {"p99", Quantile(*v, 0.99)}};
  return j;
}

std::vector<bool> MatchDetections(const Detections& dets, const std::vector<GtFace>& gt, float match_iou,
                                  int* true_dets) {
  const std::vector<int> idx = MatchDetectionIndices(dets, gt, match_iou, true_dets);
  std::vector<bool> matched(gt.size());
  for (size_t g = 0; g < gt.size(); ++g) matched[g] = idx[g] >= 0;
  return matched;
}

std::vector<int> MatchDetectionIndices(const Detections& dets, const std::vector<GtFace>& gt, float match_iou,
                                       int* true_dets) {
  std::vector<int> matched(gt.size(), -1);
  std::vector<size_t> order(dets.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return dets[a].score > dets[b].score; });
  int hits = 0;
  for (size_t i : order) {
    int best = -1;
    float best_iou = match_iou;
    for (size_t g = 0; g < gt.size(); ++g) {
      if (matched[g] >= 0) continue;
      const float iou = IoU(dets[i].box, gt[g].box);
      if (iou >= best_iou) {
        best_iou = iou;
        best = int(g);
      }
    }
    if (best >= 0) {
      matched[best] = int(i);
      ++hits;
    }
  }
  if (true_dets) *true_dets += hits;
  return matched;
}

Result<PhotoEvalResult> RunPhotoEval(const std::vector<GtImage>& images, Detector& det, const PhotoEvalOptions& o) {
  PhotoEvalResult r;
  double total_ms = 0;
  cv::Mat resized, input;
  for (const auto& im : images) {
    if (o.max_images > 0 && r.images >= o.max_images) break;
    cv::Mat img = cv::imread(im.path, cv::IMREAD_COLOR);
    if (img.empty()) return Status::Error("cannot read image " + im.path);
    const double t0 = NowMs();
    const double s = std::min(double(o.input.width) / img.cols, double(o.input.height) / img.rows);
    const cv::Size fit(std::max(1, int(std::lround(img.cols * s))), std::max(1, int(std::lround(img.rows * s))));
    cv::resize(img, resized, fit, 0, 0, cv::INTER_LINEAR);
    if (o.letterbox) {
      cv::copyMakeBorder(resized, input, 0, o.input.height - fit.height, 0, o.input.width - fit.width,
                         cv::BORDER_CONSTANT, cv::Scalar::all(0));
    } else {
      input = resized;
    }
    auto res = det.Detect({input}, o.score);
    total_ms += NowMs() - t0;
    if (!res) return res.status();
    Detections dets;
    const float inv_x = float(img.cols) / fit.width, inv_y = float(img.rows) / fit.height;
    for (const auto& d : res->front()) {
      // Drop boxes that lie entirely in the padding.
      if (d.box.x >= fit.width || d.box.y >= fit.height) continue;
      dets.push_back({d.box.Scaled(inv_x, inv_y), d.score});
    }
    r.detections += int(dets.size());
    const std::vector<int> match = MatchDetectionIndices(dets, im.faces, o.match_iou, &r.true_detections);
    for (size_t g = 0; g < im.faces.size(); ++g) {
      const GtFace& f = im.faces[g];
      if (!f.valid()) continue;
      const bool hit = match[g] >= 0;
      if (hit && f.min_side() >= 40) {
        const Box& d = dets[size_t(match[g])].box;
        r.reach_left.push_back((d.x - f.box.x) / d.w);
        r.reach_right.push_back((f.box.x2() - d.x2()) / d.w);
        r.reach_top.push_back((d.y - f.box.y) / d.h);
        r.reach_bottom.push_back((f.box.y2() - d.y2()) / d.h);
      }
      if (f.min_side() >= 20) {
        ++r.gt_ge20;
        r.hit_ge20 += hit;
      }
      if (f.min_side() >= 40) {
        ++r.gt_ge40;
        r.hit_ge40 += hit;
        if (f.clear()) {
          ++r.gt_clear_ge40;
          r.hit_clear_ge40 += hit;
        }
      }
    }
    ++r.images;
  }
  r.ms_per_image = r.images ? total_ms / r.images : 0;
  return r;
}

}  // namespace veil
