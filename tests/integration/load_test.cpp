// veil load against the real server on loopback: a short ramp with sane
// figures (with an emulated operator page polling), compare mode catching a
// costly setting, and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <thread>

#include "server_process.h"

namespace veil::test {
namespace {

json ReadJson(const std::string& path) {
  std::ifstream f(path);
  return json::parse(f, nullptr, false);
}

size_t SessionsOn(ServerProcess& s) { return s.Call("GET", "/v1/sessions").body["sessions"].size(); }

TEST(Load, ShortRampGivesSaneFigures) {
  // A fixed cap: the ramp's figures are the subject, and on a busy 2-core machine the capacity
  // model (learned from the first session) may refuse the second one (seen once in CI).
  // 360p: two anonymized 720p30 sessions are all a 2-core machine serves (docs/capacity.md), and
  // on a slower one the second stage fell to 26 fps; capacity is veil load's figure, not this
  // test's mark, which is that the figures are sane.
  ServerProcess server({"--max-sessions", "2"});
  ASSERT_TRUE(server.ok()) << server.log();
  const std::string out = TempPath("load-ramp");
  RunResult r = RunVeil("load --server " + server.url() + " -i " + Media("sample_360p30.ivf") +
                        " --stages 1,2 --stage-seconds 5 --warmup 1.5 --all-stages --page-poll 250 --out " + out);
  std::printf("%s\n", r.out.c_str());
  EXPECT_TRUE(r.rc == 0 || r.rc == 1) << r.out;  // 1: a stage missed the pass mark (reported, not an error)
  const json j = ReadJson(out + "/load.json");
  ASSERT_TRUE(j.is_object()) << "no load.json";
  ASSERT_EQ(j["runs"].size(), 1u);
  const json& stages = j["runs"][0]["stages"];
  ASSERT_EQ(stages.size(), 2u);
  for (const auto& s : stages) {
    SCOPED_TRACE(s.dump());
    EXPECT_GT(s["window_s"].get<double>(), 3.0);
#if !defined(VEIL_SANITIZED_BUILD)
    EXPECT_NEAR(s["received_fps_mean"].get<double>(), 30.0, 3.0);  // the input's rate
#endif
    const double p50 = s["e2e_latency_ms"]["p50"], p99 = s["e2e_latency_ms"]["p99"];
    EXPECT_GT(p50, 0.0);
    EXPECT_LT(p99, 1000.0);
    EXPECT_GT(s["processing_ms"]["mean"].get<double>(), 0.0);
    EXPECT_LT(s["processing_ms"]["p99"].get<double>(), 1000.0);
    EXPECT_EQ(s["viewer_rtp_loss_pct"].get<double>(), 0.0) << "loopback loses nothing";
    EXPECT_GT(s["stage_mean_ms"]["encode"].get<double>(), 0.0);
    EXPECT_GT(s["stage_mean_ms"]["detect"].get<double>(), 0.0);
    EXPECT_GT(s["server_cpu_pct"].get<double>(), 10.0);
    EXPECT_GE(s["tool_cpu_pct"].get<double>(), 0.0);
    EXPECT_EQ(s["session_fps"].size(), s["sessions"].get<size_t>());
    EXPECT_GT(s["server_cpu_ms_per_frame"].get<double>(), 1.0);
    // The open operator page it emulates: every session's snapshot about 4 times a second, none failed.
    EXPECT_GT(s["page_poll"]["snapshots_per_s"].get<double>(), 2.0 * s["sessions"].get<double>());
    EXPECT_GT(s["page_poll"]["snapshot_ms"].get<double>(), 0.0);
    EXPECT_EQ(s["page_poll"]["failures"].get<double>(), 0.0);
  }
  for (const char* f : {"/load.md", "/load.csv", "/load.svg"}) EXPECT_TRUE(std::ifstream(out + f).good()) << f;
  EXPECT_EQ(SessionsOn(server), 0u) << "the tool deletes every session it created";
  RunResult e = RunVeil("load --explain --out " + out);
  EXPECT_EQ(e.rc, 0);
  EXPECT_NE(e.out.find("dominant stage:"), std::string::npos) << e.out;
  EXPECT_EQ(server.Stop(), 0);
}

// --run-admitted: offered 3 sessions, a node with a cap of 2 admits 2 and refuses the 3rd with
// 503 before any media; the stage is measured on the 2 admitted, the table and JSON say 2 of 3
// with 1 refused and why, and the run ends there as asked (not an error exit).
TEST(Load, RunAdmittedMeasuresTheAdmittedSessionsAndCountsTheRefused) {
  ServerProcess server({"--max-sessions", "2"});
  ASSERT_TRUE(server.ok()) << server.log();
  const std::string out = TempPath("load-admitted");
  RunResult r = RunVeil("load --server " + server.url() + " -i " + Media("sample_360p30.ivf") +
                        " --stages 1,3,4 --stage-seconds 4 --warmup 1.5 --run-admitted --out " + out);
  std::printf("%s\n", r.out.c_str());
  EXPECT_TRUE(r.rc == 0 || r.rc == 1) << r.out;  // measured; 1 only if a stage missed the pass mark
  const json j = ReadJson(out + "/load.json");
  ASSERT_TRUE(j.is_object()) << "no load.json";
  const json& stages = j["runs"][0]["stages"];
  ASSERT_EQ(stages.size(), 2u) << "the run ends at the stage refused in part: " << j.dump();
  EXPECT_EQ(stages[0]["refused"], 0);
  const json& s = stages[1];
  EXPECT_EQ(s["sessions"], 2);
  EXPECT_EQ(s["offered"], 3);
  EXPECT_EQ(s["refused"], 1);
  EXPECT_NE(s["refusal"].get<std::string>().find("session limit reached"), std::string::npos) << s.dump();
  EXPECT_GT(s["window_s"].get<double>(), 2.0);
  EXPECT_EQ(s["session_fps"].size(), 2u);
  for (const auto& fps : s["session_fps"]) EXPECT_GT(fps.get<double>(), 10.0) << s.dump();
  // The frame phases and clocks (drift, the default) are spread over the 2 that run, not the 3
  // offered: half a frame apart (not a third), clocks at -/+ half the step (2.5 s measured:
  // 13333 ppm), not -1 and 0 steps.
  const double frame_ms = 1000.0 / 30;
  ASSERT_EQ(s["frame_phases_ms"].size(), 2u) << s.dump();
  const double apart = s["frame_phases_ms"][1].get<double>() - s["frame_phases_ms"][0].get<double>();
  EXPECT_LT(std::abs(std::fmod(apart - frame_ms / 2 + 1.5 * frame_ms, frame_ms) - 0.5 * frame_ms), 4.0)
      << "phases " << s["frame_phases_ms"].dump() << " ms: not half a frame apart";
  for (int i = 0; i < 2; ++i)
    EXPECT_NEAR(s["clock_ppm"][i].get<double>(), (i - 0.5) * 1e6 * frame_ms / 2500.0, 3000.0) << s["clock_ppm"].dump();
  EXPECT_NE(j["runs"][0]["stopped"].get<std::string>().find("2 of 3 offered sessions admitted"), std::string::npos);
  std::ifstream md(out + "/load.md");
  const std::string table((std::istreambuf_iterator<char>(md)), std::istreambuf_iterator<char>());
  EXPECT_NE(table.find("| 2 of 3 offered (1 refused: 503) |"), std::string::npos) << table;
  EXPECT_EQ(SessionsOn(server), 0u) << "the tool deletes every session it created";
  // Without the flag the refusal stops the run (exit 3) and the stage is not measured.
  RunResult stop = RunVeil("load --server " + server.url() + " -i " + Media("sample_360p30.ivf") +
                           " --stages 3 --stage-seconds 4 --warmup 1.5 --out " + TempPath("load-refused"));
  EXPECT_EQ(stop.rc, 3) << stop.out;
  EXPECT_EQ(SessionsOn(server), 0u);
  EXPECT_EQ(server.Stop(), 0);
}

// veil load --compare on two configurations (TOML text, written to temp files named a and b)
// with the 720p clip and `args`; out: the output folder.
RunResult Compare(const std::string& a, const std::string& toml_a, const std::string& b, const std::string& toml_b,
                  const std::string& out, const std::string& args) {
  const std::string pa = TempPath(a), pb = TempPath(b);
  std::ofstream(pa) << toml_a;
  std::ofstream(pb) << toml_b;
  RunResult r = RunVeil("load --compare " + pa + " " + pb + " -i " + Media("sample_720p30.ivf") + " " + args +
                        " --out " + out);
  std::printf("%s\n", r.out.c_str());
  return r;
}

TEST(Load, CompareModeFindsACostlySetting) {
  // Two configurations that differ only in the detection size.
  const std::string out = TempPath("load-compare");
  RunResult r = Compare("small.toml", "[privacy]\ndetect_size = \"320x180\"\n", "large.toml",
                        "[privacy]\ndetect_size = \"960x540\"\n", out,
                        "--repeat 2 --stages 1 --stage-seconds 4 --warmup 1.5");
  ASSERT_EQ(r.rc, 0) << r.out;
  const json j = ReadJson(out + "/load.json");
  ASSERT_TRUE(j.contains("compare"));
  bool found = false;
  for (const auto& f : j["compare"]["figures"]) {
    if (f["name"] != "detect ms/frame @1") continue;
    found = true;
    EXPECT_EQ(f["a"]["values"].size(), 2u);
    EXPECT_GT(f["b"]["min"].get<double>(), f["a"]["max"].get<double>()) << "a larger detection size costs more";
    EXPECT_FALSE(f["overlap"].get<bool>());
  }
  EXPECT_TRUE(found) << j["compare"].dump();
  EXPECT_NE(r.out.find("| detect ms/frame @1 |"), std::string::npos);
}

// A configuration the server stops (here: a cap of one session, refused at the second) does not
// lose the compare: the runs go on, what they measured is compared, compare.md names the
// stopped run, and the tool exits 3.
TEST(Load, CompareModeKeepsARunTheServerStopped) {
  const std::string out = TempPath("load-compare-stopped");
  RunResult r = Compare("two.toml", "[server]\nmax_sessions = \"2\"\n", "one.toml", "[server]\nmax_sessions = \"1\"\n",
                        out, "--repeat 1 --stages 1,2 --stage-seconds 3 --warmup 1 --mode bypass");
  EXPECT_EQ(r.rc, 3) << r.out;
  std::ifstream in(out + "/compare.md");
  ASSERT_TRUE(in.good()) << "the compare was lost";
  const std::string md((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(md.find("| recv fps mean @1 | "), std::string::npos) << md;
  EXPECT_NE(md.find("- (no run measured it)"), std::string::npos) << md;
  EXPECT_NE(md.find("one.toml stopped: the server refused session 2 of 2"), std::string::npos) << md;
  const json j = ReadJson(out + "/load.json");
  EXPECT_EQ(j["runs"].size(), 2u);
}

// --frame-phase: aligned sends every session's frames at the same instants, spread puts them
// evenly over a frame interval, drift starts spread with neighbours' clocks a frame apart over
// the measured window (2 s here: 16667 ppm); the report gives each session's phase as its first
// frame went out (after session 1's, modulo a frame) and its clock as it sent (frames over the
// time they took), the keyframes staggered in every case.
TEST(Load, FramePhasesAreTheOnesAskedFor) {
  ServerProcess server({"--max-sessions", "4"});
  ASSERT_TRUE(server.ok()) << server.log();
  const double frame_ms = 1000.0 / 30;
  for (const char* phase : {"aligned", "spread", "drift"}) {
    SCOPED_TRACE(phase);
    const std::string out = TempPath(std::string("load-phase-") + phase);
    RunResult r = RunVeil("load --server " + server.url() + " -i " + Media("sample_360p30.ivf") +
                          " --stages 3 --stage-seconds 3 --warmup 1 --mode bypass --frame-phase " + phase + " --out " + out);
    EXPECT_TRUE(r.rc == 0 || r.rc == 1) << r.out;
    const json j = ReadJson(out + "/load.json");
    ASSERT_TRUE(j.is_object()) << "no load.json: " << r.out;
    EXPECT_EQ(j["runs"][0]["frame_phase"], phase);
    const json& ph = j["runs"][0]["stages"][0]["frame_phases_ms"];
    ASSERT_EQ(ph.size(), 3u) << r.out;
    for (size_t i = 0; i < 3; ++i) {
      const double want = std::string(phase) == "aligned" ? 0.0 : frame_ms * double(i) / 3.0;
      double off = std::fmod(ph[i].get<double>() - want + 1.5 * frame_ms, frame_ms) - 0.5 * frame_ms;
      EXPECT_LT(std::abs(off), 4.0) << "session " << i << ": phase " << ph[i] << " ms, asked for " << want;
      const double ppm = j["runs"][0]["stages"][0]["clock_ppm"][i].get<double>();
      const double want_ppm = std::string(phase) == "drift" ? (double(i) - 1.0) * 1e6 * frame_ms / 2000.0 : 0.0;
      EXPECT_NEAR(ppm, want_ppm, 3000.0) << "session " << i << "'s clock";
    }
    EXPECT_NE(r.out.find("| " + std::string(phase) + " |"), std::string::npos) << "the table lists the phases: " << r.out;
  }
  RunResult bad = RunVeil("load --server " + server.url() + " -i " + Media("sample_360p30.ivf") + " --frame-phase sideways");
  EXPECT_NE(bad.rc, 0);
  EXPECT_NE(bad.out.find("frame-phase"), std::string::npos) << bad.out;
  EXPECT_EQ(SessionsOn(server), 0u);
  EXPECT_EQ(server.Stop(), 0);
}

// A session the server ends mid-stage (here an operator's DELETE; in production load shedding's
// last level) fails the stage by name, whatever the figures; its viewer's figures count, and the
// server-side figures leave its vanished series out instead of going negative.
TEST(Load, ASessionEndedMidStageFailsTheStageByName) {
  ServerProcess server({"--max-sessions", "4"});
  ASSERT_TRUE(server.ok()) << server.log();
  const std::string out = TempPath("load-ended");
  RunResult r;
  std::thread tool([&] {
    r = RunVeil("load --server " + server.url() + " -i " + Media("sample_360p30.ivf") +
                " --stages 2 --stage-seconds 7 --warmup 1 --mode bypass --force --out " + out);
  });
  std::string victim;
  for (int i = 0; i < 100 && victim.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const json list = server.Call("GET", "/v1/sessions").body["sessions"];
    if (list.size() == 2) victim = list[1]["id"].get<std::string>();
  }
  ASSERT_FALSE(victim.empty()) << "the tool's sessions never appeared";
  std::this_thread::sleep_for(std::chrono::seconds(3));  // into the measured window
  EXPECT_EQ(server.Call("DELETE", "/v1/sessions/" + victim).status, 204);
  tool.join();
  EXPECT_EQ(r.rc, 1) << r.out;
  const json j = ReadJson(out + "/load.json");
  ASSERT_TRUE(j.is_object()) << r.out;
  const json& s = j["runs"][0]["stages"][0];
  SCOPED_TRACE(s.dump());
  EXPECT_FALSE(s["passed"].get<bool>());
  EXPECT_NE(s["verdict"].get<std::string>().find("ended 1 session(s) mid-stage: " + victim), std::string::npos);
  EXPECT_EQ(s["ended_by_server"].size(), 1u);
  EXPECT_GE(s["stale_drop_pct"].get<double>(), 0.0);
  EXPECT_GE(s["fail_closed_frames"].get<double>(), 0.0);
  EXPECT_LT(s["received_fps_worst"].get<double>(), 25.0) << "the ended session's viewer got frames for half the window";
  EXPECT_GT(s["processing_ms"]["p99"].get<double>(), 0.0) << "the other session's figures";
  EXPECT_EQ(SessionsOn(server), 0u);
  EXPECT_EQ(server.Stop(), 0);
}

TEST(Load, BadInputIsRefusedAndLeavesNothingBehind) {
  const std::string clip = Media("sample_720p30.ivf") + " --out " + TempPath("load-bad");
  RunResult r = RunVeil("load --server http://127.0.0.1:1 -i " + clip + " --stages 1 --stage-seconds 3 --warmup 1");
  EXPECT_EQ(r.rc, 3);
  EXPECT_NE(r.out.find("cannot reach http://127.0.0.1:1"), std::string::npos) << r.out;
  r = RunVeil("load --server http://127.0.0.1:1 -i " + Media("not_video.ivf"));
  EXPECT_NE(r.out.find("not_video.ivf"), std::string::npos) << r.out;
  EXPECT_EQ(r.rc, 2) << r.out;
  for (const char* stages : {"\"\"", "0", "2,,4", "5000", "-1", "two"}) {
    r = RunVeil(std::string("load --server http://127.0.0.1:1 -i ") + clip + " --stages " + stages);
    EXPECT_EQ(r.rc, 2) << stages << ": " << r.out;
    EXPECT_NE(r.out.find("stage"), std::string::npos) << r.out;
  }
  r = RunVeil("load --server http://127.0.0.1:1 -i " + clip + " --stage-seconds 3 --warmup 5");
  EXPECT_EQ(r.rc, 2) << r.out;

  // A server with a session the tool did not create: refused, nothing created.
  ServerProcess server({"--max-sessions", "2"});
  ASSERT_TRUE(server.ok()) << server.log();
  ASSERT_EQ(server.Call("POST", "/v1/sessions", R"({"id":"production"})").status, 201);
  r = RunVeil("load --server " + server.url() + " -i " + clip + " --stages 1 --stage-seconds 3 --warmup 1");
  EXPECT_EQ(r.rc, 3);
  EXPECT_NE(r.out.find("--force"), std::string::npos) << r.out;
  EXPECT_EQ(SessionsOn(server), 1u);
  // The server refuses a session mid-stage (its limit): the run stops, and what it created is gone.
  r = RunVeil("load --force --server " + server.url() + " -i " + clip + " --stages 2 --stage-seconds 3 --warmup 1");
  EXPECT_EQ(r.rc, 3);
  EXPECT_NE(r.out.find("session limit"), std::string::npos) << r.out;
  EXPECT_EQ(SessionsOn(server), 1u) << "only the session the tool did not create is left";
  // Ctrl-C mid-stage: the run stops and deletes what it created.
  const std::string cmd = std::string("sh -c '\"") + VEIL_BIN + "\" load --force --server " + server.url() + " -i " + clip +
                          " --stages 1 --stage-seconds 30 --warmup 1 & p=$!; sleep 2.5; kill -INT $p; wait $p; echo rc=$?' 2>&1";
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    pclose(p);
  }
  EXPECT_NE(out.find("interrupted"), std::string::npos) << out;
  EXPECT_NE(out.find("rc=3"), std::string::npos) << out;
  EXPECT_EQ(SessionsOn(server), 1u) << "Ctrl-C leaves nothing of the tool's behind";
  EXPECT_EQ(server.Stop(), 0);
}

}  // namespace
}  // namespace veil::test
