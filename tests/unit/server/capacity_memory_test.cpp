// server.capacity_state: what a node's cost model learned, kept across a restart, and used only
// where it was learned (server/capacity_memory.h).
#include "server/capacity_memory.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace veil {
namespace {

CapacityOptions TwoCores() {
  CapacityOptions o;
  o.cores = 2;
  o.cpu_share = 0.75;  // 1500 ms/s for sessions
  o.plan_speed_step = 2;
  return o;
}

SessionLoad At720p(Mode m, VideoCodec codec = VideoCodec::kVp8) {
  SessionLoad s;
  s.codec = codec;
  s.mode = m;
  s.width = 1280;
  s.height = 720;
  s.fps = 30;
  return s;
}

CapacityKey Key() {
  CapacityKey k;
  k.cpu = "AMD EPYC";
  k.cores = 2;
  k.build = "b1";
  k.settings = "s1";
  return k;
}

std::string TempPath(const char* name) {
  return std::string(::testing::TempDir()) + "veil-capmem-" + std::to_string(getpid()) + "-" + name;
}

// A model taught by sessions (anonymized VP8 at 12 ms a 720p frame over a 10-ms transcode, its
// encodes at steps 0 and 2) is written and read back into a model that learned nothing: the
// restored one admits what the taught one admits, not what the priors say, and goes on
// learning from the restored sample counts.
TEST(CapacityMemory, ARestoredModelAdmitsWhatTheTaughtOneAdmitted) {
  const std::map<VideoCodec, double> transcode = {{VideoCodec::kVp8, 10.0}, {VideoCodec::kH264, 10.0}};
  const std::map<VideoCodec, double> encode = {{VideoCodec::kVp8, 6.0}, {VideoCodec::kH264, 7.0}};
  CapacityModel taught(TwoCores(), transcode, encode);
  for (int i = 0; i < 12; ++i) {
    taught.Learn(At720p(Mode::kAnonymize), 12.0);
    taught.LearnEncode(VideoCodec::kVp8, 0, 1280, 720, 6.0);
    taught.LearnEncode(VideoCodec::kVp8, 2, 1280, 720, 4.5);
    taught.LearnEncode(VideoCodec::kVp8, 2, 1280, 720, 5.4, EncodePicture::kMosaic);  // full_blur's, apart
  }
  taught.Learn(At720p(Mode::kFullBlur, VideoCodec::kH264), 11.0);
  CapacityModel fresh(TwoCores(), transcode, encode);
  // The priors: 1.5x the VP8 transcode, nothing planned away without a measured share.
  ASSERT_EQ(fresh.CapacitySessions(VideoCodec::kVp8, Mode::kAnonymize), 3);  // 1500 / 450
  ASSERT_EQ(taught.CapacitySessions(VideoCodec::kVp8, Mode::kAnonymize), 4);  // (12 - 6 x 0.25) x 30 = 315

  const std::string text = CapacityStateJson(taught.Memory(), Key(), "2026-12-05T15:00:00Z");
  auto read = ParseCapacityState(text, Key());
  ASSERT_TRUE(read.ok()) << read.error() << "\n" << text;
  CapacityModel restored(TwoCores(), transcode, encode);
  restored.Restore(*read);
  EXPECT_EQ(restored.CapacitySessions(VideoCodec::kVp8, Mode::kAnonymize), 4);
  EXPECT_NEAR(restored.Ratio(VideoCodec::kVp8, Mode::kAnonymize), 1.2, 1e-9);
  EXPECT_EQ(restored.Samples(VideoCodec::kVp8, Mode::kAnonymize), 12);
  EXPECT_NEAR(restored.Ratio(VideoCodec::kH264, Mode::kFullBlur), 1.1, 1e-9);
  EXPECT_NEAR(restored.Ratio(VideoCodec::kH264, Mode::kAnonymize), 1.6, 1e-9) << "not learned: still the prior";
  EXPECT_NEAR(restored.EncodeMs(VideoCodec::kVp8, 2), 4.5, 1e-9);
  EXPECT_EQ(restored.EncodeSamples(VideoCodec::kVp8, 2), 12);
  EXPECT_NEAR(restored.SessionsPlanEncodeRatio(VideoCodec::kVp8), 0.75, 1e-9);
  EXPECT_EQ(restored.EncodeSamples(VideoCodec::kVp8, 1), 0);
  // The mosaic's encodes come back as a mosaic's, not mixed into the camera picture's.
  EXPECT_NEAR(restored.EncodeMs(VideoCodec::kVp8, 2, EncodePicture::kMosaic), 5.4, 1e-9);
  EXPECT_EQ(restored.EncodeSamples(VideoCodec::kVp8, 2, EncodePicture::kMosaic), 12);
  EXPECT_EQ(restored.EncodeSamples(VideoCodec::kVp8, 0, EncodePicture::kMosaic), 0);
  // Learning goes on from 12 samples (a tenth of the way), not from scratch (which would take
  // the new figure whole).
  restored.Learn(At720p(Mode::kAnonymize), 22.0);
  EXPECT_NEAR(restored.Ratio(VideoCodec::kVp8, Mode::kAnonymize), 1.2 + 0.1 * (2.2 - 1.2), 1e-9);
}

// The plan step's share taken within the same seconds comes back too, so a restarted node plans
// with it from its first session instead of with the two steps' own figures until it has
// learned 10 such seconds again; a file without it (from before it was kept) still reads, and a
// damaged entry is refused with a reason.
TEST(CapacityMemory, TheSameSecondPlanShareComesBack) {
  const std::map<VideoCodec, double> transcode = {{VideoCodec::kVp8, 10.0}};
  const std::map<VideoCodec, double> encode = {{VideoCodec::kVp8, 6.0}};
  CapacityModel taught(TwoCores(), transcode, encode);
  for (int i = 0; i < 12; ++i) {
    taught.Learn(At720p(Mode::kAnonymize), 12.0);
    taught.LearnEncode(VideoCodec::kVp8, 0, 1280, 720, 6.0);  // step 0 calm ...
    taught.LearnEncode(VideoCodec::kVp8, 2, 1280, 720, 5.4);  // ... step 2 loaded: 0.9 apart
    taught.LearnPairedEncodeRatio(VideoCodec::kVp8, 2, 0.7);  // 0.7 side by side
  }
  taught.LearnPairedEncodeRatio(VideoCodec::kVp8, 2, 0.95, EncodePicture::kMosaic);
  ASSERT_NEAR(taught.SessionsPlanEncodeRatio(VideoCodec::kVp8), 0.7, 1e-9);
  const std::string text = CapacityStateJson(taught.Memory(), Key(), "2026-12-06T13:00:00Z");
  auto read = ParseCapacityState(text, Key());
  ASSERT_TRUE(read.ok()) << read.error() << "\n" << text;
  CapacityModel restored(TwoCores(), transcode, encode);
  restored.Restore(*read);
  EXPECT_EQ(restored.PairedEncodeRatioSamples(VideoCodec::kVp8, 2), 12);
  EXPECT_NEAR(restored.SessionsPlanEncodeRatio(VideoCodec::kVp8), 0.7, 1e-9) << "not the steps' own 0.9";
  EXPECT_NEAR(restored.PlannedMsPerFrame(At720p(Mode::kAnonymize)), taught.PlannedMsPerFrame(At720p(Mode::kAnonymize)),
              1e-9);
  EXPECT_EQ(restored.PairedEncodeRatioSamples(VideoCodec::kVp8, 2, EncodePicture::kMosaic), 1) << "kept apart";
  EXPECT_EQ(restored.PairedEncodeRatioSamples(VideoCodec::kVp8, 1), 0);

  // A file from before the share was kept: read, nothing paired.
  nlohmann::json old_json = nlohmann::json::parse(text);
  ASSERT_EQ(old_json.erase("paired_shares"), 1u);
  const std::string old_text = old_json.dump(1);
  auto old_file = ParseCapacityState(old_text, Key());
  ASSERT_TRUE(old_file.ok()) << old_file.error() << "\n" << old_text;
  EXPECT_TRUE(old_file->paired.empty());
  EXPECT_EQ(old_file->encodes.size(), 2u);
  // Damaged entries.
  const auto refused = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    const size_t at = t.find(from, t.find("\"paired_shares\""));
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) t.replace(at, from.size(), to);
    auto r = ParseCapacityState(t, Key());
    return r.ok() ? std::string() : r.error();
  };
  EXPECT_NE(refused("\"ratio\": 0.7", "\"ratio\": -0.7").find("a paired share out of range"), std::string::npos);
  EXPECT_NE(refused("\"ratio\": 0.7", "\"ratio\": 1e9").find("a paired share out of range"), std::string::npos);
  EXPECT_NE(refused("\"step\": 2", "\"step\": 0").find("a paired share out of range"), std::string::npos);
  EXPECT_NE(refused("\"step\": 2", "\"step\": 2.5").find("a paired share out of range"), std::string::npos);
  EXPECT_NE(refused("\"picture\": \"camera\"", "\"picture\": \"sketch\"").find("unknown codec or picture"),
            std::string::npos);
  EXPECT_NE(refused("\"paired_shares\": [", "\"paired_shares\": 7, \"x\": [").find("paired_shares is not an array"),
            std::string::npos);
}

// A restart whose startup timing reads another transcode (a slow second: 13 ms where the
// learning process read 10) gets back the CPU per frame its sessions cost, 12 ms, not 1.2x of
// the new timing (15.6 ms, one session fewer); a file without the transcode (written before it
// was kept) restores the ratio as it is.
TEST(CapacityMemory, ALearnedCostComesBackAsTheSameCpuPerFrameWhateverTheNewTimingReads) {
  CapacityModel taught(TwoCores(), {{VideoCodec::kVp8, 10.0}}, {{VideoCodec::kVp8, 6.0}});
  for (int i = 0; i < 12; ++i) taught.Learn(At720p(Mode::kAnonymize), 12.0);
  const CapacityMemory kept = taught.Memory();
  ASSERT_EQ(kept.costs.size(), 1u);
  EXPECT_NEAR(kept.costs[0].transcode_ms, 10.0, 1e-12);
  auto read = ParseCapacityState(CapacityStateJson(kept, Key(), "2026-12-05T19:00:00Z"), Key());
  ASSERT_TRUE(read.ok()) << read.error();
  ASSERT_EQ(read->costs.size(), 1u);
  EXPECT_NEAR(read->costs[0].transcode_ms, 10.0, 1e-12);

  CapacityModel slow_start(TwoCores(), {{VideoCodec::kVp8, 13.0}}, {{VideoCodec::kVp8, 6.0}});
  slow_start.Restore(*read);
  EXPECT_NEAR(slow_start.CostMsPerFrame(At720p(Mode::kAnonymize)), 12.0, 1e-9);
  EXPECT_NEAR(slow_start.Ratio(VideoCodec::kVp8, Mode::kAnonymize), 12.0 / 13.0, 1e-9);
  // 12 ms x 30 = 360 ms/s a session (no plan share measured): 1500 / 360 = 4.2, as taught.
  EXPECT_EQ(slow_start.CapacitySessions(VideoCodec::kVp8, Mode::kAnonymize), 4);
  EXPECT_EQ(taught.CapacitySessions(VideoCodec::kVp8, Mode::kAnonymize), 4);

  CapacityMemory old = kept;
  old.costs[0].transcode_ms = 0;
  auto read_old = ParseCapacityState(CapacityStateJson(old, Key(), "2026-12-05T19:00:00Z"), Key());
  ASSERT_TRUE(read_old.ok()) << read_old.error();
  CapacityModel from_old(TwoCores(), {{VideoCodec::kVp8, 13.0}}, {{VideoCodec::kVp8, 6.0}});
  from_old.Restore(*read_old);
  EXPECT_NEAR(from_old.Ratio(VideoCodec::kVp8, Mode::kAnonymize), 1.2, 1e-9);
  EXPECT_NEAR(from_old.CostMsPerFrame(At720p(Mode::kAnonymize)), 15.6, 1e-9);
}

// Learned elsewhere, it is not used, and the reason names what differs.
TEST(CapacityMemory, AFileFromAnotherCpuCoresBuildOrSettingsIsNotUsed) {
  CapacityModel m(TwoCores(), {{VideoCodec::kVp8, 10.0}});
  m.Learn(At720p(Mode::kAnonymize), 12.0);
  const std::string text = CapacityStateJson(m.Memory(), Key(), "t");
  ASSERT_TRUE(ParseCapacityState(text, Key()).ok());
  struct Case {
    CapacityKey key;
    std::string why;
  };
  std::vector<Case> cases(4, {Key(), ""});
  cases[0].key.cpu = "Intel Xeon";
  cases[0].why = "learned on another CPU (AMD EPYC, this is Intel Xeon)";
  cases[1].key.cores = 4;
  cases[1].why = "learned on 2 cores, this node counts 4";
  cases[2].key.build = "b2";
  cases[2].why = "learned by another build of veil";
  cases[3].key.settings = "s2";
  cases[3].why = "learned with other encoder, decoder, privacy, detector, inference or executor settings";
  for (const Case& c : cases) {
    auto r = ParseCapacityState(text, c.key);
    ASSERT_FALSE(r.ok()) << c.why;
    EXPECT_EQ(r.status().code(), StatusCode::kConflict);
    EXPECT_EQ(r.error(), c.why);
  }
}

// A damaged or foreign file is an error that says so, never a crash and never figures out of
// range put into the model.
TEST(CapacityMemory, ADamagedFileIsRefusedWithAReason) {
  CapacityModel m(TwoCores(), {{VideoCodec::kVp8, 10.0}});
  for (int i = 0; i < 3; ++i) m.Learn(At720p(Mode::kAnonymize), 12.0);
  m.LearnEncode(VideoCodec::kVp8, 1, 1280, 720, 5.0);
  const std::string good = CapacityStateJson(m.Memory(), Key(), "t");
  const auto refused = [](const std::string& text) {
    auto r = ParseCapacityState(text, Key());
    return r.ok() ? std::string() : r.error();
  };
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    const size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? t : t.replace(at, from.size(), to);
  };
  // Every truncation of the file is refused (none parses as a shorter valid one).
  for (size_t n = 0; n < good.size() - 2; n += 7)
    EXPECT_NE(refused(good.substr(0, n)), "") << "truncated at " << n;
  EXPECT_NE(refused("[1, 2]"), "");
  EXPECT_NE(refused(std::string(2 << 20, ' ')).find("more than a capacity state ever holds"), std::string::npos);
  EXPECT_NE(refused(with("\"version\": 1", "\"version\": 2")).find("format version 2"), std::string::npos);
  EXPECT_NE(refused(with("\"ratio\": 1.2", "\"ratio\": -1.2")).find("a cost entry out of range"), std::string::npos);
  EXPECT_NE(refused(with("\"ratio\": 1.2", "\"ratio\": 1e300")).find("a cost entry out of range"), std::string::npos);
  EXPECT_NE(refused(with("\"ratio\": 1.2", "\"ratio\": \"1.2\"")).find("a cost entry out of range"), std::string::npos);
  for (const char* t : {"-10.0", "1e-05", "1e9", "\"10\""})
    EXPECT_NE(refused(with("\"transcode_ms\": 10.0", std::string("\"transcode_ms\": ") + t)).find("transcode_ms out of range"),
              std::string::npos)
        << t;
  EXPECT_NE(refused(with("\"mode\": \"anonymize\"", "\"mode\": \"blurry\"")).find("unknown codec or mode"),
            std::string::npos);
  EXPECT_NE(refused(with("\"step\": 1", "\"step\": 99")).find("an encode entry out of range"), std::string::npos);
  EXPECT_NE(refused(with("\"step\": 1", "\"step\": 1.5")).find("an encode entry out of range"), std::string::npos);
  EXPECT_NE(refused(with("\"samples\": 3", "\"samples\": 0")).find("out of range"), std::string::npos);
  EXPECT_NE(refused(with("\"codec\": \"vp8\"", "\"codec\": \"av1\"")).find("unknown codec"), std::string::npos);
  EXPECT_NE(refused(with("\"picture\": \"camera\"", "\"picture\": \"sketch\"")).find("unknown picture"), std::string::npos);
  EXPECT_NE(refused(with("\"picture\": \"camera\"", "\"picture\": 1")).find("unknown picture"), std::string::npos);
  // A file from before the picture was kept: its encodes are a camera picture's.
  auto old_file = ParseCapacityState(with("\"picture\": \"camera\",", ""), Key());
  ASSERT_TRUE(old_file.ok()) << old_file.error();
  ASSERT_EQ(old_file->encodes.size(), 1u);
  EXPECT_EQ(old_file->encodes[0].picture, EncodePicture::kCamera);
  EXPECT_NE(refused(with("\"cpu\": \"AMD EPYC\"", "\"cpu\": 7")).find("no node key"), std::string::npos);
  EXPECT_EQ(refused(good), "");
}

// On disk: no file yet is kNotFound; a save replaces the file whole and leaves no temporary
// file; a directory that cannot be written is refused at startup with its name.
TEST(CapacityMemory, SavedWholeAndReadBack) {
  const std::string path = TempPath("state.json");
  std::remove(path.c_str());
  auto none = LoadCapacityState(path, Key());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  CapacityModel m(TwoCores(), {{VideoCodec::kVp8, 10.0}});
  m.Learn(At720p(Mode::kAnonymize), 13.0);
  ASSERT_TRUE(SaveCapacityState(path, CapacityStateJson(m.Memory(), Key(), "t")).ok());
  m.Learn(At720p(Mode::kAnonymize), 11.0);  // 12.0 now
  ASSERT_TRUE(SaveCapacityState(path, CapacityStateJson(m.Memory(), Key(), "t")).ok());
  EXPECT_FALSE(std::ifstream(path + ".tmp").good()) << "the temporary file was left";
  auto back = LoadCapacityState(path, Key());
  ASSERT_TRUE(back.ok()) << back.error();
  ASSERT_EQ(back->costs.size(), 1u);
  EXPECT_NEAR(back->costs[0].ratio, 1.2, 1e-9);
  EXPECT_EQ(back->costs[0].samples, 2);
  std::remove(path.c_str());
  EXPECT_TRUE(CheckCapacityStatePath(path).ok());
  const Status no_dir = CheckCapacityStatePath("/nonexistent-veil-dir/state.json");
  EXPECT_NE(no_dir.message().find("its directory /nonexistent-veil-dir is not writable"), std::string::npos)
      << no_dir.message();
  EXPECT_FALSE(CheckCapacityStatePath(TempPath("dir/")).ok());
  EXPECT_FALSE(SaveCapacityState("/nonexistent-veil-dir/state.json", "{}").ok());
}

// This process's key: its CPU model, the cores given, its own executable, and a hash of the settings.
TEST(CapacityMemory, ThisNodesKeyChangesWithTheSettingsText) {
  const CapacityKey a = ThisNodeKey(2, "privacy.detect_size = \"640x360\"\n");
  const CapacityKey b = ThisNodeKey(2, "privacy.detect_size = \"320x180\"\n");
  EXPECT_FALSE(a.cpu.empty());
  EXPECT_EQ(a.build.size(), 64u);
  EXPECT_EQ(a.build, b.build);
  EXPECT_EQ(a.cpu, b.cpu);
  EXPECT_NE(a.settings, b.settings);
  EXPECT_EQ(a.settings, ThisNodeKey(4, "privacy.detect_size = \"640x360\"\n").settings);
  EXPECT_EQ(ThisNodeKey(4, "").cores, 4);
}

}  // namespace
}  // namespace veil
