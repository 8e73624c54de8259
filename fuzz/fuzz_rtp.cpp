// libFuzzer target: datagrams as plain RTP ingest gets them -> RTP header parsing
// (GStreamer's, as RtpReceiver uses) -> RtpAdmission (SSRC latching, restart following and
// renumbering) -> the depayloader RtpReceiver runs (rtpvp8depay, or rtph264depay to
// byte-stream access units) -> veil's live VideoDecoder (size limit before allocation).
//
// Input: byte 0 picks the codec (even: VP8, odd: H.264), then records of
// [u8 milliseconds since the previous datagram][u16 big-endian length][datagram].
// Seeds: scripts/fuzz-rtp-seeds.py (ffmpeg's RTP packetizer on a generated clip).
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gst/rtp/gstrtpbuffer.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "media/codec.h"
#include "transport/gst_util.h"
#include "transport/rtp/rtp_admission.h"

namespace {

struct Chain {
  GstHarness* h = nullptr;
  std::unique_ptr<veil::VideoDecoder> dec;
};

Chain Make(bool vp8) {
  Chain c;
  c.h = vp8 ? gst_harness_new_parse("rtpvp8depay")
            : gst_harness_new_parse("rtph264depay ! capsfilter caps=video/x-h264,stream-format=byte-stream,alignment=au");
  gst_harness_set_src_caps_str(c.h, vp8 ? "application/x-rtp,media=video,clock-rate=90000,encoding-name=VP8,payload=96"
                                        : "application/x-rtp,media=video,clock-rate=90000,encoding-name=H264,payload=96");
  auto d = veil::VideoDecoder::Open(vp8 ? "vp8" : "h264", 1);
  if (!d) {
    std::fprintf(stderr, "fuzz_rtp: %s\n", d.error().c_str());
    std::abort();
  }
  c.dec = std::move(*d);
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool init = (veil::EnsureGstInit(), true);
  (void)init;
  if (size < 1) return 0;
  const bool vp8 = data[0] % 2 == 0;
  Chain c = Make(vp8);
  veil::RtpAdmission admission(96);
  double now = 1000;
  size_t pos = 1;
  std::vector<veil::FramePtr> frames;
  int64_t pts = 0;
  while (pos + 3 <= size) {
    now += data[pos];
    const size_t len = size_t(data[pos + 1]) << 8 | data[pos + 2];
    pos += 3;
    if (len > size - pos) break;
    GstBuffer* buf = gst_buffer_new_memdup(data + pos, len);
    pos += len;
    GstRTPBuffer rtp = GST_RTP_BUFFER_INIT;
    if (!gst_rtp_buffer_map(buf, GST_MAP_READ, &rtp)) {  // not RTP: RtpReceiver drops it here
      gst_buffer_unref(buf);
      continue;
    }
    const auto v = admission.Admit(gst_rtp_buffer_get_payload_type(&rtp), gst_rtp_buffer_get_ssrc(&rtp),
                                   gst_rtp_buffer_get_seq(&rtp), gst_rtp_buffer_get_timestamp(&rtp), now);
    gst_rtp_buffer_unmap(&rtp);
    if (!v.pass) {
      gst_buffer_unref(buf);
      continue;
    }
    if (v.rewritten) {
      GstRTPBuffer w = GST_RTP_BUFFER_INIT;
      if (gst_rtp_buffer_map(buf, GST_MAP_WRITE, &w)) {
        gst_rtp_buffer_set_seq(&w, v.seq);
        gst_rtp_buffer_set_timestamp(&w, v.ts);
        gst_rtp_buffer_unmap(&w);
      }
    }
    GST_BUFFER_PTS(buf) = GstClockTime(now * GST_MSECOND);
    gst_harness_push(c.h, buf);  // takes the buffer
    while (GstBuffer* out = gst_harness_try_pull(c.h)) {
      GstMapInfo m;
      if (gst_buffer_map(out, &m, GST_MAP_READ)) {
        frames.clear();
        (void)c.dec->Decode(m.data, m.size, pts++, frames);  // a corrupt frame is an error, not a crash
        gst_buffer_unmap(out, &m);
      }
      gst_buffer_unref(out);
    }
  }
  gst_harness_teardown(c.h);
  return 0;
}
