// libFuzzer target: a WHIP/WHEP SDP offer from the network -> ParseOffer (every role and
// candidate rule) -> the caps built from what it chose -> the answer's start-bitrate edit.
#include <gst/gst.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "transport/gst_util.h"
#include "transport/webrtc/offer.h"
#include "transport/webrtc/webrtc_peer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool init = (veil::EnsureGstInit(), true);
  (void)init;
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (const auto role : {veil::OfferRole::kPublish, veil::OfferRole::kView})
    for (const bool loopback : {true, false}) {
      veil::OfferRules rules;
      rules.role = role;
      rules.loopback_only = loopback;
      auto o = veil::ParseOffer(text, rules);
      if (!o) {
        // A refusal says which: malformed (400) or no usable codec (422), never an unknown error.
        const veil::StatusCode c = o.status().code();
        if (c != veil::StatusCode::kInvalidArgument && c != veil::StatusCode::kUnsupported) __builtin_trap();
        continue;
      }
      for (const veil::OfferMedia* m : {o->video(), o->audio()})
        if (m) gst_caps_unref(veil::CodecCaps(*m, 1234));
      if (o->video()) (void)veil::WithStartBitrate(o->sdp, o->video()->chosen.pt, 2500);
    }
  return 0;
}
