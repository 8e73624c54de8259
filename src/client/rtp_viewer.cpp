#include "client/rtp_viewer.h"

#include <cstring>
#include <vector>

#include "core/clock.h"
#include "core/thread_cpu.h"

namespace veil {
namespace {

void Le16(uint8_t* p, uint32_t v) {
  p[0] = uint8_t(v);
  p[1] = uint8_t(v >> 8);
}
void Le32(uint8_t* p, uint32_t v) {
  Le16(p, v);
  Le16(p + 2, v >> 16);
}

}  // namespace

Result<std::unique_ptr<RtpViewer>> RtpViewer::Start(const ViewerConfig& c, OnFrame on_frame, OnArrival on_arrival) {
  std::unique_ptr<RtpViewer> v(new RtpViewer());
  v->cfg_ = c;
  v->on_frame_ = std::move(on_frame);
  v->on_arrival_ = std::move(on_arrival);
  if (c.decode) {
    auto d = VideoDecoder::Open(c.codec, 1);
    if (!d) return d.status();
    v->dec_ = std::move(*d);
  }
  if (!c.record_path.empty()) {
    v->rec_ = std::fopen(c.record_path.c_str(), "wb");
    if (!v->rec_) return Status::Error("cannot write " + c.record_path + ": " + std::strerror(errno));
  }
  if (c.audio) {
    auto a = UdpSocket::Bind(c.address, 0, 1 << 20);
    if (!a) return a.status();
    v->audio_ = std::move(*a);
    v->audio_port_ = v->audio_.port();
    v->audio_thread_ = std::thread([p = v.get()] {
      NameThisThread("view-audio");
      std::vector<uint8_t> buf(2048);
      while (!p->stop_) {
        if (p->audio_.Receive(buf.data(), buf.size(), 100) > 0) {
          std::lock_guard lk(p->mu_);
          ++p->c_.audio_packets;
        }
      }
    });
  }
  RtpReceiverConfig rc;
  rc.codec = c.codec;
  rc.address = c.address;
  rc.latency_ms = c.jitter_ms;
  auto rx = RtpReceiver::Start(rc, [p = v.get()](EncodedFrame&& f, uint32_t ts) { p->OnEncoded(std::move(f), ts); });
  if (!rx) return rx.status();
  v->rx_ = std::move(*rx);
  return v;
}

RtpViewer::~RtpViewer() {
  rx_.reset();
  stop_ = true;
  if (audio_thread_.joinable()) audio_thread_.join();
  if (rec_) {
    if (cfg_.codec == VideoCodec::kVp8 && rec_started_) {  // the IVF header's frame count
      uint8_t n[4];
      Le32(n, rec_frames_);
      std::fseek(rec_, 24, SEEK_SET);
      std::fwrite(n, 1, 4, rec_);
    }
    std::fclose(rec_);
  }
}

void RtpViewer::WriteRecord(const EncodedFrame& f, uint32_t ts) {
  if (!rec_) return;
  if (cfg_.codec == VideoCodec::kH264) {
    std::fwrite(f.data.data(), 1, f.data.size(), rec_);
    return;
  }
  if (!rec_started_) {
    // IVF needs the size, found in a VP8 keyframe header: 3-byte tag, 9d 01 2a, 14-bit width and height.
    if (!f.keyframe || f.data.size() < 10 || f.data[3] != 0x9d || f.data[4] != 0x01 || f.data[5] != 0x2a) return;
    uint8_t h[32] = {'D', 'K', 'I', 'F'};
    Le16(h + 4, 0);
    Le16(h + 6, 32);
    std::memcpy(h + 8, "VP80", 4);
    Le16(h + 12, (f.data[6] | f.data[7] << 8) & 0x3fff);
    Le16(h + 14, (f.data[8] | f.data[9] << 8) & 0x3fff);
    Le32(h + 16, 90000);  // time base 1/90000: RTP timestamps
    Le32(h + 20, 1);
    std::fwrite(h, 1, 32, rec_);
    rec_first_ts_ = ts;
    rec_started_ = true;
  }
  uint8_t fh[12];
  Le32(fh, uint32_t(f.data.size()));
  const uint64_t pts = uint32_t(ts - rec_first_ts_);
  Le32(fh + 4, uint32_t(pts));
  Le32(fh + 8, uint32_t(pts >> 32));
  std::fwrite(fh, 1, 12, rec_);
  std::fwrite(f.data.data(), 1, f.data.size(), rec_);
  ++rec_frames_;
}

void RtpViewer::OnEncoded(EncodedFrame&& f, uint32_t ts) {
  const double now = NowMs();  // the frame is complete (its first packet came at f.arrival_ms)
  if (on_arrival_) on_arrival_(ts, now, f.data.size(), f.keyframe);
  {
    std::lock_guard lk(mu_);
    ++c_.frames;
    c_.keyframes += f.keyframe ? 1 : 0;
    c_.bytes += f.data.size();
    if (c_.first_ms < 0) c_.first_ms = now;
    c_.last_ms = now;
  }
  WriteRecord(f, ts);
  if (!dec_) return;
  std::vector<FramePtr> out;
  const bool ok = dec_->Decode(f.data.data(), f.data.size(), int64_t(ts), out).ok();
  {
    std::lock_guard lk(mu_);
    if (!ok) ++c_.decode_errors;
    c_.decoded += out.size();
  }
  if (on_frame_)
    for (const auto& fr : out) on_frame_(fr, uint32_t(fr->pts), now);  // the picture's own timestamp
}

ViewerCounters RtpViewer::counters() const {
  ViewerCounters c;
  {
    std::lock_guard lk(mu_);
    c = c_;
  }
  c.rtp = rx_->stats();
  return c;
}

}  // namespace veil
