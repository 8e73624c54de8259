// Fan-out of packetized frames to viewers. Each viewer has its own bounded
// queue and sending thread, so a slow viewer drops frames (counted) and never
// slows the session or the other viewers. After a drop a viewer skips to the
// next keyframe (inter frames would reference what it never got) and the
// owner is told, so it can ask the encoder for one.
// A viewer whose sink cannot block (a UDP socket sending without waiting) may
// be sent to inline instead: on the publishing thread, with no queue and no
// thread to wake (that wake-up was the send stage's tail under load).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"

namespace veil {

// One encoded frame as RTP packets, shared read-only by every viewer queue.
struct RtpFrame {
  std::vector<std::vector<uint8_t>> packets;
  uint32_t rtp_ts = 0;
  bool keyframe = false;
};
using RtpFramePtr = std::shared_ptr<const RtpFrame>;

struct ViewerStats {
  uint64_t frames_sent = 0, frames_dropped = 0, packets_sent = 0, send_errors = 0;
  size_t queued = 0;
};

class Fanout {
 public:
  // Sends every packet of one frame; false when a packet could not be sent.
  using Sink = std::function<bool(const RtpFrame&)>;
  // Called on a viewer's thread (an inline viewer's: the publishing thread) after it sent a
  // frame's last packet.
  using OnSent = std::function<void(const RtpFrame&, double sent_ms)>;
  // Called when a viewer dropped frames and now waits for a keyframe.
  using OnDrop = std::function<void()>;

  Fanout(size_t queue_frames, OnSent on_sent, OnDrop on_drop);
  ~Fanout();  // stops every viewer thread
  // A new viewer starts at the next keyframe. Error when `key` exists. `inline_send`: the sink
  // runs inside Publish, on its thread, and must return at once whatever the network does.
  Status Add(const std::string& key, Sink sink, bool inline_send = false);
  bool Remove(const std::string& key);
  void Publish(const RtpFramePtr& f);
  size_t size() const;
  std::map<std::string, ViewerStats> Stats() const;
  uint64_t total_dropped() const { return dropped_total_.load(); }

 private:
  struct Viewer {
    Sink sink;
    bool inline_send = false;
    std::mutex send_mu;  // held while the sink runs: Stop waits out a send, and none starts after it
    std::mutex mu;
    std::condition_variable cv;
    std::deque<RtpFramePtr> queue;  // guarded by mu
    bool need_key = true;           // guarded by mu
    bool stop = false;              // guarded by mu
    ViewerStats stats;              // guarded by mu
    std::thread thread;
  };
  void Run(Viewer* v);
  void Deliver(Viewer& v, const RtpFrame& f);  // sends one frame, counts it, tells on_sent_
  static void Stop(Viewer& v);

  const size_t cap_;
  OnSent on_sent_;
  OnDrop on_drop_;
  mutable std::mutex mu_;
  // Shared: Publish sends to inline viewers after letting go of mu_, and a viewer removed
  // meanwhile lives until that send returns.
  std::map<std::string, std::shared_ptr<Viewer>> viewers_;  // guarded by mu_
  std::atomic<uint64_t> dropped_total_{0};
};

}  // namespace veil
