#include "config/config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <vector>

#include "test_util.h"

namespace veil {
namespace {

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string p = test::TempPath(name);
  std::ofstream(p) << text;
  return p;
}

TEST(Config, DefaultsBuildTheDocumentedLiveSettings) {
  Config c;
  auto p = c.BuildPrivacy();
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->detect_box, cv::Size(640, 360));
  EXPECT_EQ(p->detect_every, 3);
  EXPECT_EQ(p->mode, Mode::kAnonymize);
  EXPECT_EQ(c.source("privacy.detect_every"), Source::kDefault);
  EXPECT_TRUE(c.BuildDetector().ok());
  EXPECT_TRUE(c.BuildEncoder().ok());
}

TEST(Config, PrecedenceIsDefaultsFileEnvFlags) {
  const std::string f = WriteFile("prec.toml", "[privacy]\ndetect_every = 2\nmode = \"bypass\"\n[mosaic]\nmargin = 0.3\n");
  Config c;
  ASSERT_TRUE(c.LoadFile(f).ok());
  std::string e1 = "VEIL_PRIVACY__DETECT_EVERY=4", e2 = "PATH=/bin", e3 = "VEIL_ASSETS=/x";
  char* env[] = {e1.data(), e2.data(), e3.data(), nullptr};
  ASSERT_TRUE(c.LoadEnv(env).ok());
  ASSERT_TRUE(c.SetText("mosaic.margin", "0.25", Source::kFlag).ok());
  EXPECT_EQ(c.settings().privacy.detect_every, 4);
  EXPECT_EQ(c.source("privacy.detect_every"), Source::kEnv);
  EXPECT_EQ(c.settings().privacy.mode, Mode::kBypass);
  EXPECT_EQ(c.source("privacy.mode"), Source::kFile);
  EXPECT_DOUBLE_EQ(c.settings().privacy.mosaic.margin, 0.25);
  EXPECT_EQ(c.source("mosaic.margin"), Source::kFlag);
  std::filesystem::remove(f);
}

TEST(Config, UnknownKeysAreErrorsNamingTheKey) {
  const std::string f = WriteFile("unknown.toml", "[privacy]\ndetect_evry = 2\n");
  Config c;
  Status s = c.LoadFile(f);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("privacy.detect_evry"), std::string::npos) << s.message();
  const std::string g = WriteFile("section.toml", "[encoder_workers]\ncount = 4\n");
  EXPECT_NE(c.LoadFile(g).message().find("encoder_workers.count"), std::string::npos);
  const std::string top = WriteFile("top.toml", "batch_wait_us = 500\n");
  EXPECT_NE(c.LoadFile(top).message().find("batch_wait_us"), std::string::npos);
  std::string e = "VEIL_INFERENCE__BATCH_WAIT=5";
  char* env[] = {e.data(), nullptr};
  Status se = c.LoadEnv(env);
  ASSERT_FALSE(se.ok());
  EXPECT_NE(se.message().find("VEIL_INFERENCE__BATCH_WAIT"), std::string::npos);
  EXPECT_FALSE(c.SetText("no.such_key", "1", Source::kFlag).ok());
  for (const auto& p : {f, g, top}) std::filesystem::remove(p);
}

TEST(Config, WrongTypesAndMalformedFilesAreErrors) {
  Config c;
  const std::string f = WriteFile("type.toml", "[mosaic]\nmin_cell = \"eight\"\n");
  Status s = c.LoadFile(f);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("mosaic.min_cell"), std::string::npos) << s.message();
  const std::string g = WriteFile("broken.toml", "[privacy\nmode = ");
  EXPECT_FALSE(c.LoadFile(g).ok());
  EXPECT_FALSE(c.LoadFile("/nonexistent.toml").ok());
  // Found by fuzz_config: invalid UTF-8 in an unterminated literal string made the TOML parser
  // read past its buffer. Such a file is refused before parsing, with where it goes wrong.
  const std::string u = WriteFile("utf8.toml", "[privacy]\nmode = '\"an\xfbonymize\"  # defau\xff\xff\n");
  Status su = c.LoadFile(u);
  EXPECT_FALSE(su.ok());
  EXPECT_NE(su.message().find("invalid UTF-8"), std::string::npos) << su.message();
  const std::string nul = WriteFile("nul.toml", std::string("[privacy]\nmode = \"a\0\"\n", 22));
  EXPECT_FALSE(c.LoadFile(nul).ok());
  const std::string ok = WriteFile("utf8-ok.toml", "# caf\xc3\xa9 \xe2\x80\x94 fine\n[privacy]\nmode = \"bypass\"\n");
  EXPECT_TRUE(c.LoadFile(ok).ok()) << "valid UTF-8 text is accepted";
  EXPECT_FALSE(c.SetText("mosaic.min_cell", "8px", Source::kFlag).ok());
  EXPECT_FALSE(c.SetText("privacy.scene_cut", "maybe", Source::kFlag).ok());
  EXPECT_FALSE(c.SetText("mosaic.margin", "nan", Source::kFlag).ok());
  for (const auto& p : {f, g}) std::filesystem::remove(p);
}

TEST(Config, AbsurdValuesAreRejectedWhenBuilt) {
  Config c;
  ASSERT_TRUE(c.SetText("mosaic.min_cell", "1", Source::kFlag).ok());
  EXPECT_FALSE(c.BuildPrivacy().ok());  // type is fine, value is degenerate
  Config d;
  ASSERT_TRUE(d.SetText("encoder.threads", "100000", Source::kFlag).ok());
  EXPECT_FALSE(d.BuildEncoder().ok());
  Config e;
  ASSERT_TRUE(e.SetText("detector.threads", "99999999999", Source::kFlag).ok());
  EXPECT_FALSE(e.BuildDetector().ok());
  Config f;  // load shedding's calm threshold must sit under its overuse threshold
  ASSERT_TRUE(f.SetText("server.shed_low", "0.8", Source::kFlag).ok());
  auto fs = f.BuildServer();
  ASSERT_FALSE(fs.ok());
  EXPECT_NE(fs.error().find("shed_low < shed_high"), std::string::npos) << fs.error();
  Config g;
  ASSERT_TRUE(g.SetText("server.shed_high", "1.5", Source::kFlag).ok());
  ASSERT_TRUE(g.SetText("server.shed_low", "1", Source::kFlag).ok());
  auto gs = g.BuildServer();
  ASSERT_TRUE(gs.ok()) << gs.error();
  EXPECT_DOUBLE_EQ(gs->shed_high, 1.5);
  EXPECT_DOUBLE_EQ(gs->shed_low, 1.0);
  EXPECT_DOUBLE_EQ(gs->shed_low_with_room, 0.55);  // its default, under the raised shed_low: that one rules
  Config h;  // the calm threshold while the node has room: its own range, not tied to shed_high
  ASSERT_TRUE(h.SetText("server.shed_low_with_room", "0", Source::kFlag).ok());
  auto hs = h.BuildServer();
  ASSERT_FALSE(hs.ok());
  EXPECT_NE(hs.error().find("server.shed_low_with_room"), std::string::npos) << hs.error();
  Config k;  // a lowered shed_high alone is not refused for the default shed_low_with_room above it
  ASSERT_TRUE(k.SetText("server.shed_high", "0.5", Source::kFlag).ok());
  EXPECT_TRUE(k.BuildServer().ok());
}

TEST(Config, DumpIsValidTomlThatLoadsBackToTheSameValues) {
  Config c;
  ASSERT_TRUE(c.SetText("privacy.detect_every", "auto", Source::kFlag).ok());
  ASSERT_TRUE(c.SetText("mosaic.cells_across", "10", Source::kFlag).ok());
  // Text keys are parsed into their stage's typed field and printed back from it.
  for (const auto& [key, text] : std::vector<std::pair<std::string, std::string>>{
           {"server.allowed_hosts", " A.example, b.example ,"}, {"inference.targets", "local,grpc://127.0.0.1:8001"},
           {"server.listen", "127.0.0.1:9000"}, {"worker.metrics_listen", "127.0.0.1:9100"},
           {"server.max_sessions", "7"}, {"mosaic.cell", "12"}, {"privacy.detect_size", "512x288"},
           {"server.viewer_hosts", "any"}, {"privacy.mode", "full_blur"}})
    ASSERT_TRUE(c.SetText(key, text, Source::kFlag).ok()) << key;
  EXPECT_EQ(FormatValue(FindKey("server.allowed_hosts")->get(c.settings())), "\"a.example,b.example\"");
  EXPECT_EQ(FormatValue(FindKey("inference.targets")->get(c.settings())), "\"local,127.0.0.1:8001\"");
  const std::string f = WriteFile("dump.toml", c.Dump());
  Config back;
  ASSERT_TRUE(back.LoadFile(f).ok()) << c.Dump();
  for (const auto& k : ConfigKeys()) {
    EXPECT_EQ(FormatValue(k.get(back.settings())), FormatValue(k.get(c.settings()))) << k.key;
    EXPECT_EQ(back.source(k.key), Source::kFile) << k.key;
  }
  EXPECT_EQ(back.settings().privacy.detect_every, 0);  // auto
  EXPECT_DOUBLE_EQ(back.settings().privacy.mosaic.cells_across, 10);
  std::filesystem::remove(f);
}

// A stage's ranges are declared once, by the stage: the configuration refuses exactly what the
// stage would (before 2026-12-02 the config allowed inference.max_wait_us up to 1000000 and the
// scheduler only 100000, so a value between passed the config and failed at start-up elsewhere).
TEST(Config, RangesAreTheStagesOwn) {
  for (const auto& [key, bad, good] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"inference.max_wait_us", "500000", "100000"}, {"inference.max_queue", "200000", "100000"},
           {"inference.max_batch", "65", "64"}, {"inference.threads", "0", "1"}}) {
    Config bad_c, good_c;
    ASSERT_TRUE(bad_c.SetText(key, bad, Source::kFlag).ok()) << key;
    ASSERT_TRUE(good_c.SetText(key, good, Source::kFlag).ok()) << key;
    auto bs = bad_c.BuildServer();
    auto bw = bad_c.BuildWorker();
    ASSERT_FALSE(bs.ok()) << key << "=" << bad;
    ASSERT_FALSE(bw.ok()) << key << "=" << bad;
    EXPECT_EQ(bs.error(), bw.error()) << "one check for both: " << key;
    auto gs = good_c.BuildServer();
    auto gw = good_c.BuildWorker();
    ASSERT_TRUE(gs.ok()) << key << "=" << good << ": " << gs.error();
    ASSERT_TRUE(gw.ok()) << key << "=" << good << ": " << gw.error();
    EXPECT_EQ(gs->scheduler.max_wait_us, gw->scheduler.max_wait_us);
    EXPECT_EQ(gs->scheduler.max_queue, gw->scheduler.max_queue);
    // ...and it is the scheduler's own verdict.
    EXPECT_FALSE(Validate(bad_c.settings().inference).ok()) << key;
  }
  // The encoder's ranges are the encoder's (media/media_types.h), for the config and the codecs alike.
  Config e;
  ASSERT_TRUE(e.SetText("encoder.vp8_speed", "-17", Source::kFlag).ok());
  EncoderOptions o;
  o.vp8_speed = -17;
  ASSERT_FALSE(e.BuildEncoder().ok());
  EXPECT_EQ(e.BuildEncoder().error(), Validate(o).message());
  Config d;
  ASSERT_TRUE(d.SetText("decoder.threads", "65", Source::kFlag).ok());
  EXPECT_FALSE(d.BuildEncoder().ok());
}

// Text keys are parsed when set: the error names the key, and a failed set changes nothing.
TEST(Config, TextKeysAreParsedWhenSet) {
  Config c;
  for (const auto& [key, text] : std::vector<std::pair<std::string, std::string>>{
           {"privacy.detect_size", "640by360"}, {"privacy.detect_every", "0"}, {"privacy.mode", "blur"},
           {"mosaic.cell", "0"}, {"server.listen", "8080"}, {"server.listen", "127.0.0.1:70000"},
           {"server.max_sessions", "-1"}, {"server.viewer_hosts", "lan"}, {"server.allowed_hosts", "a b"},
           {"inference.targets", "local,local"}, {"worker.metrics_listen", "127.0.0.1"}}) {
    const std::string before = c.Dump();
    Status s = c.SetText(key, text, Source::kFlag);
    ASSERT_FALSE(s.ok()) << key << "=" << text;
    EXPECT_NE(s.message().find(key), std::string::npos) << s.message();
    EXPECT_EQ(c.Dump(), before) << key << "=" << text;
  }
  const std::string f = WriteFile("textkeys.toml", "[server]\nlisten = \"nowhere\"\n");
  Status s = c.LoadFile(f);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("server.listen"), std::string::npos) << s.message();
  std::filesystem::remove(f);
}

// docs/config.md documents every key, and only keys that exist.
TEST(Config, DocumentationMatchesTheCode) {
  std::ifstream in(std::string(VEIL_SOURCE_DIR) + "/docs/config.md");
  ASSERT_TRUE(in) << "docs/config.md missing";
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  std::map<std::string, std::string> documented;  // key -> its documented default
  const std::regex row(R"(\n\| `([a-z_]+\.[a-z_0-9]+)` \| `([^`]*)` \|)");
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), row); it != std::sregex_iterator(); ++it)
    documented[(*it)[1]] = (*it)[2];
  std::set<std::string> code;
  for (const auto& k : ConfigKeys()) {
    code.insert(k.key);
    auto d = documented.find(k.key);
    if (d == documented.end()) {
      ADD_FAILURE() << "undocumented key " << k.key;
      continue;
    }
    EXPECT_EQ(d->second, FormatValue(k.def)) << "docs/config.md gives " << k.key << " another default than the code";
  }
  for (const auto& [k, def] : documented) EXPECT_TRUE(code.count(k)) << "documented key that does not exist: " << k;
}

}  // namespace
}  // namespace veil
