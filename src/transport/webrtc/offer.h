// WHIP/WHEP SDP offers: parsed and checked before any WebRTC object exists,
// so a malformed or unsupported offer is a clear 4xx and costs nothing.
// Also the answer fix-ups veil applies (start bitrate for Chromium).
#pragma once
#include <string>
#include <vector>

#include "core/status.h"
#include "media/video_codec.h"

namespace veil {

struct OfferCodec {
  int pt = -1;
  std::string name;  // upper case: VP8, H264, OPUS
  int clock_rate = 0;
  std::string fmtp;  // parameters after "a=fmtp:PT ", "" when none
};

struct OfferMedia {
  std::string kind;       // video | audio
  std::string mid;
  std::string direction;  // sendrecv | sendonly | recvonly | inactive (as offered)
  std::vector<OfferCodec> codecs;
  int twcc_ext = 0;       // extmap id of transport-wide-cc, 0 when not offered
  bool nack = false, pli = false, transport_cc = false;  // rtcp-fb offered for the chosen codec
  OfferCodec chosen;      // the codec veil will use (pt -1: none usable)
  VideoCodec video_codec = VideoCodec::kVp8;  // video: what `chosen` is
};

struct Offer {
  std::vector<OfferMedia> media;
  std::string sdp;  // the offer with every candidate veil will not use removed
  int candidates_kept = 0, candidates_dropped = 0;
  const OfferMedia* video() const;
  const OfferMedia* audio() const;
};

enum class OfferRole { kPublish, kView };  // WHIP: the peer sends video; WHEP: the peer receives it

struct OfferRules {
  OfferRole role = OfferRole::kPublish;
  // Video codecs acceptable; the offer's own order picks among them (the
  // offerer's preference). A viewer's offer must include the session's codec:
  // give just that one.
  std::vector<VideoCodec> video_codecs{VideoCodec::kVp8, VideoCodec::kH264};
  // Candidates kept: UDP only, 8 at most; with loopback_only, 127.0.0.1 only, else unicast
  // IPv4 addresses that are not loopback, link-local, multicast or broadcast, on ports >= 1024.
  bool loopback_only = true;
};

// Parses and validates `text`. Errors name what is wrong: StatusCode::kUnsupported when the
// offer is well formed but offers no codec veil can use, kInvalidArgument for anything else.
Result<Offer> ParseOffer(const std::string& text, const OfferRules& rules);

// Adds x-google-start-bitrate (kbit/s) to the fmtp of `pt` in the answer's
// video section (Chromium otherwise starts a publisher at 320x180).
std::string WithStartBitrate(const std::string& answer, int pt, int kbps);

}  // namespace veil
