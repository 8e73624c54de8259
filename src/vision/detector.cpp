#include "vision/detector.h"

#include <opencv2/core/utility.hpp>
#include <opencv2/dnn.hpp>

#include "vision/model_registry.h"
#include "vision/second_look.h"
#include "vision/ultraface.h"
#include "vision/yunet.h"
#include "vision/yunet_engine.h"

namespace veil {

Result<std::vector<Detections>> DnnDetector::Detect(const std::vector<cv::Mat>& images, float score) {
  if (images.empty()) return std::vector<Detections>{};
  for (const auto& im : images)
    if (im.empty() || im.type() != CV_8UC3 || im.size() != images[0].size())
      return Status::Error(name() + ": images must be non-empty BGR (CV_8UC3) of one size");
  if (images.size() > 1 && batch_ok_) {
    auto r = RunBatch(images, score);
    if (r) return r;
    batch_ok_ = false;
  }
  std::vector<Detections> all;
  all.reserve(images.size());
  for (const auto& im : images) {
    auto r = RunBatch({im}, score);
    if (!r) return r.status();
    all.push_back(std::move(r->front()));
  }
  return all;
}

Status Validate(const DetectorConfig& c) {
  if (c.family != "yunet" && c.family != "ultraface")
    return Status::Error("detector must be 'yunet' or 'ultraface', got '" + c.family + "'");
  if (!(c.nms_iou > 0.f && c.nms_iou < 1.f)) return Status::Error("nms_iou must be in (0, 1)");
  if (c.threads < 1 || c.threads > 256) return Status::Error("detector threads must be in [1, 256]");
  if (c.engine != "auto" && c.engine != "native" && c.engine != "opencv")
    return Status::Error("detector engine must be 'auto', 'native' or 'opencv', got '" + c.engine + "'");
  if (c.engine == "native" && c.family != "yunet")
    return Status::Error("detector engine 'native' runs yunet only; " + c.family + " runs on OpenCV ('auto' or 'opencv')");
  if (c.engine == "native" && c.threads != 1)
    return Status::Error("detector engine 'native' runs one thread; detector.threads > 1 needs 'opencv'");
  if (!c.model_sha256.empty() &&
      (c.model_sha256.size() != 64 || c.model_sha256.find_first_not_of("0123456789abcdef") != std::string::npos))
    return Status::Error("model sha256 must be 64 lowercase hex digits");
  if (Status s = Validate(c.second_look); !s) return s;
  if (c.second_look.score > 0.f && c.family != "yunet")
    return Status::Error("detector.second_look needs the yunet family (ultraface has a fixed input size)");
  return Status::Ok();
}

Result<std::unique_ptr<Detector>> LoadDetector(const DetectorConfig& c, std::string* source) {
  if (Status s = Validate(c); !s) return s;
  auto model = ResolveModel(c.family, c.model_path, c.model_sha256);
  if (!model) return model.status();
  if (source) *source = model->source + (model->path.empty() ? "" : " " + model->path);
  cv::setNumThreads(c.threads);
  cv::dnn::Net net;
  try {
    net = cv::dnn::readNetFromONNX(reinterpret_cast<const char*>(model->bytes.data()), model->bytes.size());
    net.setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
    net.setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
  } catch (const cv::Exception& e) {
    return Status::Error("cannot load " + c.family + " model (" + model->source + "): " + e.what());
  }
  if (net.empty()) return Status::Error("cannot load " + c.family + " model: empty network");
  if (c.family == "yunet") {
    auto bytes = std::make_shared<std::vector<unsigned char>>(std::move(model->bytes));
    auto more = [bytes]() -> Result<cv::dnn::Net> {
      try {
        cv::dnn::Net n = cv::dnn::readNetFromONNX(reinterpret_cast<const char*>(bytes->data()), bytes->size());
        n.setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
        n.setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
        return n;
      } catch (const cv::Exception& e) {
        return Status::Error(std::string("yunet: cannot copy the network: ") + e.what());
      }
    };
    // veil's own forward pass unless told otherwise; it checks itself against OpenCV's on load.
    std::unique_ptr<YuNetEngine> engine;
    if (c.engine == "native" || (c.engine == "auto" && c.threads == 1)) {
      auto e = YuNetEngine::Create(net);
      if (e) engine = std::move(*e);
      else if (c.engine == "native") return e.status();
      if (source) *source += engine ? std::string("; forward pass: native (") + engine->isa() + ")"
                                    : "; forward pass: OpenCV DNN (" + e.status().message() + ")";
    } else if (source) {
      *source += "; forward pass: OpenCV DNN";
    }
    std::unique_ptr<Detector> yunet(new YuNetDetector(std::move(net), c.nms_iou, more, std::move(engine)));
    if (c.second_look.score > 0.f) return std::unique_ptr<Detector>(new SecondLookDetector(std::move(yunet), c.second_look));
    return yunet;
  }
  const cv::Size in(model->spec.input_w, model->spec.input_h);
  if (in.width == 0)
    return Status::Error("ultraface: unknown input geometry for a custom model file; "
                         "only RFB-320 and RFB-640 are supported");
  return std::unique_ptr<Detector>(new UltraFaceDetector(std::move(net), in, c.nms_iou));
}

}  // namespace veil
