// The live video codecs, in one table: what the API and config call each one, its SDP encoding
// name, its RTP (de)payloading in GStreamer, its FFmpeg decoder and its RTP clock rate. A codec
// named by a client (API JSON, a WHIP offer, a flag) is parsed into VideoCodec once, where it
// enters; everything behind that takes the enum and asks this table.
// (Offline files keep codec names: they also allow rawvideo and pick a container by extension.)
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace veil {

enum class VideoCodec { kVp8, kH264 };

struct VideoCodecInfo {
  VideoCodec codec;
  const char* name;      // "vp8": the API, config, metrics and logs
  const char* sdp_name;  // "VP8": a=rtpmap and GStreamer's encoding-name
  int clock_rate;        // RTP clock, Hz
  const char* sdp_fmtp;  // a=fmtp parameters veil offers and sends ("" = none)
  // The elementary stream as GStreamer carries it between the (de)payloader and veil: one
  // access unit per buffer (H.264 in Annex B with in-band parameter sets).
  const char* stream_caps;
  const char* depayloader;  // RTP -> stream_caps (an element name; add properties after it)
  // What turns stream_caps into what the payloader takes ("" when it takes it as it is).
  // H.264: h264parse puts the parameter sets before each IDR access unit; rtph264pay's own
  // config-interval=-1 would put them before every IDR *slice*, splitting a multi-slice picture
  // (measured: a 2-slice 720p stream decoded 32-49 grey levels off the source; 0 with this).
  const char* pay_prepare;
  const char* payloader;  // stream -> RTP, with its fixed properties
  // What follows the depayloader on a WebRTC ingest (the depayloader there asks for keyframes
  // itself and may hand out AVC): "" when its output already is stream_caps.
  const char* depay_finish;
  int av_codec_id;  // FFmpeg's AVCodecID (an int: FFmpeg's headers stay out of this one)
};

// Every live codec, in the order veil prefers them in an SDP answer.
const std::vector<VideoCodecInfo>& VideoCodecs();
const VideoCodecInfo& Info(VideoCodec c);
inline const char* Name(VideoCodec c) { return Info(c).name; }
// "vp8" | "h264" (as the API and config spell them); an error names the choices.
Result<VideoCodec> ParseVideoCodec(std::string_view name);
// An SDP encoding name ("VP8", "h264": case-insensitive), or none for a codec veil does not take.
std::optional<VideoCodec> VideoCodecFromSdp(std::string_view encoding_name);
// "vp8 or h264": for messages.
std::string VideoCodecChoices();

}  // namespace veil
