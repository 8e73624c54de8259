// AI targets on loopback: a real `veil serve` with two real `veil worker`
// processes as its remote targets (KServe v2 gRPC) and two live sessions, one on each.
// One worker is killed mid-stream: its session must move to the other within
// a second, no received frame may show a face, and the metrics must tell the
// story; the worker restarts and takes the next new session.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <functional>
#include <map>

#include "load/prom_text.h"
#include "server_harness.h"

namespace veil::test {
namespace {

struct WorkerProcess {
  std::unique_ptr<ChildServer> child;
  std::string endpoint;  // 127.0.0.1:PORT
  std::string log;
};

WorkerProcess StartWorker(const std::string& listen = "127.0.0.1:0") {
  static int n = 0;
  WorkerProcess w;
  w.log = TempPath("worker-" + std::to_string(++n) + ".log");
  auto c = ChildServer::Start({}, w.log, VEIL_BIN, "worker", listen);
  EXPECT_TRUE(c.ok()) << c.error();
  if (!c.ok()) return w;
  w.child = std::move(*c);
  w.endpoint = "127.0.0.1:" + std::to_string(w.child->port());
  return w;
}

std::map<std::string, json> Targets(ServerProcess& s) {
  std::map<std::string, json> out;
  Reply r = s.Call("GET", "/v1/targets");
  for (const json& t : r.body["targets"]) out[t["name"].get<std::string>()] = t;
  return out;
}

std::string TargetOf(ServerProcess& s, const std::string& id) {
  Reply r = s.Call("GET", "/v1/sessions/" + id);
  return r.status == 200 ? r.body["ai_target"].get<std::string>() : "?";
}

double Metric(const std::string& text, const std::string& name,
              const std::map<std::string, std::string>& labels) {
  return SumValue(ParsePromText(text), name, labels);
}

// Polls `done` every `poll_ms` until it holds: the ms from `start_ms` until then, or -1 after
// `limit_ms`.
double MsUntil(double start_ms, double limit_ms, const std::function<bool()>& done,
               int poll_ms = 20) {
  while (NowMs() - start_ms < limit_ms) {
    if (done()) return NowMs() - start_ms;
    SleepMs(poll_ms);
  }
  return -1;
}

struct Live {
  std::string id;
  std::shared_ptr<SentLog> log = std::make_shared<SentLog>();
  std::unique_ptr<Watch> watch;
  std::unique_ptr<Feed> feed;
};

// The leakcheck clip at 640x360 (3 sessions + 2 workers + the checking fit a slow 2-core machine
// at 360p; with 5 sessions our VM at half speed had every session fail-closed, the moved ones
// and the survivor's own alike, for want of CPU, not of a target): its
// faces are the annotated boxes, judged with leakcheck's criterion, not faces veil's detector found.
constexpr const char* kClip = "leakcheck/input_360p.ivf";

std::unique_ptr<Live> StartLive(ServerProcess& server, const std::string& id,
                                const SourceClip& src, const std::string& mode = "anonymize") {
  auto l = std::make_unique<Live>();
  l->id = id;
  const json s = CreateSession(server, {{"id", id}, {"mode", mode}});
  l->watch = std::make_unique<Watch>("vp8", l->log, src);
  AddViewer(server, id, l->watch->port());
  l->feed = std::make_unique<Feed>(s, l->log, 0, src);
  return l;
}

TEST(Failover, KilledWorkerSessionsMoveWithinASecondWithoutAFace) {
  const SourceClip& src = Source(kClip);
  ASSERT_GT(src.frames, 100);
  ASSERT_TRUE(src.ground_truth) << "the 360p leakcheck clip is missing: run scripts/make-test-media.sh";
  WorkerProcess w1 = StartWorker(), w2 = StartWorker();
  ASSERT_TRUE(w1.child && w2.child);
  // A fixed cap: admission by capacity counts each session as 720p30 until its first frame,
  // and 3 of those do not fit on 2 cores; these are 360p.
  ServerProcess server({"--targets", w1.endpoint + "," + w2.endpoint, "--max-sessions", "3"});
  ASSERT_TRUE(server.ok()) << server.log();
  ASSERT_EQ(server.Call("GET", "/readyz").status, 200);

  std::vector<std::unique_ptr<Live>> live;
  for (const char* id : {"s0", "s1"}) live.push_back(StartLive(server, id, src));
  // Least-loaded assignment: one stream each, whatever the order.
  auto t0 = Targets(server);
  EXPECT_EQ(t0[w1.endpoint]["active_streams"], 1);
  EXPECT_EQ(t0[w2.endpoint]["active_streams"], 1);
  // The kill falls ~6.3 s into the clip: its third shot (frames 180-269), a wide one whose
  // background tells a whole-frame mosaic from a picture; the close-ups' masks cover nearly all.
  SleepMs(6300);

  const std::string victim = TargetOf(server, "s0");
  ASSERT_TRUE(victim == w1.endpoint || victim == w2.endpoint) << victim;
  const std::string survivor = victim == w1.endpoint ? w2.endpoint : w1.endpoint;
  WorkerProcess& dead = victim == w1.endpoint ? w1 : w2;
  const int dead_port = dead.child->port();
  std::vector<std::string> moved;
  for (auto& l : live)
    if (TargetOf(server, l->id) == victim) moved.push_back(l->id);
  ASSERT_EQ(moved.size(), 1u);
  const std::string before = server.Call("GET", "/metrics").text;

  const double kill_ms = NowMs();
  dead.child->Stop(SIGKILL);
  const double all_moved_ms = MsUntil(kill_ms, 3000, [&] {
    for (const auto& id : moved)
      if (TargetOf(server, id) != survivor) return false;
    return true;
  });
  std::printf("session %s moved %s -> %s in %.0f ms\n", moved[0].c_str(),
              victim.c_str(), survivor.c_str(), all_moved_ms);
  EXPECT_GE(all_moved_ms, 0) << "sessions never left the dead worker";
  EXPECT_LT(all_moved_ms, 1000) << "sessions must move within one second";
  auto t1 = Targets(server);
  EXPECT_FALSE(t1[victim]["healthy"].get<bool>());
  EXPECT_FALSE(t1[victim]["down_reason"].get<std::string>().empty());
  EXPECT_EQ(t1[survivor]["active_streams"], 2);
  SleepMs(1000);  // everything on the survivor
  const std::string moved_1s = server.Call("GET", "/metrics").text;
  SleepMs(2000);
  const double settled_ms = NowMs();
  const std::string after = server.Call("GET", "/metrics").text;

  // The worker comes back on its port: it rejoins and the next session goes to it.
  WorkerProcess back = StartWorker("127.0.0.1:" + std::to_string(dead_port));
  ASSERT_TRUE(back.child) << "restart on port " << dead_port;
  const double rejoin_ms = MsUntil(
      NowMs(), 5000, [&] { return Targets(server)[victim]["healthy"].get<bool>(); }, 50);
  std::printf("restarted worker rejoined after %.0f ms\n", rejoin_ms);
  ASSERT_GE(rejoin_ms, 0) << "the restarted worker never rejoined";
  live.push_back(StartLive(server, "s2", src));
  EXPECT_EQ(TargetOf(server, "s2"), victim)
      << "a new session goes to the idle target, not the one with 2";
  EXPECT_EQ(TargetOf(server, "s0"), survivor)
      << "assignments are stable: nothing moves back on its own";
  SleepMs(2000);
  for (auto& l : live) l->feed->Stop();
  SleepMs(300);

  // Privacy on every received frame, judged against the clip's annotated faces: not one face in
  // the moved sessions from the kill until 2 s after, and the moved sessions are served again.
  int shown_mosaic = 0;
  for (auto& l : live) {
    const auto cs = l->watch->checks();
    const Summary all = Summarize(cs, 0, 1e300);
    const Summary fault = Summarize(cs, kill_ms - 100, kill_ms + 2000);
    const bool was_moved = std::find(moved.begin(), moved.end(), l->id) != moved.end();
    // Whole-frame mosaics, told from pictures by the background's in-cell gradient against the
    // source frame's (this clip's pictures are smooth at 360p; a close-up has no background).
    auto whole = [&](double from, double to, int* judged) {
      int n = 0;
      for (const FrameCheck& c : cs)
        if (c.sent_ms >= from && c.sent_ms < to && c.Judgeable()) {
          ++*judged;
          n += c.WholeFrameMosaic();
        }
      return n;
    };
    if (std::getenv("VEIL_TEST_VERBOSE"))
      for (size_t i = 0; i < cs.size(); i += 10)
        std::printf("  %s frame %d: background gradient %.3f, source %.3f, whole frame %.3f\n", l->id.c_str(),
                    cs[i].index, cs[i].bg_grad, cs[i].src_bg_grad, cs[i].grad);
    int judged_fault = 0, judged_on = 0;
    const int whole_fault = whole(kill_ms - 100, kill_ms + 2000, &judged_fault);
    const int whole_on = whole(kill_ms + 1000, settled_ms, &judged_on);
    if (was_moved) {
      int judged = 0;
      shown_mosaic += whole(kill_ms, settled_ms, &judged);
    }
    std::printf(
        "%s%s: %d frames, %d faces, %d visible; failover window %d frames (%d of %d wide shots "
        "whole-frame mosaic), %d faces visible; 1-3 s after the kill: %d/%d wide shots whole-frame\n",
        l->id.c_str(), was_moved ? " (moved)" : "", all.frames, all.faces, all.leaked, fault.frames,
        whole_fault, judged_fault, fault.leaked, whole_on, judged_on);
    for (const FrameCheck& c : cs)
      if (c.leaked)
        std::printf("  leak: frame %d sent %+.0f ms after the kill\n", c.index,
                    c.sent_ms - kill_ms);
    if (was_moved) {
      EXPECT_EQ(fault.leaked, 0) << l->id << ": a face left unpixelated during the failover";
    }
    // Elsewhere the engine's own bound applies: on a 2-core machine 3 sessions, 2 workers and
    // this checker can overload the CPU, results come late (still within max_age_ms) and a mask can
    // trail a moving face for a frame; the same share the other live tests allow, every leak
    // printed.
    ExpectOnlyCadenceLeaks(fault, (l->id + " failover window").c_str());
    ExpectOnlyCadenceLeaks(all, l->id.c_str());
    EXPECT_GT(all.frames, l->id == "s2" ? 40 : 100) << l->id;
    // Served by the survivor, not left fail-closed (which would be every frame, ~60 in these 2 s;
    // CPU overload on a slow 2-core machine running 3 sessions, 2 workers and this checker makes
    // some results late). Counted by the server: the viewers' mosaic measure is tuned for 720p.
    // The survivor's own session is printed as the control.
    const double fc = Metric(after, "veil_session_fail_closed_frames_total", {{"session", l->id}}) -
                      Metric(moved_1s, "veil_session_fail_closed_frames_total", {{"session", l->id}});
    if (l->id != "s2") std::printf("  %s: %.0f fail-closed frames 1-3 s after the kill\n", l->id.c_str(), fc);
    if (was_moved) {
      EXPECT_LT(fc, 30) << l->id << ": not served after the move";
    }
  }
  // The metrics tell the story: one target down once, two sessions moved, and the
  // fail-closed frames of the moved sessions counted (at least those the viewers saw).
  double fail_closed = 0;
  for (const auto& id : moved)
    fail_closed += Metric(after, "veil_session_fail_closed_frames_total", {{"session", id}}) -
                   Metric(before, "veil_session_fail_closed_frames_total", {{"session", id}});
  std::printf(
      "fail-closed frames of the moved sessions from the kill to +3 s: %.0f counted, %d seen "
      "whole-frame\n",
      fail_closed, shown_mosaic);
  EXPECT_GE(fail_closed + 2, shown_mosaic)
      << "every whole-frame mosaic a viewer saw is a counted fail-closed frame";
  EXPECT_EQ(Metric(after, "veil_ai_target_down_total", {{"target", victim}}), 1);
  EXPECT_EQ(Metric(after, "veil_ai_target_down_total", {{"target", survivor}}), 0);
  EXPECT_EQ(Metric(after, "veil_ai_session_moves_total", {}), 1);
  EXPECT_EQ(Metric(after, "veil_ai_target_up", {{"target", victim}}), 0);
  // With remote targets (wire bytes, target latency): still Prometheus' naming conventions.
  const RunResult lint = PromtoolCheck(after);
  EXPECT_EQ(lint.rc, 0) << lint.out;
  EXPECT_EQ(lint.out, "") << "promtool check metrics";
  const std::string events = server.Call("GET", "/v1/events").text;
  EXPECT_NE(events.find("ai_target_down"), std::string::npos);
  EXPECT_NE(events.find("ai_target_up"), std::string::npos);
  EXPECT_NE(events.find("session_moved"), std::string::npos);
  live.clear();
  EXPECT_EQ(server.Stop(), 0);
  EXPECT_EQ(back.child->Stop(), 0);
  EXPECT_EQ(w1.child ? (victim == w1.endpoint ? 0 : w1.child->Stop()) : 0, 0);
  EXPECT_EQ(w2.child ? (victim == w2.endpoint ? 0 : w2.child->Stop()) : 0, 0);
}

// A worker that stops answering (SIGSTOP: connections stay open, nothing comes back) is marked down
// by its calls' deadline and its session moves within a second; resumed, it rejoins.
TEST(Failover, WorkerThatStopsAnsweringIsMarkedDownByItsDeadline) {
  const SourceClip& src = Source(kClip);
  ASSERT_GT(src.frames, 100);
  WorkerProcess w1 = StartWorker(), w2 = StartWorker();
  ASSERT_TRUE(w1.child && w2.child);
  // A fixed cap, as above: two sessions counted as 720p30 until their first frame may not fit
  // the capacity model's budget on a loaded 2-core machine.
  ServerProcess server({"--targets", w1.endpoint + "," + w2.endpoint, "--max-sessions", "4"});
  ASSERT_TRUE(server.ok()) << server.log();
  std::vector<std::unique_ptr<Live>> live;
  for (const char* id : {"a", "b"}) live.push_back(StartLive(server, id, src));
  SleepMs(2500);
  const std::string victim = TargetOf(server, "a");
  ASSERT_TRUE(victim == w1.endpoint || victim == w2.endpoint) << victim;
  const std::string survivor = victim == w1.endpoint ? w2.endpoint : w1.endpoint;
  ASSERT_EQ(TargetOf(server, "b"), survivor);
  const pid_t pid = (victim == w1.endpoint ? w1 : w2).child->pid();

  const int fc0 = server.Call("GET", "/v1/sessions/a/stats").body["fail_closed_frames"].get<int>();
  const double stop_ms = NowMs();
  ASSERT_EQ(kill(pid, SIGSTOP), 0);
  const double moved_ms = MsUntil(stop_ms, 3000, [&] { return TargetOf(server, "a") == survivor; });
  const std::string why = Targets(server)[victim]["down_reason"].get<std::string>();
  std::printf("stopped worker: session moved after %.0f ms (reason: %s)\n", moved_ms, why.c_str());
  EXPECT_GE(moved_ms, 0) << "the session never left the silent worker";
  EXPECT_LT(moved_ms, 1000) << "sessions must move within one second";
  EXPECT_NE(why.find("DEADLINE_EXCEEDED"), std::string::npos) << why;
  SleepMs(1500);
  const int fc1 = server.Call("GET", "/v1/sessions/a/stats").body["fail_closed_frames"].get<int>();
  ASSERT_EQ(kill(pid, SIGCONT), 0);
  const double rejoin_ms =
      MsUntil(NowMs(), 3000, [&] { return Targets(server)[victim]["healthy"].get<bool>(); });
  std::printf("resumed worker rejoined after %.0f ms\n", rejoin_ms);
  EXPECT_GE(rejoin_ms, 0) << "the resumed worker never rejoined";
  for (auto& l : live) l->feed->Stop();
  SleepMs(300);
  const Summary a = Summarize(live[0]->watch->checks(), stop_ms - 100, stop_ms + 2000);
  std::printf(
      "session a from the stop to +2 s: %d frames, %d whole-frame mosaic, %d faces leaked; %d "
      "fail-closed frames counted\n",
      a.frames, a.mosaic, a.leaked, fc1 - fc0);
  for (const FrameCheck& c : live[0]->watch->checks())
    if (std::getenv("VEIL_TEST_VERBOSE") && c.sent_ms > stop_ms - 200 && c.sent_ms < stop_ms + 1200)
      std::printf("  frame %d sent %+.0f ms: grad %.2f, %d faces\n", c.index, c.sent_ms - stop_ms,
                  c.grad, c.faces);
  EXPECT_GT(a.frames, 30);
  EXPECT_EQ(a.leaked, 0) << "no face while the worker was silent";
  // ~500 ms without a result: everything past max_age_ms (200) is fail-closed, and counted.
  EXPECT_GE(fc1 - fc0, 5) << "the frames without a fresh result are whole-frame mosaics";
  live.clear();
  EXPECT_EQ(server.Stop(), 0);
  EXPECT_EQ(w1.child->Stop(), 0);
  EXPECT_EQ(w2.child->Stop(), 0);
}

// No healthy target: the server stays up, says why, and every anonymize frame is a whole-frame
// mosaic.
TEST(Failover, NoHealthyTargetFailsClosedAndSaysWhy) {
  const SourceClip& src = Source(kClip);
  // A fixed limit: admission by measured capacity is server_test's AdmitsByMeasuredCapacity's to
  // judge (here it refused the control session on a slow machine still busy with the last test).
  ServerProcess server({"--targets", "127.0.0.1:9", "--max-sessions", "2", "--set",
                        "inference.probe_interval_ms=100"});  // discard port: nobody
  ASSERT_TRUE(server.ok()) << server.log();
  Reply ready = server.Call("GET", "/readyz");
  EXPECT_EQ(ready.status, 503);
  EXPECT_NE(ready.text.find("no healthy AI target"), std::string::npos) << ready.text;
  EXPECT_NE(ready.text.find("127.0.0.1:9"), std::string::npos) << ready.text;
  auto l = StartLive(server, "n", src);
  // The control: a bypass session of the same clip, judged the same way, must show the faces
  // (the judge can fail).
  auto control = StartLive(server, "control", src, "bypass");
  SleepMs(3000);
  l->feed->Stop();
  control->feed->Stop();
  SleepMs(300);
  const Summary s = Summarize(l->watch->checks(), 0, 1e300);
  const Summary c = Summarize(control->watch->checks(), 0, 1e300);
  std::printf("no target: %d frames, %d whole-frame mosaic, %d of %d faces visible; bypass control %d of %d\n",
              s.frames, s.mosaic, s.leaked, s.faces, c.leaked, c.faces);
  EXPECT_GT(s.frames, 50);
  EXPECT_GT(s.faces, 50);
  EXPECT_EQ(s.leaked, 0);
  EXPECT_GE(c.leaked, c.faces * 9 / 10) << "the judge must see the faces bypass leaves";
  EXPECT_GT(c.faces, 50);
  // A whole-frame mosaic by either judge: almost no gradient inside 40-px cells, or (the 360p
  // clip's cells are smaller than 40 px, and coding noise after a keyframe lifts the first
  // judge to 0.22 in one frame of ~90) a background keeping under 30% of the source's.
  int mosaic = 0;
  for (const FrameCheck& f : l->watch->checks()) {
    const bool m = f.grad < 0.2 || (f.Judgeable() && f.WholeFrameMosaic());
    mosaic += m;
    if (!m)
      std::printf("not a whole-frame mosaic: source frame %d, grad %.3f, background %.3f of the source's %.3f\n",
                  f.index, f.grad, f.bg_grad, f.src_bg_grad);
  }
  int control_mosaic = 0;  // the same judge on the bypass control: it must see none
  for (const FrameCheck& f : control->watch->checks())
    control_mosaic += f.grad < 0.2 || (f.Judgeable() && f.WholeFrameMosaic());
  EXPECT_EQ(control_mosaic, 0);
#if !defined(VEIL_SANITIZED_BUILD)
  EXPECT_EQ(mosaic, s.frames) << "without any AI target every frame is a whole-frame mosaic";
#else
  EXPECT_GT(mosaic, 0) << "sanitized: the rate is not the subject here, but whole-frame mosaics must arrive";
#endif
  Reply st = server.Call("GET", "/v1/sessions/n/stats");
  EXPECT_GE(st.body["fail_closed_frames"].get<int>(), s.frames);
  EXPECT_EQ(st.body["ai_target"], "");
  EXPECT_TRUE(server.alive());
  EXPECT_EQ(server.Stop(), 0);
}

}  // namespace
}  // namespace veil::test
