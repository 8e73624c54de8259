#include "server/capacity.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <span>
#include <vector>

#include "media/codec.h"

namespace veil {
namespace {

constexpr double kDefaultPixels = 1280.0 * 720.0;
// A learned ratio moves this far towards each new sample (about 10 samples' memory).
constexpr double kLearnRate = 0.1;

}  // namespace

double PriorRatio(Mode mode, bool bypass_forward, VideoCodec codec) {
  // Since 2026-12-07 late the timing leaves out a fresh codec pair's first 12 frames (their page
  // faults; server/transcode_timing.h): fault-free, VP8's figure reads 1.2x what the 12 frames
  // after the keyframe read, H.264's 0.88x (x264's first P frame is dear). Each prior below was
  // learned against the older timing on 2026-12-06, whose starts read what a fault-free process
  // reads now (6.9-7.6 ms for VP8), and is rescaled by that factor so the two timings plan the
  // same CPU a frame (docs/figures.md "what the startup timing holds").
  const bool h264 = codec == VideoCodec::kH264;
  switch (mode) {
    // Forwarding: 0.3 for both before (learned 0.23-0.35x); VP8 kept (1.2x dearer planned).
    // Re-encoding: 1.6 for both before.
    case Mode::kBypass: return bypass_forward ? (h264 ? 0.35 : 0.3) : (h264 ? 1.8 : 1.6);
    // The largest that 12 models learned on 2026-12-06, rounded up: VP8 0.72-0.86, H.264
    // 0.78-1.15 (a mosaic encodes cheaply in VP8, less so in x264), so 0.9 and 1.2 then, rescaled.
    case Mode::kFullBlur: return h264 ? 1.4 : 0.75;
    case Mode::kAnonymize: break;
  }
  // Anonymize (and any value outside the enum): the learned models' median, rounded down
  // (docs/capacity.md "The cost model"). VP8: its 10 models since each core is timed
  // (2026-12-06) learned 1.46-2.06, median 1.86, on timings of 6.9-10.0 ms: 1.8 from 2026-12-07,
  // 1.5 rescaled; H.264's 6 learned 1.24-1.69, median 1.52: 1.4, 1.6 rescaled.
  return h264 ? 1.6 : 1.5;
}

double PriorPlanEncodeRatio(VideoCodec codec, int step, bool default_ladder, EncodePicture picture) {
  if (!default_ladder || step < 0) return -1;
  if (step == 0) return 1;
  // cpu-used -10; -10 static 1000; -14 static 1000 (what -12 and -14 alone measured: the static
  // steps measured less on every clip, 0.58-0.79 and 0.54-0.66 in `veil bench --speed-steps`).
  static constexpr double kVp8[] = {0.88, 0.79, 0.69};
  static constexpr double kH264[] = {0.63, 0.42};       // superfast, ultrafast
  // A whole-frame mosaic (full_blur sessions, 2026-12-06): VP8's faster steps saved nothing
  // (1.01, 1.02, 1.05 of step 0), x264's 0.61-0.79 and 0.41-0.49.
  static constexpr double kVp8Mosaic[] = {1.0, 1.0, 1.0};
  static constexpr double kH264Mosaic[] = {0.8, 0.5};
  const bool mosaic = picture == EncodePicture::kMosaic;
  const std::span<const double> ladder =
      codec == VideoCodec::kH264 ? std::span<const double>(mosaic ? kH264Mosaic : kH264) : (mosaic ? kVp8Mosaic : kVp8);
  return step <= int(ladder.size()) ? ladder[step - 1] : -1;
}

CapacityModel::CapacityModel(const CapacityOptions& o, std::map<VideoCodec, double> transcode_ms,
                             std::map<VideoCodec, double> encode_ms, std::map<VideoCodec, double> plan_encode_ratio,
                             std::map<VideoCodec, double> prior_plan_ratio,
                             std::map<VideoCodec, double> prior_mosaic_plan_ratio)
    : o_(o),
      transcode_ms_(std::move(transcode_ms)),
      encode_ms_(std::move(encode_ms)),
      plan_encode_ratio_(std::move(plan_encode_ratio)),
      prior_plan_ratio_(std::move(prior_plan_ratio)),
      prior_mosaic_plan_ratio_(std::move(prior_mosaic_plan_ratio)) {
  for (const auto& [codec, ms] : transcode_ms_) {
    auto e = encode_ms_.find(codec);
    auto p = plan_encode_ratio_.find(codec);
    timings_[codec].push_back({ms, e == encode_ms_.end() ? 0 : e->second, p == plan_encode_ratio_.end() ? 0 : p->second, {}});
  }
}

void CapacityModel::Retime(VideoCodec codec, const TranscodeTiming& t) {
  if (!(t.total_ms > 0)) return;
  MutexLock lk(mu_);
  auto it = timings_.find(codec);
  if (it == timings_.end()) return;
  std::vector<TranscodeTiming>& kept = it->second;
  kept.push_back(t);
  if (int(kept.size()) > kKeptTimings) kept.erase(kept.begin(), kept.end() - kKeptTimings);
  const TranscodeTiming& best =
      *std::min_element(kept.begin(), kept.end(), [](const auto& a, const auto& b) { return a.total_ms < b.total_ms; });
  const double was = transcode_ms_[codec];
  transcode_ms_[codec] = best.total_ms;
  if (best.encode_ms > 0) encode_ms_[codec] = best.encode_ms;
  if (best.plan_encode_ratio > 0) plan_encode_ratio_[codec] = best.plan_encode_ratio;
  if (!(was > 0) || best.total_ms == was) return;
  // A learned cost keeps its CPU per frame (capacity.h).
  for (auto& [k, l] : learned_)
    if (k.first == codec && l.samples > 0) l.value *= was / best.total_ms;
}

std::vector<double> CapacityModel::KeptTimings(VideoCodec codec) const {
  std::vector<double> out;
  MutexLock lk(mu_);
  if (auto it = timings_.find(codec); it != timings_.end())
    for (const TranscodeTiming& t : it->second) out.push_back(t.total_ms);
  return out;
}

double CapacityModel::SessionsPlanEncodeRatio(VideoCodec codec, EncodePicture picture) const {
  MutexLock lk(mu_);
  return SessionsPlanEncodeRatioLocked(codec, picture);
}

int PlanStepOf(const CapacityOptions& o, VideoCodec codec) {
  int last = VideoEncoder::kMaxSpeedSteps - 1;
  if (auto it = o.last_speed_step.find(codec); it != o.last_speed_step.end()) last = std::clamp(it->second, 0, last);
  return std::clamp(o.plan_speed_step, 0, last);
}

double CapacityModel::SessionsPlanEncodeRatioLocked(VideoCodec codec, EncodePicture picture) const {
  const int step = PlanStep(codec);
  if (step <= 0) return 1;
  if (auto p = paired_.find({codec, picture, step}); p != paired_.end() && p->second.samples >= kMinPlanSamples)
    return p->second.value;
  auto at0 = encode_.find({codec, picture, 0}), at = encode_.find({codec, picture, step});
  if (at0 == encode_.end() || at == encode_.end() || at0->second.samples < kMinPlanSamples ||
      at->second.samples < kMinPlanSamples || !(at0->second.value > 0))
    return -1;
  return at->second.value / at0->second.value;
}

double CapacityModel::PlanEncodeRatio(VideoCodec codec, EncodePicture picture) const {
  MutexLock lk(mu_);
  return PlanEncodeRatioLocked(codec, picture);
}

double CapacityModel::PlanEncodeRatioLocked(VideoCodec codec, EncodePicture picture) const {
  if (PlanStep(codec) <= 0) return 1;
  if (picture == EncodePicture::kMosaic) {  // its own sessions' figure, else its prior, else none
    double own = SessionsPlanEncodeRatioLocked(codec, picture);
    if (!(own > 0))
      if (auto q = prior_mosaic_plan_ratio_.find(codec); q != prior_mosaic_plan_ratio_.end() && q->second > 0) own = q->second;
    return own > 0 ? std::min(1.0, own) : 1;
  }
  auto p = plan_encode_ratio_.find(codec);
  double r = p == plan_encode_ratio_.end() || !(p->second > 0) ? -1 : p->second;
  // Each figure is biased toward saving too little (capacity.h): the smaller ratio is the nearer.
  // The prior stands in for the sessions' own until they measured it.
  double s = SessionsPlanEncodeRatioLocked(codec, picture);
  if (!(s > 0))
    if (auto q = prior_plan_ratio_.find(codec); q != prior_plan_ratio_.end() && q->second > 0) s = q->second;
  if (s > 0 && (r < 0 || s < r)) r = s;
  return r < 0 ? -1 : std::min(1.0, r);  // a faster step is never planned dearer
}

double CapacityModel::TranscodeMs(VideoCodec codec) const {
  MutexLock lk(mu_);
  return TranscodeMsLocked(codec);
}

double CapacityModel::TranscodeMsLocked(VideoCodec codec) const {
  auto it = transcode_ms_.find(codec);
  if (it != transcode_ms_.end()) return it->second;
  double worst = 0;  // an unmeasured codec: the dearest measured one
  for (const auto& [c, ms] : transcode_ms_) worst = std::max(worst, ms);
  return worst > 0 ? worst : 15.0;
}

double CapacityModel::Ratio(VideoCodec codec, Mode mode) const {
  MutexLock lk(mu_);
  return RatioLocked(codec, mode);
}

double CapacityModel::RatioLocked(VideoCodec codec, Mode mode) const {
  auto it = learned_.find({codec, mode});
  if (it != learned_.end() && it->second.samples > 0) return it->second.value;
  const double prior = PriorRatio(mode, o_.bypass_forward, codec);
  if (mode != Mode::kAnonymize || prior_detection_extra_ms_ == 0) return prior;
  // The configured detection's cost beyond the default's, which the prior holds; never below
  // half the prior (a cheaper detector saves at most its own share).
  return std::max(0.5 * prior, prior + prior_detection_extra_ms_ / TranscodeMsLocked(codec));
}

void CapacityModel::SetPriorDetectionExtraMs(double ms) {
  MutexLock lk(mu_);
  prior_detection_extra_ms_ = std::isfinite(ms) ? ms : 0;
}

double CapacityModel::PriorDetectionExtraMs() const {
  MutexLock lk(mu_);
  return prior_detection_extra_ms_;
}

int CapacityModel::Samples(VideoCodec codec, Mode mode) const {
  MutexLock lk(mu_);
  auto it = learned_.find({codec, mode});
  return it == learned_.end() ? 0 : it->second.samples;
}

std::vector<CapacityModel::Cost> CapacityModel::Costs() const {
  std::vector<Cost> out;
  MutexLock lk(mu_);  // one lock: the figures of one model, whatever Retime does
  for (const auto& kv : transcode_ms_)
    for (Mode m : {Mode::kAnonymize, Mode::kBypass, Mode::kFullBlur}) {
      const VideoCodec codec = kv.first;
      auto l = learned_.find({codec, m});
      const double ratio = RatioLocked(codec, m);
      out.push_back({codec, m, ratio, l == learned_.end() ? 0 : l->second.samples,
                     PlannedMsPerFrameLocked(codec, m) * PixelsScale(0, 0), ratio * TranscodeMsLocked(codec)});
    }
  return out;
}

double CapacityModel::EncodeMs(VideoCodec codec, int step, EncodePicture picture) const {
  MutexLock lk(mu_);
  return EncodeMsLocked(codec, step, picture);
}

double CapacityModel::EncodeMsLocked(VideoCodec codec, int step, EncodePicture picture) const {
  if (auto it = encode_.find({codec, picture, step}); it != encode_.end() && it->second.samples > 0)
    return it->second.value;
  if (step != 0) return -1;
  if (picture != EncodePicture::kCamera) return EncodeMsLocked(codec, 0, EncodePicture::kCamera);
  auto it = encode_ms_.find(codec);
  return it != encode_ms_.end() ? it->second : TranscodeMsLocked(codec);
}

int CapacityModel::EncodeSamples(VideoCodec codec, int step, EncodePicture picture) const {
  MutexLock lk(mu_);
  auto it = encode_.find({codec, picture, step});
  return it == encode_.end() ? 0 : it->second.samples;
}

double CapacityModel::PlanSavingMs(VideoCodec codec, Mode mode) const {
  MutexLock lk(mu_);
  return PlanSavingMsLocked(codec, mode);
}

double CapacityModel::PlanSavingMsLocked(VideoCodec codec, Mode mode) const {
  // A forwarding bypass session runs no encoder; step 0 plans nothing away.
  if ((mode == Mode::kBypass && o_.bypass_forward) || PlanStep(codec) <= 0) return 0;
  // The plan step's share of an encode (PlanEncodeRatio) applied to what step 0's encodes cost
  // in the sessions, for the picture the mode encodes.
  const EncodePicture picture = PictureOf(mode);
  if (const double r = PlanEncodeRatioLocked(codec, picture); r >= 0) return EncodeMsLocked(codec, 0, picture) * (1 - r);
  const double planned = EncodeMsLocked(codec, PlanStep(codec), picture);
  if (planned < 0) return 0;  // that step not measured yet: the configured speed's cost
  return std::max(0.0, EncodeMsLocked(codec, 0, picture) - planned);
}

void CapacityModel::LearnEncode(VideoCodec codec, int step, int w, int h, double encode_ms_per_frame,
                                EncodePicture picture) {
  if (step < 0 || step >= VideoEncoder::kMaxSpeedSteps || !(encode_ms_per_frame > 0) || w <= 0 || h <= 0) return;
  const double ms = encode_ms_per_frame / PixelsScale(w, h);
  MutexLock lk(mu_);
  encode_[{codec, picture, step}].Add(ms);
}

void CapacityModel::LearnPairedEncodeRatio(VideoCodec codec, int step, double ratio, EncodePicture picture) {
  if (step <= 0 || step >= VideoEncoder::kMaxSpeedSteps || !(ratio > 0)) return;
  MutexLock lk(mu_);
  paired_[{codec, picture, step}].Add(ratio);
}

int CapacityModel::PairedEncodeRatioSamples(VideoCodec codec, int step, EncodePicture picture) const {
  MutexLock lk(mu_);
  auto p = paired_.find({codec, picture, step});
  return p == paired_.end() ? 0 : p->second.samples;
}

CapacityMemory CapacityModel::Memory() const {
  CapacityMemory m;
  MutexLock lk(mu_);
  for (const auto& [k, l] : learned_)
    if (l.samples > 0) m.costs.push_back({k.first, k.second, l.value, l.samples, TranscodeMsLocked(k.first)});
  for (const auto& [k, l] : encode_)
    if (l.samples > 0) m.encodes.push_back({std::get<0>(k), std::get<1>(k), std::get<2>(k), l.value, l.samples});
  for (const auto& [k, l] : paired_)
    if (l.samples > 0) m.paired.push_back({std::get<0>(k), std::get<1>(k), std::get<2>(k), l.value, l.samples});
  return m;
}

void CapacityModel::Restore(const CapacityMemory& m) {
  MutexLock lk(mu_);
  for (const CapacityMemory::Cost& c : m.costs) {
    if (!(c.ratio > 0) || c.samples <= 0) continue;
    const double now = TranscodeMsLocked(c.codec);
    const double ratio = c.transcode_ms > 0 && now > 0 ? c.ratio * c.transcode_ms / now : c.ratio;
    learned_[{c.codec, c.mode}] = {ratio, c.samples};
  }
  for (const CapacityMemory::Encode& e : m.encodes)
    if (e.ms > 0 && e.samples > 0 && e.step >= 0 && e.step < VideoEncoder::kMaxSpeedSteps)
      encode_[{e.codec, e.picture, e.step}] = {e.ms, e.samples};
  for (const CapacityMemory::PairedShare& p : m.paired)
    if (p.ratio > 0 && p.samples > 0 && p.step > 0 && p.step < VideoEncoder::kMaxSpeedSteps)
      paired_[{p.codec, p.picture, p.step}] = {p.ratio, p.samples};
}

void CapacityModel::Learned::Add(double x) {
  const double rate = std::max(kLearnRate, 1.0 / double(samples + 1));
  value = samples == 0 ? x : value + rate * (x - value);
  ++samples;
}

double CapacityModel::PixelsScale(int w, int h) const {
  if (w <= 0 || h <= 0) return double(o_.width) * o_.height / kDefaultPixels;
  return double(w) * h / kDefaultPixels;
}

double CapacityModel::CostMsPerFrame(const SessionLoad& s) const {
  MutexLock lk(mu_);  // one lock: a Retime between the ratio and the transcode would mix them
  return RatioLocked(s.codec, s.mode) * TranscodeMsLocked(s.codec) * PixelsScale(s.width, s.height);
}

double CapacityModel::PlannedMsPerFrame(const SessionLoad& s) const {
  MutexLock lk(mu_);
  return PlannedMsPerFrameLocked(s.codec, s.mode) * PixelsScale(s.width, s.height);
}

double CapacityModel::PlannedMsPerFrameLocked(VideoCodec codec, Mode mode) const {
  const double full = RatioLocked(codec, mode) * TranscodeMsLocked(codec);
  // Never below a fifth of the full cost, whatever the steps' measurements say.
  return std::max(0.2 * full, full - PlanSavingMsLocked(codec, mode));
}

double CapacityModel::MsPerFrameAtStep(const SessionLoad& s, int step) const {
  if (step <= 0) return CostMsPerFrame(s);
  if (step >= PlanStep(s.codec)) return PlannedMsPerFrame(s);
  if (s.mode == Mode::kBypass && o_.bypass_forward) return CostMsPerFrame(s);  // no encoder
  MutexLock lk(mu_);
  const EncodePicture picture = PictureOf(s.mode);
  const auto it = encode_.find({s.codec, picture, step});
  if (it == encode_.end() || it->second.samples < kMinPlanSamples) return -1;
  const double full = RatioLocked(s.codec, s.mode) * TranscodeMsLocked(s.codec);
  const double saved = std::max(0.0, EncodeMsLocked(s.codec, 0, picture) - it->second.value);
  return std::max(PlannedMsPerFrameLocked(s.codec, s.mode), full - saved) * PixelsScale(s.width, s.height);
}

int LowestStepThatFits(double settled_ms_per_s, const std::vector<double>& starting_ms_per_s_by_step,
                       double budget_ms_per_s) {
  const int last = int(starting_ms_per_s_by_step.size()) - 1;
  for (int k = 0; k < last; ++k) {
    const double starting = starting_ms_per_s_by_step[size_t(k)];
    if (starting >= 0 && settled_ms_per_s + starting <= budget_ms_per_s + 1e-6) return k;
  }
  return std::max(0, last);
}

double CapacityModel::CostMsPerS(const SessionLoad& s) const {
  return PlannedMsPerFrame(s) * std::max(s.fps, o_.fps);
}

void CapacityModel::Learn(const SessionLoad& s, double cpu_ms_per_frame) {
  MutexLock lk(mu_);
  const double base = TranscodeMsLocked(s.codec) * PixelsScale(s.width, s.height);
  if (!(cpu_ms_per_frame > 0) || !(base > 0)) return;
  learned_[{s.codec, s.mode}].Add(cpu_ms_per_frame / base);
}

int CapacityModel::CapacitySessions(VideoCodec codec, Mode mode) const {
  SessionLoad s;
  s.codec = codec;
  s.mode = mode;
  const double per = CostMsPerS(s);
  // An empty node takes one session whatever it costs: refusing it would serve no one.
  return per > 0 ? std::max(1, int(std::floor(BudgetMsPerS() / per + 1e-9))) : 1;
}

double CapacityModel::LimitSessions(VideoCodec codec) const {
  const double t = TranscodeMs(codec) * PixelsScale(0, 0);
  return t > 0 ? o_.cores * (1000.0 / o_.fps) / t : 0;
}

CostLearner::StepResult CostLearner::Step(CapacityModel& model, const std::map<std::string, SessionReading>& readings,
                                          double process_cpu_ms, double wall_ms) {
  struct Interval {
    const SessionReading* r;
    double cpu_ms;
    uint64_t frames;
    bool steady;
    double encode_cpu_ms[VideoEncoder::kMaxSpeedSteps];  // this interval's encodes at each speed step
    uint64_t encode_frames[VideoEncoder::kMaxSpeedSteps];
  };
  std::vector<Interval> intervals;
  double threads_ms = 0;
  bool changed = readings.size() != previous_.size();
  std::map<std::string, Previous> next;
  for (const auto& [id, r] : readings) {
    auto it = previous_.find(id);
    // An id whose counters went back is a new session under an old name.
    const bool known = it != previous_.end() && r.cpu_ms >= it->second.cpu_ms && r.frames >= it->second.frames;
    changed = changed || !known;
    const Previous p = known ? it->second : Previous{};
    Interval in{&r, r.cpu_ms - p.cpu_ms, r.frames - p.frames,
                known && p.steps >= kWarmupSteps && r.load.mode == p.mode && r.load.width > 0 &&
                    r.load.height > 0,
                {}, {}};
    Previous& n = next[id] = Previous{r.cpu_ms, r.frames, r.load.mode, p.steps + 1, {}, {}};
    for (int k = 0; k < VideoEncoder::kMaxSpeedSteps; ++k) {
      n.encode_cpu_ms[k] = r.encode_cpu_ms[k];
      n.encode_frames[k] = r.encode_frames[k];
      // Counters that went back (a new encoder's) leave this interval's encodes out.
      const bool grew = r.encode_frames[k] >= p.encode_frames[k] && r.encode_cpu_ms[k] >= p.encode_cpu_ms[k];
      in.encode_cpu_ms[k] = grew ? r.encode_cpu_ms[k] - p.encode_cpu_ms[k] : 0;
      in.encode_frames[k] = grew ? r.encode_frames[k] - p.encode_frames[k] : 0;
    }
    threads_ms += in.cpu_ms;
    intervals.push_back(in);
  }
  previous_ = std::move(next);
  StepResult out;
  if (changed) {
    out.outcome = Outcome::kChanged;
    return out;
  }
  if (!(threads_ms > 0)) return out;  // kIdle
  // This second's encodes per codec and picture, per 720p frame at each step: a step measured
  // beside step 0 gives their ratio under one contention (LearnPairedEncodeRatio).
  struct Side {
    double ms[VideoEncoder::kMaxSpeedSteps] = {};
    uint64_t frames[VideoEncoder::kMaxSpeedSteps] = {};
  };
  std::map<std::pair<VideoCodec, EncodePicture>, Side> sides;
  for (const Interval& in : intervals) {
    if (!in.steady) continue;
    const EncodePicture picture = PictureOf(in.r->load.mode);
    Side& side = sides[{in.r->load.codec, picture}];
    const double scale = model.PixelsScale(in.r->load.width, in.r->load.height);
    for (int k = 0; k < VideoEncoder::kMaxSpeedSteps; ++k) {
      if (in.encode_frames[k] >= kMinFrames)
        model.LearnEncode(in.r->load.codec, k, in.r->load.width, in.r->load.height,
                          in.encode_cpu_ms[k] / double(in.encode_frames[k]), picture);
      side.ms[k] += in.encode_cpu_ms[k] / scale;
      side.frames[k] += in.encode_frames[k];
    }
  }
  for (const auto& [key, side] : sides) {
    if (side.frames[0] < kMinFrames || !(side.ms[0] > 0)) continue;
    const double at0 = side.ms[0] / double(side.frames[0]);
    for (int k = 1; k < VideoEncoder::kMaxSpeedSteps; ++k)
      if (side.frames[k] >= kMinFrames)
        model.LearnPairedEncodeRatio(key.first, k, side.ms[k] / double(side.frames[k]) / at0, key.second);
  }
  if (model.Saturated(process_cpu_ms, wall_ms)) {
    ++saturated_steps_;
    out.outcome = Outcome::kSaturated;
    return out;
  }
  out.outcome = Outcome::kLearned;
  const double share = std::clamp(process_cpu_ms / threads_ms, 1.0, kMaxShare);
  for (const Interval& in : intervals) {
    if (!in.steady || in.frames < kMinFrames) continue;
    double ms = in.cpu_ms * share / double(in.frames);
    // Its encodes at a faster step than 0 as they would have cost at step 0 (per 720p frame,
    // scaled to its size). The difference is the encoder's own CPU alone: the process's CPU
    // beyond the sessions' threads (detection, packetization, HTTP) does not grow with the
    // encoder's effort, so `share` is not applied to it. (Until 2026-12-05 evening it was: an
    // H.264 session at ultrafast, 6.3 ms an encode under veryfast's, with the process at about
    // 1.2-1.3x its sessions' threads, was learned about 1-2 ms a frame dearer at step 0; the plan
    // subtracts the step's saving unscaled, so the difference stayed in every admission.)
    const double scale = model.PixelsScale(in.r->load.width, in.r->load.height);
    for (int k = 1; k < VideoEncoder::kMaxSpeedSteps; ++k) {
      if (in.encode_frames[k] == 0) continue;
      const double step0 =
          model.EncodeMs(in.r->load.codec, 0, PictureOf(in.r->load.mode)) * scale * double(in.encode_frames[k]);
      ms += (step0 - in.encode_cpu_ms[k]) / double(in.frames);
    }
    const bool encoder_only = in.r->shed_level <= in.r->encoder_steps;
    if (in.r->shed_level > 0 && !encoder_only && !(ms > model.CostMsPerFrame(in.r->load))) continue;
    model.Learn(in.r->load, ms);
    ++out.learned;
  }
  return out;
}

double RetimeWaitS(double retime_s, double retime_first_s, size_t fewest_kept_timings) {
  if (retime_s <= 0) return 0;
  if (retime_first_s > 0 && fewest_kept_timings < size_t(CapacityModel::kKeptTimings))
    return std::min(retime_first_s, retime_s);
  return retime_s;
}

}  // namespace veil
