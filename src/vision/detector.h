// Face detector interface: batch-capable, CPU via OpenCV DNN.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "core/status.h"
#include "vision/box.h"
#include "vision/second_look_params.h"

namespace veil {

class Detector {
 public:
  virtual ~Detector() = default;
  virtual std::string name() const = 0;
  // Detects faces in every BGR image (CV_8UC3; all images the same size) in
  // one call. Boxes come back in each image's pixel coordinates, after NMS,
  // with score >= score_threshold.
  virtual Result<std::vector<Detections>> Detect(const std::vector<cv::Mat>& images,
                                                 float score_threshold) = 0;
  // Whether N images cost one forward pass (true) or N (false).
  virtual bool native_batch() const = 0;
  // The network's raw outputs for every image (what a remote AI target
  // serves; the caller decodes them). Images are BGR 0..255 as CV_8UC3 or
  // CV_32FC3, all one size. Detectors that cannot do this say so.
  virtual Result<std::vector<std::vector<cv::Mat>>> Forward(const std::vector<cv::Mat>& images) {
    return Status::Error(name() + ": raw outputs are not supported");
  }
};

// A detector over an OpenCV DNN graph: validates the images, runs them as one
// batch, and falls back to one pass per image (remembered) when the graph has
// a fixed batch of 1.
class DnnDetector : public Detector {
 public:
  Result<std::vector<Detections>> Detect(const std::vector<cv::Mat>& images, float score_threshold) final;
  bool native_batch() const final { return batch_ok_; }

 protected:
  // One forward pass over `images` (validated: non-empty BGR, one size).
  virtual Result<std::vector<Detections>> RunBatch(const std::vector<cv::Mat>& images, float score) = 0;

 private:
  bool batch_ok_ = true;
};

struct DetectorConfig {
  std::string family = "yunet";  // yunet | ultraface
  std::string model_path;        // explicit file; empty = resolve by name
  std::string model_sha256;      // expected sha256 for a custom model file; empty = known models only
  float nms_iou = 0.3f;
  int threads = 1;               // OpenCV DNN threads (process-wide setting)
  // YuNet's forward pass: "native" (vision/yunet_engine.h, one thread), "opencv" (OpenCV DNN),
  // or "auto": native for yunet at one thread, else OpenCV.
  std::string engine = "auto";
  SecondLookParams second_look;  // vision/second_look.h (yunet only)
};

Status Validate(const DetectorConfig& c);

// Resolves, verifies (sha256) and loads the model. Model load failure is an
// error, never a silent fallback. `source` receives where the model came from.
Result<std::unique_ptr<Detector>> LoadDetector(const DetectorConfig& c, std::string* source = nullptr);

}  // namespace veil
