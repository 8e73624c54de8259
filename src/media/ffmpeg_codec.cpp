#include "media/ffmpeg_codec.h"

#include <algorithm>
#include <cstring>

#include "media/ffmpeg_util.h"

extern "C" {
#include <libavutil/opt.h>
}

namespace veil {

Result<AVCodecContext*> OpenVideoEncoder(const std::string& codec, const VideoInfo& vi, const EncoderOptions& o,
                                         bool global_header) {
  if (Status s = ValidateEncoder(vi, o); !s) return s;
  // Y4M carries raw frames as wrapped AVFrames in FFmpeg's muxer.
  const char* name = codec == "vp8" ? "libvpx" : codec == "h264" ? "libx264" : codec == "rawvideo" ? "wrapped_avframe" : nullptr;
  if (!name) return Status::Error("unknown codec '" + codec + "' (vp8, h264 or rawvideo)");
  const AVCodec* c = avcodec_find_encoder_by_name(name);
  if (!c) return Status::Error(std::string("encoder ") + name + " is not available in this FFmpeg");
  AVCodecContext* e = avcodec_alloc_context3(c);
  e->width = vi.width;
  e->height = vi.height;
  e->pix_fmt = AV_PIX_FMT_YUV420P;
  e->time_base = AVRational{vi.tb_num, vi.tb_den};
  const double fps = vi.fps > 0 ? vi.fps : 30.0;
  e->framerate = av_d2q(fps, 1000);
  e->thread_count = o.threads;
  e->gop_size = o.keyint_frames;
  if (codec != "rawvideo") e->bit_rate = TargetKbps(vi, o) * 1000;
  if (codec == "vp8") {
    av_opt_set(e->priv_data, "deadline", "realtime", 0);
    av_opt_set_int(e->priv_data, "cpu-used", o.vp8_speed, 0);
    av_opt_set_int(e->priv_data, "lag-in-frames", 0, 0);
    e->qmin = 4;
    e->qmax = 56;
  } else if (codec == "h264") {
    av_opt_set(e->priv_data, "preset", o.x264_preset.c_str(), 0);
    av_opt_set(e->priv_data, "tune", "zerolatency", 0);
    if (!o.x264_profile.empty()) av_opt_set(e->priv_data, "profile", o.x264_profile.c_str(), 0);
  }
  if (global_header) e->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  const int err = avcodec_open2(e, c, nullptr);
  if (err < 0) {
    avcodec_free_context(&e);
    return Status::Error("cannot open " + std::string(name) + " encoder: " + AvError(err));
  }
  return e;
}

FramePtr ToPooledFrame(const AVFrame* a, FramePool& pool, SwsContext** sws) {
  FramePtr f = pool.Acquire();
  const bool direct = (a->format == AV_PIX_FMT_YUV420P || a->format == AV_PIX_FMT_YUVJ420P) &&
                      a->width == f->width && a->height == f->height;
  if (direct) {
    const Plane* pl[3] = {&f->y, &f->u, &f->v};
    for (int i = 0; i < 3; ++i)
      for (int y = 0; y < pl[i]->height; ++y)
        std::memcpy(pl[i]->row(y), a->data[i] + static_cast<ptrdiff_t>(y) * a->linesize[i], pl[i]->width);
    return f;
  }
  // Other pixel formats, or a mid-stream size change: scale to the pool's size.
  *sws = sws_getCachedContext(*sws, a->width, a->height, static_cast<AVPixelFormat>(a->format), f->width, f->height,
                              AV_PIX_FMT_YUV420P, SWS_BILINEAR, nullptr, nullptr, nullptr);
  if (!*sws) return nullptr;
  uint8_t* dst[4] = {f->y.data, f->u.data, f->v.data, nullptr};
  int dst_stride[4] = {f->y.stride, f->u.stride, f->v.stride, 0};
  sws_scale(*sws, a->data, a->linesize, 0, a->height, dst, dst_stride);
  return f;
}

EncoderInput::~EncoderInput() { av_buffer_pool_uninit(&pool_); }

Status EncoderInput::Fill(const Frame& f, AVFrame* a) {
  const Plane* pl[3] = {&f.y, &f.u, &f.v};
  if (!pool_ || f.width != width_ || f.height != height_) {
    av_buffer_pool_uninit(&pool_);  // buffers still out are freed when they come back
    size_t size = 0;
    for (int i = 0; i < 3; ++i) {
      stride_[i] = (pl[i]->width + 63) & ~63;
      offset_[i] = size;
      size += size_t(stride_[i]) * size_t(pl[i]->height);
    }
    pool_ = av_buffer_pool_init(size + 64, nullptr);
    if (!pool_) return Status::Error("out of memory");
    width_ = f.width;
    height_ = f.height;
  }
  a->buf[0] = av_buffer_pool_get(pool_);
  if (!a->buf[0]) return Status::Error("out of memory");
  a->format = AV_PIX_FMT_YUV420P;
  a->width = f.width;
  a->height = f.height;
  a->pts = f.pts;
  for (int i = 0; i < 3; ++i) {
    a->data[i] = a->buf[0]->data + offset_[i];
    a->linesize[i] = stride_[i];
    for (int y = 0; y < pl[i]->height; ++y)
      std::memcpy(a->data[i] + ptrdiff_t(y) * stride_[i], pl[i]->row(y), size_t(pl[i]->width));
  }
  return Status::Ok();
}

}  // namespace veil
