// SessionManager's admission by measured capacity (server/capacity.h, docs/capacity.md): what
// the running sessions are predicted to take, whether one more fits, what the node reports,
// and the once-a-second learning from the sessions' own CPU.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include <spdlog/spdlog.h>

#include "core/clock.h"
#include "server/detection_timing.h"
#include "server/session_manager.h"
#include "server/transcode_timing.h"

namespace veil {
namespace {

// " (cores 0 9.9, 1 7.9)": a timing's cores, where it timed more than one.
std::string CoresText(const std::vector<std::pair<int, double>>& by_core) {
  if (by_core.size() < 2) return "";
  std::string s;
  for (const auto& [core, ms] : by_core) s += fmt::format("{}{} {:.1f}", s.empty() ? " (cores " : ", ", core, ms);
  return s + ")";
}

}  // namespace

Status SessionManager::StartCapacity(MetricsRegistry* metrics) {
  // The limit and the cost model (server/capacity.h): a standalone transcode per codec, timed now.
  CapacityOptions co;
  co.cores = deps_.server.cores > 0 ? deps_.server.cores : UsableCores();
  co.cpu_share = deps_.server.cpu_share;
  co.bypass_forward = deps_.server.bypass_forward;
  co.fps = deps_.privacy.fps;
  co.plan_speed_step = deps_.server.admit_speed_step;
  // Each codec's ladder ends where its encoder's does: the plan step is held to it.
  co.last_speed_step[VideoCodec::kVp8] =
      int(Vp8SpeedLadder(deps_.encoder.vp8_speed, deps_.encoder.vp8_static_steps).size()) - 1;
  co.last_speed_step[VideoCodec::kH264] = int(X264PresetLadder(deps_.encoder.x264_preset).size()) - 1;
  const auto plan_step = [&](VideoCodec codec) { return PlanStepOf(co, codec); };
  std::map<VideoCodec, double> transcode, encode, plan_ratio, prior_ratio, prior_mosaic_ratio;
  std::map<VideoCodec, std::vector<std::pair<int, double>>> by_core;
  // The prior share of the plan step holds for the default ladders only (capacity.h).
  const EncoderOptions defaults;
  const double c0 = NowMs();
  // One codec after the other: timed side by side, VP8 read 8% higher on average
  // and further apart (2026-12-04, docs/figures.md "Capacity run 21").
  for (const VideoCodecInfo& vc : VideoCodecs()) {
    auto t = TimeTranscode(vc.codec, deps_.encoder, plan_step(vc.codec));
    if (t) {
      transcode[vc.codec] = t->total_ms;
      encode[vc.codec] = t->encode_ms;
      by_core[vc.codec] = t->by_core;
      if (t->plan_encode_ratio > 0) plan_ratio[vc.codec] = t->plan_encode_ratio;
      const bool default_ladder = vc.codec == VideoCodec::kH264 ? deps_.encoder.x264_preset == defaults.x264_preset
                                                                 : deps_.encoder.vp8_speed == defaults.vp8_speed &&
                                                                       deps_.encoder.vp8_static_steps == defaults.vp8_static_steps;
      if (double p = PriorPlanEncodeRatio(vc.codec, plan_step(vc.codec), default_ladder); p > 0) prior_ratio[vc.codec] = p;
      if (double p = PriorPlanEncodeRatio(vc.codec, plan_step(vc.codec), default_ladder, EncodePicture::kMosaic); p > 0)
        prior_mosaic_ratio[vc.codec] = p;
    } else {
      spdlog::warn("cannot time a {} transcode ({}): its sessions are costed as the dearest codec", vc.name, t.error());
    }
  }
  if (transcode.empty()) return Status::Error("cannot time a standalone transcode: the capacity model has no limit");
  capacity_ = std::make_unique<CapacityModel>(co, transcode, encode, plan_ratio, prior_ratio, prior_mosaic_ratio);
  // Detection configured otherwise than the default the anonymize priors were learned with: its
  // cost beyond the default's, timed now (in-process detection only: a remote target's runs on
  // its worker).
  const bool in_process = std::any_of(deps_.server.targets.begin(), deps_.server.targets.end(),
                                      [](const TargetSpec& t) { return t.local(); });
  std::string detection_note;
  if (in_process) {
    if (auto x = MeasureDetectionExtra(deps_.detector, deps_.privacy); !x) {
      spdlog::warn("capacity: cannot time the configured detection against the default's ({}): the anonymize prior "
                   "stays the default detection's",
                   x.error());
    } else if (x->configured_ms > 0) {
      capacity_->SetPriorDetectionExtraMs(x->extra_ms);
      detection_note = fmt::format("; the configured detection takes {:.1f} ms a 720p frame against the default's {:.1f} "
                                   "({:+.1f} ms on the anonymize prior)",
                                   x->configured_ms, x->default_ms, x->extra_ms);
    }
  }
  if (!deps_.server.capacity_state.empty()) {
    if (Status st = CheckCapacityStatePath(deps_.server.capacity_state); !st) return st;
    memory_key_ = ThisNodeKey(co.cores, deps_.cost_settings);
    RestoreMemory();
  }
  const CapacityState cs = Capacity();
  spdlog::info("capacity: {:g} cores, a standalone 720p transcode takes {} (timed in {:.0f} ms); limit {:.1f} {} "
               "sessions; {}{}",
               co.cores,
               [&] {
                 std::string t;
                 for (const auto& [codec, ms] : transcode)
                   t += (t.empty() ? "" : ", ") + fmt::format("{} {:.1f} ms{}", Name(codec), ms, CoresText(by_core[codec]));
                 return t;
               }(),
               NowMs() - c0, cs.limit_sessions, cs.default_kind,
               deps_.server.max_sessions > 0
                   ? fmt::format("server.max_sessions = {} (fixed)", deps_.server.max_sessions)
                   : fmt::format("admits {} ({} {:.2f}x the transcode, {:.0f}% of the cores)", cs.capacity_sessions,
                                 cs.learned ? "learned" : "prior", cs.ratio, 100 * co.cpu_share),
               detection_note);
  m_capacity_ = &metrics->GetGauge("veil_capacity_sessions",
                                      "Default sessions (vp8 720p30, the default mode) this node carries when empty");
  m_headroom_ = &metrics->GetGauge("veil_headroom_ratio", "Share of the session CPU budget not yet taken (0..1)");
  m_limit_ = &metrics->GetGauge("veil_capacity_limit_sessions",
                                   "Physical limit: cores x frame interval / standalone vp8 720p transcode time");
  m_capacity_->Set(cs.capacity_sessions);
  m_headroom_->Set(cs.headroom);
  m_limit_->Set(cs.limit_sessions);
  retimed_ms_ = NowMs();
  MutexLock lk(mu_);
  timed_by_core_ = std::move(by_core);
  return Status::Ok();
}

void SessionManager::RetimeWhenIdle(double now) {
  if (deps_.server.retime_s <= 0) return;
  uint64_t created = 0;
  {
    MutexLock lk(mu_);
    // Only an idle node: a timing beside running sessions reads their contention for the cores,
    // and would cost them the CPU it takes (about 0.6 s of a core per codec).
    if (!sessions_.empty() || drain_ || draining_) {
      retimed_ms_ = now;
      return;
    }
    created = next_sched_id_;
  }
  size_t fewest = size_t(CapacityModel::kKeptTimings);  // of the codecs timed at startup
  for (const VideoCodecInfo& vc : VideoCodecs())
    if (const size_t kept = capacity_->KeptTimings(vc.codec).size(); kept > 0) fewest = std::min(fewest, kept);
  if (now - retimed_ms_ < 1000.0 * RetimeWaitS(deps_.server.retime_s, deps_.server.retime_first_s, fewest)) return;
  retimed_ms_ = now;
  std::map<VideoCodec, TranscodeTiming> timed;
  for (const VideoCodecInfo& vc : VideoCodecs()) {
    if (capacity_->KeptTimings(vc.codec).empty()) continue;  // not timed at startup either
    {
      MutexLock lk(mu_);  // a session came, or the node is stopping: the rest is not timed
      if (next_sched_id_ != created || draining_) return;
    }
    auto t = TimeTranscode(vc.codec, deps_.encoder, capacity_->PlanStep(vc.codec));  // as at startup
    if (t) timed[vc.codec] = *t;
    else spdlog::warn("capacity: cannot time a {} transcode again ({}): the figure stays", vc.name, t.error());
  }
  std::string figures;
  {
    MutexLock lk(mu_);
    // A session created meanwhile: its set-up ran beside the timing, which is left out.
    if (next_sched_id_ != created || timed.empty()) return;
    for (const auto& [codec, t] : timed) {
      const double was = capacity_->TranscodeMs(codec);
      capacity_->Retime(codec, t);
      timed_by_core_[codec] = t.by_core;
      const double is = capacity_->TranscodeMs(codec);
      if (is != was)
        figures += fmt::format("{}{} {:.1f} -> {:.1f} ms (timed {:.1f}{}; the cheapest of {:.1f})", figures.empty() ? "" : ", ",
                               Name(codec), was, is, t.total_ms, CoresText(t.by_core),
                               fmt::join(capacity_->KeptTimings(codec), ", "));
    }
    ++retimes_;  // under mu_: a session created after this sees the count it ran beside
  }
  if (!figures.empty())
    spdlog::info("capacity: standalone transcode timed again on an idle node: {}; admits {} {}", figures,
                 capacity_->CapacitySessions(VideoCodec::kVp8, deps_.privacy.mode), DefaultKind());
}

std::string SessionManager::KindName(VideoCodec codec, Mode mode) const {
  const char* kind = mode == Mode::kAnonymize ? "anonymized" : mode == Mode::kBypass ? "bypass" : "full_blur";
  const CapacityOptions& o = capacity_->options();
  return fmt::format("{} {} {}p{:g}", kind, Name(codec), o.height, o.fps);
}

std::string SessionManager::DefaultKind() const { return KindName(VideoCodec::kVp8, deps_.privacy.mode); }

double SessionManager::LoadMsPerS() const {
  double load = 0;
  for (const auto& [id, e] : sessions_) load += capacity_->CostMsPerS(e.load);
  return load;
}

int SessionManager::StartLevel() const {
  if (!deps_.server.shed || !deps_.server.shed_start_by_load) return 0;
  // The furthest plan step of the codecs running; a session whose codec plans at a nearer step
  // costs its own plan step's figure beyond it (CapacityModel::MsPerFrameAtStep) and starts at
  // most at its own (SessionManager::Create).
  int plan = 0;
  for (const auto& [id, e] : sessions_) plan = std::max(plan, capacity_->PlanStep(e.load.codec));
  if (plan <= 0) return 0;
  const double fps = capacity_->options().fps;
  double settled = 0;
  std::vector<double> starting(size_t(plan) + 1, 0.0);  // by step; < 0: a step not known for one of them
  for (const auto& [id, e] : sessions_) {
    const double rate = std::max(e.load.fps, fps);
    if (!e.session || e.session->shed_warming_up()) {  // a reserved one is starting too
      for (int k = 0; k <= plan; ++k) {
        const double ms = capacity_->MsPerFrameAtStep(e.load, k);
        starting[size_t(k)] = starting[size_t(k)] < 0 || ms < 0 ? -1 : starting[size_t(k)] + ms * rate;
      }
    } else {
      const double at =
          capacity_->MsPerFrameAtStep(e.load, std::min(e.session->encoder_step(), capacity_->PlanStep(e.load.codec)));
      settled += (at >= 0 ? at : capacity_->CostMsPerFrame(e.load)) * rate;  // a step not known: step 0's
    }
  }
  // Nothing to gain where the plan step costs what step 0 does (forwarding, a mosaic VP8 encodes
  // as dearly at every step).
  if (!(starting.back() < starting.front())) return 0;
  return LowestStepThatFits(settled, starting, capacity_->BudgetMsPerS());
}

std::string SessionManager::AdmitReason(const SessionLoad& want) const {
  if (drain_) return "this node is draining and takes no new sessions";
  if (std::string why = OverloadReason(); !why.empty()) return why;
  const int n = int(sessions_.size());
  if (deps_.server.max_sessions > 0) {
    if (n >= deps_.server.max_sessions)
      return "session limit reached (" + std::to_string(deps_.server.max_sessions) + " sessions, server.max_sessions)";
    return "";
  }
  if (std::string why = LatencyRefusal(); !why.empty()) return why;
  const double load = LoadMsPerS(), budget = capacity_->BudgetMsPerS(), cost = capacity_->CostMsPerS(want);
  if (n == 0 || load + cost <= budget + 1e-6) return "";  // an empty node takes one, whatever it costs
  return fmt::format(
      "at capacity: {} {} sessions on {:g} cores, {} running (CPU {:.0f} of {:.0f} ms/s taken, a {} {} session "
      "needs {:.0f}; server.max_sessions = auto)",
      // In sessions of the refused one's kind: an H.264 publisher is told how many H.264 sessions fit.
      capacity_->CapacitySessions(want.codec, want.mode), KindName(want.codec, want.mode), capacity_->options().cores,
      n, load, budget, Name(want.codec), ModeName(want.mode), cost);
}

std::string AdmitP99Refusal(const std::map<std::string, double>& recent_p99_ms, double limit_ms) {
  if (limit_ms <= 0) return "";
  const std::pair<const std::string, double>* worst = nullptr;
  for (const auto& kv : recent_p99_ms)
    if (kv.second > limit_ms && (!worst || kv.second > worst->second)) worst = &kv;
  if (!worst) return "";
  return fmt::format(
      "at capacity: session {}'s processing p99 is {:.1f} ms over its last 5 s, above {:g} ms "
      "(server.admit_p99_ms): one more session would push the running ones past the frame interval",
      worst->first, worst->second, limit_ms);
}

std::string SessionManager::LatencyRefusal() const {
  std::map<std::string, double> p99;
  for (const auto& [id, e] : sessions_)
    if (e.recent_p99_ms >= 0) p99[id] = e.recent_p99_ms;
  return AdmitP99Refusal(p99, deps_.server.admit_p99_ms);
}

CapacityState SessionManager::Capacity() const {
  CapacityState c;
  c.cores = capacity_->options().cores;
  c.budget_ms_per_s = capacity_->BudgetMsPerS();
  c.capacity_sessions = capacity_->CapacitySessions(VideoCodec::kVp8, deps_.privacy.mode);
  c.max_sessions = deps_.server.max_sessions;
  c.transcode_ms = capacity_->TranscodeMs(VideoCodec::kVp8);
  c.limit_sessions = capacity_->LimitSessions(VideoCodec::kVp8);
  c.ratio = capacity_->Ratio(VideoCodec::kVp8, deps_.privacy.mode);
  c.learned = capacity_->Samples(VideoCodec::kVp8, deps_.privacy.mode) > 0;
  c.default_kind = DefaultKind();
  for (const VideoCodecInfo& vc : VideoCodecs()) c.transcode_ms_by_codec[vc.name] = capacity_->TranscodeMs(vc.codec);
  c.costs = capacity_->Costs();
  c.plan_speed_step = capacity_->options().plan_speed_step;
  c.memory = memory_note_;
  for (const VideoCodecInfo& vc : VideoCodecs()) {
    c.plan_encode_ratio_by_codec[vc.name] = capacity_->PlanEncodeRatio(vc.codec);
    c.plan_step_by_codec[vc.name] = capacity_->PlanStep(vc.codec);
    c.paired_plan_ratio_samples_by_codec[vc.name] =
        capacity_->PairedEncodeRatioSamples(vc.codec, capacity_->PlanStep(vc.codec));
  }
  for (const VideoCodecInfo& vc : VideoCodecs()) {
    c.mosaic_encode_by_codec[vc.name];  // every codec listed, its measured steps only
    for (int k = 0; k < VideoEncoder::kMaxSpeedSteps; ++k) {
      const int n = capacity_->EncodeSamples(vc.codec, k);
      if (k == 0 || n > 0) c.encode_by_codec[vc.name].push_back({k, capacity_->EncodeMs(vc.codec, k), n});
      if (const int b = capacity_->EncodeSamples(vc.codec, k, EncodePicture::kMosaic); b > 0)
        c.mosaic_encode_by_codec[vc.name].push_back({k, capacity_->EncodeMs(vc.codec, k, EncodePicture::kMosaic), b});
    }
    c.mosaic_plan_encode_ratio_by_codec[vc.name] = capacity_->PlanEncodeRatio(vc.codec, EncodePicture::kMosaic);
  }
  MutexLock lk(mu_);
  c.load_ms_per_s = LoadMsPerS();
  c.saturated_seconds = learner_.saturated_steps();
  c.retimes = retimes_.load();
  c.prior_detection_extra_ms = capacity_->PriorDetectionExtraMs();
  for (const VideoCodecInfo& vc : VideoCodecs())
    if (auto kept = capacity_->KeptTimings(vc.codec); !kept.empty()) c.kept_timings_by_codec[vc.name] = std::move(kept);
  for (const auto& [codec, cores] : timed_by_core_)
    for (const auto& [core, ms] : cores) c.last_timing_by_core[std::string(Name(codec))][std::to_string(core)] = ms;
  c.headroom = std::max(0.0, 1.0 - c.load_ms_per_s / c.budget_ms_per_s);
  return c;
}

void SessionManager::RestoreMemory() {
  const std::string& path = deps_.server.capacity_state;
  auto m = LoadCapacityState(path, memory_key_);
  if (m) {
    capacity_->Restore(*m);
    int samples = 0;
    for (const auto& c : m->costs) samples += c.samples;
    memory_note_ = fmt::format("restored from {}: {} learned costs ({} samples), {} encode steps, {} same-second shares",
                               path, m->costs.size(), samples, m->encodes.size(), m->paired.size());
    spdlog::info("capacity: {}", memory_note_);
  } else if (m.status().code() == StatusCode::kNotFound) {
    memory_note_ = "nothing learned yet at " + path + ": the priors";
    spdlog::info("capacity: {}", memory_note_);
  } else {
    // Not an error: what the file says is not this node's (or is damaged); the node learns anew and replaces it.
    memory_note_ = "not used: " + path + ": " + m.error() + "; the priors, and the file is replaced once sessions teach the model";
    spdlog::warn("capacity: {}", memory_note_);
  }
}

void SessionManager::SaveMemory() {
  const std::string text = CapacityStateJson(capacity_->Memory(), memory_key_, UtcNowIso());
  if (Status st = SaveCapacityState(deps_.server.capacity_state, text); !st) {
    if (st.message() != memory_error_) spdlog::warn("capacity: cannot keep what the model learned: {}", st.message());
    memory_error_ = st.message();
    return;  // tried again at the next save
  }
  memory_error_.clear();
  memory_unsaved_ = false;
  memory_saved_ms_ = NowMs();
}

int SessionManager::LearnCosts(double process_cpu_ms, double wall_ms) {
  std::map<std::string, SessionReading> readings;
  for (auto& [id, e] : sessions_) {
    if (!e.session) continue;
    const LiveSession& ls = *e.session;
    e.load.mode = ls.mode();
    if (ls.width() > 0) {
      e.load.width = ls.width();
      e.load.height = ls.height();
    }
    e.load.fps = ls.received_fps();
    SessionReading& r = readings[id];
    r.load = e.load;
    r.load.width = ls.width();  // 0 until its first frame: nothing to learn yet
    r.load.height = ls.height();
    r.cpu_ms = ls.cpu_ms();
    r.frames = ls.frames_in();
    r.shed_level = e.shed_level;
    r.encoder_steps = ls.encoder_steps();
    ls.EncodeBySteps(r.encode_cpu_ms, r.encode_frames);
  }
  return learner_.Step(*capacity_, readings, process_cpu_ms, wall_ms).learned;
}

int SessionManager::FreeSessions() const { return FreeSessions(VideoCodec::kVp8, deps_.privacy.mode); }

int SessionManager::FreeSessions(VideoCodec codec, Mode mode) const {
  MutexLock lk(mu_);
  if (drain_ || draining_) return 0;
  const int n = int(sessions_.size());
  if (deps_.server.max_sessions > 0) return std::max(0, deps_.server.max_sessions - n);
  SessionLoad want;
  want.codec = codec;
  want.mode = mode;
  const double cost = capacity_->CostMsPerS(want);
  if (n == 0) return std::max(1, int(std::floor(capacity_->BudgetMsPerS() / cost + 1e-9)));
  if (!LatencyRefusal().empty()) return 0;
  return std::max(0, int(std::floor((capacity_->BudgetMsPerS() - LoadMsPerS()) / cost + 1e-6)));
}

}  // namespace veil
