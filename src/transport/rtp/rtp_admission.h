// Which RTP packets of a plain RTP ingest reach the jitter buffer, and under which
// sequence number and timestamp: SSRC latching and following a publisher that restarts.
// Pure logic (no GStreamer, no clock of its own), so it can be tested and fuzzed packet by
// packet; RtpReceiver runs it on udpsrc's streaming thread for every datagram.
//
// - Packets of another payload type are dropped (counted as foreign).
// - One stream at a time: the first SSRC latches; a stream is established after 8 packets
//   in sequence. Until then any other SSRC takes over at once (garbage that came first never
//   holds the latch); afterwards only once the established one has been silent for 250 ms (a
//   publisher that restarted with a new SSRC). Other SSRCs are dropped, so stray or forged
//   packets cannot move the jitter buffer's sequence and timestamp bases. Once a stream has
//   been established, an SSRC that takes over is renumbered to go on from the last packet
//   out, as a restart below: the jitter buffer took a new publisher's random sequence base
//   for late packets of the old stream now and then, and delivered none of its frames
//   (transport_test, 1 run in 3). Before that (garbage first) it keeps its own bases.
// - The latched SSRC from a new sequence and timestamp base (ffmpeg -ssrc, an encoder
//   restart) is renumbered to go on from the old stream, timestamps advanced by the pause
//   (as an SFU does): the jitter buffer would otherwise take its packets for late ones of the
//   old stream. Taken at once after a pause (>= 100 ms), else when the next packet continues
//   the new sequence.
#pragma once
#include <atomic>
#include <cstdint>

namespace veil {

class RtpAdmission {
 public:
  explicit RtpAdmission(int payload_type) : payload_type_(payload_type) {}

  struct Verdict {
    bool pass = false;
    uint16_t seq = 0;  // what the packet carries on (rewritten after a same-SSRC restart)
    uint32_t ts = 0;
    bool rewritten = false;  // seq/ts differ from the packet's
  };
  // One packet's header fields; now_ms: its arrival on a monotonic clock.
  Verdict Admit(int payload_type, uint32_t ssrc, uint16_t seq, uint32_t ts, double now_ms);

  uint64_t foreign() const { return foreign_.load(std::memory_order_relaxed); }
  uint64_t ssrc_changes() const { return ssrc_changes_.load(std::memory_order_relaxed); }
  uint64_t restarts() const { return restarts_.load(std::memory_order_relaxed); }

 private:
  // The packet (seq, ts) and those after it go on from the last packet out: sequence + 1,
  // timestamp advanced by the pause since then at 90 kHz, at least 1 tick (a restart, or another
  // SSRC), so the stream's clock keeps to the wall clock whatever takes over how often.
  void ContinueFromLastOut(uint16_t seq, uint32_t ts, double now);
  Verdict Drop() {
    foreign_.fetch_add(1, std::memory_order_relaxed);
    return {};
  }
  int payload_type_;
  bool latched_ = false, established_ = false, ever_established_ = false;
  uint32_t ssrc_ = 0;
  uint16_t last_seq_ = 0;
  uint32_t last_ts_ = 0;
  int run_ = 0;  // packets in sequence since the latch
  double last_ms_ = 0;
  uint16_t seq_offset_ = 0, last_out_seq_ = 0;
  uint32_t ts_offset_ = 0, last_out_ts_ = 0;
  bool candidate_ = false;
  uint16_t candidate_seq_ = 0;
  // Read by stats from other threads.
  std::atomic<uint64_t> foreign_{0}, ssrc_changes_{0}, restarts_{0};
};

}  // namespace veil
