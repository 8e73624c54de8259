#include "client/rtp_publisher.h"

#include <sys/random.h>

#include <chrono>
#include <cmath>

#include "core/clock.h"
#include "core/thread_cpu.h"
#include "transport/rtp/payload_types.h"

namespace veil {
namespace {

uint32_t Random32() {
  uint32_t v = 0;
  if (getrandom(&v, sizeof v, 0) != ssize_t(sizeof v)) v = uint32_t(NowMs() * 1000);
  return v;
}

void SleepUntilMs(double t, const std::atomic<bool>& stop) {
  for (;;) {
    const double now = NowMs();
    if (now >= t || stop) return;
    std::this_thread::sleep_for(std::chrono::microseconds(int64_t(std::min(20.0, t - now) * 1000)));
  }
}

}  // namespace

Result<ClipPtr> LoadClip(const std::string& path) {
  auto d = Demuxer::Open(path);
  if (!d) return d.status();
  auto pk = (*d)->ReadAll();
  if (!pk) return Status::Error(path + ": " + pk.error());
  auto c = std::make_shared<MediaClip>();
  c->packets = std::move(*pk);
  c->info = (*d)->info();
  return ClipPtr(c);
}

Result<std::unique_ptr<RtpPublisher>> RtpPublisher::Start(ClipPtr clip, const PublisherConfig& c, OnFrameSent cb) {
  if (!clip || clip->packets.empty()) return Status::Error("nothing to send");
  if (c.seconds < 0 || c.seconds > 7 * 86400) return Status::Error("seconds must be in [0, 604800]");
  if (c.start_delay_ms < 0 || c.start_delay_ms > 60000) return Status::Error("start delay must be in [0, 60000] ms");
  if (c.start_at_ms < 0 || (c.start_at_ms > 0 && c.start_at_ms > NowMs() + 60000))
    return Status::Error("the start instant must lie within the next 60 s");
  if (!(std::abs(c.clock_ppm) <= 100000)) return Status::Error("clock offset must be within +-100000 ppm (10%)");
  std::unique_ptr<RtpPublisher> p(new RtpPublisher());
  p->clip_ = std::move(clip);
  p->cfg_ = c;
  p->cb_ = std::move(cb);
  auto codec = ParseVideoCodec(p->clip_->info.video_codec);
  if (!codec) return codec.status();
  RtpSenderConfig sc;
  sc.codec = *codec;
  sc.viewer_queue_frames = 32;
  auto tx = RtpSender::Start(sc);
  if (!tx) return tx.status();
  p->video_ = std::move(*tx);
  if (Status s = p->video_->AddViewer(c.host, c.video_port); !s) return s;
  if (c.audio_port > 0 && p->clip_->info.has_opus) {
    if (Status s = ParseEndpoint(c.host, c.audio_port, &p->audio_to_); !s) return Status::Error("audio " + s.message());
    auto sock = UdpSocket::Bind("0.0.0.0", 0);
    if (!sock) return sock.status();
    p->audio_sock_ = std::move(*sock);
  }
  p->thread_ = std::thread([q = p.get()] {
    NameThisThread("publish");
    q->Run();
  });
  return p;
}

RtpPublisher::~RtpPublisher() { Stop(); }

void RtpPublisher::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void RtpPublisher::Run() {
  const uint32_t vts0 = Random32(), ats0 = Random32(), ssrc = Random32();
  uint16_t aseq = uint16_t(Random32());
  const int64_t dur = std::max<int64_t>(clip_->info.duration_us, 1000);
  SleepUntilMs(cfg_.start_at_ms > 0 ? cfg_.start_at_ms : NowMs() + cfg_.start_delay_ms, stop_);
  // An instant asked for anchors the schedule: a late wake delays the first frame, not the phase.
  const double t0 = cfg_.start_at_ms > 0 ? cfg_.start_at_ms : NowMs();
  const double end = cfg_.seconds > 0 ? t0 + cfg_.seconds * 1000 : 1e300;
  for (uint64_t loop = 0; !stop_; ++loop) {
    const int64_t base = int64_t(loop) * dur;
    for (const DemuxedPacket& pk : clip_->packets) {
      const int64_t t_us = base + pk.pts_us;
      const double due = t0 + double(t_us) / 1000.0 / (1.0 + cfg_.clock_ppm * 1e-6);
      if (due >= end) {
        finished_ = true;
        return;
      }
      SleepUntilMs(due, stop_);
      if (stop_) return;
      if (!pk.audio) {
        EncodedFrame f;
        f.data = pk.data;
        f.keyframe = pk.keyframe;
        const uint32_t ts = vts0 + uint32_t(t_us * 9 / 100);  // 90 kHz
        if (cb_) cb_(ts, NowMs());  // before the send: see OnFrameSent
        if (video_->Send(f, ts).ok()) {
          ++frames_;
        } else {
          ++errors_;
        }
      } else if (audio_sock_.fd() >= 0 && pk.data.size() <= 1400) {
        uint8_t buf[1412];
        const uint32_t ts = ats0 + uint32_t(t_us * 48 / 1000);  // 48 kHz
        buf[0] = 0x80;
        buf[1] = uint8_t(kOpusPayloadType);
        buf[2] = uint8_t(aseq >> 8);
        buf[3] = uint8_t(aseq);
        ++aseq;
        for (int i = 0; i < 4; ++i) buf[4 + i] = uint8_t(ts >> (24 - 8 * i));
        for (int i = 0; i < 4; ++i) buf[8 + i] = uint8_t(ssrc >> (24 - 8 * i));
        std::copy(pk.data.begin(), pk.data.end(), buf + 12);
        if (audio_sock_.SendTo(audio_to_, buf, 12 + pk.data.size())) ++audio_packets_;
        else ++errors_;
      }
    }
    ++loops_;
    if (!cfg_.loop) break;
  }
  finished_ = true;
}

PublisherStats RtpPublisher::stats() const {
  PublisherStats s;
  s.frames = frames_;
  s.audio_packets = audio_packets_;
  s.loops = loops_;
  s.send_errors = errors_;
  s.finished = finished_;
  return s;
}

}  // namespace veil
