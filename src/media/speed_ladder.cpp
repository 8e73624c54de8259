#include "media/speed_ladder.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "core/clock.h"
#include "core/frame.h"
#include "media/codec.h"
#include "media/ffmpeg_codec.h"
#include "media/reader.h"

namespace veil {
namespace {

// Sum of squared differences of one plane.
double Sse(const Plane& a, const Plane& b) {
  double s = 0;
  for (int y = 0; y < a.height; ++y) {
    const uint8_t *p = a.row(y), *q = b.row(y);
    int64_t r = 0;
    for (int x = 0; x < a.width; ++x) {
      const int d = int(p[x]) - int(q[x]);
      r += d * d;
    }
    s += double(r);
  }
  return s;
}

double Psnr(double sse, double samples) {
  if (samples <= 0) return 0;
  const double mse = sse / samples;
  return mse <= 1e-12 ? 99.0 : 10.0 * std::log10(255.0 * 255.0 / mse);
}

// What one encoder's output keeps of its input: the packets' bytes, and the decoded pictures'
// squared error against the frames they came from.
struct QualityTally {
  double bytes = 0, sse_y = 0, sse_all = 0, samples_y = 0, samples_all = 0;

  // Decodes `packets` (the encoding of `f`) and adds them up.
  Status Add(const Frame& f, const std::vector<EncodedFrame>& packets, VideoDecoder& dec, std::vector<FramePtr>& decoded) {
    for (const EncodedFrame& p : packets) {
      bytes += double(p.data.size());
      decoded.clear();
      if (Status s = dec.Decode(p.data.data(), p.data.size(), p.pts, decoded); !s) return s;
      for (const FramePtr& d : decoded) {
        if (d->width != f.width || d->height != f.height) return Status::Error("decoded size differs from the input's");
        const double y = Sse(f.y, d->y);
        sse_y += y;
        sse_all += y + Sse(f.u, d->u) + Sse(f.v, d->v);
        samples_y += double(f.width) * f.height;
        samples_all += double(f.width) * f.height + 2.0 * f.u.width * f.u.height;
      }
    }
    return Status::Ok();
  }
  double psnr_y() const { return Psnr(sse_y, samples_y); }
  double psnr_yuv() const { return Psnr(sse_all, samples_all); }
  double kbps(int64_t frames, const VideoInfo& vi) const {
    return bytes * 8.0 / 1000.0 / (double(frames) / (vi.fps > 0 ? vi.fps : 30.0));
  }
};

}  // namespace

Result<std::vector<FastCutsCost>> MeasureFastCuts(const std::string& input, const std::string& codec,
                                                  const EncoderOptions& o, int64_t max_frames) {
  auto reader = MediaReader::Open(input);
  if (!reader) return reader.status();
  const VideoInfo& vi = (*reader)->info();
  struct Side {
    std::unique_ptr<VideoEncoder> enc;
    std::unique_ptr<VideoDecoder> dec;
    FastCutsCost c;
    QualityTally q;
    double cpu = 0, cut_cpu = 0;
  };
  Side sides[2];
  for (int i = 0; i < 2; ++i) {
    EncoderOptions oi = o;
    oi.fast_cuts = i == 1;
    auto enc = VideoEncoder::Open(codec, vi, oi);
    if (!enc) return enc.status();
    auto dec = VideoDecoder::Open(codec, 1);
    if (!dec) return dec.status();
    sides[i].enc = std::move(*enc);
    sides[i].dec = std::move(*dec);
    sides[i].c.fast_cuts = oi.fast_cuts;
  }
  std::vector<EncodedFrame> packets;
  std::vector<FramePtr> decoded;
  for (int64_t n = 0;; ++n) {
    if (max_frames > 0 && n >= max_frames) break;
    ReadItem item = (*reader)->Next();
    if (std::holds_alternative<EndOfStream>(item)) break;
    auto* fp = std::get_if<FramePtr>(&item);
    if (!fp) continue;  // audio
    const Frame& f = **fp;
    double ms[2] = {0, 0};
    const int64_t cuts_before = sides[1].enc->fast_cut_frames();
    for (int k = 0; k < 2; ++k) {
      Side& s = sides[(n + k) % 2];  // who goes first alternates
      packets.clear();
      const double t0 = ThreadCpuMs();
      if (Status st = s.enc->Encode(f, n == 0, packets); !st) return st;
      ms[(n + k) % 2] = ThreadCpuMs() - t0;
      if (Status st = s.q.Add(f, packets, *s.dec, decoded); !st) return st;
    }
    const bool cut = sides[1].enc->fast_cut_frames() > cuts_before;
    for (int i = 0; i < 2; ++i) {
      Side& s = sides[i];
      ++s.c.frames;
      s.cpu += ms[i];
      if (cut) {
        ++s.c.cut_frames;
        s.c.cut_indices.push_back(n);
        s.cut_cpu += ms[i];
      }
    }
  }
  std::vector<FastCutsCost> out;
  for (Side& s : sides) {
    FastCutsCost& c = s.c;
    if (c.frames == 0) return Status::Error(input + " has no video frames");
    c.encode_cpu_ms = s.cpu / double(c.frames);
    c.cut_encode_cpu_ms = c.cut_frames > 0 ? s.cut_cpu / double(c.cut_frames) : 0;
    c.other_encode_cpu_ms = c.frames > c.cut_frames ? (s.cpu - s.cut_cpu) / double(c.frames - c.cut_frames) : 0;
    c.psnr_y = s.q.psnr_y();
    c.psnr_yuv = s.q.psnr_yuv();
    c.kbps = s.q.kbps(c.frames, vi);
    out.push_back(c);
  }
  if (!(*reader)->end_status().ok()) return (*reader)->end_status();
  return out;
}

Result<std::vector<SpeedStepCost>> MeasureSpeedLadder(const std::string& input, const std::string& codec,
                                                      const EncoderOptions& o, int64_t max_frames) {
  std::vector<SpeedStepCost> out;
  int steps = 1;
  for (int step = 0; step < steps; ++step) {
    auto reader = MediaReader::Open(input);
    if (!reader) return reader.status();
    const VideoInfo& vi = (*reader)->info();
    auto enc = VideoEncoder::Open(codec, vi, o);
    if (!enc) return enc.status();
    auto dec = VideoDecoder::Open(codec, 1);
    if (!dec) return dec.status();
    steps = (*enc)->max_speed_step() + 1;
    (*enc)->SetSpeedStep(step);
    SpeedStepCost c;
    c.step = step;
    c.setting = (*enc)->SpeedName(step);
    QualityTally q;
    double cpu = 0;
    std::vector<EncodedFrame> packets;
    std::vector<FramePtr> decoded;
    std::vector<double> per_frame;
    for (;;) {
      if (max_frames > 0 && c.frames >= max_frames) break;
      ReadItem item = (*reader)->Next();
      if (std::holds_alternative<EndOfStream>(item)) break;
      auto* fp = std::get_if<FramePtr>(&item);
      if (!fp) continue;  // audio
      const Frame& f = **fp;
      packets.clear();
      const double t0 = ThreadCpuMs();
      if (Status s = (*enc)->Encode(f, c.frames == 0, packets); !s) return s;
      const double ms = ThreadCpuMs() - t0;
      cpu += ms;
      per_frame.push_back(ms);
      if (Status s = q.Add(f, packets, **dec, decoded); !s) return s;
      ++c.frames;
    }
    if (c.frames == 0) return Status::Error(input + " has no video frames");
    if (!(*reader)->end_status().ok()) return (*reader)->end_status();
    c.encode_cpu_ms = cpu / double(c.frames);
    std::sort(per_frame.begin(), per_frame.end());
    c.encode_cpu_ms_p99 = per_frame[std::min(per_frame.size() - 1, size_t(0.99 * double(per_frame.size())))];
    c.encode_cpu_ms_max = per_frame.back();
    c.fast_cut_frames = (*enc)->fast_cut_frames();
    c.psnr_y = q.psnr_y();
    c.psnr_yuv = q.psnr_yuv();
    c.kbps = q.kbps(c.frames, vi);
    out.push_back(std::move(c));
  }
  return out;
}

Result<std::vector<EncoderPathCost>> MeasureEncoderPaths(const std::string& input, const std::string& codec,
                                                         const EncoderOptions& o, int64_t max_frames) {
  auto reader = MediaReader::Open(input);
  if (!reader) return reader.status();
  const VideoInfo& vi = (*reader)->info();
  VideoInfo live = vi;  // as LiveSession opens its encoder
  live.tb_num = 1;
  live.tb_den = 90000;
  EncoderOptions no_cuts = o;
  no_cuts.fast_cuts = false;
  struct Side {
    EncoderPathCost c;
    std::unique_ptr<VideoEncoder> enc;  // null: FFmpeg's
    AVCodecContext* av = nullptr;
    EncoderInput input;
    bool rtp_pts = false;
    std::unique_ptr<VideoDecoder> dec;
    QualityTally q;
    double cpu = 0;
  };
  std::vector<Side> sides(4);
  const char* names[4] = {"ffmpeg (the file writer's)", "live, as a session (90 kHz, RTP timestamps)",
                          "live, the file's time base", "live, 90 kHz, fast_cuts off"};
  auto free_all = [&] {
    for (Side& s : sides)
      if (s.av) avcodec_free_context(&s.av);
  };
  for (size_t i = 0; i < sides.size(); ++i) {
    Side& s = sides[i];
    s.c.path = names[i];
    if (i == 0) {
      auto e = OpenVideoEncoder(codec, vi, o, false);
      if (!e) return free_all(), e.status();
      s.av = *e;
    } else {
      auto e = VideoEncoder::Open(codec, i == 2 ? vi : live, i == 3 ? no_cuts : o);
      if (!e) return free_all(), e.status();
      s.enc = std::move(*e);
      s.rtp_pts = i != 2;
    }
    auto d = VideoDecoder::Open(codec, 1);
    if (!d) return free_all(), d.status();
    s.dec = std::move(*d);
  }
  AVFrame* a = av_frame_alloc();
  AVPacket* pkt = av_packet_alloc();
  Status st;
  std::vector<EncodedFrame> packets;
  std::vector<FramePtr> decoded;
  const double fps = vi.fps > 0 ? vi.fps : 30.0;
  for (int64_t n = 0; st.ok(); ++n) {
    if (max_frames > 0 && n >= max_frames) break;
    ReadItem item = (*reader)->Next();
    if (std::holds_alternative<EndOfStream>(item)) break;
    auto* fp = std::get_if<FramePtr>(&item);
    if (!fp) continue;  // audio
    Frame& f = **fp;
    const int64_t file_pts = f.pts;
    for (size_t k = 0; k < sides.size() && st.ok(); ++k) {
      Side& s = sides[(size_t(n) + k) % sides.size()];  // who goes first rotates
      packets.clear();
      f.pts = s.rtp_pts ? int64_t(std::llround(double(n) * 90000.0 / fps)) : file_pts;
      const double t0 = ThreadCpuMs();
      if (s.enc) {
        st = s.enc->Encode(f, n == 0, packets);
      } else {
        st = s.input.Fill(f, a);
        if (st.ok() && avcodec_send_frame(s.av, a) < 0) st = Status::Error("FFmpeg's encoder rejected a frame");
        av_frame_unref(a);
        while (st.ok() && avcodec_receive_packet(s.av, pkt) == 0) {
          EncodedFrame ef;
          ef.data.assign(pkt->data, pkt->data + pkt->size);
          ef.pts = pkt->pts;
          packets.push_back(std::move(ef));
          av_packet_unref(pkt);
        }
      }
      s.cpu += ThreadCpuMs() - t0;
      if (st.ok()) st = s.q.Add(f, packets, *s.dec, decoded);
      ++s.c.frames;
    }
    f.pts = file_pts;
  }
  av_packet_free(&pkt);
  av_frame_free(&a);
  free_all();
  if (!st.ok()) return st;
  if (!(*reader)->end_status().ok()) return (*reader)->end_status();
  std::vector<EncoderPathCost> out;
  for (Side& s : sides) {
    if (s.c.frames == 0) return Status::Error(input + " has no video frames");
    s.c.encode_cpu_ms = s.cpu / double(s.c.frames);
    s.c.psnr_y = s.q.psnr_y();
    s.c.kbps = s.q.kbps(s.c.frames, vi);
    out.push_back(s.c);
  }
  return out;
}

}  // namespace veil
