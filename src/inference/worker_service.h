// `veil worker`: serves the detector over the KServe v2 / Open Inference
// Protocol gRPC API (ServerLive, ServerReady, ModelReady, ServerMetadata,
// ModelMetadata, ModelInfer) through the same InferenceScheduler the server
// uses in-process, so requests from many callers are batched together.
// Models: "yunet" (FP32 NCHW, the ONNX graph's own input) and "yunet_u8"
// (UINT8 NHWC, a quarter of the bytes); both answer with the raw outputs.
#pragma once
#include <atomic>
#include <memory>
#include <string>

#include "core/metrics.h"
#include "core/status.h"
#include "inference/scheduler.h"

namespace veil {

struct WorkerOptions {
  std::string listen = "127.0.0.1:8001";  // host:port; port 0 = any free port
  SchedulerConfig scheduler;
  double default_deadline_ms = 2000;  // for calls that carry no deadline
};

class Worker {
 public:
  // Makes the scheduler's detectors with `factory` (they must support raw
  // outputs), binds and starts serving. `metrics` must outlive the worker.
  static Result<std::unique_ptr<Worker>> Start(const WorkerOptions& o,
                                               const DetectorFactory& factory,
                                               MetricsRegistry* metrics);
  ~Worker();  // Shutdown()
  int port() const { return port_; }
  // Not ready any more, finishes the calls in progress (at most `grace_ms`), stops.
  void Shutdown(double grace_ms = 2000);

 private:
  Worker() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace veil
