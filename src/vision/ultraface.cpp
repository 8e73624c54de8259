#include "vision/ultraface.h"

#include <opencv2/imgproc.hpp>

namespace veil {

void UltraFaceBlob(const std::vector<cv::Mat>& images, cv::Size input, cv::Mat& blob) {
  const int n = int(images.size());
  const int sz[4] = {n, 3, input.height, input.width};
  blob.create(4, sz, CV_32F);
  const size_t plane = size_t(input.width) * input.height;
  thread_local cv::Mat resized;
  for (int b = 0; b < n; ++b) {
    const cv::Mat* src = &images[b];
    if (src->size() != input) {
      cv::resize(*src, resized, input, 0, 0, cv::INTER_LINEAR);
      src = &resized;
    }
    float* r = blob.ptr<float>() + size_t(b) * 3 * plane;  // RGB order: channel 0 = red
    float* g = r + plane;
    float* bl = g + plane;
    for (int y = 0; y < input.height; ++y) {
      const uint8_t* p = src->ptr<uint8_t>(y);
      const size_t o = size_t(y) * input.width;
      for (int x = 0; x < input.width; ++x) {
        bl[o + x] = (p[3 * x] - 127.f) / 128.f;
        g[o + x] = (p[3 * x + 1] - 127.f) / 128.f;
        r[o + x] = (p[3 * x + 2] - 127.f) / 128.f;
      }
    }
  }
}

Detections UltraFaceDecode(const cv::Mat& scores, const cv::Mat& boxes, int b, cv::Size image,
                           float score_threshold, float nms_iou) {
  const int anchors = scores.size[1];
  const float* sc = scores.ptr<float>() + static_cast<size_t>(b) * anchors * 2;
  const float* bx = boxes.ptr<float>() + static_cast<size_t>(b) * anchors * 4;
  Detections dets;
  const float W = float(image.width), H = float(image.height);
  for (int i = 0; i < anchors; ++i) {
    const float s = sc[i * 2 + 1];
    if (s < score_threshold) continue;
    const float x0 = std::clamp(bx[i * 4 + 0], 0.f, 1.f) * W, y0 = std::clamp(bx[i * 4 + 1], 0.f, 1.f) * H;
    const float x1 = std::clamp(bx[i * 4 + 2], 0.f, 1.f) * W, y1 = std::clamp(bx[i * 4 + 3], 0.f, 1.f) * H;
    if (x1 - x0 < 1 || y1 - y0 < 1) continue;
    dets.push_back({{x0, y0, x1 - x0, y1 - y0}, s});
  }
  return Nms(std::move(dets), nms_iou);
}

Result<std::vector<Detections>> UltraFaceDetector::RunBatch(const std::vector<cv::Mat>& images, float score) {
  std::vector<cv::Mat> outs;
  try {
    UltraFaceBlob(images, input_, blob_);
    net_.setInput(blob_);
    net_.forward(outs, std::vector<std::string>{"scores", "boxes"});
  } catch (const cv::Exception& e) {
    return Status::Error(std::string("ultraface forward failed: ") + e.what());
  }
  if (outs.size() != 2 || outs[0].dims != 3 || outs[0].size[0] != int(images.size()) ||
      outs[0].size[2] != 2 || outs[1].dims != 3 || outs[1].size[2] != 4)
    return Status::Error("ultraface: unexpected output shape");
  std::vector<Detections> res;
  for (size_t b = 0; b < images.size(); ++b)
    res.push_back(UltraFaceDecode(outs[0], outs[1], int(b), images[b].size(), score, nms_));
  return res;
}

}  // namespace veil
