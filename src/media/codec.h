// In-memory video codecs for live sessions: compressed frames in, pooled
// I420 frames out (decoder), and the reverse (encoder). No container.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/frame.h"
#include "core/status.h"
#include "media/media_types.h"
#include "media/video_codec.h"

struct AVCodecContext;
struct AVFrame;
struct AVPacket;
struct SwsContext;

namespace veil {

struct EncodedFrame {
  std::vector<uint8_t> data;
  int64_t pts = 0;
  bool keyframe = false;
  double arrival_ms = 0;  // live input: when the frame's first packet arrived (NowMs clock); 0 = unknown
};

// Live encoders have speed steps: 0 is the configured speed (EncoderOptions), each step up is
// cheaper per frame and worse at the same bitrate (server/speed_control.h moves between them).
class VideoEncoder {
 public:
  // codec: vp8 (libvpx, whose speed can change between any two frames) | h264 (x264 through
  // FFmpeg, Annex B with in-band parameter sets, for RTP; a new speed re-opens it at a keyframe).
  static Result<std::unique_ptr<VideoEncoder>> Open(VideoCodec codec, const VideoInfo& vi, const EncoderOptions& o);
  // The same by name (files, tools, tests): "vp8" | "h264".
  static Result<std::unique_ptr<VideoEncoder>> Open(const std::string& codec, const VideoInfo& vi,
                                                    const EncoderOptions& o);
  virtual ~VideoEncoder() = default;
  // Encodes `f` (its pts in vi's time base); finished frames are appended to
  // `out`, each with the pts it was given. force_keyframe: e.g. a viewer joined or asked for one.
  virtual Status Encode(const Frame& f, bool force_keyframe, std::vector<EncodedFrame>& out) = 0;
  virtual Status Flush(std::vector<EncodedFrame>& out) = 0;
  // The most speed steps counted apart per step (the capacity model's encode costs); every
  // ladder fits (vp8: at most 9 steps, 5 from the default; h264: at most 10 presets, 3 from veryfast).
  static constexpr int kMaxSpeedSteps = 10;
  // 0 .. max_speed_step(); out-of-range steps are clamped. Faster (a higher step) takes effect
  // on the next frame; slower on the next frame too for vp8, at the next regular keyframe for h264.
  virtual int max_speed_step() const = 0;
  virtual void SetSpeedStep(int step) = 0;
  int speed_step() const { return step_; }  // the step the last frame was encoded at
  // The encoder setting of a step, e.g. "cpu-used -12", "cpu-used -14 static 3000" or "superfast".
  virtual std::string SpeedName(int step) const = 0;
  // Frames encoded at the fastest speed because they began a new picture (EncoderOptions::fast_cuts).
  virtual int64_t fast_cut_frames() const { return 0; }

 protected:
  VideoEncoder() = default;
  int step_ = 0;
};

// One step of the live VP8 encoder's speed: libvpx cpu-used, and its static threshold
// (VP8E_SET_STATIC_THRESHOLD, libvpx's "encode breakout"): a macroblock whose inter prediction
// is within this sum of squared luma differences of the picture given (or a floor that grows
// with the quantizer, whichever is larger; half of it in chroma) is sent as the prediction,
// with no residual. 0: off.
struct Vp8Speed {
  int cpu_used = 8;
  int static_threshold = 0;
  bool operator==(const Vp8Speed&) const = default;
};

// The speed ladders (exposed for tests and `veil bench --speed-steps`), from the configured
// speed to the fastest. VP8: cpu-used from |vp8_speed| up in steps of 2 (none for libvpx's own
// adaptive speed, vp8_speed > 0). With static_steps (EncoderOptions::vp8_static_steps) up to 10,
// then static threshold 1000 at 10, 1000 at 14 and 3000 at 14 (each cpu-used at least
// |vp8_speed|): on the load clip they cost what cpu-used 12-16 did with up to 2.2 dB more, on
// leakcheck's photos 18-34% less (0.4-0.6 dB more given up at steps 2-3, the last one 4.8 dB
// above cpu-used 16), and on a webcam clip 34-40% less for 1.8-3.9 dB more given up
// (docs/figures.md "Static threshold steps"). Without: cpu-used up to 16. x264: presets from
// the configured one down to ultrafast.
std::vector<Vp8Speed> Vp8SpeedLadder(int vp8_speed, bool static_steps = true);
std::vector<std::string> X264PresetLadder(const std::string& preset);

// A new picture for the encoder (EncoderOptions::fast_cuts): the mean absolute difference of two
// frames' luma thumbnails (LumaThumb, core/frame.h) above this, as privacy.scene_cut_threshold's
// default.
constexpr double kCutThumbnailDiff = 28;

class VideoDecoder {
 public:
  static Result<std::unique_ptr<VideoDecoder>> Open(VideoCodec codec, int threads);
  // The same by name (files, tools, tests): "vp8" | "h264".
  static Result<std::unique_ptr<VideoDecoder>> Open(const std::string& codec, int threads);
  ~VideoDecoder();
  // Decodes one compressed frame and appends 0..n frames to `out`. A corrupt
  // frame is an error; the decoder stays usable for the next one.
  Status Decode(const uint8_t* data, size_t size, int64_t pts, std::vector<FramePtr>& out);
  int64_t errors() const { return errors_; }

 private:
  VideoDecoder() = default;
  AVCodecContext* ctx_ = nullptr;
  AVFrame* frame_ = nullptr;
  AVPacket* pkt_ = nullptr;
  SwsContext* sws_ = nullptr;
  std::shared_ptr<FramePool> pool_;
  int64_t errors_ = 0;
  int64_t index_ = 0;
};

}  // namespace veil
