#include "server/ai_wiring.h"

#include <spdlog/spdlog.h>

#include "server/inference_on_executor.h"
#include "vision/detector.h"

namespace veil {

Result<std::unique_ptr<AiRouter>> StartAiRouter(const ServerDeps& d, MetricsRegistry* metrics,
                                                std::shared_ptr<FaultInjector> faults,
                                                std::shared_ptr<EventLog> events, InferenceHost* local_host) {
  if (!metrics || !faults || !events) return Status::Error("the AI router needs metrics, faults and an event log");
  RouterConfig rc;
  rc.targets = d.server.targets;
  rc.local = rc.remote = d.server.scheduler;  // [inference]: batching and queue for every target
  rc.local_host = local_host;
  rc.remote.threads = d.server.remote_threads;  // a remote target's threads are its calls in flight
  rc.remote_options.model = d.server.remote_model;
  rc.remote_options.deadline_ms = d.server.deadline_ms;
  rc.remote_options.nms_iou = d.detector.nms_iou;
  rc.second_look = d.detector.second_look;
  rc.probe_interval_ms = d.server.probe_interval_ms;
  rc.probe_timeout_ms = d.server.probe_timeout_ms;
  const DetectorConfig dc = d.detector;
  const bool inject = d.server.fault_injection;
  auto source = std::make_shared<std::string>();
  auto router = AiRouter::Start(
      rc,
      [dc, faults, inject, source]() -> Result<std::unique_ptr<Detector>> {
        auto det = LoadDetector(dc, source.get());
        if (!det || !inject) return det;
        return std::unique_ptr<Detector>(std::make_unique<FaultInjectingDetector>(std::move(*det), faults));
      },
      metrics,
      [events](const std::string& type, const std::string& session, const std::string& detail) {
        events->Add(type, session, detail);
      });
  if (router && !source->empty()) spdlog::info("in-process detector: {} ({})", dc.family, *source);
  return router;
}

Result<ServerParts> StartServerParts(const ServerDeps& d, MetricsRegistry* metrics) {
  ServerParts p;
  p.faults = std::make_shared<FaultInjector>();
  p.events = std::make_shared<EventLog>();
  if (d.server.detect_on_executor) {
    auto ex = StartFrameExecutor(d);
    if (!ex) return ex.status();
    if (*ex && (*ex)->stats().threads >= 2) {
      p.executor = std::move(*ex);
      p.inference_host = std::make_shared<InferenceOnExecutor>(p.executor, d.server.budget_ms);
      const SchedulerConfig& sc = d.server.scheduler;
      if (sc.threads != 1 || sc.nice != 0 || sc.max_wait_us != 0)
        spdlog::warn("inference.threads {}, inference.nice {}, inference.max_wait_us {}: not used while the in-process "
                     "target runs on the frame executor (server.detect_on_executor); set that false to use them",
                     sc.threads, sc.nice, sc.max_wait_us);
    } else if (*ex) {  // documented: with one frame thread a stalled detector would hold them all
      spdlog::info("one frame thread: the in-process detections keep a thread of their own (server.detect_on_executor needs 2)");
      p.executor = std::move(*ex);
    }
  }
  auto router = StartAiRouter(d, metrics, p.faults, p.events, p.inference_host.get());
  if (!router) return router.status();
  p.router = std::move(*router);
  return p;
}

}  // namespace veil
