// A remote AI target: a KServe v2 / Open Inference Protocol gRPC endpoint
// (`veil worker`, or NVIDIA Triton serving the YuNet ONNX model). Only the
// downscaled detection copy crosses the wire; the raw outputs come back and
// are decoded here exactly as the in-process detector decodes them.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "core/metrics.h"
#include "core/status.h"
#include "inference/tensor_codec.h"
#include "vision/detector.h"

namespace veil {

struct RemoteOptions {
  std::string endpoint;  // host:port
  std::string model =
      "yunet_u8";            // model name at the endpoint; its metadata decides the tensor form
  double deadline_ms = 500;  // ModelInfer deadline: a later answer is a failure
  double probe_timeout_ms = 500;  // ServerReady / ModelReady / ModelMetadata deadline
  float nms_iou = 0.3f;
};

struct WireTotals {
  uint64_t bytes_sent = 0, bytes_received = 0, frames = 0, calls = 0;
};

// Shared by the target's prober and its detectors (one per RPC in flight);
// thread-safe.
class RemoteTarget {
 public:
  // `metrics` may be null; `name` labels the metrics.
  RemoteTarget(RemoteOptions o, MetricsRegistry* metrics, const std::string& name);
  ~RemoteTarget();
  // Live, ready, model ready and its metadata usable: Ok, else why not.
  Status Probe();
  // One ModelInfer for the images (CV_8UC3, one size); decoded boxes per image.
  Result<std::vector<Detections>> Infer(const std::vector<cv::Mat>& images, float score);
  std::optional<kserve::RemoteModel> model() const;
  WireTotals wire() const;
  const RemoteOptions& options() const { return o_; }

 private:
  Status FetchMetadata();
  Result<std::vector<Detections>> InferOnce(const std::vector<cv::Mat>& images,
                                            const kserve::RemoteModel& m, float score);
  struct Rpc;
  RemoteOptions o_;
  std::unique_ptr<Rpc> rpc_;
  mutable std::mutex mu_;
  std::optional<kserve::RemoteModel> model_;  // guarded by mu_
  std::atomic<uint64_t> sent_{0}, received_{0}, frames_{0}, calls_{0};
  Counter *m_sent_ = nullptr, *m_received_ = nullptr, *m_frames_ = nullptr;
  std::unique_ptr<MetricsRegistry> own_metrics_;
};

// The Detector face of a remote target, for an InferenceScheduler thread.
class RemoteDetector : public Detector {
 public:
  explicit RemoteDetector(std::shared_ptr<RemoteTarget> t) : t_(std::move(t)) {}
  std::string name() const override { return "remote " + t_->options().endpoint; }
  bool native_batch() const override { return true; }
  Result<std::vector<Detections>> Detect(const std::vector<cv::Mat>& images, float score) override {
    return t_->Infer(images, score);
  }

 private:
  std::shared_ptr<RemoteTarget> t_;
};

}  // namespace veil
