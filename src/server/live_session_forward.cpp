// A live session's egress (server/live_session.h): bypass forwarding of the publisher's own
// frames, decided on the decoding thread (and, while it forwards, done on the ingest thread as
// each frame arrives: ForwardOnArrival), and Emit, which both the decoding thread (forwarded
// frames) and the worker (encoded frames) use to send a frame and keep its picture.
#include "core/clock.h"
#include "server/live_session.h"

namespace veil {

bool LiveSession::AskPublisherForKeyframe() {
  // A WebRTC publisher is asked with RTCP PLI, at most once a second. Plain RTP ingest has no
  // back channel: its publisher's next keyframe comes on its own schedule.
  WhipIngest* w = whip_raw_.load();
  if (!w) return false;
  const double now = NowMs();
  double last = last_publisher_key_ms_.load();
  if (now - last <= 1000 || !last_publisher_key_ms_.compare_exchange_strong(last, now)) return false;
  w->RequestKeyframe();
  ++publisher_key_requests_;
  return true;
}

bool LiveSession::MaybeForward(const EncodedFrame& in, Decoded& item) {
  if (!cfg_.bypass_forward || mode_.load() != Mode::kBypass) {
    forwarding_ = forwarding_now_ = false;
    return false;
  }
  if (!forwarding_ && in.keyframe) {
    forwarding_ = true;  // the viewers can decode from here
  } else if (forwarding_ && !in.keyframe && bridge_wanted_.load()) {
    forwarding_ = false;  // a new viewer: veil's keyframe now, the publisher's own from its next
  }
  forwarding_now_ = forwarding_;
  if (!forwarding_) {
    AskPublisherForKeyframe();
    return false;
  }
  if (!Emit(item, &in, 1, NowMs(), nullptr)) {
    forwarding_ = forwarding_now_ = false;  // the mode changed since: the privacy stage takes it
    return false;
  }
  Forwarded(in.keyframe);
  return true;
}

void LiveSession::Forwarded(bool keyframe) {
  ++forwarded_;
  m_forwarded_->Inc();
  if (keyframe) {
    bridge_wanted_ = false;  // this one serves every viewer
    want_keyframe_ = false;
  } else if (want_keyframe_.load()) {
    AskPublisherForKeyframe();  // a viewer lost frames: it waits for the publisher's next keyframe
  }
}

uint64_t LiveSession::ForwardOnArrival(const EncodedFrame& f, uint32_t rtp_ts, uint64_t seq, double arrival_ms) {
  if (!cfg_.bypass_forward || !forwarding_now_.load()) return 0;
  if (!f.keyframe && bridge_wanted_.load()) return 0;  // a new viewer: the decode starts the bridge
  uint64_t out_seq = 0;
  {
    MutexLock emit(emit_mu_);
    if (mode_.load() != Mode::kBypass) return 0;  // switched: the privacy stage takes it
    last_forwarded_seq_ = seq;
    {
      MutexLock lk(mu_);
      arrivals_[arrival_next_] = {rtp_ts, arrival_ms, NowMs()};
      arrival_next_ = (arrival_next_ + 1) % 64;
    }
    (void)sender_->Send(f, rtp_ts);
    out_seq = ++frames_out_;
  }
  m_out_->Inc();
  Forwarded(f.keyframe);
  return out_seq;
}

bool LiveSession::Emit(Decoded& item, const EncodedFrame* frames, size_t n, double encoded_ms,
                       const FrameReport* rep) {
  const bool forwarded = rep == nullptr;
  MutexLock emit(emit_mu_);
  if (forwarded && mode_.load() != Mode::kBypass) return false;  // SetMode came first: not sent
  if (forwarded) last_forwarded_seq_ = item.ingest_seq;
  const bool superseded = !forwarded && item.ingest_seq < last_forwarded_seq_;  // queued before a forwarded run began
  {
    MutexLock lk(mu_);
    if (!forwarded) privacy_counters_ = privacy_->counters();  // the worker's thread: privacy_ is its own
    if (superseded) return false;
    arrivals_[arrival_next_] = {item.rtp_ts, item.arrival_ms, encoded_ms};
    arrival_next_ = (arrival_next_ + 1) % 64;
  }
  // A forwarded frame keeps the publisher's timestamp; an encoded one carries it as its pts.
  for (size_t i = 0; i < n; ++i) (void)sender_->Send(frames[i], forwarded ? item.rtp_ts : uint32_t(frames[i].pts));
  const uint64_t seq = ++frames_out_;
  m_out_->Inc();
  KeepOutput(std::move(item.frame), seq, forwarded ? Mode::kBypass : privacy_->mode(), rep && rep->fail_closed);
  return true;
}

void LiveSession::KeepOutput(FramePtr frame, uint64_t seq, Mode mode, bool fail_closed) {
  // The size first: a count that includes a change comes with its new size (stats(), events).
  const bool resized = out_w_ != 0 && (frame->width != out_w_ || frame->height != out_h_);
  out_w_ = frame->width;
  out_h_ = frame->height;
  if (resized) ++resolution_changes_;
  // Keep a reference for snapshots (no copy, no conversion on the frame path); the frame it
  // replaces goes back to its pool outside the lock. A picture decoded after a newer one was
  // kept (forwarded on arrival, decoded later) does not replace it.
  FramePtr previous;
  {
    MutexLock lk(out_mu_);
    if (seq < last_out_.seq) return;
    previous = std::move(last_out_.frame);
    last_out_ = {std::move(frame), seq, mode, fail_closed, NowMs()};
  }
}

}  // namespace veil
