// The live VP8 encoder: libvpx itself rather than through FFmpeg, because libvpx takes a new
// cpu-used between any two frames (VP8E_SET_CPUUSED) without a keyframe or a reset of its rate
// control, which FFmpeg's wrapper only sets at open. The settings are FFmpeg's for the same
// options (ffmpeg_codec.cpp: realtime deadline, no lag, qmin 4 / qmax 56, VBR at the bitrate,
// keyframes at most keyint apart), so the offline path and the live one encode alike.
#include <vpx/vp8cx.h>
#include <vpx/vpx_encoder.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "media/codec.h"

namespace veil {
namespace {

class VpxEncoder final : public VideoEncoder {
 public:
  static constexpr int kCutCpuUsed = 16;  // a scene cut's first frame (fast_cuts)
  ~VpxEncoder() override {
    if (open_) vpx_codec_destroy(&codec_);
  }

  Status Open(const VideoInfo& vi, const EncoderOptions& o) {
    if (Status s = ValidateEncoder(vi, o); !s) return s;
    if (vi.tb_num <= 0 || vi.tb_den <= 0) return Status::Error("time base must be positive");
    ladder_ = Vp8SpeedLadder(o.vp8_speed, o.vp8_static_steps);
    adaptive_ = o.vp8_speed > 0;
    fast_cuts_ = o.fast_cuts && !adaptive_;  // libvpx's own adaptive speed is left to itself
    vpx_codec_enc_cfg_t cfg;
    if (vpx_codec_enc_config_default(vpx_codec_vp8_cx(), &cfg, 0) != VPX_CODEC_OK)
      return Status::Error("libvpx has no default VP8 configuration");
    const double fps = vi.fps > 0 ? vi.fps : 30.0;
    cfg.g_w = unsigned(vi.width);
    cfg.g_h = unsigned(vi.height);
    cfg.g_timebase = {vi.tb_num, vi.tb_den};
    cfg.g_threads = unsigned(o.threads);
    cfg.g_lag_in_frames = 0;
    cfg.g_pass = VPX_RC_ONE_PASS;
    cfg.rc_end_usage = VPX_VBR;
    cfg.rc_target_bitrate = unsigned(TargetKbps(vi, o));
    cfg.rc_min_quantizer = 4;
    cfg.rc_max_quantizer = 56;
    cfg.kf_mode = VPX_KF_AUTO;
    cfg.kf_max_dist = unsigned(o.keyint_frames);
    cfg.kf_min_dist = 0;
    if (vpx_codec_enc_init(&codec_, vpx_codec_vp8_cx(), &cfg, 0) != VPX_CODEC_OK)
      return Status::Error(std::string("cannot open the libvpx VP8 encoder: ") + vpx_codec_error(&codec_));
    open_ = true;
    width_ = vi.width;
    height_ = vi.height;
    duration_ = std::max<int64_t>(1, std::llround(double(vi.tb_den) / (double(vi.tb_num) * fps)));
    return ApplySpeed(0);
  }

  Status Encode(const Frame& f, bool force_keyframe, std::vector<EncodedFrame>& out) override {
    if (f.width != width_ || f.height != height_) return Status::Error("frame size differs from the encoder's");
    if (want_ != step_)
      if (Status s = ApplySpeed(want_); !s) return s;
    vpx_image_t img;
    vpx_img_wrap(&img, VPX_IMG_FMT_I420, unsigned(f.width), unsigned(f.height), 1, f.y.data);
    img.planes[VPX_PLANE_Y] = f.y.data;
    img.planes[VPX_PLANE_U] = f.u.data;
    img.planes[VPX_PLANE_V] = f.v.data;
    img.stride[VPX_PLANE_Y] = f.y.stride;
    img.stride[VPX_PLANE_U] = f.u.stride;
    img.stride[VPX_PLANE_V] = f.v.stride;
    // libvpx's rate control reads the time between frames from the pts: feed it a monotonic
    // one (a live pts is a 32-bit RTP timestamp, which wraps), and hand the caller's back.
    vpx_codec_pts_t pts = 0;
    if (have_pts_) {
      int64_t d = f.pts - last_in_pts_;
      if (d <= 0 || d >= (int64_t(1) << 31)) d = int64_t(int32_t(uint32_t(f.pts) - uint32_t(last_in_pts_)));
      pts = last_pts_ + (d > 0 ? d : duration_);  // a repeated or backward pts: one frame on
    }
    have_pts_ = true;
    last_in_pts_ = f.pts;
    last_pts_ = pts;
    pending_pts_ = f.pts;
    const vpx_enc_frame_flags_t flags = force_keyframe ? VPX_EFLAG_FORCE_KF : 0;
    // A new picture (a scene cut, or the first frame after a held one) is coded mostly intra and
    // costs ~2x a usual frame at cpu-used -8, but only ~1.2x at 16, for ~0.1 dB over the clip
    // (docs/figures.md, "Fast cuts"): encode it at cpu-used 16 (the step's static threshold
    // kept: a cut's macroblocks rarely predict within it), then go back. A keyframe costs the
    // same at every speed, so it is left alone.
    const LumaThumb thumb = LumaThumb::Of(f);
    const int step_cpu_used = ladder_[size_t(step_)].cpu_used;
    const bool cut = fast_cuts_ && have_thumb_ && !force_keyframe && step_cpu_used < kCutCpuUsed &&
                     thumb.MeanAbsDiff(thumb_) > kCutThumbnailDiff;
    thumb_ = thumb;
    have_thumb_ = true;
    if (cut)
      if (Status s = SetCpuUsed(kCutCpuUsed); !s) return s;
    const bool encoded = vpx_codec_encode(&codec_, &img, pts, duration_, flags, VPX_DL_REALTIME) == VPX_CODEC_OK;
    if (cut) {
      ++fast_cut_frames_;
      if (Status s = SetCpuUsed(step_cpu_used); !s) return s;
    }
    if (!encoded) return Status::Error(std::string("encoder rejected frame: ") + vpx_codec_error(&codec_));
    return Drain(out);
  }

  Status Flush(std::vector<EncodedFrame>& out) override {
    if (vpx_codec_encode(&codec_, nullptr, 0, 0, 0, VPX_DL_REALTIME) != VPX_CODEC_OK)
      return Status::Error(std::string("encoder flush: ") + vpx_codec_error(&codec_));
    return Drain(out);
  }

  int max_speed_step() const override { return int(ladder_.size()) - 1; }
  void SetSpeedStep(int step) override { want_ = std::clamp(step, 0, max_speed_step()); }
  int64_t fast_cut_frames() const override { return fast_cut_frames_; }
  std::string SpeedName(int step) const override {
    const Vp8Speed& v = ladder_[size_t(std::clamp(step, 0, max_speed_step()))];
    std::string name = "cpu-used " + std::to_string(adaptive_ ? v.cpu_used : -v.cpu_used);
    if (v.static_threshold > 0) name += " static " + std::to_string(v.static_threshold);
    return name;
  }

 private:
  Status ApplySpeed(int step) {
    const Vp8Speed& v = ladder_[size_t(step)];
    if (Status s = SetCpuUsed(v.cpu_used); !s) return s;
    if (vpx_codec_control(&codec_, VP8E_SET_STATIC_THRESHOLD, unsigned(v.static_threshold)) != VPX_CODEC_OK)
      return Status::Error(std::string("libvpx refused the static threshold: ") + vpx_codec_error(&codec_));
    step_ = step;
    return Status::Ok();
  }

  Status SetCpuUsed(int cpu_used) {
    // Negative: that speed, fixed; positive: libvpx adapts from it to its own CPU estimate.
    if (vpx_codec_control(&codec_, VP8E_SET_CPUUSED, adaptive_ ? cpu_used : -cpu_used) != VPX_CODEC_OK)
      return Status::Error(std::string("libvpx refused cpu-used: ") + vpx_codec_error(&codec_));
    return Status::Ok();
  }

  Status Drain(std::vector<EncodedFrame>& out) {
    vpx_codec_iter_t it = nullptr;
    while (const vpx_codec_cx_pkt_t* p = vpx_codec_get_cx_data(&codec_, &it)) {
      if (p->kind != VPX_CODEC_CX_FRAME_PKT) continue;
      EncodedFrame ef;
      const auto* b = static_cast<const uint8_t*>(p->data.frame.buf);
      ef.data.assign(b, b + p->data.frame.sz);
      ef.pts = pending_pts_;  // no lag: the frame just given
      ef.keyframe = (p->data.frame.flags & VPX_FRAME_IS_KEY) != 0;
      out.push_back(std::move(ef));
    }
    return Status::Ok();
  }

  vpx_codec_ctx_t codec_{};
  bool open_ = false;
  bool adaptive_ = false;
  bool fast_cuts_ = true;
  bool have_thumb_ = false;
  LumaThumb thumb_;
  int64_t fast_cut_frames_ = 0;
  std::vector<Vp8Speed> ladder_;
  int want_ = 0;
  int width_ = 0, height_ = 0;
  int64_t duration_ = 1;
  bool have_pts_ = false;
  int64_t last_in_pts_ = 0, last_pts_ = 0, pending_pts_ = 0;
};

}  // namespace

Result<std::unique_ptr<VideoEncoder>> OpenVpxEncoder(const VideoInfo& vi, const EncoderOptions& o) {
  auto e = std::make_unique<VpxEncoder>();
  if (Status s = e->Open(vi, o); !s) return s;
  return std::unique_ptr<VideoEncoder>(std::move(e));
}

}  // namespace veil
