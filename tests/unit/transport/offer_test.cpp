// WHIP/WHEP offer checks: what veil takes from a browser's offer, which
// candidates it keeps, and the clear errors for malformed or unusable offers.
#include "transport/webrtc/offer.h"

#include <gtest/gtest.h>

#include <gst/gst.h>

#include <string>

#include "transport/gst_util.h"
#include "transport/webrtc/webrtc_peer.h"

namespace veil {
namespace {

// A publish offer shaped like Chromium's (audio first, then video with
// several codecs), with one usable candidate and two veil must drop.
std::string ChromeLikeOffer(const std::string& video_dir = "sendonly", const std::string& video_codecs = "vp8 h264") {
  std::string v =
      "v=0\r\no=- 4611731400430051336 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0 1\r\n"
      "a=extmap-allow-mixed\r\na=msid-semantic: WMS stream\r\n"
      "m=audio 9 UDP/TLS/RTP/SAVPF 111 63\r\nc=IN IP4 0.0.0.0\r\na=rtcp:9 IN IP4 0.0.0.0\r\n"
      "a=candidate:1 1 udp 2113937151 127.0.0.1 50000 typ host generation 0\r\n"
      "a=candidate:2 1 udp 2113937151 192.168.1.5 50001 typ host generation 0\r\n"
      "a=candidate:3 1 tcp 1518280447 127.0.0.1 9 typ host tcptype active generation 0\r\n"
      "a=end-of-candidates\r\n"
      "a=ice-ufrag:abcd\r\na=ice-pwd:0123456789abcdefghijklmn\r\na=ice-options:trickle\r\n"
      "a=fingerprint:sha-256 3C:4A:AA:0B:8D:52:1E:E7:39:C6:AD:66:EE:D5:8F:DC:C1:23:EB:32:66:8B:96:0E:33:47:4F:AB:CD:EF:01:23\r\n"
      "a=setup:actpass\r\na=mid:0\r\n"
      "a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01\r\n"
      "a=sendonly\r\na=msid:stream audio\r\na=rtcp-mux\r\n"
      "a=rtpmap:111 opus/48000/2\r\na=rtcp-fb:111 transport-cc\r\na=fmtp:111 minptime=10;useinbandfec=1\r\n"
      "a=rtpmap:63 red/48000/2\r\n";
  std::string fmts, attrs;
  if (video_codecs.find("vp8") != std::string::npos) {
    fmts += " 96 97";
    attrs += "a=rtpmap:96 VP8/90000\r\na=rtcp-fb:96 goog-remb\r\na=rtcp-fb:96 transport-cc\r\na=rtcp-fb:96 ccm fir\r\n"
             "a=rtcp-fb:96 nack\r\na=rtcp-fb:96 nack pli\r\na=rtpmap:97 rtx/90000\r\na=fmtp:97 apt=96\r\n";
  }
  if (video_codecs.find("h264") != std::string::npos) {
    fmts += " 102 106";
    attrs += "a=rtpmap:102 H264/90000\r\na=rtcp-fb:102 nack pli\r\n"
             "a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=42e01f\r\n"
             "a=rtpmap:106 H264/90000\r\na=rtcp-fb:106 nack\r\n"
             "a=fmtp:106 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f\r\n";
  }
  if (video_codecs.find("vp9") != std::string::npos) {
    fmts += " 98";
    attrs += "a=rtpmap:98 VP9/90000\r\n";
  }
  v += "m=video 9 UDP/TLS/RTP/SAVPF" + fmts + "\r\nc=IN IP4 0.0.0.0\r\n"
       "a=ice-ufrag:abcd\r\na=ice-pwd:0123456789abcdefghijklmn\r\n"
       "a=fingerprint:sha-256 3C:4A:AA:0B:8D:52:1E:E7:39:C6:AD:66:EE:D5:8F:DC:C1:23:EB:32:66:8B:96:0E:33:47:4F:AB:CD:EF:01:23\r\n"
       "a=setup:actpass\r\na=mid:1\r\n"
       "a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01\r\n"
       "a=" + video_dir + "\r\na=rtcp-mux\r\n" + attrs;
  return v;
}

TEST(Offer, TakesCodecsFeedbackAndOnlyLoopbackUdpCandidates) {
  auto o = ParseOffer(ChromeLikeOffer(), {});
  ASSERT_TRUE(o.ok()) << o.error();
  ASSERT_NE(o->video(), nullptr);
  ASSERT_NE(o->audio(), nullptr);
  EXPECT_EQ(o->video()->chosen.name, "VP8");
  EXPECT_EQ(o->video()->chosen.pt, 96);
  EXPECT_EQ(o->video()->mid, "1");
  EXPECT_EQ(o->video()->twcc_ext, 3);
  EXPECT_TRUE(o->video()->nack && o->video()->pli && o->video()->transport_cc);
  EXPECT_EQ(o->audio()->chosen.name, "OPUS");
  EXPECT_EQ(o->audio()->chosen.pt, 111);
  EXPECT_EQ(o->audio()->chosen.fmtp, "minptime=10;useinbandfec=1");
  EXPECT_EQ(o->candidates_kept, 1);
  EXPECT_EQ(o->candidates_dropped, 2);
  EXPECT_EQ(o->sdp.find("192.168.1.5"), std::string::npos);
  EXPECT_EQ(o->sdp.find(" tcp "), std::string::npos);
  EXPECT_NE(o->sdp.find("127.0.0.1 50000"), std::string::npos);
  // Not pinned to loopback: other UDP addresses stay, TCP never does, nor the host's own loopback.
  OfferRules any;
  any.loopback_only = false;
  auto o2 = ParseOffer(ChromeLikeOffer(), any);
  ASSERT_TRUE(o2.ok());
  EXPECT_EQ(o2->candidates_kept, 1);
  EXPECT_NE(o2->sdp.find("192.168.1.5"), std::string::npos);
}

// Issue 13: with a public ice_address, an offer's candidates steered the server's STUN checks to
// any host. Kept now: unicast IPv4, not loopback / link-local / multicast / broadcast /
// unspecified, ports >= 1024, 8 at most.
TEST(Offer, CandidatesCannotSteerChecksAnywhere) {
  std::string cands;
  int n = 0;
  auto add = [&](const std::string& addr, int port) {
    cands += "a=candidate:" + std::to_string(++n) + " 1 udp 2113937151 " + addr + " " + std::to_string(port) +
             " typ host generation 0\r\n";
  };
  add("169.254.169.254", 50000);  // cloud metadata
  add("127.0.0.1", 50000);        // the server itself
  add("0.0.0.0", 50000);
  add("224.0.0.251", 5353);
  add("255.255.255.255", 50000);
  add("8.8.8.8", 53);             // a service to reflect checks off
  add("abcd.local", 50000);       // mDNS name
  add("::1", 50000);
  for (int i = 0; i < 10; ++i) add("203.0.113." + std::to_string(10 + i), 40000 + i);  // 10 good ones
  std::string offer = ChromeLikeOffer();
  offer.insert(offer.find("a=end-of-candidates"), cands);
  OfferRules rules;
  rules.loopback_only = false;
  auto o = ParseOffer(offer, rules);
  ASSERT_TRUE(o.ok()) << o.error();
  EXPECT_EQ(o->candidates_kept, 8) << "at most 8";
  for (const char* bad : {"169.254.169.254", " 127.0.0.1 ", "0.0.0.0 50000", "224.0.0.251", "255.255.255.255", "8.8.8.8",
                          "abcd.local", "::1", "203.0.113.18", "203.0.113.19"})
    EXPECT_EQ(o->sdp.find(bad), std::string::npos) << bad;
  EXPECT_NE(o->sdp.find("192.168.1.5 50001"), std::string::npos);
  EXPECT_NE(o->sdp.find("203.0.113.10 40000"), std::string::npos);
}

TEST(Offer, H264PrefersPacketizationMode1) {
  OfferRules r;
  r.video_codecs = {VideoCodec::kH264};
  auto o = ParseOffer(ChromeLikeOffer("sendonly", "vp8 h264"), r);
  ASSERT_TRUE(o.ok()) << o.error();
  EXPECT_EQ(o->video()->chosen.pt, 106);  // 102 is single-NAL mode: cannot carry a 720p keyframe
  EXPECT_TRUE(o->video()->nack);
  EXPECT_FALSE(o->video()->transport_cc);  // not offered for 106
  // The offer's order is the offerer's preference: VP8 listed first wins, H.264 listed first wins.
  r.video_codecs = {VideoCodec::kVp8, VideoCodec::kH264};
  EXPECT_EQ(ParseOffer(ChromeLikeOffer("sendonly", "vp8 h264"), r)->video()->chosen.name, "VP8");
  std::string h264_first = ChromeLikeOffer("sendonly", "vp8 h264");
  h264_first.replace(h264_first.find("SAVPF 96 97 102 106"), 19, "SAVPF 106 102 96 97");
  EXPECT_EQ(ParseOffer(h264_first, r)->video()->chosen.pt, 106);
}

TEST(Offer, DirectionMustFitTheRole) {
  OfferRules view;
  view.role = OfferRole::kView;
  auto bad = ParseOffer(ChromeLikeOffer("sendonly"), view);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("recvonly"), std::string::npos) << bad.error();
  auto pub = ParseOffer(ChromeLikeOffer("recvonly"), {});
  ASSERT_FALSE(pub.ok());
  EXPECT_NE(pub.error().find("sendonly"), std::string::npos) << pub.error();
  std::string view_offer = ChromeLikeOffer("recvonly");
  view_offer.replace(view_offer.find("a=sendonly"), 10, "a=recvonly");  // the audio too
  EXPECT_TRUE(ParseOffer(view_offer, view).ok());
  EXPECT_TRUE(ParseOffer(ChromeLikeOffer("sendrecv"), {}).ok());
}

TEST(Offer, NoUsableCodecIsUnsupportedNotMalformed) {
  auto o = ParseOffer(ChromeLikeOffer("sendonly", "vp9"), {});
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(o.error().find("vp8 or h264"), std::string::npos) << o.error();
  OfferRules only_vp8;
  only_vp8.video_codecs = {VideoCodec::kVp8};  // a viewer of a VP8 session
  auto h = ParseOffer(ChromeLikeOffer("sendonly", "h264"), only_vp8);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), StatusCode::kUnsupported);
}

TEST(Offer, MalformedOffersAreClearErrors) {
  const std::string good = ChromeLikeOffer();
  auto swap = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    const size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  const std::pair<std::string, std::string> cases[] = {
      {"", "empty"},
      {"hello world", "v=0"},
      {"v=0\r\nthis is not SDP\r\n", "x=value"},
      {swap("o=- 4611731400430051336 2 IN IP4 127.0.0.1\r\n", ""), "o="},
      {swap("m=audio 9 UDP/TLS/RTP/SAVPF 111 63", "m=application 9 UDP/DTLS/SCTP webrtc-datachannel"), "audio and video"},
      {swap("m=audio 9 UDP/TLS/RTP/SAVPF 111 63", "m=audio 9 RTP/AVP 111 63"), "DTLS-SRTP"},
      {swap("m=audio 9 UDP/TLS/RTP/SAVPF 111 63", "m=audio 9 UDP/TLS/RTP/SAVPF 111 300"), "0..127"},
      {swap("m=audio 9 UDP/TLS/RTP/SAVPF 111 63", "m=audio 9"), "m= line"},
      {swap("a=rtpmap:63 red/48000/2", "a=rtpmap:64 red/48000/2"), "format list"},
      {swap("a=rtpmap:111 opus/48000/2", "a=rtpmap:111"), "rtpmap"},
      {swap("a=rtpmap:111 opus/48000/2", "a=rtpmap:111 opus/zero"), "rtpmap"},
      {swap("a=extmap:3 http", "a=extmap:x http"), "extmap"},
      {swap("a=fmtp:111 minptime", "a=fmtp:abc minptime"), "fmtp"},
      {swap("a=rtcp-fb:111 transport-cc", "a=rtcp-fb:1111 transport-cc"), "rtcp-fb"},
      {good + "m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=rtpmap:96 VP8/90000\r\n", "one video track"},
      {swap("v=0\r\n", std::string("v=0\r\n\0", 6)), "NUL"},
  };
  for (const auto& [text, want] : cases) {
    auto o = ParseOffer(text, {});
    ASSERT_FALSE(o.ok()) << "accepted: " << text.substr(0, 80);
    EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument) << o.error();
    EXPECT_NE(o.error().find(want), std::string::npos) << "error '" << o.error() << "' should mention '" << want << "'";
  }
  // Credentials and fingerprint are required (at session or media level).
  std::string no_ice = good;
  for (size_t at; (at = no_ice.find("a=ice-ufrag:abcd\r\n")) != std::string::npos;) no_ice.erase(at, 18);
  EXPECT_NE(ParseOffer(no_ice, {}).error().find("ICE credentials"), std::string::npos);
  std::string no_fp = good;
  for (size_t at; (at = no_fp.find("a=fingerprint:")) != std::string::npos;) no_fp.erase(at, no_fp.find("\r\n", at) + 2 - at);
  EXPECT_NE(ParseOffer(no_fp, {}).error().find("fingerprint"), std::string::npos);
}

// Issue 13: an offer's fmtp keys were copied into the caps as they came, so "payload=5" or
// "clock-rate=abc" replaced the fields the caps are built from (with strings), and a key that is
// not a valid field name reached gst_structure_set.
TEST(Offer, FmtpCannotOverwriteCapsFields) {
  EnsureGstInit();
  OfferMedia m;
  m.kind = "video";
  m.chosen.name = "H264";
  m.chosen.pt = 106;
  m.chosen.clock_rate = 90000;
  m.chosen.fmtp = "payload=5;clock-rate=abc;ssrc=1;encoding-name=VP8;media=audio;rtcp-fb-nack-pli=0;"
                  "extmap-1=x;Bad Key=1;9lives=1;packetization-mode=1;profile-level-id=42e01f";
  GstCaps* caps = CodecCaps(m, 1234);
  const GstStructure* s = gst_caps_get_structure(caps, 0);
  int pt = 0, rate = 0;
  guint ssrc = 0;
  EXPECT_TRUE(gst_structure_get_int(s, "payload", &pt));
  EXPECT_EQ(pt, 106);
  EXPECT_TRUE(gst_structure_get_int(s, "clock-rate", &rate));
  EXPECT_EQ(rate, 90000);
  EXPECT_TRUE(gst_structure_get_uint(s, "ssrc", &ssrc));
  EXPECT_EQ(ssrc, 1234u);
  EXPECT_STREQ(gst_structure_get_string(s, "encoding-name"), "H264");
  EXPECT_STREQ(gst_structure_get_string(s, "media"), "video");
  gboolean pli = FALSE;
  EXPECT_TRUE(gst_structure_get_boolean(s, "rtcp-fb-nack-pli", &pli) && pli);
  EXPECT_FALSE(gst_structure_has_field(s, "extmap-1"));
  EXPECT_FALSE(gst_structure_has_field(s, "Bad Key"));
  EXPECT_FALSE(gst_structure_has_field(s, "9lives"));
  EXPECT_STREQ(gst_structure_get_string(s, "packetization-mode"), "1");  // real fmtp parameters stay
  EXPECT_STREQ(gst_structure_get_string(s, "profile-level-id"), "42e01f");
  gst_caps_unref(caps);
}

TEST(Offer, StartBitrateGoesIntoTheVideoFmtpOnly) {
  const std::string answer =
      "v=0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=rtpmap:111 OPUS/48000/2\r\na=fmtp:111 minptime=10\r\n"
      "m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=rtpmap:96 VP8/90000\r\na=rtcp-fb:96 nack pli\r\n";
  const std::string out = WithStartBitrate(answer, 96, 2500);
  EXPECT_NE(out.find("a=rtpmap:96 VP8/90000\r\na=fmtp:96 x-google-start-bitrate=2500\r\n"), std::string::npos) << out;
  EXPECT_NE(out.find("a=fmtp:111 minptime=10\r\n"), std::string::npos);
  const std::string h264 = "v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 106\r\na=rtpmap:106 H264/90000\r\n"
                           "a=fmtp:106 packetization-mode=1;profile-level-id=42e01f\r\n";
  EXPECT_NE(WithStartBitrate(h264, 106, 2500).find("a=fmtp:106 packetization-mode=1;profile-level-id=42e01f;x-google-start-bitrate=2500\r\n"),
            std::string::npos);
}

}  // namespace
}  // namespace veil
