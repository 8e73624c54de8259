// The limit a node admits by (issue 12): a standalone decode + encode of one 720p frame at the
// session's encoder settings, timed on this machine, on each core it may use (docs/capacity.md,
// "The limit"). The cost model (server/capacity.h) counts a session's CPU as a multiple of it.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "core/frame.h"
#include "core/status.h"
#include "media/codec.h"
#include "media/media_types.h"
#include "media/video_codec.h"

namespace veil {

// CPUs this process may use: its affinity mask, capped by a cgroup v2 CPU quota (containers).
double UsableCores();

// The picture the timing encodes: 1280x720, a slow camera pan (4 px a frame) over a field with
// large shapes, mid detail and fine grain, like a camera picture, its chroma smoother; the same
// pictures on every call (a fixed seed). Frames 0 .. frames-1.
class SyntheticPan {
 public:
  static constexpr int kWidth = 1280, kHeight = 720;
  explicit SyntheticPan(int frames);
  // Its stream: kWidth x kHeight, 30 fps, a 90 kHz clock (RTP's).
  static VideoInfo Info();
  // Frame i (clamped to the pan) into f, a kWidth x kHeight frame.
  void Fill(int i, Frame& f) const;

 private:
  int frames_, luma_stride_, chroma_stride_;
  std::vector<uint8_t> y_, u_, v_;  // the whole field the pan moves over
};

// Frames a freshly opened codec pair runs before its frames are timed: its first frames touch
// its buffers for the first time (page faults; VP8 frames 1, 2 and 9 of the synthetic pan).
constexpr int kWarmFrames = 12;

// CPU ms per frame of a standalone decode + encode of `frames` frames of a
// synthetic panning 1280x720 picture (textured like a camera picture) with
// these encoder settings, after a keyframe and kWarmFrames frames not timed. One thread, like
// a session.
Result<double> MeasureTranscodeMs(VideoCodec codec, const EncoderOptions& enc, int frames = 24);
struct TranscodeTiming {
  double total_ms = 0;   // decode + encode, per frame
  double encode_ms = 0;  // the encode alone
  // A second encoder at speed step plan_step on the first plan_frames of the same pictures: its
  // CPU over step 0's on those frames (0: not measured).
  double plan_encode_ratio = 0;
  // TimeTranscode: each core timed and its figure (decode + encode ms per frame).
  std::vector<std::pair<int, double>> by_core;
  // Page faults per timed frame (the kernel's count for the timing thread; TimeTranscode: the
  // most of its cores'): near 0 once the codecs are warm.
  double faults_per_frame = 0;
};
// plan_step > 0 also times an encoder at that speed step on the same pictures, so the two
// encodes differ by the step alone (what admission plans a session's encoder to save); it runs
// the warm-up too. warm_frames: frames after the keyframe not timed.
Result<TranscodeTiming> MeasureTranscode(VideoCodec codec, const EncoderOptions& enc, int frames = 24,
                                         int plan_step = 0, int plan_frames = 12, int warm_frames = kWarmFrames);
// What a node admits by (startup, and Retime). One pass of 12 frames (after the keyframe and
// kWarmFrames not timed) on each of up to kTimedCores of the cores the calling thread may run on
// (TimedCores), the thread pinned to it (two on a node of one core: the cheaper counts, as a
// burst of other work only ever adds time), and the node's figure
// is their harmonic mean: the frames per second its cores carry together, as the frame executor
// spreads the sessions' frames over them. The cores of one VM were measured to differ by up to
// 45% for minutes at a time, and a timing on one of them read whichever the thread ran on
// (docs/capacity.md). The first pass also times the plan step's encoder on its 12 frames.
// Unpinnable (the mask forbids it): two passes where the thread runs, the cheaper kept.
Result<TranscodeTiming> TimeTranscode(VideoCodec codec, const EncoderOptions& enc, int plan_step);
constexpr int kTimedCores = 4;
// Up to `most` of the cores in the calling thread's affinity mask, spread evenly over it.
std::vector<int> TimedCores(int most = kTimedCores);
// Each core's timing combined: total and encode are harmonic means (equal frames per second on
// each core); by_core lists them; plan_encode_ratio is the first non-zero one. Empty: an error.
Result<TranscodeTiming> CombineCoreTimings(const std::vector<std::pair<int, TranscodeTiming>>& per_core);

}  // namespace veil
