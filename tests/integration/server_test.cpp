// The real `veil serve` binary on loopback, driven through its API like a
// user would: publishers send a 720p30 VP8 clip with faces as live RTP,
// viewers receive, decode and check every frame against the source.
#include <gtest/gtest.h>

#include <sys/random.h>

#include <chrono>
#include <fstream>
#include <set>
#include <thread>

#include "load/prom_text.h"
#include "server_harness.h"
#include "transport/net/udp.h"

namespace veil::test {
namespace {

// Received / sent over the frames sent in [from, to).
double DeliveredRatio(SentLog& log, const std::vector<FrameCheck>& cs, double from, double to) {
  std::lock_guard lk(log.mu);
  int n_sent = 0, n_got = 0;
  std::set<std::pair<int, double>> got;
  for (const FrameCheck& c : cs) got.insert({c.index, c.sent_ms});
  for (const auto& [ts, v] : log.sent) {
    if (v.second < from || v.second >= to) continue;
    ++n_sent;
    n_got += got.count(v);
  }
  return n_sent ? double(n_got) / n_sent : 0;
}

TEST(Server, TwoPublishersGetEveryFacePixelatedAtFullRate) {
  // The leakcheck clip at 640x360: two anonymized 1280x720 sessions are all a 2-core machine
  // serves (docs/capacity.md), so at 720p this test would judge the machine's speed, which is
  // veil load's job. At 360p it judges that no frame is lost and no face shown with CPU to spare.
  const SourceClip& src = Source("leakcheck/input_360p.ivf");
  ASSERT_GT(src.frames, 100);
  ASSERT_TRUE(src.ground_truth) << "the 360p leakcheck clip is missing: run scripts/make-test-media.sh";
  // A fixed limit: admission by measured capacity is AdmitsByMeasuredCapacity's to judge.
  ServerProcess server({"--max-sessions", "4"});
  ASSERT_TRUE(server.ok()) << server.log();
  auto log_a = std::make_shared<SentLog>(), log_b = std::make_shared<SentLog>();
  const json a = CreateSession(server, {{"id", "alpha"}});
  const json b = CreateSession(server, {{"id", "beta"}, {"codec", "vp8"}});
  ASSERT_EQ(a["ingest"]["host"], "127.0.0.1");
  EXPECT_NE(a["ingest"]["sdp"].get<std::string>().find("a=rtpmap:96 VP8/90000"), std::string::npos);
  Watch wa("vp8", log_a, src), wb("vp8", log_b, src);
  AddViewer(server, "alpha", wa.port());
  AddViewer(server, "beta", wb.port());
  const double t0 = NowMs();
  Feed fa(a, log_a, 9, src), fb(b, log_b, 9, src);
  SleepMs(8000);
  const Reply stats = server.Call("GET", "/v1/sessions/alpha/stats");  // while streaming
  const Reply metrics = server.Call("GET", "/metrics");
  SleepMs(1600);
  for (auto* w : {&wa, &wb}) {
    const auto cs = w->checks();
    SentLog& log = w == &wa ? *log_a : *log_b;
    // Steady state: after one second of warm-up, until the publisher stops.
    const double ratio = DeliveredRatio(log, cs, t0 + 1000, t0 + 8500);
    const Summary all = Summarize(cs, 0, 1e300);
    std::printf("session %s: received %d frames, delivered %.3f of sent in steady state, %d faces checked, %d leaked\n",
                w == &wa ? "alpha" : "beta", all.frames, ratio, all.faces, all.leaked);
#if !defined(VEIL_SANITIZED_BUILD)
    EXPECT_GE(ratio, 0.95) << "received frame rate more than 5% below the sent rate";
#endif
#if !defined(VEIL_SANITIZED_BUILD)
    EXPECT_GT(all.faces, 100) << "the check had too few faces to mean anything";
#else
    EXPECT_GT(all.faces, 30) << "the check had too few faces to mean anything";
#endif
    ExpectOnlyCadenceLeaks(all, "two publishers");
  }
  ASSERT_EQ(stats.status, 200);
  EXPECT_GT(stats.body["frames_received"].get<int>(), 200);
  EXPECT_GT(stats.body["received_fps"].get<double>(), 25.0);
  EXPECT_TRUE(stats.body["stages_ms"].contains("encode"));
  EXPECT_GT(stats.body["stages_ms"]["processing"]["count"].get<int>(), 100);
  for (const char* name : {"veil_session_received_fps{session=\"alpha\"}", "veil_session_sent_fps",
                           "veil_session_stage_seconds_bucket", "veil_session_processing_seconds_bucket",
                           "veil_session_stale_drops_total", "veil_session_fail_closed_frames_total",
                           "veil_session_rtp_jitter_seconds", "veil_session_rtp_lost_packets_total",
                           "veil_session_viewer_drops_total", "veil_ai_batch_size_bucket",
                           "veil_ai_target_active_streams{target=\"local\"} 2", "veil_process_cpu_percent",
                           "veil_capacity_sessions", "veil_headroom_ratio"})
    EXPECT_NE(metrics.text.find(name), std::string::npos) << name;
  // The process's CPU by kind of thread: the frame executor's threads did the frames' work,
  // and no kind took more than the whole process.
  {
    const auto parsed = ParsePromText(metrics.text);
    const double process = SumValue(parsed, "veil_process_cpu_seconds_total");
    const double frame = SumValue(parsed, "veil_thread_cpu_seconds_total", {{"threads", "frame"}});
    const double all = SumValue(parsed, "veil_thread_cpu_seconds_total");
    EXPECT_GT(frame, 0.5) << "two sessions' 8 s of frames, yet the frame executor's threads took no CPU";
    EXPECT_GT(frame, 0.5 * all) << "the frames' work is the most of a node's CPU";
    EXPECT_LT(all, process + 1.5) << "the kinds added up to more than the process took";
  }
  // Prometheus naming conventions (base units, _total on counters): promtool prints nothing.
  const RunResult lint = PromtoolCheck(metrics.text);
  EXPECT_EQ(lint.rc, 0) << lint.out;
  EXPECT_EQ(lint.out, "") << "promtool check metrics on the live server's /metrics";
  // Seconds, not ms: the encode stage of a 720p frame takes ms, so its mean is well under 1 s.
  EXPECT_NE(metrics.text.find("veil_session_stage_seconds_bucket{session=\"alpha\",stage=\"encode\",le=\"0.0333\"}"),
            std::string::npos);
  fa.Stop();
  fb.Stop();
  EXPECT_EQ(server.Stop(SIGTERM), 0) << server.log();
  EXPECT_NE(server.log().find("stopped cleanly"), std::string::npos);
}

TEST(Server, PrivacyModeSwitchesAtRuntime) {
  ASSERT_GT(Source().frames, 100);  // loaded before the clock starts
  ServerProcess server({});
  ASSERT_TRUE(server.ok()) << server.log();
  auto log = std::make_shared<SentLog>();
  const json s = CreateSession(server, {{"id", "m"}, {"mode", "bypass"}});
  Watch w("vp8", log);
  AddViewer(server, "m", w.port());
  Feed feed(s, log);
  const httplib::Headers who = {{"X-Veil-Caller", "operator-7"}};
  SleepMs(2500);
  Reply r = server.Call("PUT", "/v1/sessions/m/privacy", R"({"mode":"full_blur"})", who);
  const double to_blur = NowMs();  // in effect from here on (the answer comes after the switch)
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.body["previous"], "bypass");
  SleepMs(2500);
  ASSERT_EQ(server.Call("PUT", "/v1/sessions/m/privacy", R"({"mode":"anonymize"})", who).status, 200);
  const double to_anon = NowMs();
  SleepMs(3000);
  const double end = NowMs();
  feed.Stop();
  const auto cs = w.checks();
  // By send time: 300 ms before a switch (frames in flight), from the switch on.
  const Summary bypass = Summarize(cs, 0, to_blur - 300);
  const Summary blur = Summarize(cs, to_blur, to_anon - 300);
  const Summary anon = Summarize(cs, to_anon + 300, end);
  std::printf("bypass: %d frames %d/%d faces kept; full_blur: %d frames, %d whole-frame mosaic; anonymize: %d frames "
              "%d/%d faces leaked, %d whole-frame (%d of the %d frames that are not close-ups)\n",
              bypass.frames, bypass.leaked, bypass.faces, blur.frames, blur.mosaic, anon.frames, anon.leaked, anon.faces,
              anon.mosaic, anon.wide_mosaic, anon.wide_frames);
  for (const FrameCheck& c : cs)
    if (c.sent_ms >= to_blur && c.sent_ms < to_anon - 300 && c.grad >= 0.2)
      std::printf("full_blur frame %d sent %+.0f ms after the switch: in-cell gradient %.2f\n", c.index, c.sent_ms - to_blur,
                  c.grad);
  ASSERT_GT(bypass.faces, 20);
  EXPECT_GE(bypass.leaked, bypass.faces * 8 / 10) << "bypass must leave faces as they are (the check can fail)";
  EXPECT_EQ(bypass.mosaic, 0);
  ASSERT_GT(blur.frames, 30);
#if !defined(VEIL_SANITIZED_BUILD)
  EXPECT_EQ(blur.mosaic, blur.frames) << "full_blur: every frame a whole-frame mosaic";
#else
  // Sanitized, this test's own receiver falls behind and loses packets: the
  // decoded pictures drift until the next keyframe, so only privacy is checked.
  EXPECT_GT(blur.mosaic, 0);
#endif
  EXPECT_EQ(blur.leaked, 0);
  ASSERT_GT(anon.faces, 20);
  ExpectOnlyCadenceLeaks(anon, "anonymize after the switch");
  // The clip has a close-up whose face fills the frame (its mask does too): judged on the other shots.
  EXPECT_LT(anon.wide_mosaic, anon.wide_frames / 4) << "anonymize pixelates faces, not whole frames";
  // Every switch is in the audit trail with its caller.
  Reply ev = server.Call("GET", "/v1/events");
  int switches = 0;
  for (const auto& e : ev.body["events"])
    if (e["type"] == "mode_changed") {
      ++switches;
      EXPECT_NE(e["detail"].get<std::string>().find("operator-7@127.0.0.1"), std::string::npos) << e.dump();
      EXPECT_FALSE(e["time"].get<std::string>().empty());
    }
  EXPECT_EQ(switches, 2);
  EXPECT_NE(server.log().find("mode_changed session=m bypass -> full_blur by operator-7@127.0.0.1"), std::string::npos);
  EXPECT_EQ(server.Stop(SIGINT), 0);
}

TEST(Server, DetectionStallOrFailureNeverLeaksAFace) {
  ASSERT_GT(Source().frames, 100);  // loaded before the clock starts
  ServerProcess server({"--set", "inference.fault_injection=true"});
  ASSERT_TRUE(server.ok()) << server.log();
  auto log = std::make_shared<SentLog>();
  const json s = CreateSession(server, {{"id", "f"}});
  Watch w("vp8", log);
  AddViewer(server, "f", w.port());
  Feed feed(s, log);
  SleepMs(2500);
  ASSERT_EQ(server.Call("PUT", "/v1/debug/inference", R"({"stall":true})").status, 200);
  const double stall = NowMs();  // in effect from here on
  SleepMs(2500);
  ASSERT_EQ(server.Call("PUT", "/v1/debug/inference", R"({"fail":true})").status, 200);
  const double fail = NowMs();
  SleepMs(2500);
  ASSERT_EQ(server.Call("PUT", "/v1/debug/inference", R"({})").status, 200);
  const double heal = NowMs();
  SleepMs(2500);
  const double end = NowMs();
  feed.Stop();
  const auto cs = w.checks();
  const Summary all = Summarize(cs, 0, 1e300);
  // By send time; a result counts as fresh for max_age_ms (200) after its frame. Then the VP8
  // encoder takes a few frames to replace a textured picture with the mosaic (in-cell gradient
  // measured 0.36 -> 0.20 over the first 10 fail-closed frames of the leakcheck clip's crowd
  // shot, 0.08 after): whole-frame is judged from 600 ms on, privacy from the stall itself.
  const Summary stalled = Summarize(cs, stall + 600, fail);
  const Summary failing = Summarize(cs, fail, heal);
  const Summary healed = Summarize(cs, heal + 1000, end);
  std::printf("all: %d frames, %d faces, %d leaked (outside the fault window); stalled: %d/%d whole-frame; failing: %d/%d; healed: %d/%d\n",
              all.frames, all.faces, all.leaked, stalled.mosaic, stalled.frames, failing.mosaic, failing.frames,
              healed.mosaic, healed.frames);
  for (const FrameCheck& c : cs)  // the details of any leak, for the failure report
    if (c.leaked || std::getenv("VEIL_TEST_VERBOSE"))
      std::printf("frame %d arrived %+.0f ms after the stall, %+.0f after the failure, %+.0f after healing: grad %.2f, "
                  "%d faces, %d leaked\n",
                  c.index, c.arrival_ms - stall, c.arrival_ms - fail, c.arrival_ms - heal, c.grad, c.faces, c.leaked);
  // From the stall until detection has been back for a second: not one face.
  const Summary fault = Summarize(cs, stall, heal + 1000);
  EXPECT_EQ(fault.leaked, 0) << "not one frame may leave with a face while detection stalls or fails";
  ExpectOnlyCadenceLeaks(all, "the whole stream");
  ASSERT_GT(stalled.frames, 30);
  ASSERT_GT(failing.frames, 30);
#if !defined(VEIL_SANITIZED_BUILD)
  EXPECT_EQ(stalled.mosaic, stalled.frames) << "a stalled detector: whole-frame mosaic (fail-closed)";
  EXPECT_EQ(failing.mosaic, failing.frames) << "a failing detector: whole-frame mosaic (fail-closed)";
  EXPECT_LT(healed.wide_mosaic, healed.wide_frames / 4) << "recovered detection pixelates faces only";
#endif  // sanitized: the test's slow receiver loses packets and pictures drift; privacy is checked above
  Reply st = server.Call("GET", "/v1/sessions/f/stats");
  EXPECT_GE(st.body["fail_closed_frames"].get<int>(), stalled.frames + failing.frames - 10);
  const Reply m = server.Call("GET", "/metrics");
  EXPECT_NE(m.text.find("veil_session_fail_closed_frames_total{session=\"f\"}"), std::string::npos);
  EXPECT_EQ(server.Stop(), 0);
}

TEST(Server, EndsSessionsWhosePublisherStopsAndEnforcesTheLimit) {
  ASSERT_GT(Source().frames, 100);  // loaded before the clock starts
  ServerProcess server({"--set", "server.publisher_timeout_ms=800", "--set", "server.start_timeout_ms=1500",
                        "--max-sessions", "2"});
  ASSERT_TRUE(server.ok()) << server.log();
  auto log = std::make_shared<SentLog>();
  const json p = CreateSession(server, {{"id", "p"}});
  CreateSession(server, {{"id", "idle"}});
  Reply full = server.Call("POST", "/v1/sessions", R"({"id":"x"})");
  EXPECT_EQ(full.status, 503);
  EXPECT_NE(full.body["error"].get<std::string>().find("session limit"), std::string::npos);
  EXPECT_EQ(full.headers.count("Retry-After"), 1u);
  EXPECT_EQ(server.Call("GET", "/readyz").status, 503);
  {
    Feed feed(p, log, 1.0);
    SleepMs(1200);
  }
  // Both end on their own: p 0.8 s after its last packet, idle 1.5 s after creation.
  for (int i = 0; i < 60 && server.Call("GET", "/v1/sessions").body["sessions"].size() > 0; ++i) SleepMs(100);
  EXPECT_EQ(server.Call("GET", "/v1/sessions").body["sessions"].size(), 0u);
  std::string reasons;
  const Reply events = server.Call("GET", "/v1/events");
  for (const auto& e : events.body["events"])
    if (e["type"] == "session_ended") reasons += e["session"].get<std::string>() + ":" + e["detail"].get<std::string>() + "\n";
  EXPECT_NE(reasons.find("p:reason=publisher_timeout"), std::string::npos) << reasons;
  EXPECT_NE(reasons.find("idle:reason=start_timeout"), std::string::npos) << reasons;
  EXPECT_EQ(server.Call("GET", "/readyz").status, 200);
  // Room again; SIGTERM with a live session drains it and exits cleanly.
  const json again = CreateSession(server, {{"id", "again"}});
  Feed feed(again, log);
  SleepMs(500);
  EXPECT_EQ(server.Stop(SIGTERM), 0);
  EXPECT_NE(server.log().find("session=again reason=shutdown"), std::string::npos) << server.log();
}

TEST(Server, MalformedRequestsGetClearErrors) {
  // A fixed limit: admission by measured capacity is AdmitsByMeasuredCapacity's to judge.
  ServerProcess server({"--max-sessions", "4"});
  ASSERT_TRUE(server.ok()) << server.log();
  struct Case {
    const char* method;
    std::string path, body;
    int status;
    const char* says;
  };
  const std::vector<Case> cases = {
      {"POST", "/v1/sessions", "{not json", 400, "not a JSON object"},
      {"POST", "/v1/sessions", "[1,2]", 400, "not a JSON object"},
      {"POST", "/v1/sessions", R"({"codec":"vp8","colour":"red"})", 400, "unknown field 'colour'"},
      {"POST", "/v1/sessions", R"({"id":"../etc"})", 400, "session id"},
      {"POST", "/v1/sessions", R"({"id":7})", 400, "must be a string"},
      {"POST", "/v1/sessions", R"({"codec":"av1"})", 400, "codec must be vp8 or h264"},
      {"POST", "/v1/sessions", R"({"mode":"blurry"})", 400, "mode"},
      {"POST", "/v1/sessions", std::string(70000, ' '), 413, "too large"},
      {"GET", "/v1/sessions/nope", "", 404, "no session 'nope'"},
      {"DELETE", "/v1/sessions/nope", "", 404, "no session"},
      {"GET", "/v1/nothing", "", 404, "no route"},
      {"PUT", "/v1/sessions/ok/privacy", R"({"mode":"off"})", 400, "mode"},
      {"PUT", "/v1/sessions/ok/privacy", R"({})", 400, "'mode' is required"},
      {"POST", "/v1/sessions/ok/viewers", R"({"video_port":0})", 400, "port"},
      {"POST", "/v1/sessions/ok/viewers", R"({"video_port":70000})", 400, "port"},
      {"POST", "/v1/sessions/ok/viewers", R"({"video_port":"5000"})", 400, "port"},
      {"POST", "/v1/sessions/ok/viewers", R"({"host":"localhost","video_port":5000})", 400, "numeric IPv4"},
      {"POST", "/v1/sessions/ok/viewers", R"({"host":"10.1.2.3","video_port":5000})", 403, "loopback"},
      {"POST", "/v1/sessions/ok/viewers", R"({"host":"224.0.0.1","video_port":5000})", 400, "unicast"},
      {"DELETE", "/v1/sessions/ok/viewers/v9", "", 404, "no viewer"},
      {"PUT", "/v1/debug/inference", R"({"stall":true})", 404, "fault injection is off"},
      {"GET", "/v1/events?after=x", "", 400, "sequence number"},
  };
  CreateSession(server, {{"id", "ok"}});
  EXPECT_EQ(server.Call("POST", "/v1/sessions", R"({"id":"ok"})").status, 409);
  for (const Case& c : cases) {
    Reply r = server.Call(c.method, c.path, c.body);
    EXPECT_EQ(r.status, c.status) << c.method << " " << c.path << " " << c.body.substr(0, 60) << " -> " << r.text;
    EXPECT_NE(r.text.find(c.says), std::string::npos) << c.method << " " << c.path << " -> " << r.text;
  }
  EXPECT_EQ(server.Call("GET", "/healthz").status, 200);
  EXPECT_EQ(server.Call("DELETE", "/v1/sessions/ok").status, 204);
  EXPECT_EQ(server.Stop(), 0);

  // A token guards the API (not the health probes).
  const std::string token = "test-token-0123456789";
  ServerProcess guarded({"--token", token});
  ASSERT_TRUE(guarded.ok()) << guarded.log();
  EXPECT_EQ(guarded.Call("GET", "/v1/sessions").status, 401);
  EXPECT_EQ(guarded.Call("GET", "/metrics").status, 401);
  EXPECT_EQ(guarded.Call("GET", "/v1/sessions", "", {{"Authorization", "Bearer wrong-token-0123456789"}}).status, 401);
  EXPECT_EQ(guarded.Call("GET", "/v1/sessions", "", {{"Authorization", "Bearer " + token}}).status, 200);
  EXPECT_EQ(guarded.Call("GET", "/healthz").status, 200);
  EXPECT_EQ(guarded.Stop(), 0);

  // Start-up refusals: a non-loopback address without a token, unknown keys.
  RunResult r = RunVeil("serve --listen 0.0.0.0:0");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("set server.token"), std::string::npos) << r.out;
  r = RunVeil("serve --set server.listne=127.0.0.1:0");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("unknown config key 'server.listne'"), std::string::npos) << r.out;
  r = RunVeil("serve --max-sessions 0");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("server.max_sessions (--max-sessions): must be 'auto' or a number of sessions (0 is degenerate), got '0'"), std::string::npos) << r.out;
  r = RunVeil("serve --listen 127.0.0.1:0 --max-batch 4 --print-config");
  EXPECT_EQ(r.rc, 0);
  EXPECT_NE(r.out.find("max_batch = 4  # flag"), std::string::npos) << r.out;
}

TEST(Server, H264SessionsAndOpusPassThrough) {
  // The leakcheck clip's first 6 s as H.264: its annotated faces are the judge's ground truth.
  const SourceClip& h264 = Source("leakcheck/input_h264.mkv");
  ASSERT_GT(h264.frames, 100);
  ASSERT_EQ(h264.clip->info.video_codec, "h264");
  ASSERT_TRUE(h264.ground_truth);
  auto opus = LoadClip(Media("sample_opus.webm"));
  ASSERT_TRUE(opus.ok()) << opus.error();
  ASSERT_TRUE((*opus)->info.has_opus);
  // A fixed cap: two anonymized sessions, one of them H.264 (about 18 ms of CPU a frame here),
  // pass the capacity model's budget on a 2-core machine only just or not at all.
  ServerProcess server({"--max-sessions", "4"});
  ASSERT_TRUE(server.ok()) << server.log();
  // H.264 in, H.264 out, faces pixelated.
  auto log = std::make_shared<SentLog>();
  const json hs = CreateSession(server, {{"id", "h"}, {"codec", "h264"}, {"audio", false}});
  EXPECT_NE(hs["ingest"]["sdp"].get<std::string>().find("a=rtpmap:96 H264/90000"), std::string::npos);
  EXPECT_EQ(hs["ingest"]["audio_port"], 0);
  Watch w("h264", log, h264);
  AddViewer(server, "h", w.port());
  // The same clip in a bypass session: forwarded as the publisher sent it (no re-encode), so
  // the viewer decodes the publisher's H.264 and the judge sees the faces.
  auto log_b = std::make_shared<SentLog>();
  const json hb = CreateSession(server, {{"id", "hb"}, {"codec", "h264"}, {"audio", false}, {"mode", "bypass"}});
  Watch wb("h264", log_b, h264);
  AddViewer(server, "hb", wb.port());
  // Opus relayed byte for byte to a viewer's audio port.
  const json as = CreateSession(server, {{"id", "a"}});
  auto audio_rx = UdpSocket::Bind("127.0.0.1", 0);
  ASSERT_TRUE(audio_rx.ok());
  Watch wa("vp8", std::make_shared<SentLog>());
  Reply v = server.CallJson("POST", "/v1/sessions/a/viewers",
                            {{"host", "127.0.0.1"}, {"video_port", wa.port()}, {"audio_port", audio_rx->port()}});
  ASSERT_EQ(v.status, 201) << v.text;
  EXPECT_NE(v.body["sdp"].get<std::string>().find("a=rtpmap:111 opus/48000/2"), std::string::npos);
  const double t0 = NowMs();
  Feed feed(hs, log, 4, h264);
  Feed feed_b(hb, log_b, 4, h264);
  PublisherConfig pc;
  pc.host = "127.0.0.1";
  pc.video_port = as["ingest"]["video_port"];
  pc.audio_port = as["ingest"]["audio_port"];
  pc.loop = false;
  auto pub = RtpPublisher::Start(*opus, pc);
  ASSERT_TRUE(pub.ok()) << pub.error();
  std::vector<std::vector<uint8_t>> got;
  std::vector<uint8_t> buf(2048);
  while (NowMs() - t0 < 4500) {
    const long n = audio_rx->Receive(buf.data(), buf.size(), 50);
    if (n > 0) got.emplace_back(buf.begin(), buf.begin() + n);
  }
  std::vector<const DemuxedPacket*> sent;
  for (const auto& p : (*opus)->packets)
    if (p.audio) sent.push_back(&p);
  ASSERT_FALSE(got.empty());
  size_t same = 0;
  for (size_t i = 0; i < got.size() && i < sent.size(); ++i) {
    ASSERT_GE(got[i].size(), 12u);
    same += std::equal(got[i].begin() + 12, got[i].end(), sent[i]->data.begin(), sent[i]->data.end());
    if (i > 0) {  // the publisher's RTP header, untouched: consecutive sequence numbers, payload type 111
      EXPECT_EQ(uint16_t((got[i][2] << 8 | got[i][3]) - (got[i - 1][2] << 8 | got[i - 1][3])), 1u);
    }
    EXPECT_EQ(got[i][1] & 0x7f, 111);
  }
  std::printf("opus: %zu of %zu packets relayed, %zu byte-identical; h264: ", got.size(), sent.size(), same);
  EXPECT_EQ(got.size(), sent.size());
  EXPECT_EQ(same, got.size());
  const auto cs = w.checks();
  const double ratio = DeliveredRatio(*log, cs, t0 + 1000, t0 + 3800);
  const Summary all = Summarize(cs, 0, 1e300);
  std::printf("%d frames, delivered %.3f, %d faces, %d leaked\n", all.frames, ratio, all.faces, all.leaked);
#if !defined(VEIL_SANITIZED_BUILD)
  EXPECT_GE(ratio, 0.95);
#endif
  EXPECT_GT(all.faces, 30);
  ExpectOnlyCadenceLeaks(all, "h264");
  const auto csb = wb.checks();
  const Summary bypass = Summarize(csb, 0, 1e300);
  const double ratio_b = DeliveredRatio(*log_b, csb, t0 + 1000, t0 + 3800);
  const Reply sb = server.Call("GET", "/v1/sessions/hb/stats");
  const uint64_t forwarded = sb.body.value("frames_forwarded", uint64_t(0)), sent_b = sb.body.value("frames_sent", uint64_t(0));
  if (std::getenv("VEIL_TEST_VERBOSE"))
    for (const FrameCheck& c : csb) std::printf("  bypass frame %d: %d of %d faces visible, grad %.2f\n", c.index, c.leaked, c.faces, c.grad);
  std::printf("h264 bypass: %d frames, delivered %.3f, %llu of %llu sent forwarded, %d of %d faces visible; server: viewer "
              "drops %s, ingest rtp %s\n",
              bypass.frames, ratio_b, (unsigned long long)forwarded, (unsigned long long)sent_b, bypass.leaked,
              bypass.faces, sb.body.value("viewer_drops", json(0)).dump().c_str(), sb.body.value("rtp", json::object()).dump().c_str());
  {
    const ViewerCounters vcb = wb.counters(), vca = w.counters();
    std::printf("viewers (bypass / anonymized): frames %llu / %llu, decoded %llu / %llu, decode errors %llu / %llu, rtp lost "
                "%llu / %llu, late %llu / %llu\n",
                (unsigned long long)vcb.frames, (unsigned long long)vca.frames, (unsigned long long)vcb.decoded,
                (unsigned long long)vca.decoded, (unsigned long long)vcb.decode_errors,
                (unsigned long long)vca.decode_errors, (unsigned long long)vcb.rtp.lost, (unsigned long long)vca.rtp.lost,
                (unsigned long long)vcb.rtp.late, (unsigned long long)vca.rtp.late);
  }
#if !defined(VEIL_SANITIZED_BUILD)
  EXPECT_GE(ratio_b, 0.95);
#endif
  EXPECT_GT(forwarded, sent_b / 2) << "bypass forwards the publisher's H.264";
  EXPECT_GE(bypass.leaked, bypass.faces * 9 / 10) << "the bypass control: the judge must see the faces";
  EXPECT_GT(bypass.faces, 30);
  EXPECT_EQ(server.Stop(), 0);
}

TEST(Server, GarbageRtpHurtsNoSession) {
  // At 640x360, as TwoPublishers: two anonymized 720p sessions are a 2-core machine's whole
  // capacity, and at 720p this test failed now and then on a slow machine (the bad session got 33
  // frames in 4 s) by judging its speed, not the garbage's harm.
  const SourceClip& src = Source("leakcheck/input_360p.ivf");
  ASSERT_GT(src.frames, 100);  // loaded before the clock starts
  ASSERT_TRUE(src.ground_truth) << "the 360p leakcheck clip is missing: run scripts/make-test-media.sh";
  // A fixed limit: admission by measured capacity is AdmitsByMeasuredCapacity's to judge.
  ServerProcess server({"--max-sessions", "4"});
  ASSERT_TRUE(server.ok()) << server.log();
  auto good_log = std::make_shared<SentLog>(), bad_log = std::make_shared<SentLog>();
  const json good = CreateSession(server, {{"id", "good"}});
  const json bad = CreateSession(server, {{"id", "bad"}});
  Watch wg("vp8", good_log, src), wb("vp8", bad_log, src);
  AddViewer(server, "good", wg.port());
  AddViewer(server, "bad", wb.port());
  const double t0 = NowMs();
  Feed fg(good, good_log, 9, src);
  {
    // 3 s of garbage at the bad session: random datagrams, RTP with random
    // (truncated VP8) payloads, and RTP with huge sequence and timestamp jumps.
    auto sock = UdpSocket::Bind("127.0.0.1", 0);
    ASSERT_TRUE(sock.ok());
    sockaddr_in to{};
    ASSERT_TRUE(ParseEndpoint("127.0.0.1", bad["ingest"]["video_port"], &to).ok());
    uint8_t buf[1500];
    uint16_t seq = 1;
    uint32_t ts = 0;
    for (int i = 0; i < 3000; ++i) {
      const size_t n = 1 + size_t(i * 7919) % sizeof buf;
      if (getrandom(buf, n, 0) < 0) break;
      if (i % 3 != 0 && n >= 12) {
        buf[0] = 0x80;
        buf[1] = uint8_t((i % 2 ? 0x80 : 0) | 96);
        seq = uint16_t(seq + (i % 3 == 2 ? 20000 : 1));
        ts += (i % 3 == 2 ? 0x40000000u : 3000u);
        buf[2] = uint8_t(seq >> 8);
        buf[3] = uint8_t(seq);
        for (int k = 0; k < 4; ++k) buf[4 + k] = uint8_t(ts >> (24 - 8 * k));
      }
      sock->SendTo(to, buf, n);
      if (i % 10 == 0) SleepMs(10);
    }
  }
  // Then a real stream: the bad session recovers.
  const double real_from = NowMs();
  Feed fb(bad, bad_log, 4, src);
  SleepMs(std::max(0.0, t0 + 9500 - NowMs()));
  EXPECT_TRUE(server.alive());
  EXPECT_EQ(server.Call("GET", "/healthz").status, 200);
  const auto cg = wg.checks();
  const double ratio = DeliveredRatio(*good_log, cg, t0 + 1000, t0 + 8500);
  const Summary bad_after = Summarize(wb.checks(), real_from, 1e300);  // every frame of the real stream
  const Reply st = server.Call("GET", "/v1/sessions/bad/stats");
  std::printf("good session delivered %.3f of sent while the other got garbage; bad session then received %d frames "
              "(decode errors %d)\n",
              ratio, bad_after.frames, st.body["decode_errors"].get<int>());
#if !defined(VEIL_SANITIZED_BUILD)
  EXPECT_GE(ratio, 0.95);
#endif
  ExpectOnlyCadenceLeaks(Summarize(cg, 0, 1e300), "the good session");
#if !defined(VEIL_SANITIZED_BUILD)
  EXPECT_GT(bad_after.frames, 60) << "the session that got garbage must work once real video arrives";
#else
  EXPECT_GT(bad_after.frames, 20) << "the session that got garbage must work once real video arrives";
#endif
  ExpectOnlyCadenceLeaks(bad_after, "the recovered session");
  EXPECT_EQ(server.Stop(), 0);
}

// Two sessions started together (one load script, a fleet reconnecting) put their periodic
// keyframes on frames apart: a VP8 keyframe costs ~1.7x an inter frame, and on the same frame
// they are the node's p99 (server/period_phases.h). Judged by when keyframes reach viewers.
TEST(Server, SessionsStartedTogetherSpreadTheirKeyframes) {
  const bool stagger = std::getenv("VEIL_TEST_NO_STAGGER") == nullptr;  // set: the control run
  // keyint 30 at 30 fps: a 1-s period. full_blur: encoded, no detection.
  ServerProcess server({"--max-sessions", "4", "--keyint", "30", "--mode", "full_blur", "--stagger-keyframes",
                        stagger ? "true" : "false"});
  ASSERT_TRUE(server.ok()) << server.log();
  std::mutex mu;
  std::vector<double> keys[2];
  std::vector<std::unique_ptr<RtpViewer>> viewers;
  std::vector<json> sessions;
  for (int i = 0; i < 2; ++i) {
    sessions.push_back(CreateSession(server, {{"id", "k" + std::to_string(i)}, {"audio", false}}));
    ViewerConfig vc;
    vc.decode = false;
    vc.audio = false;
    auto v = RtpViewer::Start(vc, {}, [&, i](uint32_t, double ms, size_t, bool key) {
      std::lock_guard lk(mu);
      if (key) keys[i].push_back(ms);
    });
    ASSERT_TRUE(v.ok()) << v.error();
    AddViewer(server, "k" + std::to_string(i), (*v)->video_port());
    viewers.push_back(std::move(*v));
  }
  const double t0 = NowMs();
  auto log0 = std::make_shared<SentLog>(), log1 = std::make_shared<SentLog>();
  Feed f0(sessions[0], log0, 7), f1(sessions[1], log1, 7);
  SleepMs(7000);
  f0.Stop();
  f1.Stop();
  std::lock_guard lk(mu);
  // Leave out each session's first keyframe: its first frame (its viewer joined before).
  std::vector<double> periodic[2];
  for (int i = 0; i < 2; ++i)
    if (!keys[i].empty()) periodic[i].assign(keys[i].begin() + 1, keys[i].end());
  double closest = 1e9;
  std::string list;
  for (double b : periodic[1])
    for (double a : periodic[0]) closest = std::min(closest, std::abs(a - b));
  for (int i = 0; i < 2; ++i) {
    list.append("session ").append(std::to_string(i)).append(":");
    for (double t : periodic[i]) list.append(" ").append(std::to_string(int(t - t0)));
    list.append("; ");
  }
  std::printf("keyframes after the first (ms from the start), stagger %s: %sclosest pair %.0f ms apart\n",
              stagger ? "on" : "off", list.c_str(), closest);
  // About one a period each while media flows (7 s, less the start).
  for (int i = 0; i < 2; ++i) {
    EXPECT_GE(periodic[i].size(), 4u) << list;
    EXPECT_LE(periodic[i].size(), 8u) << list;
  }
  // Phases half a period apart; the frames' own timing moves a keyframe by a frame or two.
  if (stagger) {
    EXPECT_GE(closest, 300) << list;
  }
  EXPECT_EQ(server.Stop(), 0);
}

}  // namespace
}  // namespace veil::test
