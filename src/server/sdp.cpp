#include "server/sdp.h"

#include <cstdint>
#include <functional>

namespace veil {

std::string MakeSdp(const SdpStreams& s) {
  const std::string pt = std::to_string(kVideoPayloadType);
  const uint64_t sess = std::hash<std::string>{}(s.name + s.host) % 1000000000ull;
  std::string o;
  o += "v=0\r\n";
  o += "o=- " + std::to_string(sess) + " 1 IN IP4 " + s.host + "\r\n";
  o += "s=" + s.name + "\r\n";
  o += "c=IN IP4 " + s.host + "\r\n";
  o += "t=0 0\r\n";
  o += "m=video " + std::to_string(s.video_port) + " RTP/AVP " + pt + "\r\n";
  const VideoCodecInfo& vc = Info(s.codec);
  o += "a=rtpmap:" + pt + " " + vc.sdp_name + "/" + std::to_string(vc.clock_rate) + "\r\n";
  if (*vc.sdp_fmtp) o += "a=fmtp:" + pt + " " + vc.sdp_fmtp + "\r\n";
  if (!s.direction.empty()) o += "a=" + s.direction + "\r\n";
  if (s.audio_port > 0) {
    const std::string apt = std::to_string(kOpusPayloadType);
    o += "m=audio " + std::to_string(s.audio_port) + " RTP/AVP " + apt + "\r\n";
    o += "a=rtpmap:" + apt + " opus/48000/2\r\n";
    if (!s.direction.empty()) o += "a=" + s.direction + "\r\n";
  }
  return o;
}

}  // namespace veil
