#include "media/video_codec.h"

#include <cctype>

extern "C" {
#include <libavcodec/codec_id.h>
}

namespace veil {

const std::vector<VideoCodecInfo>& VideoCodecs() {
  static const std::vector<VideoCodecInfo> table = {
      {VideoCodec::kVp8, "vp8", "VP8", 90000, "", "video/x-vp8", "rtpvp8depay", "", "rtpvp8pay", "", AV_CODEC_ID_VP8},
      {VideoCodec::kH264, "h264", "H264", 90000, "packetization-mode=1", "video/x-h264,stream-format=byte-stream,alignment=au", "rtph264depay",
       "h264parse config-interval=-1 ! video/x-h264,stream-format=byte-stream,alignment=au",
       "rtph264pay config-interval=0",
       "h264parse config-interval=-1 ! video/x-h264,stream-format=byte-stream,alignment=au", AV_CODEC_ID_H264},
  };
  return table;
}

const VideoCodecInfo& Info(VideoCodec c) {
  for (const VideoCodecInfo& i : VideoCodecs())
    if (i.codec == c) return i;
  return VideoCodecs().front();  // unreachable: every enumerator has a row (video_codec_test)
}

std::string VideoCodecChoices() {
  std::string s;
  for (const VideoCodecInfo& i : VideoCodecs()) s += (s.empty() ? "" : " or ") + std::string(i.name);
  return s;
}

Result<VideoCodec> ParseVideoCodec(std::string_view name) {
  for (const VideoCodecInfo& i : VideoCodecs())
    if (name == i.name) return i.codec;
  return Status::Error(StatusCode::kInvalidArgument,
                       "codec must be " + VideoCodecChoices() + ", got '" + std::string(name.substr(0, 64)) + "'");
}

std::optional<VideoCodec> VideoCodecFromSdp(std::string_view n) {
  for (const VideoCodecInfo& i : VideoCodecs()) {
    const std::string_view want = i.sdp_name;
    if (n.size() != want.size()) continue;
    bool same = true;
    for (size_t k = 0; k < n.size() && same; ++k)
      same = std::toupper(static_cast<unsigned char>(n[k])) == static_cast<unsigned char>(want[k]);
    if (same) return i.codec;
  }
  return std::nullopt;
}

}  // namespace veil
