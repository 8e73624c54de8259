// Internal to src/transport: GStreamer set-up and ownership helpers.
#pragma once
#include <gst/gst.h>

#include <cstdint>
#include <string>

#include "core/status.h"

namespace veil {

// Initializes GStreamer once per process (thread-safe).
void EnsureGstInit();

// An rtpjitterbuffer's counters (its "stats" property): packets pushed on, lost (given up on at
// their play-out time), late (arrived after it), retransmissions asked for (NACK) and the
// packets one filled in time, RFC 3550 inter-arrival jitter.
struct JitterBufferCounters {
  uint64_t packets = 0, lost = 0, late = 0, rtx_requests = 0, rtx_recovered = 0;
  double jitter_ms = 0;
};
JitterBufferCounters ReadJitterBuffer(GstElement* jitterbuffer);

// Parses a gst-launch style description; owns the pipeline.
class GstPipeline {
 public:
  static Result<GstPipeline> Parse(const std::string& description);
  GstPipeline() = default;
  GstPipeline(GstPipeline&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  GstPipeline& operator=(GstPipeline&& o) noexcept;
  ~GstPipeline();
  GstElement* get() const { return p_; }
  // The named element (a new reference, released by the returned holder's caller via gst_object_unref).
  GstElement* element(const char* name) const { return gst_bin_get_by_name(GST_BIN(p_), name); }
  // Sets PLAYING (without waiting for preroll); reports the bus error if the change fails.
  Status Play();
  void Stop();
  // The first error posted on the bus since the last call ("" when none). Never blocks.
  std::string PollError();

 private:
  explicit GstPipeline(GstElement* p) : p_(p) {}
  GstElement* p_ = nullptr;
};

}  // namespace veil
