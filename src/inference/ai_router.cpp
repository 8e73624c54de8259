#include "inference/ai_router.h"

#include <spdlog/spdlog.h>

#include <limits>

#include "core/clock.h"
#include "core/thread_cpu.h"
#include "vision/second_look.h"

namespace veil {
namespace {

constexpr uint64_t kProbeSessionBase = std::numeric_limits<uint64_t>::max() - 1024;

std::vector<std::string> Names(const std::vector<TargetSpec>& t) {
  std::vector<std::string> n;
  for (const auto& s : t) n.push_back(s.name);
  return n;
}

}  // namespace

Status Validate(const RouterConfig& c) {
  if (c.targets.empty()) return Status::Error("inference.targets: at least one target");
  if (Status s = Validate(c.local); !s) return s;
  if (c.remote.threads < 1 || c.remote.threads > 64)  // set by inference.remote_threads, not inference.threads
    return Status::Error("inference.remote_threads must be in [1, 64], got " + std::to_string(c.remote.threads));
  if (Status s = Validate(c.remote); !s) return s;
  if (!(c.probe_interval_ms >= 10 && c.probe_interval_ms <= 60000))
    return Status::Error("inference.probe_interval_ms must be in [10, 60000]");
  if (!(c.probe_timeout_ms >= 10 && c.probe_timeout_ms <= 60000))
    return Status::Error("inference.probe_timeout_ms must be in [10, 60000]");
  if (!(c.remote_options.deadline_ms >= 10 && c.remote_options.deadline_ms <= 60000))
    return Status::Error("inference.deadline_ms must be in [10, 60000]");
  if (c.rejoin_probes < 1 || c.rejoin_probes > 100)
    return Status::Error("rejoin probes must be in [1, 100]");
  if (c.remote_options.model.empty())
    return Status::Error("inference.remote_model must not be empty");
  return Status::Ok();
}

struct AiRouter::Target {
  TargetSpec spec;
  std::unique_ptr<InferenceScheduler> sched;
  std::shared_ptr<RemoteTarget> remote;  // null for the in-process target
  std::thread prober;
  std::atomic<double> last_ok_ms{0};
  Gauge *up = nullptr, *streams = nullptr, *latency = nullptr;
  Counter* downs = nullptr;
};

AiRouter::AiRouter(const RouterConfig& c, EventFn ev) : cfg_(c), events_(std::move(ev)), pool_(Names(c.targets)) {}

Result<std::unique_ptr<AiRouter>> AiRouter::Start(const RouterConfig& c,
                                                  const DetectorFactory& local,
                                                  MetricsRegistry* metrics, EventFn events) {
  if (!metrics) return Status::Error("a metrics registry is required");
  if (Status s = Validate(c); !s) return s;
  std::unique_ptr<AiRouter> r(new AiRouter(c, std::move(events)));
  r->m_moves_ = &metrics->GetCounter("veil_ai_session_moves_total",
                                     "Sessions moved to another AI target (failover)");
  for (const TargetSpec& spec : c.targets) {
    auto t = std::make_unique<Target>();
    t->spec = spec;
    const Labels l = {{"target", spec.name}};
    t->up = &metrics->GetGauge("veil_ai_target_up", "1 while the AI target is healthy", l);
    t->streams = &metrics->GetGauge("veil_ai_target_active_streams",
                                    "Sessions assigned to the AI target", l);
    t->latency = &metrics->GetGauge("veil_ai_target_latency_seconds",
                                    "Recent detection latency (submit -> result), s", l, kMsToSeconds);
    t->downs =
        &metrics->GetCounter("veil_ai_target_down_total", "Times the AI target was marked down", l);
    Result<std::unique_ptr<InferenceScheduler>> sched = Status::Error("");
    if (spec.local()) {
      sched = c.local_host ? InferenceScheduler::CreateHosted(c.local, local, metrics, spec.name, c.local_host)
                           : InferenceScheduler::Create(c.local, local, metrics, spec.name);
    } else {
      RemoteOptions o = c.remote_options;
      o.endpoint = spec.endpoint;
      o.probe_timeout_ms = c.probe_timeout_ms;
      t->remote = std::make_shared<RemoteTarget>(o, metrics, spec.name);
      auto remote = t->remote;
      sched = InferenceScheduler::Create(
          c.remote,
          [remote, look = c.second_look]() -> Result<std::unique_ptr<Detector>> {
            std::unique_ptr<Detector> d(new RemoteDetector(remote));
            if (look.score > 0.f) d.reset(new SecondLookDetector(std::move(d), look));
            return d;
          },
          metrics, spec.name);
    }
    if (!sched) return Status::Error("AI target " + spec.name + ": " + sched.error());
    t->sched = std::move(*sched);
    r->targets_.push_back(std::move(t));
  }
  // Remote targets are down until a first probe answers (all probed at once).
  std::vector<std::thread> first;
  std::vector<Status> result(r->targets_.size(), Status::Ok());
  for (size_t i = 0; i < r->targets_.size(); ++i) {
    if (r->targets_[i]->spec.local()) continue;
    r->pool_.SetHealthy(int(i), false, "not probed yet");
    first.emplace_back([&, i] { result[i] = r->targets_[i]->remote->Probe(); });
  }
  for (auto& th : first) th.join();
  for (size_t i = 0; i < r->targets_.size(); ++i) {
    Target& t = *r->targets_[i];
    if (t.spec.local() && t.sched->hosted()) {
      spdlog::info("AI target '{}': in-process, on the frame executor, max batch {}", t.spec.name, c.local.max_batch);
    } else if (t.spec.local()) {
      spdlog::info(
          "AI target '{}': in-process, {} inference thread(s), max batch {}, max wait {} us",
          t.spec.name, c.local.threads, c.local.max_batch, c.local.max_wait_us);
    } else if (result[i]) {
      r->pool_.SetHealthy(int(i), true);
      auto m = t.remote->model();
      spdlog::info(
          "AI target '{}': KServe v2 gRPC, model '{}' ({}), {} call(s) in flight, max batch {}",
          t.spec.name, c.remote_options.model, m ? kserve::FormName(m->io.form) : "?",
          c.remote.threads, c.remote.max_batch);
    } else {
      r->pool_.SetHealthy(int(i), false, result[i].message());
      spdlog::warn("AI target '{}' is down: {}", t.spec.name, result[i].message());
    }
  }
  r->UpdateGauges();
  for (size_t i = 0; i < r->targets_.size(); ++i)
    r->targets_[i]->prober = std::thread([p = r.get(), i] {
      NameThisThread("probe");
      p->ProbeLoop(int(i));
    });
  return r;
}

AiRouter::~AiRouter() {
  Shutdown();
}

void AiRouter::Shutdown() {
  {
    MutexLock lk(stop_mu_);
    if (stop_) return;
    stop_ = true;
  }
  shutting_down_ = true;
  stop_cv_.notify_all();
  for (auto& t : targets_)
    if (t->prober.joinable()) t->prober.join();
  for (auto& t : targets_) t->sched->Shutdown();
}

void AiRouter::UpdateGauges() {
  const auto snap = pool_.Snapshot();
  for (size_t i = 0; i < snap.size() && i < targets_.size(); ++i) {
    targets_[i]->up->Set(snap[i].healthy ? 1 : 0);
    targets_[i]->streams->Set(snap[i].active_streams);
    targets_[i]->latency->Set(snap[i].latency_ms);
  }
}

void AiRouter::NoteTarget(uint64_t session, int target) {
  std::string label, from;
  {
    MutexLock lk(mu_);
    auto it = sessions_.find(session);
    if (it == sessions_.end() || it->second.second == target) return;
    const int prev = it->second.second;
    it->second.second = target;
    if (prev < 0) return;  // first assignment
    label = it->second.first;
    from = targets_[prev]->spec.name;
  }
  m_moves_->Inc();
  if (events_) events_("session_moved", label, from + " -> " + targets_[target]->spec.name);
}

std::string AiRouter::Attach(uint64_t session, const std::string& label) {
  {
    MutexLock lk(mu_);
    sessions_[session] = {label, -1};
  }
  auto t = pool_.Assign(session);
  UpdateGauges();
  if (!t) return "";
  NoteTarget(session, *t);
  return targets_[*t]->spec.name;
}

void AiRouter::Detach(uint64_t session) {
  {
    MutexLock lk(mu_);
    sessions_.erase(session);
  }
  pool_.Release(session);
  UpdateGauges();
}

std::string AiRouter::TargetOf(uint64_t session) const {
  const int t = pool_.TargetOf(session);
  return t < 0 ? "" : targets_[t]->spec.name;
}

std::vector<TargetState> AiRouter::Snapshot() const {
  return pool_.Snapshot();
}

std::string AiRouter::NotReadyReason() const {
  if (pool_.AnyHealthy()) return "";
  std::string why = "no healthy AI target (anonymize sessions are fail-closed):";
  for (const auto& t : pool_.Snapshot()) why += " " + t.name + ": " + t.down_reason + ";";
  why.pop_back();
  return why;
}

void AiRouter::Submit(DetectRequest r) {
  auto refuse = [&](const char* why) {
    DetectResult res;
    res.session = r.session;
    res.frame_index = r.frame_index;
    res.outcome = DetectOutcome::kFailed;
    res.error = why;
    if (r.done) r.done(std::move(res));
  };
  {
    // A session that was detached (ended) may still submit its last frame from its worker
    // thread: it is not assigned again (that re-registered it and inflated active_streams).
    MutexLock lk(mu_);
    if (!sessions_.count(r.session)) return refuse("the session is not attached to the AI router (it ended)");
  }
  auto a = pool_.Assign(r.session);
  if (!a) return refuse("no healthy AI target");
  const int t = *a;
  NoteTarget(r.session, t);
  auto done = std::move(r.done);
  r.done = [this, t, done = std::move(done)](DetectResult&& res) {
    if (res.outcome == DetectOutcome::kOk) {
      targets_[t]->last_ok_ms = NowMs();
      pool_.RecordLatency(t, res.queue_ms + res.infer_ms);
    } else if (res.outcome == DetectOutcome::kFailed && !shutting_down_) {
      MarkDown(t, res.error);
    }
    if (done) done(std::move(res));
  };
  targets_[t]->sched->Submit(std::move(r));
}

void AiRouter::Reassign(uint64_t session) {
  auto a = pool_.Assign(session);
  if (a) NoteTarget(session, *a);
}

void AiRouter::MarkDown(int t, const std::string& why) {
  MutexLock hk(health_mu_);
  const bool was_up = pool_.Snapshot()[t].healthy;
  std::vector<uint64_t> moved = pool_.SetHealthy(t, false, why);
  if (!was_up) return;
  targets_[t]->downs->Inc();
  spdlog::warn("AI target '{}' is down: {} ({} session(s) to move)", targets_[t]->spec.name, why,
               moved.size());
  if (events_) events_("ai_target_down", "", targets_[t]->spec.name + ": " + why);
  for (uint64_t s : moved) Reassign(s);
  UpdateGauges();
}

void AiRouter::MarkUp(int t) {
  MutexLock hk(health_mu_);
  pool_.SetHealthy(t, true);
  spdlog::info("AI target '{}' is up again: takes new sessions", targets_[t]->spec.name);
  if (events_) events_("ai_target_up", "", targets_[t]->spec.name);
  // Sessions left without a target while none was healthy get one now.
  std::vector<uint64_t> orphans;
  {
    MutexLock lk(mu_);
    for (const auto& [s, info] : sessions_) orphans.push_back(s);
  }
  for (uint64_t s : orphans)
    if (pool_.TargetOf(s) < 0) Reassign(s);
  UpdateGauges();
}

Status AiRouter::ProbeLocal(int t) {
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    DetectResult res;
  };
  auto st = std::make_shared<State>();
  DetectRequest r;
  r.session = kProbeSessionBase + uint64_t(t);
  r.image = cv::Mat(64, 64, CV_8UC3, cv::Scalar::all(0));
  r.deadline_ms = NowMs() + cfg_.probe_timeout_ms;
  r.done = [st](DetectResult&& res) {
    std::lock_guard lk(st->mu);
    st->res = std::move(res);
    st->done = true;
    st->cv.notify_all();
  };
  targets_[t]->sched->Submit(std::move(r));
  std::unique_lock lk(st->mu);
  if (!st->cv.wait_for(lk, std::chrono::microseconds(int64_t(cfg_.probe_timeout_ms * 1000)),
                       [&] { return st->done; }))
    return Status::Error("no answer to a probe detection in " +
                         std::to_string(int(cfg_.probe_timeout_ms)) + " ms (inference stalled)");
  switch (st->res.outcome) {
    case DetectOutcome::kOk:
    case DetectOutcome::kStale:       // a thread took it, late: busy, not dead
    case DetectOutcome::kSuperseded:  // a newer probe replaced it
      return Status::Ok();
    case DetectOutcome::kFailed:
      return Status::Error(st->res.error);
    case DetectOutcome::kShutdown:
      return Status::Error("shutting down");
  }
  return Status::Error("?");
}

void AiRouter::ProbeLoop(int t) {
  Target& target = *targets_[t];
  int streak = 0;
  for (;;) {
    {
      MutexLock lk(stop_mu_);
      if (lk.WaitFor(stop_cv_, std::chrono::microseconds(int64_t(cfg_.probe_interval_ms * 1000)),
                     [&]() REQUIRES(stop_mu_) { return stop_; }))
        return;
    }
    const bool healthy = pool_.Snapshot()[t].healthy;
    // A target that delivered a result since the last probe has just shown it works.
    if (healthy && NowMs() - target.last_ok_ms.load() < cfg_.probe_interval_ms) continue;
    const Status s = target.spec.local() ? ProbeLocal(t) : target.remote->Probe();
    if (shutting_down_) return;
    if (s) {
      if (!healthy && ++streak >= cfg_.rejoin_probes) {
        streak = 0;
        MarkUp(t);
      }
    } else {
      streak = 0;
      if (healthy)
        MarkDown(t, "probe: " + s.message());
      else
        pool_.SetHealthy(t, false, s.message());  // keep the reason current
    }
    UpdateGauges();
  }
}

}  // namespace veil
