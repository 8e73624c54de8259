// YuNet 2023mar (libfacedetection.train), decoded by hand: OpenCV 4.6's
// FaceDetectorYN cannot read this model's 12 outputs.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <tuple>

#include <opencv2/dnn.hpp>

#include "vision/detector.h"
#include "vision/yunet_engine.h"

namespace veil {

// Inputs are padded (right/bottom, zeros) to a multiple of 32.
cv::Size YuNetPaddedSize(cv::Size s);
// The 12 output names in the order YuNetDecode expects: cls_{8,16,32},
// obj_{8,16,32}, bbox_{8,16,32}, kps_{8,16,32}. Decoding reads the first 9.
const std::vector<std::string>& YuNetOutputNames();
constexpr int kYuNetDecodeOutputs = 9;
// Anchors of output `index` (0..11) for a padded input; its columns (1, 4 or 10).
int YuNetAnchors(int index, cv::Size padded);
int YuNetColumns(int index);
// NCHW float blob, BGR 0..255, of the images (CV_8UC3 or CV_32FC3)
// zero-padded (right/bottom) to `padded`, written into `blob` (reused across
// calls: no per-frame allocation; OpenCV 4.6's blobFromImages allocates and
// costs ~18 ms at 640x384 here).
void YuNetBlob(const std::vector<cv::Mat>& images, cv::Size padded, cv::Mat& blob);
// Decodes one batch item from the 12 outputs ordered cls_{8,16,32},
// obj_{8,16,32}, bbox_{8,16,32}, kps_{8,16,32}. Boxes are clipped to `image`.
Detections YuNetDecode(const std::vector<cv::Mat>& outs, int batch_index, cv::Size padded,
                       cv::Size image, float score_threshold, float nms_iou);

// OpenCV 4.6 DNN re-plans a network (allocates every layer again) whenever
// its input shape changes, which costs more than the forward pass itself:
// batches of 3, 4, 3, 2 ... from a scheduler ran at half the throughput of
// constant batches (docs/figures.md). So the detector keeps one network per
// input shape (batch x padded size), made on first use by `make_net`.
class YuNetDetector : public DnnDetector {
 public:
  using NetFactory = std::function<Result<cv::dnn::Net>()>;
  // `make_net` (optional) builds another copy of the network; without it one
  // network serves every shape. With `engine` (vision/yunet_engine.h) the forward pass is
  // veil's own and OpenCV's network is not run.
  YuNetDetector(cv::dnn::Net net, float nms_iou, NetFactory make_net = {},
                std::unique_ptr<YuNetEngine> engine = nullptr);
  ~YuNetDetector() override;
  std::string name() const override { return "yunet"; }
  // Per image, the 12 outputs (YuNetOutputNames order), each [1, anchors, columns].
  Result<std::vector<std::vector<cv::Mat>>> Forward(const std::vector<cv::Mat>& images) override;

 protected:
  Result<std::vector<Detections>> RunBatch(const std::vector<cv::Mat>& images, float score) override;

 private:
  Result<cv::dnn::Net*> NetFor(int batch, cv::Size padded);
  cv::dnn::Net net_;
  cv::Mat blob_;
  float nms_;
  NetFactory make_net_;
  std::map<std::tuple<int, int, int>, cv::dnn::Net> nets_;  // (batch, width, height) -> its own network
  std::unique_ptr<YuNetEngine> engine_;
  // The 12 outputs of one forward pass over `images` (validated shapes).
  Result<std::vector<cv::Mat>> Run(const std::vector<cv::Mat>& images, cv::Size padded);
};

}  // namespace veil
