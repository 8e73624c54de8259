// What this node can carry, from what it measures (issue 12, admission by measured capacity).
//
// The limit: a standalone decode + encode of one 720p frame at the session's encoder settings,
// timed on this machine at startup (TimeTranscode, server/transcode_timing.h) and again while
// the node is idle (CapacityModel::Retime: the cheapest of the last three timings counts). A
// node of C cores could carry at most C x 33.3 ms / transcode ms such sessions if nothing else
// cost anything.
//
// The cost model: a session's CPU per frame as a multiple of that transcode,
// per codec and mode, scaled by pixels. It starts from a prior and is learned
// from the sessions' own CPU (thread CPU of decode, privacy and encode, scaled
// up by the process's CPU beyond those threads: inference, packetization,
// HTTP). A session's load is its predicted CPU per second at its resolution
// and frame rate (720p30 until its first frame). The node's budget is
// cores x cpu_share; a session is admitted when it fits in what is left.
//
// The encoder's speed steps (server/speed_control.h): the learned ratio is what a session costs
// with its encoder at the configured speed (step 0). The sessions also report their encode CPU
// per speed step, and the model learns what an encode costs at each step (the encode part of
// the standalone transcode is step 0's prior). A session that sheds only encoder speed is
// learned too, its encode replaced by step 0's. Admission plans each re-encoding session with
// its encoder at plan_speed_step (server.admit_speed_step): step 0's encode cost (learned) scaled
// by the share of an encode that step takes. Two figures give that share, each biased toward
// saving too little, and the larger saving is planned with:
// - a second encoder at the plan step on the same standalone pictures, timed at startup beside
//   step 0's: the synthetic pan is easier on motion search than a camera picture, and saves less
//   there (VP8's step 1 0.93-1.0 of step 0, 0.84 on the sample clip; H.264 0.70-0.85, 0.54);
// - the sessions' own encodes at the plan step over theirs at step 0, once both have
//   kMinPlanSamples seconds: sessions shed speed when frames are dear or the cores contended, so
//   their faster steps encode the harder frames (the ratio reads high; run 20's VP8 read 1.06).
// Until the sessions have measured it, a prior share stands in for theirs where the encoder runs
// its default ladder (PriorPlanEncodeRatio: what sessions measured on the sample clip), as the
// priors of the cost ratios do; once they have, their own figure replaces it.
// A full_blur session encodes a whole-frame mosaic, not a camera picture: its encodes per step
// are learned apart (EncodePicture), and its plan step saves only what full_blur sessions
// measured it saving (their own share, once both steps have kMinPlanSamples seconds) and, until
// then, a mosaic prior (what full_blur sessions measured on the sample clip, rounded up): the
// standalone pair and the camera prior are camera pictures, and VP8's faster steps saved nothing
// on a mosaic (5.58, 5.63, 5.70 ms at steps 0-2, 2026-12-06) while x264's saved half.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/mutex.h"
#include "core/status.h"
#include "media/codec.h"
#include "media/media_types.h"
#include "media/video_codec.h"
#include "privacy/privacy_stage.h"
#include "server/transcode_timing.h"

namespace veil {

struct CapacityOptions {
  double cores = 1;          // usable cores
  double cpu_share = 0.75;   // of the cores, what sessions may take (the rest: bursts, HTTP, the OS)
  double fps = 30;           // the frame rate a session is assumed to run at (at least)
  int width = 1280, height = 720;  // a session's assumed size until its first frame
  bool bypass_forward = true;      // bypass sessions forward (decode only) rather than re-encode
  // Admission plans a re-encoding session's encoder at this speed step (0: the configured speed),
  // held to each codec's ladder (CapacityModel::PlanStep).
  int plan_speed_step = 3;
  // Each codec's fastest speed step (its ladder's last, VideoEncoder::max_speed_step()); a codec
  // not here: kMaxSpeedSteps - 1.
  std::map<VideoCodec, int> last_speed_step = {};
};


// The speed step a codec's re-encoding sessions are planned at: o.plan_speed_step, at most the
// codec's last step (o.last_speed_step; x264 from veryfast has three, so a plan step of 3 plans
// ultrafast, its 2).
int PlanStepOf(const CapacityOptions& o, VideoCodec codec);

// What one session costs and what it runs at, for the model.
// What an encoder is given: a camera picture (anonymize; bypass that re-encodes) or a whole-frame
// mosaic (full_blur), whose encodes cost and save differently per speed step.
enum class EncodePicture { kCamera, kMosaic };
inline EncodePicture PictureOf(Mode mode) {
  return mode == Mode::kFullBlur ? EncodePicture::kMosaic : EncodePicture::kCamera;
}

struct SessionLoad {
  VideoCodec codec = VideoCodec::kVp8;
  Mode mode = Mode::kAnonymize;
  int width = 0, height = 0;  // 0: unknown yet (the default size)
  double fps = 0;             // measured; below options.fps counts as options.fps
};

// What a model learned from its sessions (CapacityModel::Memory), to keep across restarts
// (server/capacity_memory.h).
struct CapacityMemory {
  struct Cost {
    VideoCodec codec = VideoCodec::kVp8;
    Mode mode = Mode::kAnonymize;
    double ratio = 0;  // CPU per frame / transcode
    int samples = 0;
    // The transcode (ms per 720p frame) the ratio is a multiple of: the startup timing of the
    // process that learned it. Restore carries the learned CPU per frame over, not the ratio:
    // one startup timing reads 20-60% high now and then, where the learned cost is an average
    // of many seconds (docs/capacity.md, "Kept across restarts"). 0: not known (a file from
    // before it was kept): the ratio is used as it is.
    double transcode_ms = 0;
  };
  struct Encode {
    VideoCodec codec = VideoCodec::kVp8;
    EncodePicture picture = EncodePicture::kCamera;
    int step = 0;
    double ms = 0;  // per 720p frame
    int samples = 0;
  };
  // An encode at `step` over one at step 0 taken within the same seconds
  // (CapacityModel::LearnPairedEncodeRatio): the plan step's share once it has enough samples.
  struct PairedShare {
    VideoCodec codec = VideoCodec::kVp8;
    EncodePicture picture = EncodePicture::kCamera;
    int step = 0;
    double ratio = 0;
    int samples = 0;
  };
  std::vector<Cost> costs;
  std::vector<Encode> encodes;
  std::vector<PairedShare> paired;
};

// The speed step sessions starting together begin at (server.shed_start_by_load,
// SessionManager::StartLevel): the lowest k whose starting_ms_per_s_by_step[k] (what they take at
// step k; < 0: not known) fits the budget beside the settled sessions' load; the last entry (the
// plan step) when none before it does, whether or not it fits.
int LowestStepThatFits(double settled_ms_per_s, const std::vector<double>& starting_ms_per_s_by_step,
                       double budget_ms_per_s);

class CapacityModel {
 public:
  // transcode_ms: codec -> measured standalone ms per 720p frame; encode_ms: the encode's part
  // of it (a codec not there: the whole transcode counts as its encode's prior).
  // plan_encode_ratio: an encode at the plan step over one at step 0 on the same pictures
  // (MeasureTranscode's): what the plan step saves, as a share of an encode.
  // prior_plan_ratio: the same share before the sessions measured it (PriorPlanEncodeRatio).
  // prior_mosaic_plan_ratio: the same for full_blur's mosaic (PriorPlanEncodeRatio's mosaic).
  CapacityModel(const CapacityOptions& o, std::map<VideoCodec, double> transcode_ms,
                std::map<VideoCodec, double> encode_ms = {}, std::map<VideoCodec, double> plan_encode_ratio = {},
                std::map<VideoCodec, double> prior_plan_ratio = {},
                std::map<VideoCodec, double> prior_mosaic_plan_ratio = {});

  // Predicted CPU ms per second of a session, its encoder at the plan step (admission).
  double CostMsPerS(const SessionLoad& s) const;
  // Predicted CPU ms per frame of a session at its size (the default size when unknown), its
  // encoder at the configured speed (step 0).
  double CostMsPerFrame(const SessionLoad& s) const;
  // The same with its encoder at the plan step (step 0's cost until that step was measured).
  double PlannedMsPerFrame(const SessionLoad& s) const;
  // The same with its encoder at `step`: step 0's cost; the plan step's (PlannedMsPerFrame); a
  // step between them once its encodes were learned from kMinPlanSamples seconds, step 0's cost
  // less what its encode saved on step 0's (never below the plan step's); -1: not known yet.
  double MsPerFrameAtStep(const SessionLoad& s, int step) const;
  // What it learned, and the same put back (a restarted node: learned figures replace the
  // priors at once, and learning goes on from their sample counts). A cost whose transcode is
  // known comes back as the same CPU per frame: its ratio times that transcode over this
  // model's.
  CapacityMemory Memory() const;
  void Restore(const CapacityMemory& m);
  // Learns from a session's measured CPU per frame (ms) at its size and mode, its encoder at step 0.
  void Learn(const SessionLoad& s, double cpu_ms_per_frame);
  // Learns what an encode of codec costs at a speed step: ms per frame at w x h, of a picture.
  void LearnEncode(VideoCodec codec, int step, int w, int h, double encode_ms_per_frame,
                   EncodePicture picture = EncodePicture::kCamera);
  // Learns an encode at `step` over one at step 0 measured in the same second on the same node
  // (sessions at both steps side by side, or one session that changed step in it): both under
  // the same contention, unlike the two steps' own figures (SessionsPlanEncodeRatio).
  void LearnPairedEncodeRatio(VideoCodec codec, int step, double ratio,
                              EncodePicture picture = EncodePicture::kCamera);
  int PairedEncodeRatioSamples(VideoCodec codec, int step, EncodePicture picture = EncodePicture::kCamera) const;
  // Encode CPU ms per 720p frame at a step: learned, else (step 0) the transcode's encode part
  // (a mosaic's step 0 not measured yet: the camera picture's, the dearer); -1: a step > 0 not
  // measured yet.
  double EncodeMs(VideoCodec codec, int step, EncodePicture picture = EncodePicture::kCamera) const;
  int EncodeSamples(VideoCodec codec, int step, EncodePicture picture = EncodePicture::kCamera) const;
  // What planning the encoder at the plan step takes off a 720p frame of this codec and mode:
  // step 0's encode cost times (1 - PlanEncodeRatio); without that ratio, step 0's cost less
  // the sessions' own at the plan step, once measured.
  double PlanSavingMs(VideoCodec codec, Mode mode) const;
  // An encode at the plan step over one at step 0: the smaller of the standalone pair's and the
  // sessions' (the prior's until the sessions measured it; at most 1; 1 when the plan step is 0;
  // -1: none of them known). A mosaic: the full_blur sessions' own, its prior until they measured
  // it, else 1.
  double PlanEncodeRatio(VideoCodec codec, EncodePicture picture = EncodePicture::kCamera) const;
  // The sessions' own: their encodes at the plan step over theirs at step 0 in the same seconds
  // (LearnPairedEncodeRatio) once kMinPlanSamples seconds had both; else the two steps' own
  // figures' ratio once each step learned from kMinPlanSamples seconds (-1 before; 1 when the
  // plan step is 0). The two figures' ratio reads high on a loaded node: step 0 is mostly
  // measured while the node is calm, a faster step while it is loaded and every encode costs
  // more (2026-12-06: VP8's step 2 0.75 of step 0 after a ramp, 0.94 after 4 sessions at 157%
  // of the cores, which planned 3 sessions where 5 had passed).
  double SessionsPlanEncodeRatio(VideoCodec codec, EncodePicture picture = EncodePicture::kCamera) const;
  static constexpr int kMinPlanSamples = 10;
  // Whether the process took more than kSaturatedShare of the node's cores over an interval:
  // then its sessions contend for the cores and each frame costs more than it does below that
  // (forwarded H.264 sessions: 3.1-3.5 ms a frame learned at 78% of two cores, 5.9 after a ramp
  // to 169%; docs/figures.md), so nothing is learned from that interval.
  static constexpr double kSaturatedShare = 0.8;
  bool Saturated(double process_cpu_ms, double wall_ms) const {
    return wall_ms > 0 && process_cpu_ms > kSaturatedShare * o_.cores * wall_ms;
  }
  int PlanStep(VideoCodec codec) const { return PlanStepOf(o_, codec); }
  // ms of CPU per second sessions may take on this node.
  double BudgetMsPerS() const { return o_.cores * 1000.0 * o_.cpu_share; }
  // Sessions of this kind (default size and rate) an empty node carries; at least 1.
  int CapacitySessions(VideoCodec codec, Mode mode) const;
  // The physical limit as a session count: cores x frame interval / transcode ms.
  double LimitSessions(VideoCodec codec) const;
  // The model's CPU per frame as a multiple of the standalone transcode.
  double Ratio(VideoCodec codec, Mode mode) const;
  double TranscodeMs(VideoCodec codec) const;
  // The standalone transcode timed again (server.retime_s: the node idle). The model's figure
  // for a codec is the cheapest of its last kKeptTimings timings, the startup one among them: a
  // burst of other work only ever adds time, so one high read (one start in five read 20-60%
  // high here) is outvoted by the next, while a machine that stays slower shows once every kept
  // timing is slower. When the figure moves, the priors and the limit follow it and a learned
  // cost keeps its CPU per frame (its ratio rescaled, as Restore does): a learned cost is many
  // seconds of the sessions' own CPU, the better figure. A codec never timed is left out.
  void Retime(VideoCodec codec, const TranscodeTiming& t);
  static constexpr int kKeptTimings = 3;
  // The timings a codec's figure is the cheapest of, oldest first (total ms per frame).
  std::vector<double> KeptTimings(VideoCodec codec) const;
  const CapacityOptions& options() const { return o_; }
  // How many samples a (codec, mode) ratio has learned from (0: the prior).
  int Samples(VideoCodec codec, Mode mode) const;
  // The anonymize priors were learned with the default detection (YuNet at 640x360, every 3rd
  // frame); a node configured otherwise pays this many ms more CPU per 720p frame for its
  // detections (less when negative), timed at startup (server/detection_timing.h). Added to the
  // anonymize prior of every codec until its sessions' own CPU replaces it.
  void SetPriorDetectionExtraMs(double ms);
  double PriorDetectionExtraMs() const;
  struct Cost {
    VideoCodec codec;
    Mode mode;
    double ratio = 0;  // CPU per frame / transcode
    int samples = 0;   // 0: the prior
    double planned_ms = 0;  // CPU per 720p frame with the encoder at the plan step
    double cpu_ms = 0;      // ratio x the transcode: CPU per 720p frame at step 0
  };
  // Every (codec, mode): the measured codecs x the three modes.
  std::vector<Cost> Costs() const;
  // A w x h frame's pixels over 720p's (the default size when w or h is 0).
  double PixelsScale(int w, int h) const;

 private:
  double TranscodeMsLocked(VideoCodec codec) const REQUIRES(mu_);
  double PlanEncodeRatioLocked(VideoCodec codec, EncodePicture picture) const REQUIRES(mu_);
  double SessionsPlanEncodeRatioLocked(VideoCodec codec, EncodePicture picture) const REQUIRES(mu_);
  double EncodeMsLocked(VideoCodec codec, int step, EncodePicture picture) const REQUIRES(mu_);
  double PlanSavingMsLocked(VideoCodec codec, Mode mode) const REQUIRES(mu_);
  double PlannedMsPerFrameLocked(VideoCodec codec, Mode mode) const REQUIRES(mu_);  // per 720p frame
  double RatioLocked(VideoCodec codec, Mode mode) const REQUIRES(mu_);

  const CapacityOptions o_;
  mutable Mutex mu_;
  // Per codec: the timings kept (Retime) and the figures of the cheapest of them.
  std::map<VideoCodec, std::vector<TranscodeTiming>> timings_ GUARDED_BY(mu_);
  std::map<VideoCodec, double> transcode_ms_ GUARDED_BY(mu_);
  double prior_detection_extra_ms_ GUARDED_BY(mu_) = 0;  // SetPriorDetectionExtraMs
  // A learned figure: the first samples average, later ones move it by kLearnRate.
  struct Learned {
    double value = 0;
    int samples = 0;
    void Add(double x);
  };
  std::map<std::pair<VideoCodec, Mode>, Learned> learned_ GUARDED_BY(mu_);  // CPU per frame / transcode
  std::map<VideoCodec, double> encode_ms_ GUARDED_BY(mu_);  // the transcodes' encode parts
  std::map<VideoCodec, double> plan_encode_ratio_ GUARDED_BY(mu_);  // the plan step's encode over step 0's
  const std::map<VideoCodec, double> prior_plan_ratio_;   // the same, a prior for the sessions' own
  const std::map<VideoCodec, double> prior_mosaic_plan_ratio_;  // full_blur's, until its sessions measured it
  using EncodeKey = std::tuple<VideoCodec, EncodePicture, int>;  // codec, picture, speed step
  std::map<EncodeKey, Learned> encode_ GUARDED_BY(mu_);  // ms per 720p frame
  std::map<EncodeKey, Learned> paired_ GUARDED_BY(mu_);  // an encode at the step over step 0's, same seconds
};

// How long an idle node waits before it times its transcode again (server.retime_s and
// server.retime_first_s): retime_first_s (at most retime_s) while the model keeps fewer than
// kKeptTimings timings of a codec, so a start whose one timing read high is outvoted within
// seconds; retime_s after that. <= 0: never (retime_s 0: timed at startup only).
double RetimeWaitS(double retime_s, double retime_first_s, size_t fewest_kept_timings);

// What a running session shows at a learning step, read from it once a second.
struct SessionReading {
  SessionLoad load;     // codec, its mode now, size (0 until its first frame), measured rate
  double cpu_ms = 0;    // its own threads' CPU so far (decode, privacy, encode)
  uint64_t frames = 0;  // frames decoded so far
  int shed_level = 0;   // 0: it runs at full settings
  int encoder_steps = 0;  // its encoder's last speed step: shed levels up to it are encoder speed alone
  // Its encodes so far at each speed step: CPU ms of the encode calls, and frames.
  double encode_cpu_ms[VideoEncoder::kMaxSpeedSteps] = {};
  uint64_t encode_frames[VideoEncoder::kMaxSpeedSteps] = {};
};

// Teaches a CapacityModel from the sessions' readings, once a second, and leaves out every
// interval that does not show what a running session costs:
// - a session's first kWarmupSteps intervals (pipeline set-up, the first keyframe, the
//   detector's first pass at its size);
// - an interval in which a session was created or ended (its set-up or tear-down is in the
//   process's CPU, which is shared out over the others' frames);
// - a saturated interval (CapacityModel::Saturated: the sessions contend for the cores);
// - per session: one that changed mode, has no size yet, or decoded fewer than kMinFrames
//   frames; and one that sheds detection (a trimmed window, sparser detection: it costs less
//   than the model's sessions), unless it costs more than the model says even so: then the
//   model is low, and it learns (a node whose sessions all shed would otherwise never learn).
//   A session that sheds encoder speed alone is learned, its encodes costed at step 0
//   (CapacityModel::EncodeMs) instead of what they took.
// Each interval that is not a change also teaches the encode's cost at every speed step a
// steady session encoded at least kMinFrames frames at (its encode calls' own thread CPU, which
// contention for the cores hardly moves).
// The process's CPU beyond the sessions' threads (inference, packetization, viewers, HTTP) is
// shared out over the sessions in proportion to their own, by at most kMaxShare.
// Not thread-safe: the caller serialises Step.
class CostLearner {
 public:
  static constexpr int kWarmupSteps = 3;
  static constexpr uint64_t kMinFrames = 10;
  static constexpr double kMaxShare = 3.0;
  enum class Outcome { kIdle, kChanged, kSaturated, kLearned };
  struct StepResult {
    Outcome outcome = Outcome::kIdle;
    int learned = 0;  // sessions the model learned from
  };
  // readings: every running session by id; process_cpu_ms: the process's CPU over the interval.
  StepResult Step(CapacityModel& model, const std::map<std::string, SessionReading>& readings,
                  double process_cpu_ms, double wall_ms);
  int64_t saturated_steps() const { return saturated_steps_; }

 private:
  struct Previous {
    double cpu_ms = 0;
    uint64_t frames = 0;
    Mode mode = Mode::kAnonymize;
    int steps = 0;  // learning steps the session has been through
    double encode_cpu_ms[VideoEncoder::kMaxSpeedSteps] = {};
    uint64_t encode_frames[VideoEncoder::kMaxSpeedSteps] = {};
  };
  std::map<std::string, Previous> previous_;
  int64_t saturated_steps_ = 0;
};

// The prior ratio of a session's CPU per frame to a standalone transcode
// before anything was learned (what sessions learned on this repo's 720p clips, against the
// warm timing: anonymize VP8 1.5x and H.264 1.6x, bypass forwarding VP8 0.3x and H.264 0.35x,
// re-encoding 1.6x and 1.8x, full_blur VP8 0.75x and H.264 1.4x; docs/capacity.md "The cost model").
double PriorRatio(Mode mode, bool bypass_forward = true, VideoCodec codec = VideoCodec::kVp8);

// The prior share of an encode at a speed step of the default ladder (libvpx cpu-used -8, -10,
// then static threshold steps, Vp8SpeedLadder; x264 veryfast, superfast, ultrafast) over one at
// step 0: what anonymized sessions measured on this repo's 720p clips, rounded up (2026-12-05,
// with cpu-used -12 and -14 at steps 2 and 3: VP8 0.83-0.87, 0.74-0.78, 0.65-0.68 at steps 1-3;
// H.264 0.55-0.62, 0.38-0.41 at steps 1-2; docs/figures.md; the static steps cost less). -1 past the ladder's
// measured steps, or for other encoder settings (default_ladder false).
// A mosaic (full_blur) has its own: VP8 1 at every step (its faster steps saved nothing), H.264
// 0.8 and 0.5.
double PriorPlanEncodeRatio(VideoCodec codec, int step, bool default_ladder,
                            EncodePicture picture = EncodePicture::kCamera);

}  // namespace veil
