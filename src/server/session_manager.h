// The live server's model: sessions, their viewers, the AI targets (one
// inference scheduler each, sessions assigned by fewest streams, failover:
// inference/ai_router.h) and the
// housekeeping that ends sessions whose publisher went away or whose
// pipeline failed. Transport-neutral: the HTTP API (http_api) and
// WebRTC (WHIP/WHEP) call into it. Every change of state is an event (server/event_log).
// Its parts: the session table and viewers (session_manager.cpp), WHIP/WHEP
// (session_webrtc.cpp), capacity and admission (session_capacity.cpp), housekeeping and
// node-level shedding (session_housekeeping.cpp).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "core/metrics.h"
#include "core/mutex.h"
#include "core/thread_cpu.h"
#include "inference/fault_injection.h"
#include "inference/ai_router.h"
#include "server/capacity.h"
#include "server/capacity_memory.h"
#include "server/event_log.h"
#include "server/period_phases.h"
#include "server/live_session.h"

namespace veil {

struct ViewerInfo {
  std::string id, host;
  int video_port = 0, audio_port = 0;
  ViewerKind kind = ViewerKind::kRtp;
};

struct SessionInfo {
  std::string id, created;  // created: UTC ISO 8601
  VideoCodec codec = VideoCodec::kVp8;
  Mode mode = Mode::kAnonymize;
  std::string ingest_host;
  int video_port = 0, audio_port = 0;
  std::string target;  // AI target
  IngestKind ingest = IngestKind::kRtp;
  std::string publisher;       // webrtc: the WHIP resource of the attached publisher ("" = none)
  std::vector<ViewerInfo> viewers;
  LiveSessionStats stats;
};

// What the node carries and can still take (GET /readyz, metrics, admission).
struct CapacityState {
  double cores = 0;
  double budget_ms_per_s = 0;   // CPU ms per second sessions may take
  double load_ms_per_s = 0;     // what the running sessions are predicted to take
  double headroom = 0;          // 1 - load / budget, at least 0
  int capacity_sessions = 0;    // default sessions (vp8, the default mode, 720p30) an empty node takes
  int max_sessions = 0;         // server.max_sessions; 0 = auto
  double transcode_ms = 0;      // the limit: standalone vp8 720p decode + encode, ms per frame
  double limit_sessions = 0;    // cores x 33.3 ms / transcode_ms
  double ratio = 0;             // the model's default session CPU per frame / transcode_ms
  bool learned = false;         // the ratio was learned from running sessions (else the prior)
  int64_t saturated_seconds = 0;  // seconds not learned from: the process above 80% of the cores
  int64_t retimes = 0;            // server.retime_s: standalone transcodes timed again while idle
  // The configured detection's CPU per 720p frame beyond the default's, on the anonymize prior
  // (CapacityModel::SetPriorDetectionExtraMs; 0: the default detection, or not timed).
  double prior_detection_extra_ms = 0;
  // Per codec, the timings the model's transcode figure is the cheapest of (startup's first).
  std::map<std::string, std::vector<double>> kept_timings_by_codec;
  // Per codec, the last timing taken, core by core (TimeTranscode; its figure their harmonic mean).
  std::map<std::string, std::map<std::string, double>> last_timing_by_core;
  std::string default_kind;     // e.g. "anonymized vp8 720p30"
  std::map<std::string, double> transcode_ms_by_codec;
  std::vector<CapacityModel::Cost> costs;  // the whole model
  int plan_speed_step = 0;                 // server.admit_speed_step
  std::map<std::string, int> plan_step_by_codec;  // the same held to each codec's ladder
  // An encode at that step over one at step 0, on the same standalone pictures (-1: not timed).
  std::map<std::string, double> plan_encode_ratio_by_codec;
  std::map<std::string, int> paired_plan_ratio_samples_by_codec;  // seconds with both steps side by side
  struct EncodeStep {
    int step = 0;
    double ms = 0;    // encode CPU per 720p frame
    int samples = 0;  // 0: step 0's prior (the standalone transcode's encode)
  };
  std::map<std::string, std::vector<EncodeStep>> encode_by_codec;  // step 0 and every step measured
  // The same for full_blur's whole-frame mosaic (CapacityModel, EncodePicture): the steps its
  // sessions measured, and the share planned with (1 until they measured it).
  std::map<std::string, double> mosaic_plan_encode_ratio_by_codec;
  std::map<std::string, std::vector<EncodeStep>> mosaic_encode_by_codec;
  std::string memory;  // server.capacity_state: what was read at startup ("" when none is set)
};

// Admission by latency (server.admit_p99_ms; max_sessions = auto): the reason to refuse a new
// session when a running one's processing p99 over its last 5 s (by id; sessions without a
// figure yet are left out) is above limit_ms, naming the worst; "" when none is, or limit_ms is 0.
std::string AdmitP99Refusal(const std::map<std::string, double>& recent_p99_ms, double limit_ms);

struct CreateSpec {
  std::string id;     // empty: generated
  VideoCodec codec = VideoCodec::kVp8;
  std::string mode;   // empty: the configured default
  bool audio = true;
  IngestKind ingest = IngestKind::kRtp;
};

// The result of a WHIP publish or WHEP watch: the SDP answer and the resource it made.
struct WebRtcAnswer {
  std::string session, resource, sdp;
};

struct ServerDeps {
  ServerSettings server;
  PrivacyConfig privacy;
  EncoderOptions encoder;
  DetectorConfig detector;
  int decode_threads = 1;
  // The settings that change what a session costs, as text (server.capacity_state keeps learned
  // costs only for the same; cli/cmd_serve.cpp).
  std::string cost_settings;
};

// What a SessionManager is given besides its configuration (server/ai_wiring.h builds them):
// the AI targets it routes sessions' detections through, the fault injector the debug API
// sets, and the event log it shares with the router.
struct ServerParts {
  std::unique_ptr<AiRouter> router;
  std::shared_ptr<FaultInjector> faults;
  std::shared_ptr<EventLog> events;
  // Set when the router's in-process target runs on the frame executor
  // (server.detect_on_executor): the SessionManager runs its sessions on the same one.
  std::shared_ptr<FrameExecutor> executor;
  std::shared_ptr<InferenceHost> inference_host;  // the router's in-process target runs there
};

// The frame executor `d` asks for (server.frame_executor; server.frame_threads, else the
// usable cores), or null when it asks for a thread per session.
Result<std::shared_ptr<FrameExecutor>> StartFrameExecutor(const ServerDeps& d);

class SessionManager {
 public:
  // Times the capacity model's limit and starts the frame executor and housekeeping.
  static Result<std::unique_ptr<SessionManager>> Start(const ServerDeps& d, MetricsRegistry* metrics,
                                                       ServerParts parts);
  ~SessionManager();  // Shutdown()

  Status Create(const CreateSpec& spec, const std::string& caller, SessionInfo* out);
  Status Delete(const std::string& id, const std::string& caller);
  Status Get(const std::string& id, SessionInfo* out) const;
  std::vector<SessionInfo> List() const;
  bool Exists(const std::string& id) const { return Find(id) != nullptr; }
  Status AddViewer(const std::string& id, const std::string& host, int video_port, int audio_port,
                     const std::string& caller, ViewerInfo* out);
  Status RemoveViewer(const std::string& id, const std::string& viewer, const std::string& caller);
  Status SetMode(const std::string& id, const std::string& mode, const std::string& caller, Mode* previous);
  Status InjectFault(bool stall, bool fail, const std::string& caller);
  // The session's worker burns `ms` of CPU per frame (inference.fault_injection only).
  Status InjectCpuHog(const std::string& id, double ms, const std::string& caller);
  // The calls below fail with a StatusCode that says what kind of refusal it is (the HTTP layer
  // maps it: server/http_util.h): kInvalidArgument, kNotFound, kConflict, kUnavailable (retry
  // later: capacity, draining, a session still ending), ...
  // WHIP: answers a publisher's offer for session `id`, creating the session
  // (ingest webrtc, codec from the offer) when it does not exist. Blocks for
  // the negotiation. kInvalidArgument malformed offer, kConflict already published,
  // kUnsupported no usable codec.
  Status Publish(const std::string& id, const std::string& offer, const std::string& caller, WebRtcAnswer* out);
  // WHIP DELETE: the publisher leaves and the session ends.
  Status Unpublish(const std::string& id, const std::string& resource, const std::string& caller);
  // WHEP: a viewer's offer for session `id`. Blocks for the negotiation.
  Status Watch(const std::string& id, const std::string& offer, const std::string& caller, WebRtcAnswer* out);
  std::vector<Event> Events(uint64_t after_seq) const;
  // The session's outgoing picture (LiveSession::Snapshot), at most max_width
  // px wide. kNotFound no such session, kUnavailable no frame has left it yet.
  Status Snapshot(const std::string& id, int max_width, SessionSnapshot* out) const;
  // The session's figures over the history window, oldest first. kNotFound no such session.
  Status History(const std::string& id, std::vector<HistoryPoint>* out) const;

  // Readiness: empty when new sessions can be taken, else why not.
  std::string NotReadyReason() const;
  CapacityState Capacity() const;
  size_t session_count() const;
  // The AI targets: health, streams, recent latency, why down.
  std::vector<TargetState> Targets() const;
  // Ends every session (with this reason) and refuses new ones. Idempotent.
  void Shutdown(const std::string& reason = "shutdown");
  // Takes no new sessions from now on (kUnavailable, /readyz 503 "draining"); running ones go on. Idempotent.
  void Drain(const std::string& caller);
  bool draining() const;
  // No session in the table and none still being torn down.
  bool Idle();
  // Default sessions (vp8 720p30, the default mode) that still fit: the cluster's placement.
  int FreeSessions() const;
  // The same for sessions of this codec and mode (the cluster places each kind by its own cost).
  int FreeSessions(VideoCodec codec, Mode mode) const;
  std::vector<std::string> SessionIds() const;
  // Called (on the thread that made the change, no lock held) after a session started or ended.
  void SetChangeHook(std::function<void()> hook);
  const ServerDeps& deps() const { return deps_; }

 private:
  struct Entry {
    std::shared_ptr<LiveSession> session;  // shared: a WebRTC negotiation may hold it outside the lock
    SessionInfo info;  // static part (viewers kept current)
    uint64_t sched_id = 0;
    int next_viewer = 1;
    uint64_t resolution_changes = 0;  // seen by housekeeping (an event each)
    SessionLoad load;                 // for the capacity model: codec, mode, size, rate
    int shed_level = 0;               // seen by housekeeping (an event per change)
    double recent_p99_ms = -1;        // its processing p99 over the last 5 s, as housekeeping last read it
    double created_ms = 0;            // NowMs() at creation: the newest ends first when shedding
  };
  SessionManager(const ServerDeps& d, MetricsRegistry* m);
  void Housekeeping();
  // Node-level shedding, under mu_: the overloaded sessions of this tick (new viewers and sessions
  // refused) and those of them falling behind; may add the newest session to `ending`.
  void ShedNode(double now, const std::vector<std::string>& overloaded, const std::vector<std::string>& behind,
                std::vector<std::pair<std::string, std::pair<std::string, std::string>>>& ending) REQUIRES(mu_);
  WebRtcPeerConfig PeerConfig() const;
  // The session (shared) when it exists and is running.
  std::shared_ptr<LiveSession> Find(const std::string& id) const;
  // Removes a session from the table (under mu_) and returns it for destruction outside the lock.
  std::shared_ptr<LiveSession> Take(const std::string& id, const std::string& reason, const std::string& detail);
  void AddEvent(const std::string& type, const std::string& session, const std::string& detail);
  void Changed();
  SessionInfo InfoOf(const Entry& e) const REQUIRES(mu_);
  // Empty when a session like `want` may start now, else why not (with the numbers).
  std::string AdmitReason(const SessionLoad& want) const REQUIRES(mu_);
  double LoadMsPerS() const REQUIRES(mu_);
  // server.shed_start_by_load: the shed level the sessions still in their warm-up (a reserved
  // one among them) start at, from the node's predicted load (docs/capacity.md, "Starting at the
  // node's load"): the lowest encoder step up to the plan step at which they fit the budget
  // beside the settled sessions (each at the step it runs), a step between counted once the
  // model learned its encodes (CapacityModel::MsPerFrameAtStep); the plan step when none fits.
  int StartLevel() const REQUIRES(mu_);
  // Once a second: learns the sessions' CPU per frame; process_cpu_ms: the process's CPU over the
  // interval. Returns how many sessions it learned from.
  int LearnCosts(double process_cpu_ms, double wall_ms) REQUIRES(mu_);
  // server.capacity_state: reads what an earlier run learned into capacity_ (StartCapacity), and
  // writes what it knows now (housekeeping, at most every kMemorySaveMs once something was
  // learned, and at shutdown). Housekeeping's thread, then the destructor's.
  void RestoreMemory();
  void SaveMemory();
  static constexpr double kMemorySaveMs = 10000;
  std::string DefaultKind() const;
  std::string KindName(VideoCodec codec, Mode mode) const;  // "anonymized h264 720p30"
  // Times the standalone transcode (the limit), builds the cost model and its metrics.
  Status StartCapacity(MetricsRegistry* metrics);
  // server.retime_s: once a node has had no session for that long since it last timed the
  // standalone transcode, times it again (CapacityModel::Retime); server.retime_first_s until
  // the model keeps all its timings (RetimeWaitS). Housekeeping's thread.
  void RetimeWhenIdle(double now);

  const ServerDeps deps_;
  MetricsRegistry* metrics_;
  std::shared_ptr<FaultInjector> faults_;
  std::unique_ptr<AiRouter> router_;
  std::unique_ptr<CapacityModel> capacity_;
  std::shared_ptr<InferenceHost> inference_host_;  // with detect_on_executor: the router's target runs there
  std::shared_ptr<FrameExecutor> executor_;  // null: a worker thread per session (server.frame_executor false)
  std::unique_ptr<PeriodPhases> keyframes_;  // null: server.stagger_keyframes false
  std::unique_ptr<PeriodPhases> detections_;  // phases as fractions of a period; null: server.stagger_detections false
  double keyframe_epoch_ms_ = 0;               // the phases count from here
  mutable Mutex mu_;
  std::map<std::string, Entry> sessions_ GUARDED_BY(mu_);
  bool draining_ GUARDED_BY(mu_) = false;  // shutting down
  bool drain_ GUARDED_BY(mu_) = false;     // draining: no new sessions
  uint64_t next_sched_id_ GUARDED_BY(mu_) = 1;
  // Ids whose session left the table but is still being destroyed: its metric
  // series are removed when it is, so a new session may not take the id before
  // (it would get those series and have them freed under it). Lock order: mu_, then ending_mu_.
  Mutex ending_mu_;
  std::condition_variable ending_cv_;
  std::set<std::string> ending_ GUARDED_BY(ending_mu_);
  Mutex hook_mu_;
  std::function<void()> hook_ GUARDED_BY(hook_mu_);
  std::shared_ptr<EventLog> events_;
  std::thread housekeeping_;
  Mutex hk_mu_;
  std::condition_variable hk_cv_;
  bool hk_stop_ GUARDED_BY(hk_mu_) = false;
  // Server-wide metrics.
  Gauge *m_sessions_ = nullptr, *m_cpu_pct_ = nullptr, *m_capacity_ = nullptr, *m_headroom_ = nullptr,
        *m_limit_ = nullptr;
  Counter *m_created_ = nullptr, *m_rejected_ = nullptr, *m_cpu_s_ = nullptr, *m_shed_ended_ = nullptr;
  Gauge* m_overloaded_ = nullptr;
  // Node-level shedding (housekeeping): since when some session has shed every level it has
  // and is still late (-1: not overloaded). Meanwhile new viewers and sessions are refused; after
  // ShedEndAfterMs() of a session falling behind (behind_since_ms_) the newest session ends, and
  // that clock starts again.
  double overloaded_since_ms_ GUARDED_BY(mu_) = -1;
  double behind_since_ms_ GUARDED_BY(mu_) = -1;  // since when a session at its last level falls behind
  CostLearner learner_ GUARDED_BY(mu_);  // teaches capacity_ from the sessions, once a second
  // The process's CPU in the last second left one more default session's planned cost inside
  // the node's budget (housekeeping, once a second); each session's load shedding is told
  // (LiveSession::SetNodeRoom) and may then take a level back at a higher p90.
  bool node_room_ GUARDED_BY(mu_) = false;
  // What the sessions' take-backs ask first (server.shed_take_back_in_budget): fed the process's
  // CPU once a second by the housekeeping.
  const std::shared_ptr<TakeBackBudget> take_back_ = std::make_shared<TakeBackBudget>();
  uint64_t take_backs_held_seen_ = 0;  // housekeeping: take_back_->held() already counted
  // The process's CPU by kind of thread (veil_thread_cpu_seconds_total{threads}): sampled by
  // the housekeeping once a second; what each kind's counter already holds.
  ThreadCpuSampler thread_cpu_;
  std::map<std::string, double> thread_cpu_counted_;
  Counter* m_take_backs_held_ = nullptr;
  // server.capacity_state (written by StartCapacity, then the housekeeping thread, then the destructor).
  CapacityKey memory_key_;
  std::string memory_note_;       // what startup read, for /readyz
  bool memory_unsaved_ = false;   // learned since the last save
  double memory_saved_ms_ = 0;
  // server.retime_s (housekeeping's thread): when the transcode was last timed, or a session last
  // ran (a re-timing waits for retime_s of an idle node).
  double retimed_ms_ = 0;
  std::atomic<int64_t> retimes_{0};  // re-timings the model took (not counting startup's)
  std::map<VideoCodec, std::vector<std::pair<int, double>>> timed_by_core_ GUARDED_BY(mu_);  // the last taken
  std::string memory_error_;      // the last save's error, logged once
  std::string overloaded_why_ GUARDED_BY(mu_);
  // The sessions late at their last level at the last tick (id, created_ms): OverloadReason.
  std::vector<std::pair<std::string, double>> overloaded_ids_ GUARDED_BY(mu_);
  double ShedEndAfterMs() const { return 2000.0 * deps_.server.shed_calm_s; }
  // Empty unless the node is overloaded and shedding: then why new viewers are refused.
  std::string OverloadReason() const REQUIRES(mu_);
  // server.admit_p99_ms over the running sessions' recent p99 (AdmitP99Refusal); "" = no objection.
  std::string LatencyRefusal() const REQUIRES(mu_);
};

bool ValidSessionId(const std::string& id);
// prefix + 2*n random hex digits (getrandom; the clock only if that fails): session ids and the
// unguessable WHIP/WHEP resource names.
std::string RandomId(const char* prefix = "s-", size_t n = 5);

}  // namespace veil
