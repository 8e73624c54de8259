#include "eval/photo_eval.h"

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

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
          {"ms_per_image", ms_per_image}};
}

std::vector<bool> MatchDetections(const Detections& dets, const std::vector<GtFace>& gt, float match_iou,
                                  int* true_dets) {
  std::vector<bool> matched(gt.size(), false);
  std::vector<size_t> order(dets.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return dets[a].score > dets[b].score; });
  int hits = 0;
  for (size_t i : order) {
    int best = -1;
    float best_iou = match_iou;
    for (size_t g = 0; g < gt.size(); ++g) {
      if (matched[g]) continue;
      const float iou = IoU(dets[i].box, gt[g].box);
      if (iou >= best_iou) {
        best_iou = iou;
        best = int(g);
      }
    }
    if (best >= 0) {
      matched[best] = true;
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
    const std::vector<bool> hit = MatchDetections(dets, im.faces, o.match_iou, &r.true_detections);
    for (size_t g = 0; g < im.faces.size(); ++g) {
      const GtFace& f = im.faces[g];
      if (!f.valid()) continue;
      if (f.min_side() >= 20) {
        ++r.gt_ge20;
        r.hit_ge20 += hit[g];
      }
      if (f.min_side() >= 40) {
        ++r.gt_ge40;
        r.hit_ge40 += hit[g];
        if (f.clear()) {
          ++r.gt_clear_ge40;
          r.hit_clear_ge40 += hit[g];
        }
      }
    }
    ++r.images;
  }
  r.ms_per_image = r.images ? total_ms / r.images : 0;
  return r;
}

}  // namespace veil
