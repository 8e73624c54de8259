// YuNet 2023mar (libfacedetection.train), decoded by hand: OpenCV 4.6's
// FaceDetectorYN cannot read this model's 12 outputs.
#pragma once
#include <opencv2/dnn.hpp>

#include "vision/detector.h"

namespace veil {

// Inputs are padded (right/bottom, zeros) to a multiple of 32.
cv::Size YuNetPaddedSize(cv::Size s);
// NCHW float blob, BGR 0..255, of the images zero-padded (right/bottom) to
// `padded`, written into `blob` (reused across calls: no per-frame allocation;
// OpenCV 4.6's blobFromImages allocates and costs ~18 ms at 640x384 here).
void YuNetBlob(const std::vector<cv::Mat>& images, cv::Size padded, cv::Mat& blob);
// Decodes one batch item from the 12 outputs ordered cls_{8,16,32},
// obj_{8,16,32}, bbox_{8,16,32}, kps_{8,16,32}. Boxes are clipped to `image`.
Detections YuNetDecode(const std::vector<cv::Mat>& outs, int batch_index, cv::Size padded,
                       cv::Size image, float score_threshold, float nms_iou);

class YuNetDetector : public DnnDetector {
 public:
  explicit YuNetDetector(cv::dnn::Net net, float nms_iou) : net_(std::move(net)), nms_(nms_iou) {}
  std::string name() const override { return "yunet"; }
 protected:
  Result<std::vector<Detections>> RunBatch(const std::vector<cv::Mat>& images, float score) override;

 private:
  cv::dnn::Net net_;
  cv::Mat blob_;
  float nms_;
};

}  // namespace veil
