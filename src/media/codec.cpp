#include "media/codec.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "media/ffmpeg_codec.h"
#include "media/ffmpeg_util.h"

namespace veil {

std::vector<Vp8Speed> Vp8SpeedLadder(int vp8_speed, bool static_steps) {
  if (vp8_speed > 0) return {{vp8_speed, 0}};  // libvpx adapts on its own: one step
  const int from = -vp8_speed;
  std::vector<Vp8Speed> out;
  const int plain_to = static_steps ? std::max(from, 10) : 16;
  for (int s = from; s <= plain_to; s += 2) out.push_back({s, 0});
  if (!static_steps) {
    if (out.empty() || out.back().cpu_used != 16) out.push_back({16, 0});
    return out;
  }
  for (const Vp8Speed& v : {Vp8Speed{std::max(from, 10), 1000}, Vp8Speed{std::max(from, 14), 1000},
                            Vp8Speed{std::max(from, 14), 3000}})
    if (out.back() != v) out.push_back(v);
  return out;
}

std::vector<std::string> X264PresetLadder(const std::string& preset) {
  static const char* kPresets[] = {"placebo", "veryslow", "slower", "slow",      "medium",
                                   "fast",    "faster",   "veryfast", "superfast", "ultrafast"};
  std::vector<std::string> out;
  bool found = false;
  for (const char* p : kPresets) {
    if (p == preset) found = true;
    if (found) out.push_back(p);
  }
  if (!found) out.push_back(preset);  // x264 refuses an unknown preset at open
  return out;
}

namespace {

// x264 through FFmpeg. x264 cannot change its preset in place: a new speed re-opens the
// encoder, whose first frame is a keyframe. Faster at once (the frame budget is threatened),
// slower where a keyframe was due anyway.
class FfmpegEncoder final : public VideoEncoder {
 public:
  FfmpegEncoder(std::string codec, const VideoInfo& vi, const EncoderOptions& o)
      : codec_(std::move(codec)), vi_(vi), o_(o), ladder_(X264PresetLadder(o.x264_preset)) {}
  ~FfmpegEncoder() override { Close(); }

  Status OpenAt(int step) {
    EncoderOptions o = o_;
    o.x264_preset = ladder_[size_t(step)];
    auto ctx = OpenVideoEncoder(codec_, vi_, o, /*global_header=*/false);
    if (!ctx) return ctx.status();
    Close();
    ctx_ = *ctx;
    frame_ = av_frame_alloc();
    pkt_ = av_packet_alloc();
    step_ = step;
    since_key_ = -1;
    return Status::Ok();
  }

  Status Encode(const Frame& f, bool force_keyframe, std::vector<EncodedFrame>& out) override {
    if (f.width != ctx_->width || f.height != ctx_->height) return Status::Error("frame size differs from the encoder's");
    const bool key_due = force_keyframe || since_key_ < 0 || since_key_ + 1 >= o_.keyint_frames;
    if (want_ > step_ || (want_ < step_ && key_due)) {
      // Frames still inside x264 (none with zerolatency's no lookahead) leave first.
      if (Status s = Flush(out); !s) return s;
      if (Status s = OpenAt(want_); !s) return s;
    }
    if (Status s = input_.Fill(f, frame_); !s) return s;
    frame_->pict_type = force_keyframe ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE;
    const int err = avcodec_send_frame(ctx_, frame_);
    av_frame_unref(frame_);
    if (err < 0) return Status::Error("encoder rejected frame: " + AvError(err));
    return Drain(out);
  }

  Status Flush(std::vector<EncodedFrame>& out) override {
    const int err = avcodec_send_frame(ctx_, nullptr);
    if (err < 0 && err != AVERROR_EOF) return Status::Error("encoder flush: " + AvError(err));
    return Drain(out);
  }

  int max_speed_step() const override { return int(ladder_.size()) - 1; }
  void SetSpeedStep(int step) override { want_ = std::clamp(step, 0, max_speed_step()); }
  std::string SpeedName(int step) const override {
    return ladder_[size_t(std::clamp(step, 0, max_speed_step()))];  // only h264 is opened here
  }

 private:
  void Close() {
    av_packet_free(&pkt_);
    av_frame_free(&frame_);
    avcodec_free_context(&ctx_);
  }
  Status Drain(std::vector<EncodedFrame>& out) {
    for (;;) {
      const int err = avcodec_receive_packet(ctx_, pkt_);
      if (err == AVERROR(EAGAIN) || err == AVERROR_EOF) return Status::Ok();
      if (err < 0) return Status::Error("encoder error: " + AvError(err));
      EncodedFrame ef;
      ef.data.assign(pkt_->data, pkt_->data + pkt_->size);
      ef.pts = pkt_->pts;
      ef.keyframe = pkt_->flags & AV_PKT_FLAG_KEY;
      since_key_ = ef.keyframe ? 0 : since_key_ + 1;
      out.push_back(std::move(ef));
      av_packet_unref(pkt_);
    }
  }

  const std::string codec_;
  const VideoInfo vi_;
  const EncoderOptions o_;
  const std::vector<std::string> ladder_;
  EncoderInput input_;
  int want_ = 0;
  int since_key_ = -1;  // frames since the last keyframe out; -1: none yet
  AVCodecContext* ctx_ = nullptr;
  AVFrame* frame_ = nullptr;
  AVPacket* pkt_ = nullptr;
};

}  // namespace

Result<std::unique_ptr<VideoEncoder>> OpenVpxEncoder(const VideoInfo& vi, const EncoderOptions& o);  // vpx_encoder.cpp

Result<std::unique_ptr<VideoEncoder>> VideoEncoder::Open(const std::string& codec, const VideoInfo& vi,
                                                         const EncoderOptions& o) {
  auto c = ParseVideoCodec(codec);
  if (!c) return Status::Error(StatusCode::kInvalidArgument, "live encoder " + c.error());
  return Open(*c, vi, o);
}

Result<std::unique_ptr<VideoEncoder>> VideoEncoder::Open(VideoCodec codec, const VideoInfo& vi,
                                                         const EncoderOptions& o) {
  if (codec == VideoCodec::kVp8) return OpenVpxEncoder(vi, o);
  auto e = std::make_unique<FfmpegEncoder>(Name(codec), vi, o);
  if (Status s = e->OpenAt(0); !s) return s;
  return std::unique_ptr<VideoEncoder>(std::move(e));
}

Result<std::unique_ptr<VideoDecoder>> VideoDecoder::Open(const std::string& codec, int threads) {
  auto c = ParseVideoCodec(codec);
  if (!c) return Status::Error(StatusCode::kInvalidArgument, "live decoder " + c.error());
  return Open(*c, threads);
}

Result<std::unique_ptr<VideoDecoder>> VideoDecoder::Open(VideoCodec codec, int threads) {
  if (Status s = ValidateDecoderThreads(threads); !s) return s;
  const AVCodec* c = avcodec_find_decoder(AVCodecID(Info(codec).av_codec_id));
  if (!c) return Status::Error(std::string("no ") + Name(codec) + " decoder in this FFmpeg");
  std::unique_ptr<VideoDecoder> d(new VideoDecoder());
  d->ctx_ = avcodec_alloc_context3(c);
  d->ctx_->thread_count = threads;
  // Live: each picture as soon as its frame is decoded. Without it FFmpeg's H.264 decoder holds
  // one picture back when the stream's SPS does not say it has no reordering (x264's
  // zerolatency output, browsers): a frame of latency, and each picture handed out with the
  // next frame's input.
  d->ctx_->flags |= AV_CODEC_FLAG_LOW_DELAY;
  d->ctx_->max_pixels = kMaxLivePixels;  // a publisher's absurd size is refused before allocation
  const int err = avcodec_open2(d->ctx_, c, nullptr);
  if (err < 0) return Status::Error(std::string("cannot open ") + Name(codec) + " decoder: " + AvError(err));
  d->frame_ = av_frame_alloc();
  d->pkt_ = av_packet_alloc();
  return d;
}

VideoDecoder::~VideoDecoder() {
  sws_freeContext(sws_);
  av_packet_free(&pkt_);
  av_frame_free(&frame_);
  avcodec_free_context(&ctx_);
}

Status VideoDecoder::Decode(const uint8_t* data, size_t size, int64_t pts, std::vector<FramePtr>& out) {
  if (!data || size == 0 || size > (64u << 20)) {
    ++errors_;
    return Status::Error("empty or absurd compressed frame");
  }
  // Own a padded copy: decoders may read past the end of their input.
  if (av_new_packet(pkt_, int(size)) < 0) return Status::Error("out of memory");
  std::memcpy(pkt_->data, data, size);
  pkt_->pts = pts;
  int err = avcodec_send_packet(ctx_, pkt_);
  av_packet_unref(pkt_);
  Status st;
  if (err < 0 && err != AVERROR(EAGAIN)) {
    ++errors_;
    st = Status::Error("undecodable frame: " + AvError(err));
  }
  while ((err = avcodec_receive_frame(ctx_, frame_)) >= 0) {
    if (frame_->width <= 0 || frame_->height <= 0 || frame_->width > 8192 || frame_->height > 8192) {
      av_frame_unref(frame_);
      ++errors_;
      continue;
    }
    if (!pool_ || pool_->width() != frame_->width || pool_->height() != frame_->height)
      pool_ = FramePool::Create(frame_->width, frame_->height);  // first frame, or the publisher changed size
    FramePtr f = ToPooledFrame(frame_, *pool_, &sws_);
    if (f) {
      f->pts = frame_->best_effort_timestamp != AV_NOPTS_VALUE ? frame_->best_effort_timestamp : pts;
      f->index = index_++;
      out.push_back(std::move(f));
    }
    av_frame_unref(frame_);
  }
  if (err != AVERROR(EAGAIN) && err != AVERROR_EOF && st.ok()) {
    ++errors_;
    st = Status::Error("decoder error: " + AvError(err));
  }
  return st;
}

}  // namespace veil
