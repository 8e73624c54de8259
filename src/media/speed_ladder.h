// What each speed step of a live encoder costs and gives up, on a real input: CPU per frame
// of the encode, PSNR of the decoded output against the input, and the bitrate, all at the
// same target bitrate. `veil bench --speed-steps` prints it; the load-adaptive speed
// (server/speed_control.h) walks these steps.
#pragma once
#include <string>
#include <vector>

#include "core/status.h"
#include "media/media_types.h"

namespace veil {

struct SpeedStepCost {
  int step = 0;
  std::string setting;      // e.g. "cpu-used 12", "superfast"
  int64_t frames = 0;
  double encode_cpu_ms = 0;  // per frame, the encode only (this thread's CPU)
  double encode_cpu_ms_p99 = 0, encode_cpu_ms_max = 0;  // the costliest frames (keyframes, scene cuts)
  int64_t fast_cut_frames = 0;  // new pictures encoded at the fastest speed (EncoderOptions::fast_cuts)
  double psnr_y = 0;        // dB, luma, over all frames (from the summed squared error)
  double psnr_yuv = 0;      // dB, all three planes weighted by their samples
  double kbps = 0;          // the output's bitrate at the input's frame rate
};

// Encodes the first max_frames of `input` (0 = all) at every step of the live encoder for
// `codec` (vp8 | h264) with options `o`, one run per step, in order.
Result<std::vector<SpeedStepCost>> MeasureSpeedLadder(const std::string& input, const std::string& codec,
                                                      const EncoderOptions& o, int64_t max_frames);

// encoder.fast_cuts in one run: two live encoders of `codec` with options `o`, one with fast_cuts
// off and one on, fed the same frames of `input` in turn (which goes first alternates frame by
// frame), so a machine whose speed drifts slows both alike. The cut frames are those the second
// encoder sped up; both rows report their cost on those same frames.
struct FastCutsCost {
  bool fast_cuts = false;
  int64_t frames = 0, cut_frames = 0;
  std::vector<int64_t> cut_indices;  // which frames (0-based) were the cut frames
  double encode_cpu_ms = 0;      // per frame, all frames
  double cut_encode_cpu_ms = 0;  // per frame, the cut frames
  double other_encode_cpu_ms = 0;  // per frame, every other frame
  double psnr_y = 0, psnr_yuv = 0, kbps = 0;
};
Result<std::vector<FastCutsCost>> MeasureFastCuts(const std::string& input, const std::string& codec,
                                                  const EncoderOptions& o, int64_t max_frames);

// The file writer's encoder against the live one, in one run (issue 12: does a live session's
// encode cost more than `veil bench`'s at the same settings?). Encoders fed the same frames of
// `input` in turn, which goes first rotating frame by frame: FFmpeg's (`veil anonymize` and
// `veil bench` write with it), libvpx's own as a live session opens it (a 90 kHz time base, RTP
// timestamps), the same with the file's time base, and the live one without fast cuts.
struct EncoderPathCost {
  std::string path;
  int64_t frames = 0;
  double encode_cpu_ms = 0;  // per frame, this thread's CPU
  double psnr_y = 0, kbps = 0;
};
Result<std::vector<EncoderPathCost>> MeasureEncoderPaths(const std::string& input, const std::string& codec,
                                                         const EncoderOptions& o, int64_t max_frames);

}  // namespace veil
