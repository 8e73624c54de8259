// SDP descriptions for plain RTP sessions (RFC 4566 / RFC 3551 / RFC 7741
// VP8, RFC 6184 H.264, RFC 7587 Opus). The ingest SDP tells a publisher where
// to send; a viewer SDP can be opened by ffplay/ffmpeg/VLC/GStreamer to
// receive (e.g. ffplay -protocol_whitelist file,udp,rtp -i viewer.sdp).
#pragma once
#include <string>

#include "media/video_codec.h"
#include "transport/rtp/payload_types.h"

namespace veil {

struct SdpStreams {
  std::string name;        // s= line
  std::string host;        // c= address (numeric IPv4)
  VideoCodec codec = VideoCodec::kVp8;
  int video_port = 0;
  int audio_port = 0;      // 0: no audio line
  std::string direction;   // "recvonly" (the host receives) or "sendonly"
};
std::string MakeSdp(const SdpStreams& s);

}  // namespace veil
