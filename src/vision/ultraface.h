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

class UltraFaceDetector : public DnnDetector {
 public:
  UltraFaceDetector(cv::dnn::Net net, cv::Size input, float nms_iou)
      : net_(std::move(net)), input_(input), nms_(nms_iou) {}
  std::string name() const override { return "ultraface-" + std::to_string(input_.width); }
 protected:
  Result<std::vector<Detections>> RunBatch(const std::vector<cv::Mat>& images, float score) override;

 private:
  cv::dnn::Net net_;
  cv::Mat blob_;
  cv::Size input_;
  float nms_;
};

}  // namespace veil
