// Hostile and unlucky clients against the real `veil serve` on loopback
// (issue 13): each case was reproduced against the landed server first.
#include <gtest/gtest.h>

#include <httplib.h>

#include "server_process.h"

namespace veil::test {
namespace {

// A syntactically plausible offer that negotiation rejects (no ICE credentials): it gets
// past admission and fails at parsing, 400, without any GStreamer work.
const char* kBadOffer = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\n";

httplib::Result PostSdp(httplib::Client& c, const std::string& path, const std::string& token = "") {
  httplib::Headers h;
  if (!token.empty()) h.emplace("Authorization", "Bearer " + token);
  return c.Post(path.c_str(), h, kBadOffer, "application/sdp");
}

// Reproduced: 40 unauthenticated WHEP offers to a session that does not exist got 23 x 404 and
// 17 x 429, and a publisher's valid WHIP offer right after was answered 429 (one shared bucket,
// admission before the session lookup).
TEST(Hardening, ViewersCannotThrottlePublishers) {
  const std::string token = "hardening-token-0123456789";
  ServerProcess server({"--token", token, "--set", "webrtc.offers_per_s=2"});  // a burst of 4 per kind
  ASSERT_TRUE(server.ok()) << server.log();
  httplib::Client c("127.0.0.1", server.port());
  c.set_read_timeout(10, 0);
  int not_found = 0, other = 0;
  for (int i = 0; i < 40; ++i) {
    auto r = PostSdp(c, "/whep/nobody");
    ASSERT_TRUE(r);
    (r->status == 404 ? not_found : other)++;
  }
  EXPECT_EQ(not_found, 40) << other << " answers were not 404: an offer to no session must cost no token";
  // Viewers of a session that exists use up their own bucket...
  ASSERT_EQ(server.CallJson("POST", "/v1/sessions", {{"id", "s1"}}, {{"Authorization", "Bearer " + token}}).status, 201);
  int throttled = 0;
  for (int i = 0; i < 12; ++i) {
    auto r = PostSdp(c, "/whep/s1");
    ASSERT_TRUE(r);
    if (r->status == 429) {
      ++throttled;
      EXPECT_EQ(r->get_header_value("Retry-After"), "1");
    }
  }
  EXPECT_GT(throttled, 0) << "the WHEP bucket is bounded";
  // ... and a publisher right after is admitted: its (malformed) offer reaches the parser, 400, not 429.
  auto pub = PostSdp(c, "/whip/s2", token);
  ASSERT_TRUE(pub);
  EXPECT_EQ(pub->status, 400) << pub->body;
  EXPECT_EQ(server.Stop(), 0);
}

}  // namespace
}  // namespace veil::test
