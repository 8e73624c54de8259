// The AI targets of one server and the routing of every session's detection
// requests to them. Targets: the in-process engine ("local") and remote
// KServe v2 gRPC endpoints ("host:port": `veil worker` or Triton), each with
// its own InferenceScheduler that batches the requests of the sessions
// assigned to it. A session is assigned to the healthy target with the
// fewest active streams (TargetPool) and stays there until it ends or its
// target goes down.
//
// Health: every target is probed on an interval (remote: ServerReady,
// ModelReady and ModelMetadata; local: a tiny detection through its own
// scheduler, skipped while real results keep arriving). A target whose
// probe or any request fails or times out is marked down at once: its
// sessions are moved to healthy targets right then (their next detection
// goes there), and until a fresh result arrives their frames are fail-closed
// (the privacy stage's rule). A target that answers `rejoin_probes` probes
// in a row is up again and takes new sessions. With no healthy target every
// request fails at once (whole-frame mosaic) and NotReadyReason() says why.
#pragma once
#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/metrics.h"
#include "core/mutex.h"
#include "inference/remote_target.h"
#include "inference/scheduler.h"
#include "inference/target_pool.h"
#include "vision/second_look_params.h"

namespace veil {

struct RouterConfig {
  std::vector<TargetSpec> targets{{"local", ""}};
  SchedulerConfig local;         // the in-process target's scheduler
  InferenceHost* local_host = nullptr;  // set: the in-process target's inference runs there (hosted)
  SchedulerConfig remote;        // each remote target's scheduler (threads = calls in flight)
  RemoteOptions remote_options;  // endpoint set per target
  SecondLookParams second_look;  // vision/second_look.h, for remote targets (a local one's detector has its own)
  double probe_interval_ms = 200;
  double probe_timeout_ms = 500;
  int rejoin_probes = 2;
};
Status Validate(const RouterConfig& c);

class AiRouter : public DetectionSink {
 public:
  // type: ai_target_down | ai_target_up | session_moved; session: the label given to Attach.
  using EventFn = std::function<void(const std::string& type, const std::string& session,
                                     const std::string& detail)>;
  // `local` makes the in-process target's detectors (unused without one).
  static Result<std::unique_ptr<AiRouter>> Start(const RouterConfig& c,
                                                 const DetectorFactory& local,
                                                 MetricsRegistry* metrics, EventFn events);
  ~AiRouter() override;  // Shutdown()

  void Submit(DetectRequest r) override;
  // Registers a session and assigns it now. Returns its target's name ("" when none is healthy).
  std::string Attach(uint64_t session, const std::string& label);
  void Detach(uint64_t session);
  std::string TargetOf(uint64_t session) const;  // "" when unassigned
  std::string NotReadyReason() const;            // "" when some target is healthy
  std::vector<TargetState> Snapshot() const;
  const RouterConfig& config() const { return cfg_; }
  void Shutdown();

 private:
  struct Target;
  AiRouter(const RouterConfig& c, EventFn ev);
  void ProbeLoop(int t);
  Status ProbeLocal(int t);
  void MarkDown(int t, const std::string& why);
  void MarkUp(int t);
  void Reassign(uint64_t session) REQUIRES(health_mu_);
  void NoteTarget(uint64_t session, int target);
  void UpdateGauges();

  const RouterConfig cfg_;
  EventFn events_;
  TargetPool pool_;
  std::vector<std::unique_ptr<Target>> targets_;
  Mutex health_mu_;  // serialises marking targets down and up
  mutable Mutex mu_;
  std::map<uint64_t, std::pair<std::string, int>> sessions_ GUARDED_BY(mu_);  // label, last target
  Mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_ GUARDED_BY(stop_mu_) = false;
  std::atomic<bool> shutting_down_{false};
  Counter* m_moves_ = nullptr;
};

}  // namespace veil
