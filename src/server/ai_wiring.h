// How a node's AI targets are built from its configuration: the in-process detector (with the
// test-only fault injection around it) and the remote KServe v2 workers, behind one AiRouter.
// `veil serve` (cli/cmd_serve.cpp) builds it and hands it to the SessionManager, which only
// routes sessions' detections through it; tests build their own.
#pragma once
#include <memory>

#include "core/metrics.h"
#include "core/status.h"
#include "inference/ai_router.h"
#include "inference/fault_injection.h"
#include "server/event_log.h"
#include "server/session_manager.h"

namespace veil {

// The router's events (a target down, up, sessions moved) go to `events`; `faults` is what
// PUT /v1/debug/inference sets (used only with inference.fault_injection).
Result<std::unique_ptr<AiRouter>> StartAiRouter(const ServerDeps& d, MetricsRegistry* metrics,
                                                std::shared_ptr<FaultInjector> faults,
                                                std::shared_ptr<EventLog> events,
                                                InferenceHost* local_host = nullptr);

// The AI router, its fault injector and the event log a SessionManager takes, built from `d`.
Result<ServerParts> StartServerParts(const ServerDeps& d, MetricsRegistry* metrics);

}  // namespace veil
