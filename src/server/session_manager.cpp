#include "server/session_manager.h"

#include <malloc.h>

#include <sys/random.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/clock.h"
#include "core/thread_cpu.h"
#include "server/transcode_timing.h"
#include "transport/net/udp.h"

namespace veil {

std::string RandomId(const char* prefix, size_t n) {
  uint8_t b[16] = {};
  n = std::min(n, sizeof b);
  if (getrandom(b, n, 0) != ssize_t(n)) {
    const uint64_t t = uint64_t(NowMs() * 1000);
    for (size_t i = 0; i < n; ++i) b[i] = uint8_t(t >> (8 * (i % 8)));
  }
  static const char* hex = "0123456789abcdef";
  std::string s = prefix;
  for (size_t i = 0; i < n; ++i) {
    s += hex[b[i] >> 4];
    s += hex[b[i] & 15];
  }
  return s;
}

bool ValidSessionId(const std::string& id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')) return false;
  return true;
}

Result<std::shared_ptr<FrameExecutor>> StartFrameExecutor(const ServerDeps& d) {
  if (!d.server.frame_executor) return std::shared_ptr<FrameExecutor>();
  const int n = d.server.frame_threads > 0
                    ? d.server.frame_threads
                    : std::max(1, int(std::ceil(d.server.cores > 0 ? d.server.cores : UsableCores())));
  auto ex = FrameExecutor::Start(n);
  if (!ex) return ex.status();
  spdlog::info("frame executor: {} threads, earliest deadline first across sessions", n);
  return std::move(*ex);
}

SessionManager::SessionManager(const ServerDeps& d, MetricsRegistry* m) : deps_(d), metrics_(m) {}

Result<std::unique_ptr<SessionManager>> SessionManager::Start(const ServerDeps& d, MetricsRegistry* metrics,
                                                              ServerParts parts) {
  if (!metrics) return Status::Error("a metrics registry is required");
  if (Status s = Validate(d.privacy); !s) return s;
  std::unique_ptr<SessionManager> m(new SessionManager(d, metrics));
  if (!parts.router || !parts.faults || !parts.events) return Status::Error("the session manager needs its AI router, fault injector and event log");
  m->router_ = std::move(parts.router);
  m->faults_ = std::move(parts.faults);
  m->events_ = std::move(parts.events);
  m->m_sessions_ = &metrics->GetGauge("veil_sessions_active", "Live sessions");
  m->m_created_ = &metrics->GetCounter("veil_sessions_created_total", "Sessions created");
  m->m_shed_ended_ = &metrics->GetCounter("veil_sessions_shed_total",
                                          "Sessions ended to shed load (the newest, after every other level)");
  m->m_overloaded_ = &metrics->GetGauge(
      "veil_node_overloaded", "1 while a session has shed every level and is still late: new viewers and sessions refused");
  m->m_rejected_ = &metrics->GetCounter("veil_sessions_rejected_total", "Session creations refused at the session limit or the measured capacity");
  m->m_cpu_pct_ = &metrics->GetGauge("veil_process_cpu_percent", "Process CPU over the last second, % of one core");
  m->m_cpu_s_ = &metrics->GetCounter("veil_process_cpu_seconds_total", "Process CPU time, s");
  m->m_take_backs_held_ = &metrics->GetCounter(
      "veil_shed_take_backs_held_total",
      "Shed levels a calm session would have taken back, held because the node's budget had no room for them "
      "(server.shed_take_back_in_budget)");
  if (Status st = m->StartCapacity(metrics); !st) return st;
  m->inference_host_ = std::move(parts.inference_host);
  if (parts.executor) {
    m->executor_ = std::move(parts.executor);
  } else {
    auto ex = StartFrameExecutor(d);
    if (!ex) return ex.status();
    m->executor_ = std::move(*ex);
  }
  metrics->GetGauge("veil_frame_executor_threads", "Threads of the frame executor that runs every session's frames (0: a thread per session)")
      .Set(m->executor_ ? m->executor_->stats().threads : 0);
  if (d.server.stagger_keyframes && d.encoder.keyint_frames > 0 && d.privacy.fps > 0)
    m->keyframes_ = std::make_unique<PeriodPhases>(d.encoder.keyint_frames * 1000.0 / d.privacy.fps);
  if (d.server.stagger_detections) m->detections_ = std::make_unique<PeriodPhases>(1.0);
  m->keyframe_epoch_ms_ = NowMs();
  const double t0 = NowMs();
  WarmUpWebRtc();
  spdlog::info("WebRTC ready in {:.0f} ms (ICE on {} only)", NowMs() - t0, d.server.webrtc.ice_address);
  m->housekeeping_ = std::thread([p = m.get()] {
    NameThisThread("house");
    p->Housekeeping();
  });
  return m;
}

SessionManager::~SessionManager() {
  Shutdown();
  {
    MutexLock lk(hk_mu_);
    hk_stop_ = true;
  }
  hk_cv_.notify_all();
  if (housekeeping_.joinable()) housekeeping_.join();
  if (memory_unsaved_ && !deps_.server.capacity_state.empty()) SaveMemory();  // what the last seconds taught
  faults_->Set(false, false);  // a stalled detector must not hold the scheduler's shutdown
  if (router_) router_->Shutdown();
}

void SessionManager::AddEvent(const std::string& type, const std::string& session, const std::string& detail) {
  events_->Add(type, session, detail);
}

std::vector<Event> SessionManager::Events(uint64_t after_seq) const { return events_->After(after_seq); }

Status SessionManager::Create(const CreateSpec& spec, const std::string& caller, SessionInfo* out) {
  if (!spec.id.empty() && !ValidSessionId(spec.id))
    return Status::Error(StatusCode::kInvalidArgument, "session id must be 1-64 characters of A-Z a-z 0-9 - _");
  LiveSessionConfig c;
  c.codec = spec.codec;
  c.privacy = deps_.privacy;
  if (!spec.mode.empty()) {
    auto m = ParseMode(spec.mode);
    if (!m) return Status::Error(StatusCode::kInvalidArgument, m.error());
    c.privacy.mode = *m;
  }
  c.encoder = deps_.encoder;
  c.encoder.codec = Name(spec.codec);
  // What every WebRTC peer decodes (profile-level-id 42e01f) and any RTP viewer too.
  if (spec.codec == VideoCodec::kH264) c.encoder.x264_profile = "baseline";
  c.decode_threads = deps_.decode_threads;
  c.decode_on_executor = deps_.server.decode_on_executor;
  c.budget_ms = deps_.server.budget_ms;
  // Only a WebRTC publisher's frames are held behind a lost packet while its retransmission
  // comes (NACK); plain RTP ingest has no retransmission, and its bunches are the machine's.
  c.burst_allowance_ms = spec.ingest == IngestKind::kWebRtc ? deps_.server.burst_allowance_ms : 0.0;
  c.jitter_ms = deps_.server.jitter_ms;
  c.ingest_address = deps_.server.rtp_address;
  c.viewer_queue_frames = size_t(deps_.server.viewer_queue);
  c.bypass_forward = deps_.server.bypass_forward;
  c.speed.enabled = deps_.server.shed;
  c.shed_trim = deps_.server.shed_trim;
  c.speed.calm_ms = deps_.server.shed_calm_s * 1000;
  c.speed.warmup_ms = deps_.server.shed_warmup_s * 1000;
  c.speed.high = deps_.server.shed_high;
  c.speed.low = deps_.server.shed_low;
  c.speed.low_with_room = deps_.server.shed_low_with_room;
  c.speed.judge_early = deps_.server.shed_judge_early;
  if (deps_.server.shed_take_back_in_budget) c.take_back_budget = take_back_;
  c.speed.calm_max_ms = std::max(c.speed.calm_max_ms, 8 * c.speed.calm_ms);
  c.audio = spec.audio;
  c.ingest = spec.ingest;
  c.history_interval_ms = deps_.server.history_interval_ms;
  c.history_points = size_t(std::max(1.0, std::round(deps_.server.history_s * 1000 / c.history_interval_ms)));

  std::string id = spec.id;
  uint64_t sched_id = 0;
  if (!id.empty()) {  // the id's previous session is still being destroyed: wait for it (bounded)
    MutexLock el(ending_mu_);
    if (!el.WaitFor(ending_cv_, std::chrono::seconds(3), [&]() REQUIRES(ending_mu_) { return !ending_.count(id); }))
      return Status::Error(StatusCode::kUnavailable, "session '" + id + "' is still ending: retry");
  }
  {
    MutexLock lk(mu_);
    if (draining_) return Status::Error(StatusCode::kUnavailable, "the server is shutting down");
    SessionLoad want;
    want.codec = c.codec;
    want.mode = c.privacy.mode;
    if (std::string why = AdmitReason(want); !why.empty()) {
      m_rejected_->Inc();
      return Status::Error(StatusCode::kUnavailable, why + ": try later or another server");
    }
    if (id.empty()) {
      do id = RandomId();
      while (sessions_.count(id));
    } else if (sessions_.count(id)) {
      return Status::Error(StatusCode::kConflict, "session '" + id + "' already exists");
    } else if (MutexLock el(ending_mu_); ending_.count(id)) {
      return Status::Error(StatusCode::kUnavailable, "session '" + id + "' is still ending: retry");
    }
    sched_id = next_sched_id_++;
    Entry reserved;  // reserves the id and its share of the capacity; filled below
    reserved.load = want;
    sessions_.emplace(id, std::move(reserved));
  }
  if (keyframes_) {
    // Its periodic keyframes fall in the widest gap between the running sessions' (the encoder's
    // own cadence only as a backstop, at 3 periods).
    c.keyframe_period_ms = keyframes_->period_ms();
    c.first_keyframe_ms = PeriodPhases::NextAt(NowMs(), keyframe_epoch_ms_, keyframes_->Take(sched_id),
                                                 c.keyframe_period_ms);
    c.encoder.keyint_frames = 3 * deps_.encoder.keyint_frames;
  }
  if (detections_) {
    // Its detections fall in the widest gap between the running sessions' (the period is the
    // cadence's, whatever it is when the session's frames come).
    c.detect_phase = detections_->Take(sched_id);
    c.detect_epoch_ms = keyframe_epoch_ms_;
  }
  // Assigned now (stable); with no healthy target the session still starts, fail-closed until one is up.
  const std::string target = router_->Attach(sched_id, id);
  Result<std::unique_ptr<LiveSession>> s = Status::Error("not started");
  try {
    s = LiveSession::Start(id, c, router_.get(), sched_id, metrics_, executor_);
  } catch (const std::exception& ex) {  // the reserved id and slot are given back below
    s = Status::Error(std::string("exception: ") + ex.what());
  }
  MutexLock lk(mu_);
  if (!s || draining_) {
    sessions_.erase(id);
    router_->Detach(sched_id);
    if (keyframes_) keyframes_->Release(sched_id);
    if (detections_) detections_->Release(sched_id);
    if (!s) return Status::Error(StatusCode::kInternal, "cannot start session: " + s.error());
    lk.Unlock();
    s->reset();
    return Status::Error(StatusCode::kUnavailable, "the server is shutting down");
  }
  Entry& e = sessions_[id];
  // The last owner's release (the table's, or a WebRTC negotiation's) destroys the session and
  // then frees its id for a new session.
  e.session = std::shared_ptr<LiveSession>(s->release(), [this, id](LiveSession* p) {
    delete p;
    // A session's frames, codec and pipeline buffers were freed into the allocator's arenas;
    // give their pages back (glibc keeps them otherwise: RSS grew ~20 MB per session, scripts/soak.py).
    malloc_trim(0);
    MutexLock el(ending_mu_);
    ending_.erase(id);
    ending_cv_.notify_all();
  });
  e.sched_id = sched_id;
  e.info.id = id;
  e.info.codec = c.codec;
  e.info.created = UtcNowIso();
  e.created_ms = NowMs();
  e.info.ingest_host = c.ingest_address;
  e.info.ingest = c.ingest;
  e.info.video_port = e.session->ingest_port();
  e.info.audio_port = e.session->audio_port();
  m_created_->Inc();
  m_sessions_->Set(double(sessions_.size()));
  // Its start, and the start of the sessions warming up beside it, at the node's load: a node
  // past its budget with them all at the configured speed sheds from their first frames, not
  // after their warm-up (5 sessions started at once: 3 s at 186-189% of 2 cores, p99 48 ms).
  // Each at most at its own codec's plan step: past it a shorter ladder's levels are detection's.
  const int node_level = StartLevel();
  if (node_level > 0)
    for (auto& [sid, se] : sessions_)
      if (se.session && se.session->shed_warming_up())
        se.session->StartAtLevel(std::min(node_level, capacity_->PlanStep(se.load.codec)));
  const int start_level = std::min(node_level, capacity_->PlanStep(c.codec));
  *out = InfoOf(e);
  AddEvent("session_created", id,
           "ingest=" + std::string(Name(c.ingest)) + " codec=" + Name(c.codec) + " mode=" + ModeName(c.privacy.mode) + " ai_target=" + (target.empty() ? "none" : target) +
               " video_port=" +
               std::to_string(e.info.video_port) + " audio_port=" + std::to_string(e.info.audio_port) +
               (start_level > 0 ? " start_level=" + std::to_string(start_level) : "") + " by " + caller);
  lk.Unlock();
  Changed();
  return {};
}

void SessionManager::SetChangeHook(std::function<void()> hook) {
  MutexLock lk(hook_mu_);
  hook_ = std::move(hook);
}

void SessionManager::Changed() {
  std::function<void()> hook;
  {
    MutexLock lk(hook_mu_);
    hook = hook_;
  }
  if (hook) hook();
}

SessionInfo SessionManager::InfoOf(const Entry& e) const {
  SessionInfo i = e.info;
  i.target = router_->TargetOf(e.sched_id);
  if (e.session) {
    i.mode = e.session->mode();
    i.stats = e.session->stats();
  }
  return i;
}

std::shared_ptr<LiveSession> SessionManager::Take(const std::string& id, const std::string& reason,
                                                  const std::string& detail) {
  std::shared_ptr<LiveSession> s;
  {
    MutexLock lk(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end() || !it->second.session) return nullptr;
    s = std::move(it->second.session);
    router_->Detach(it->second.sched_id);
    if (keyframes_) keyframes_->Release(it->second.sched_id);
    if (detections_) detections_->Release(it->second.sched_id);
    sessions_.erase(it);
    MutexLock el(ending_mu_);
    ending_.insert(id);  // until the session is destroyed (its deleter)
    m_sessions_->Set(double(sessions_.size()));
  }
  Changed();
  const LiveSessionStats st = s->stats();
  AddEvent(reason == "error" ? "session_error" : "session_ended", id,
           "reason=" + reason + (detail.empty() ? "" : " (" + detail + ")") + " frames_in=" +
               std::to_string(st.frames_in) + " frames_out=" + std::to_string(st.frames_out) +
               " fail_closed=" + std::to_string(st.privacy.fail_closed));
  return s;
}

Status SessionManager::Delete(const std::string& id, const std::string& caller) {
  auto s = Take(id, "deleted", "by " + caller);
  if (!s) return Status::Error(StatusCode::kNotFound, "no session '" + id + "'");
  s.reset();  // joins its threads, outside the lock
  return {};
}

Status SessionManager::Get(const std::string& id, SessionInfo* out) const {
  MutexLock lk(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end() || !it->second.session) return Status::Error(StatusCode::kNotFound, "no session '" + id + "'");
  *out = InfoOf(it->second);
  return {};
}

Status SessionManager::Snapshot(const std::string& id, int max_width, SessionSnapshot* out) const {
  std::shared_ptr<LiveSession> s = Find(id);  // encoded outside the table's lock
  if (!s) return Status::Error(StatusCode::kNotFound, "no session '" + id + "'");
  auto snap = s->Snapshot(max_width);
  if (!snap) return Status::Error(StatusCode::kUnavailable, "session '" + id + "': " + snap.error());
  *out = std::move(*snap);
  return {};
}

Status SessionManager::History(const std::string& id, std::vector<HistoryPoint>* out) const {
  std::shared_ptr<LiveSession> s = Find(id);
  if (!s) return Status::Error(StatusCode::kNotFound, "no session '" + id + "'");
  *out = s->History();
  return {};
}

std::vector<SessionInfo> SessionManager::List() const {
  MutexLock lk(mu_);
  std::vector<SessionInfo> out;
  for (const auto& [id, e] : sessions_)
    if (e.session) out.push_back(InfoOf(e));
  return out;
}

Status SessionManager::AddViewer(const std::string& id, const std::string& host, int video_port, int audio_port,
                                   const std::string& caller, ViewerInfo* out) {
  sockaddr_in a{};
  if (Status s = ParseEndpoint(host, video_port, &a); !s) return Status::Error(StatusCode::kInvalidArgument, "viewer video " + s.message());
  if (audio_port != 0)
    if (Status s = ParseEndpoint(host, audio_port, &a); !s) return Status::Error(StatusCode::kInvalidArgument, "viewer audio " + s.message());
  if (!deps_.server.any_viewer_host && !IsLoopback(host))
    return Status::Error(StatusCode::kForbidden, "viewers must be on loopback (server.viewer_hosts = loopback), got '" + host + "'");
  MutexLock lk(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end() || !it->second.session) return Status::Error(StatusCode::kNotFound, "no session '" + id + "'");
  Entry& e = it->second;
  if (int(e.info.viewers.size()) >= deps_.server.max_viewers)
    return Status::Error(StatusCode::kUnavailable, "viewer limit reached (" + std::to_string(deps_.server.max_viewers) + ", server.max_viewers)");
  if (std::string why = OverloadReason(); !why.empty()) return Status::Error(StatusCode::kUnavailable, why);
  for (const ViewerInfo& v : e.info.viewers)
    if (v.host == host && (v.video_port == video_port || (audio_port != 0 && v.audio_port == audio_port)))
      return Status::Error(StatusCode::kConflict, "a viewer already receives at " + host + ":" + std::to_string(video_port));
  if (audio_port != 0 && e.session->audio_port() == 0) return Status::Error(StatusCode::kInvalidArgument, "this session has no audio: omit audio_port");
  if (Status s = e.session->AddViewer(host, video_port, audio_port); !s) return Status::Error(StatusCode::kInvalidArgument, s.message());
  ViewerInfo v{"v" + std::to_string(e.next_viewer++), host, video_port, audio_port};
  e.info.viewers.push_back(v);
  *out = v;
  AddEvent("viewer_added", id,
           v.id + " " + host + ":" + std::to_string(video_port) + (audio_port ? "/" + std::to_string(audio_port) : "") +
               " by " + caller);
  return {};
}

Status SessionManager::RemoveViewer(const std::string& id, const std::string& viewer, const std::string& caller) {
  std::shared_ptr<LiveSession> web;  // a WebRTC viewer's pipeline is stopped outside the lock
  {
    MutexLock lk(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end() || !it->second.session) return Status::Error(StatusCode::kNotFound, "no session '" + id + "'");
    auto& vs = it->second.info.viewers;
    auto v = std::find_if(vs.begin(), vs.end(), [&](const ViewerInfo& x) { return x.id == viewer; });
    if (v == vs.end()) return Status::Error(StatusCode::kNotFound, "no viewer '" + viewer + "' in session '" + id + "'");
    if (v->kind == ViewerKind::kWebRtc) web = it->second.session;
    else it->second.session->RemoveViewer(v->host, v->video_port, v->audio_port);
    AddEvent("viewer_removed", id, viewer + " by " + caller);
    vs.erase(v);
  }
  if (web) web->RemoveWebViewer(viewer);
  return {};
}

std::shared_ptr<LiveSession> SessionManager::Find(const std::string& id) const {
  MutexLock lk(mu_);
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : it->second.session;
}

Status SessionManager::SetMode(const std::string& id, const std::string& mode, const std::string& caller,
                                 Mode* previous) {
  auto m = ParseMode(mode);
  if (!m) return Status::Error(StatusCode::kInvalidArgument, m.error());
  // Not under mu_: the session applies the change between two of its frames and answers then.
  std::shared_ptr<LiveSession> s = Find(id);
  if (!s) return Status::Error(StatusCode::kNotFound, "no session '" + id + "'");
  if (Status e = s->SetMode(*m, previous); !e) return e;
  AddEvent("mode_changed", id, ModeName(*previous) + " -> " + ModeName(*m) + " by " + caller);
  return {};
}

Status SessionManager::InjectFault(bool stall, bool fail, const std::string& caller) {
  if (!deps_.server.fault_injection) return Status::Error(StatusCode::kNotFound, "fault injection is off (inference.fault_injection = false)");
  faults_->Set(stall, fail);
  AddEvent("fault_injection", "", std::string("stall=") + (stall ? "true" : "false") + " fail=" + (fail ? "true" : "false") +
                                      " by " + caller);
  return {};
}

Status SessionManager::InjectCpuHog(const std::string& id, double ms, const std::string& caller) {
  if (!deps_.server.fault_injection) return Status::Error(StatusCode::kNotFound, "fault injection is off (inference.fault_injection = false)");
  std::shared_ptr<LiveSession> s = Find(id);
  if (!s) return Status::Error(StatusCode::kNotFound, "no session '" + id + "'");
  s->InjectWorkerCpuMs(ms);
  AddEvent("fault_injection", id, fmt::format("cpu_hog={:g} ms per frame by {}", ms, caller));
  return {};
}

std::string SessionManager::NotReadyReason() const {
  MutexLock lk(mu_);
  if (draining_) return "shutting down";
  if (drain_) return "draining: this node takes no new sessions";
  if (std::string why = router_->NotReadyReason(); !why.empty()) return why;
  SessionLoad want;
  want.mode = deps_.privacy.mode;
  return AdmitReason(want);
}

std::vector<TargetState> SessionManager::Targets() const { return router_->Snapshot(); }

size_t SessionManager::session_count() const {
  MutexLock lk(mu_);
  return sessions_.size();
}

void SessionManager::Shutdown(const std::string& reason) {
  std::vector<std::string> ids;
  {
    MutexLock lk(mu_);
    draining_ = true;
    for (const auto& [id, e] : sessions_) ids.push_back(id);
  }
  for (const auto& id : ids) Take(id, reason, "").reset();
}

void SessionManager::Drain(const std::string& caller) {
  size_t n = 0;
  {
    MutexLock lk(mu_);
    if (drain_) return;
    drain_ = true;
    n = sessions_.size();
  }
  AddEvent("node_draining", "", std::to_string(n) + " session(s) go on until their publishers leave; by " + caller);
}

bool SessionManager::Idle() {
  MutexLock lk(mu_);
  MutexLock el(ending_mu_);
  return sessions_.empty() && ending_.empty();
}

bool SessionManager::draining() const {
  MutexLock lk(mu_);
  return drain_ || draining_;
}

std::vector<std::string> SessionManager::SessionIds() const {
  MutexLock lk(mu_);
  std::vector<std::string> ids;
  for (const auto& [id, e] : sessions_)
    if (e.session) ids.push_back(id);
  return ids;
}

}  // namespace veil
