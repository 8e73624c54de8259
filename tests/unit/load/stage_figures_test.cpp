// veil load's stage figures (load/stage_figures.h) from a hand-made window: two sessions' logs
// and viewer counters, and a node's /metrics text at the window's two ends. Every expected
// figure is worked out by hand in the comments, not by the code under test.
#include "load/stage_figures.h"

#include <gtest/gtest.h>

namespace veil {
namespace {

const char* kNode = "http://127.0.0.1:9";

// One session's series in a node's /metrics: its processing histogram (buckets at 10, 20 and
// 40 ms, cumulative), frame counters and shed level.
std::string Series(const std::string& id, double le10, double le20, double le40, double inf, double sum_s,
                   double in, double sent, double stale, double fail_closed, double level) {
  const std::string l = "session=\"" + id + "\"";
  std::string t;
  t += "veil_session_processing_seconds_bucket{" + l + ",le=\"0.01\"} " + std::to_string(le10) + "\n";
  t += "veil_session_processing_seconds_bucket{" + l + ",le=\"0.02\"} " + std::to_string(le20) + "\n";
  t += "veil_session_processing_seconds_bucket{" + l + ",le=\"0.04\"} " + std::to_string(le40) + "\n";
  t += "veil_session_processing_seconds_bucket{" + l + ",le=\"+Inf\"} " + std::to_string(inf) + "\n";
  t += "veil_session_processing_seconds_sum{" + l + "} " + std::to_string(sum_s) + "\n";
  t += "veil_session_processing_seconds_count{" + l + "} " + std::to_string(inf) + "\n";
  t += "veil_session_frames_received_total{" + l + "} " + std::to_string(in) + "\n";
  t += "veil_session_frames_sent_total{" + l + "} " + std::to_string(sent) + "\n";
  t += "veil_session_stale_drops_total{" + l + "} " + std::to_string(stale) + "\n";
  t += "veil_session_fail_closed_frames_total{" + l + "} " + std::to_string(fail_closed) + "\n";
  t += "veil_session_shed_level{" + l + "} " + std::to_string(level) + "\n";
  return t;
}

std::unique_ptr<LoadSession> Session(const std::string& id, int received, std::vector<double> latencies) {
  auto s = std::make_unique<LoadSession>();
  s->id = id;
  s->node = kNode;
  s->received = received;
  s->sent_in_window = 600;
  s->latencies = std::move(latencies);
  return s;
}

ViewerCounters Viewer(uint64_t packets, uint64_t lost) {
  ViewerCounters v;
  v.rtp.packets = packets;
  v.rtp.lost = lost;
  return v;
}

// A 20-s window: sessions a and b, and a session "x" of someone else on the same node whose
// frames all took over 40 ms (it must not count in the stage's latency).
StageWindow Window(bool b_still_there) {
  StageWindow w;
  w.t_warm = 5000;
  w.t_end = 25000;
  w.wall0 = 5000;
  w.wall1 = 25000;
  w.node_urls = {kNode};
  const std::string x0 = Series("x", 0, 0, 0, 100, 10, 100, 100, 0, 0, 6);
  const std::string x1 = Series("x", 0, 0, 0, 700, 70, 700, 700, 0, 0, 6);
  w.m0[kNode] = ParsePromText(Series("a", 50, 100, 100, 100, 1.5, 110, 100, 0, 0, 0) +
                              Series("b", 0, 0, 100, 100, 3.0, 100, 100, 0, 0, 0) + x0 +
                              "veil_process_cpu_seconds_total 100\n"
                              "veil_thread_cpu_seconds_total{threads=\"frame\"} 90\n"
                              "veil_thread_cpu_seconds_total{threads=\"unnamed\"} 6\n");
  // In the window: a 600 frames (300 <= 10 ms, 300 in 10-20 ms, 9 s), 610 in, 10 stale, 5
  // fail-closed, shed level 2; b 560 frames (all 20-40 ms, 16.8 s), 600 in, 40 stale, level 4.
  w.m1[kNode] = ParsePromText(Series("a", 350, 700, 700, 700, 10.5, 720, 700, 10, 5, 2) +
                              "veil_session_decodes_given_up_total{session=\"a\"} 29\n" +
                              (b_still_there ? Series("b", 0, 0, 660, 660, 19.8, 700, 660, 40, 0, 4) : "") + x1 +
                              "veil_process_cpu_seconds_total 130\n"
                              "veil_thread_cpu_seconds_total{threads=\"frame\"} 117\n"
                              "veil_thread_cpu_seconds_total{threads=\"unnamed\"} 8\n"
                              "veil_thread_cpu_seconds_total{threads=\"http\"} 0.2\n");
  w.v0 = {Viewer(1000, 0), Viewer(1000, 0)};
  w.v1 = {Viewer(2998, 2), Viewer(3000, 0)};
  return w;
}

TEST(StageFigures, TheWindowsDeltasOfTheStagesOwnSessionsByHand) {
  LoadSessions sessions;
  sessions.push_back(Session("a", 600, {10, 20, 30}));  // 600 frames in 20 s: 30 fps
  sessions.push_back(Session("b", 560, {40}));          // 28 fps
  StageResult res;
  res.sessions = 2;
  FillStageFigures(LoadOptions{}, sessions, Window(true), res);
  EXPECT_DOUBLE_EQ(res.window_s, 20);
  EXPECT_DOUBLE_EQ(res.fps_mean, 29);
  EXPECT_DOUBLE_EQ(res.fps_worst, 28);
  EXPECT_DOUBLE_EQ(res.sent_fps_mean, 30);
  // Latencies 10, 20, 30, 40: the nearest rank of 0.5 of 4 is the third, of 0.99 the fourth.
  EXPECT_DOUBLE_EQ(res.e2e_p50_ms, 30);
  EXPECT_DOUBLE_EQ(res.e2e_p99_ms, 40);
  EXPECT_DOUBLE_EQ(res.e2e_max_ms, 40);
  // Processing over a's and b's 1160 frames only: (9 + 16.8) s / 1160 = 22.241 ms; the 0.99
  // rank (1148.4) lies in the 20-40 ms bucket, 548.4 of its 560 in: 20 + 20 * 548.4 / 560.
  EXPECT_NEAR(res.proc_mean_ms, 25800.0 / 1160, 1e-9);
  EXPECT_NEAR(res.proc_p99_ms, 20 + 20 * 548.4 / 560, 1e-9);
  EXPECT_NEAR(res.stale_pct, 100.0 * 50 / 1210, 1e-9);
  EXPECT_DOUBLE_EQ(res.fail_closed, 5);
  EXPECT_NEAR(res.decodes_given_up_pct, 100.0 * 29 / 1160, 1e-9);  // of the 1160 frames a and b sent
  EXPECT_DOUBLE_EQ(res.shed_level_mean, 3);
  EXPECT_DOUBLE_EQ(res.shed_level_max, 4);
  // 2 lost of 1998 + 2000 delivered and 2 lost.
  EXPECT_NEAR(res.viewer_loss_pct, 100.0 * 2 / 4000, 1e-9);
  // The node's CPU: 30 s in 20 s; per frame over every frame it sent (x's 600 too): 30000 / 1760.
  EXPECT_NEAR(res.server_cpu_pct, 150, 1e-9);
  EXPECT_NEAR(res.server_cpu_ms_per_frame, 30000.0 / 1760, 1e-9);
  // By kind of thread: frame 27 s and unnamed 2 s of the window's 20; http first seen at the
  // window's end (a kind that started in it) counts whole.
  ASSERT_EQ(res.server_cpu_pct_by_threads.size(), 3u);
  EXPECT_NEAR(res.server_cpu_pct_by_threads.at("frame"), 135, 1e-9);
  EXPECT_NEAR(res.server_cpu_pct_by_threads.at("unnamed"), 10, 1e-9);
  EXPECT_NEAR(res.server_cpu_pct_by_threads.at("http"), 1, 1e-9);
  // Per stage: the queue_wait histogram is absent here, so 0, not a neighbour's figure.
  EXPECT_DOUBLE_EQ(res.stage_mean_ms.at("queue_wait"), 0);
  ASSERT_EQ(res.nodes.count(kNode), 1u);
  EXPECT_EQ(res.nodes.at(kNode).sessions, 2);
  EXPECT_DOUBLE_EQ(res.nodes.at(kNode).fps_mean, 29);
  EXPECT_FALSE(res.nodes.at(kNode).passed);
  EXPECT_FALSE(res.passed);
  EXPECT_EQ(res.verdict, "p99 processing latency 39.6 ms (pass: < 33.3)");

  // The same window judged against a 40-ms mark fails for the decodes a gave up alone.
  LoadOptions lenient;
  lenient.pass_p99_ms = 40;
  StageResult again;
  FillStageFigures(lenient, sessions, Window(true), again);
  EXPECT_FALSE(again.passed);
  EXPECT_EQ(again.verdict, "the node gave up 2.50% of the forwarded frames' decodes (pass: none)");
  // ... and passes without them.
  StageWindow none = Window(true);
  none.m1[kNode] = ParsePromText(Series("a", 350, 700, 700, 700, 10.5, 720, 700, 10, 5, 2) +
                                 Series("b", 0, 0, 660, 660, 19.8, 700, 660, 40, 0, 4) +
                                 "veil_process_cpu_seconds_total 130\n");
  StageResult clean;
  FillStageFigures(lenient, sessions, none, clean);
  EXPECT_TRUE(clean.passed) << clean.verdict;
  EXPECT_EQ(clean.verdict, "");
}

// When the tail came: frames later than the mark (33.3 ms) end to end, by one-second slice of the
// window (it begins at 5000 ms). a: 40 ms at 7200 and 50 at 7900 (slice 2), 35 at 12050 (slice
// 7), 10 at 5100 (in time); b: 34 at 7500 (slice 2), 20 at 24999 (in time), and 33.3 at 9000
// (at the mark, in time). Four late frames in two slices, three of them in the one at 2 s.
TEST(StageFigures, LateFramesAreCountedByOneSecondSliceOfTheWindow) {
  LoadSessions sessions;
  sessions.push_back(Session("a", 600, {10, 40, 50, 35}));
  sessions.back()->arrivals = {5100, 7200, 7900, 12050};
  sessions.push_back(Session("b", 560, {34, 20, 33.3}));
  sessions.back()->arrivals = {7500, 24999, 9000};
  StageResult res;
  FillStageFigures(LoadOptions{}, sessions, Window(true), res);
  EXPECT_EQ(res.late_frames, 4);
  EXPECT_EQ(res.late_slices, 2);
  EXPECT_EQ(res.late_worst_slice_frames, 3);
  EXPECT_DOUBLE_EQ(res.late_worst_slice_at_s, 2);
  const nlohmann::json j = res.ToJson();
  EXPECT_EQ(j["late_frames"]["frames"], 4);
  EXPECT_EQ(j["late_frames"]["worst_slice_at_s"], 2.0);
  // Against a 45-ms mark only a's 50 ms is late: one slice.
  LoadOptions lenient;
  lenient.pass_p99_ms = 45;
  StageResult again;
  FillStageFigures(lenient, sessions, Window(true), again);
  EXPECT_EQ(again.late_frames, 1);
  EXPECT_EQ(again.late_slices, 1);
  EXPECT_EQ(again.late_worst_slice_frames, 1);
}

// The server ended b mid-stage: b's viewer still counts (its 28 fps), its series are gone and
// do not, and the stage fails whatever its figures.
TEST(StageFigures, ASessionTheServerEndedCountsForItsViewerAndFailsTheStage) {
  LoadSessions sessions;
  sessions.push_back(Session("a", 600, {10}));
  sessions.push_back(Session("b", 560, {12}));
  StageResult res;
  res.ended["b"] = "load shedding: newest session ended";
  FillStageFigures(LoadOptions{}, sessions, Window(false), res);
  EXPECT_DOUBLE_EQ(res.fps_worst, 28);
  // a alone: 600 frames, 9 s; its 0.99 rank (594) in the 10-20 ms bucket: 10 + 10 * 294 / 300.
  EXPECT_NEAR(res.proc_mean_ms, 15, 1e-9);
  EXPECT_NEAR(res.proc_p99_ms, 10 + 10 * 294.0 / 300, 1e-9);
  EXPECT_DOUBLE_EQ(res.shed_level_mean, 2);  // a's level; b has none left to count
  EXPECT_FALSE(res.passed);
  EXPECT_EQ(res.verdict, "the server ended 1 session(s) mid-stage: b: load shedding: newest session ended");
}

}  // namespace
}  // namespace veil
