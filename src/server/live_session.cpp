#include "server/live_session.h"

#include "core/clock.h"

namespace veil {

LiveSession::LiveSession(const std::string& id, const LiveSessionConfig& c)
    : id_(id), cfg_(c), queue_(c.queue_frames) {}

Result<std::unique_ptr<LiveSession>> LiveSession::Start(const std::string& id, const LiveSessionConfig& c,
                                                        InferenceScheduler* scheduler, uint64_t scheduler_session,
                                                        MetricsRegistry* metrics) {
  if (!(c.budget_ms > 0 && c.budget_ms <= 10000)) return Status::Error("session budget must be in (0, 10000] ms");
  if (c.queue_frames < 1 || c.queue_frames > 64) return Status::Error("session queue must hold 1..64 frames");
  if (Status s = Validate(c.privacy); !s) return s;
  if (!metrics) return Status::Error("a metrics registry is required");
  std::unique_ptr<LiveSession> s(new LiveSession(id, c));
  s->scheduler_ = scheduler;
  s->scheduler_session_ = scheduler_session;
  s->metrics_ = metrics;
  s->mode_.store(c.privacy.mode);
  const Labels l = {{"session", id}};
  auto stage = [&](const char* name) {
    Labels ls = l;
    ls.emplace_back("stage", name);
    return &metrics->GetHistogram("veil_session_stage_ms", "Per-frame time of each live stage, ms", LatencyBucketsMs(), ls);
  };
  s->m_queue_ = stage("queue_wait");
  s->m_decode_ = stage("decode");
  s->m_privacy_ = stage("privacy");
  s->m_encode_ = stage("encode");
  s->m_send_ = stage("send");
  s->m_total_ = &metrics->GetHistogram("veil_session_processing_ms",
                                       "Server processing latency: frame received complete -> sent, ms",
                                       LatencyBucketsMs(), l);
  s->m_stale_ = &metrics->GetCounter("veil_session_stale_drops_total", "Frames dropped as stale before processing", l);
  s->m_fail_closed_ = &metrics->GetCounter("veil_session_fail_closed_frames_total",
                                           "Frames sent as a whole-frame mosaic for lack of a fresh detection", l);
  s->m_in_ = &metrics->GetCounter("veil_session_frames_received_total", "Frames received and decoded", l);
  s->m_out_ = &metrics->GetCounter("veil_session_frames_sent_total", "Frames sent to viewers", l);

  auto dec = VideoDecoder::Open(c.codec, c.decode_threads);
  if (!dec) return dec.status();
  s->decoder_ = std::move(*dec);
  s->privacy_ = std::make_unique<PrivacyStage>(c.privacy, scheduler, scheduler_session);
  RtpSenderConfig sc;
  sc.codec = c.codec;
  auto tx = RtpSender::Start(sc);
  if (!tx) return tx.status();
  s->sender_ = std::move(*tx);
  s->worker_ = std::thread([p = s.get()] { p->Work(); });
  RtpReceiverConfig rc;
  rc.codec = c.codec;
  rc.latency_ms = c.jitter_ms;
  auto rx = RtpReceiver::Start(rc, [p = s.get()](EncodedFrame&& f, uint32_t ts) { p->OnEncoded(std::move(f), ts); });
  if (!rx) return rx.status();  // the destructor stops the worker
  s->receiver_ = std::move(*rx);
  return s;
}

LiveSession::~LiveSession() {
  receiver_.reset();  // no more frames from the network
  stop_ = true;
  queue_.Close();
  if (worker_.joinable()) worker_.join();
  sender_.reset();
  metrics_->RemoveSeriesWithLabel("session", id_);
}

void LiveSession::OnEncoded(EncodedFrame&& f, uint32_t rtp_ts) {
  last_packet_ms_.store(NowMs());
  const double t0 = NowMs();
  std::vector<FramePtr> out;
  if (!decoder_->Decode(f.data.data(), f.data.size(), int64_t(rtp_ts), out).ok()) ++decode_errors_;
  const double t1 = NowMs();
  for (auto& fr : out) {
    m_decode_->Observe(t1 - t0);
    ++frames_in_;
    m_in_->Inc();
    if (queue_.Push({std::move(fr), rtp_ts, t1})) {  // evicted: the worker fell behind
      ++stale_;
      m_stale_->Inc();
    }
  }
}

void LiveSession::Work() {
  while (!stop_) {
    auto item = queue_.Pop(std::chrono::milliseconds(100));
    if (!item) continue;
    const double start = NowMs();
    m_queue_->Observe(start - item->decoded_ms);
    if (start - item->decoded_ms > cfg_.budget_ms) {  // it could only leave late: drop before any work
      ++stale_;
      m_stale_->Inc();
      continue;
    }
    Frame& f = *item->frame;
    f.index = int64_t(frames_in_.load());  // arrival order drives cadence and result age
    privacy_->set_mode(mode_.load());
    const FrameReport rep = privacy_->Process(f);
    if (rep.fail_closed) m_fail_closed_->Inc();
    const double t1 = NowMs();
    m_privacy_->Observe(t1 - start);
    if (!encoder_) {
      VideoInfo vi;
      vi.width = f.width;
      vi.height = f.height;
      vi.tb_num = 1;
      vi.tb_den = 90000;
      vi.fps = cfg_.privacy.fps;
      auto e = VideoEncoder::Open(cfg_.codec, vi, cfg_.encoder);
      if (!e) continue;  // cannot happen for a decoded frame size; the frame is not sent
      encoder_ = std::move(*e);
    }
    f.pts = item->rtp_ts;
    std::vector<EncodedFrame> packets;
    const bool key = want_keyframe_.exchange(false);
    if (!encoder_->Encode(f, key, packets).ok()) continue;
    const double t2 = NowMs();
    m_encode_->Observe(t2 - t1);
    for (const auto& p : packets) sender_->Send(p, uint32_t(p.pts));
    const double t3 = NowMs();
    m_send_->Observe(t3 - t2);
    m_total_->Observe(t3 - item->decoded_ms);
    ++frames_out_;
    m_out_->Inc();
    std::lock_guard lk(privacy_mu_);
    privacy_counters_ = privacy_->counters();
  }
}

Status LiveSession::AddViewer(const std::string& host, int port) {
  if (Status s = sender_->AddViewer(host, port); !s) return s;
  want_keyframe_ = true;
  return Status::Ok();
}

void LiveSession::RemoveViewer(const std::string& host, int port) { sender_->RemoveViewer(host, port); }

LiveSessionStats LiveSession::stats() const {
  LiveSessionStats s;
  s.frames_in = frames_in_;
  s.frames_out = frames_out_;
  s.stale_drops = stale_;
  s.decode_errors = decode_errors_;
  s.viewers = sender_->viewers();
  s.rtp = receiver_->stats();
  const double last = last_packet_ms_.load();
  s.last_packet_age_ms = last < 0 ? -1 : NowMs() - last;
  std::lock_guard lk(privacy_mu_);
  s.privacy = privacy_counters_;
  return s;
}

}  // namespace veil
