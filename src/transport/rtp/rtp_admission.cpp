#include "transport/rtp/rtp_admission.h"

#include <algorithm>
#include <cmath>

namespace veil {
namespace {
// A packet of the latched SSRC that cannot belong to the stream so far: its sequence number
// is far outside loss and reordering (more than 100 behind or 3000 ahead), or its timestamp
// is more than 5 s away from where the pause since the last packet would put it.
bool Discontinuous(uint16_t seq, uint32_t ts, double now_ms, uint16_t last_seq, uint32_t last_ts, double last_ms) {
  const int d_seq = int16_t(uint16_t(seq - last_seq));
  if (d_seq < -100 || d_seq > 3000) return true;
  const double expected = (now_ms - last_ms) * 90.0;  // 90 kHz video clock
  const double d_ts = double(int32_t(ts - last_ts));
  return std::abs(d_ts - expected) > 5 * 90000.0;
}
}  // namespace

void RtpAdmission::ContinueFromLastOut(uint16_t seq, uint32_t ts, double now) {
  seq_offset_ = uint16_t(last_out_seq_ + 1 - seq);
  // The pause at 90 kHz, at least one tick: not a frame (3000), which let a burst of one-packet
  // garbage SSRCs, each taking over, carry the clock 42 s ahead in 2 s (transport_test).
  const double pause_ticks = std::clamp((now - last_ms_) * 90.0, 1.0, 4e9);
  ts_offset_ = last_out_ts_ + uint32_t(pause_ticks) - ts;
  candidate_ = false;
}

RtpAdmission::Verdict RtpAdmission::Admit(int pt, uint32_t ssrc, uint16_t seq, uint32_t ts, double now) {
  if (pt != payload_type_) return Drop();
  if (!latched_ || (ssrc != ssrc_ && (!established_ || now - last_ms_ > 250))) {
    if (latched_ && established_) ssrc_changes_.fetch_add(1, std::memory_order_relaxed);
    // Another SSRC takes over: it goes on from the last packet out, as a restart, once a stream
    // has been established. Before that (garbage first, a publisher's first packets) it keeps
    // its own bases, so a first publisher's timestamps pass through unchanged.
    if (latched_ && ever_established_) ContinueFromLastOut(seq, ts, now);
    latched_ = true;
    established_ = false;
    ssrc_ = ssrc;
    run_ = 1;
  } else if (ssrc != ssrc_) {
    return Drop();
  } else if (established_ && Discontinuous(seq, ts, now, last_seq_, last_ts_, last_ms_)) {
    const bool paused = now - last_ms_ >= 100;
    if (!paused && !(candidate_ && seq == uint16_t(candidate_seq_ + 1))) {
      candidate_ = true;
      candidate_seq_ = seq;
      return Drop();
    }
    ContinueFromLastOut(seq, ts, now);
    restarts_.fetch_add(1, std::memory_order_relaxed);
    established_ = false;
    run_ = 1;
  } else if (seq == uint16_t(last_seq_ + 1)) {
    if (run_ < 8 && ++run_ == 8) established_ = ever_established_ = true;
  } else if (!established_) {
    run_ = 1;
  }
  last_seq_ = seq;
  last_ts_ = ts;
  last_ms_ = now;
  Verdict v;
  v.pass = true;
  v.seq = uint16_t(seq + seq_offset_);
  v.ts = ts + ts_offset_;
  v.rewritten = seq_offset_ != 0 || ts_offset_ != 0;
  last_out_seq_ = v.seq;
  last_out_ts_ = v.ts;
  return v;
}

}  // namespace veil
