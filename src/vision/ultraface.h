// UltraFace RFB-320 / RFB-640 (with built-in box decoding): the second model family.
#pragma once
#include <opencv2/dnn.hpp>

#include "vision/detector.h"

namespace veil {

// NCHW float blob: RGB, (x - 127) / 128, stretched to `input` as the reference
// code does; written into `blob` (reused, no per-frame allocation).
void UltraFaceBlob(const std::vector<cv::Mat>& images, cv::Size input, cv::Mat& blob);
// Decodes one batch item: scores [N,A,2] (softmax, column 1 = face), boxes [N,A,4] normalized.
Detections UltraFaceDecode(const cv::Mat& scores, const cv::Mat& boxes, int batch_index,
                           cv::Size image, float score_threshold, float nms_iou);

class UltraFaceDetector : public Detector {
 public:
  UltraFaceDetector(cv::dnn::Net net, cv::Size input, float nms_iou)
      : net_(std::move(net)), input_(input), nms_(nms_iou) {}
  std::string name() const override { return "ultraface-" + std::to_string(input_.width); }
  Result<std::vector<Detections>> Detect(const std::vector<cv::Mat>& images,
                                         float score_threshold) override;
  bool native_batch() const override { return batch_ok_; }

 private:
  Result<std::vector<Detections>> Run(const std::vector<cv::Mat>& images, float score);
  cv::dnn::Net net_;
  cv::Mat blob_;
  cv::Size input_;
  float nms_;
  bool batch_ok_ = true;
};

}  // namespace veil
