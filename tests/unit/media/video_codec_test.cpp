// The live codec table: every codec has one row, names parse back to it, and the rows say what
// the RFCs and GStreamer say (RFC 7741 VP8, RFC 6184 H.264: 90 kHz; element names of gst-plugins-good).
#include <gtest/gtest.h>

#include <gst/gst.h>

#include <set>
#include <string>

extern "C" {
#include <libavcodec/avcodec.h>
}

#include "media/video_codec.h"

namespace veil {
namespace {

TEST(VideoCodecTable, EveryCodecHasOneRowAndItsNamesParseBack) {
  std::set<std::string> names;
  for (VideoCodec c : {VideoCodec::kVp8, VideoCodec::kH264}) {
    const VideoCodecInfo& i = Info(c);
    EXPECT_EQ(i.codec, c);
    EXPECT_TRUE(names.insert(i.name).second) << i.name;
    auto parsed = ParseVideoCodec(i.name);
    ASSERT_TRUE(parsed.ok()) << parsed.error();
    EXPECT_EQ(*parsed, c);
    EXPECT_EQ(VideoCodecFromSdp(i.sdp_name), c);
    EXPECT_EQ(i.clock_rate, 90000);
  }
  EXPECT_EQ(VideoCodecs().size(), names.size());
  EXPECT_STREQ(Name(VideoCodec::kVp8), "vp8");
  EXPECT_STREQ(Info(VideoCodec::kH264).sdp_name, "H264");
  EXPECT_EQ(VideoCodecFromSdp("h264"), VideoCodec::kH264);  // SDP encoding names are case-insensitive
  EXPECT_EQ(VideoCodecFromSdp("Vp8"), VideoCodec::kVp8);
  EXPECT_EQ(VideoCodecChoices(), "vp8 or h264");
}

TEST(VideoCodecTable, UnknownNamesAreClearErrors) {
  for (const char* bad : {"", "VP8", "vp9", "mjpeg", "h265", "vp8 "}) {
    auto r = ParseVideoCodec(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.error().find("vp8 or h264"), std::string::npos) << r.error();
  }
  EXPECT_FALSE(VideoCodecFromSdp("VP9").has_value());
  EXPECT_FALSE(VideoCodecFromSdp("H2640").has_value());
  EXPECT_FALSE(VideoCodecFromSdp("").has_value());
}

TEST(VideoCodecTable, ItsElementsAndDecodersExist) {
  gst_init(nullptr, nullptr);
  for (const VideoCodecInfo& i : VideoCodecs()) {
    for (const char* chain : {i.depayloader, i.payloader}) {
      const std::string element = std::string(chain).substr(0, std::string(chain).find(' '));
      GstElementFactory* f = gst_element_factory_find(element.c_str());
      EXPECT_NE(f, nullptr) << i.name << ": " << element;
      if (f) gst_object_unref(f);
    }
    GstCaps* caps = gst_caps_from_string(i.stream_caps);
    EXPECT_NE(caps, nullptr) << i.stream_caps;
    if (caps) gst_caps_unref(caps);
    const AVCodec* dec = avcodec_find_decoder(AVCodecID(i.av_codec_id));
    ASSERT_NE(dec, nullptr) << i.name;
    EXPECT_EQ(std::string(dec->name), i.name) << "FFmpeg's decoder name";
  }
}

}  // namespace
}  // namespace veil
