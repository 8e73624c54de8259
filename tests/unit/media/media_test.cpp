#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <variant>

#include "media/reader.h"
#include "media/writer.h"
#include "test_util.h"

namespace veil {
namespace {

struct Counts {
  int64_t frames = 0, audio = 0;
  Status end;
};

// Reads a whole file, optionally re-encoding it into `out`.
Counts Transcode(const std::string& in, const std::string& out = "", EncoderOptions eo = {}) {
  auto r = MediaReader::Open(in);
  EXPECT_TRUE(r.ok()) << r.error();
  if (!r.ok()) return {};
  std::unique_ptr<MediaWriter> w;
  if (!out.empty()) {
    auto wr = MediaWriter::Open(out, (*r)->info(), eo, r->get());
    EXPECT_TRUE(wr.ok()) << wr.error();
    if (wr.ok()) w = std::move(*wr);
  }
  Counts c;
  for (;;) {
    ReadItem it = (*r)->Next();
    if (std::holds_alternative<EndOfStream>(it)) break;
    if (auto* p = std::get_if<PassthroughPacket>(&it)) {
      ++c.audio;
      if (w) {
        EXPECT_TRUE(w->WritePassthrough(*p).ok());
      }
      continue;
    }
    ++c.frames;
    if (w) {
      EXPECT_TRUE(w->WriteFrame(*std::get<FramePtr>(it)).ok());
    }
  }
  if (w) {
    EXPECT_TRUE(w->Finish().ok());
  }
  c.end = (*r)->end_status();
  return c;
}

TEST(MediaReader, ReadsVp8IvfAsI420) {
  auto r = MediaReader::Open(test::Media("sample_720p30.ivf"));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ((*r)->info().width, 1280);
  EXPECT_EQ((*r)->info().height, 720);
  EXPECT_EQ((*r)->info().codec, "vp8");
  EXPECT_NEAR((*r)->info().fps, 30, 0.01);
  Counts c = Transcode(test::Media("sample_720p30.ivf"));
  EXPECT_EQ(c.frames, 300);
  EXPECT_TRUE(c.end.ok()) << c.end.message();
}

TEST(MediaReader, ReadsH264Mp4MkvAndY4m) {
  EXPECT_GT(Transcode(test::Media("sample_h264_aac.mp4")).frames, 60);
  EXPECT_GT(Transcode(test::Media("sample_h264.mkv")).frames, 50);
  EXPECT_EQ(Transcode(test::Media("sample.y4m")).frames, 24);
}

TEST(MediaWriter, CopiesOpusThroughIntoWebmUnchanged) {
  const std::string out = test::TempPath("opus.webm");
  Counts in = Transcode(test::Media("sample_opus.webm"), out);
  ASSERT_GT(in.audio, 50);
  Counts back = Transcode(out);
  EXPECT_EQ(back.frames, in.frames);
  EXPECT_EQ(back.audio, in.audio);
  std::filesystem::remove(out);
}

TEST(MediaWriter, H264WithAacIntoMkvAndIvfSkipsAudioItCannotHold) {
  const std::string mkv = test::TempPath("aac.mkv"), ivf = test::TempPath("aac.ivf");
  Counts in = Transcode(test::Media("sample_h264_aac.mp4"), mkv);
  Counts back = Transcode(mkv);
  EXPECT_EQ(back.frames, in.frames);
  EXPECT_EQ(back.audio, in.audio);
  auto r = MediaReader::Open(test::Media("sample_h264_aac.mp4"));
  ASSERT_TRUE(r.ok());
  auto w = MediaWriter::Open(ivf, (*r)->info(), {}, r->get());
  ASSERT_TRUE(w.ok()) << w.error();
  EXPECT_EQ((*w)->codec(), "vp8");
  EXPECT_EQ((*w)->audio_streams_skipped(), 1);
  EXPECT_TRUE((*w)->Finish().ok());
  std::filesystem::remove(mkv);
  std::filesystem::remove(ivf);
}

TEST(MediaWriter, Y4mRoundTripIsLossless) {
  const std::string out = test::TempPath("rt.y4m");
  Transcode(test::Media("sample.y4m"), out);
  auto a = MediaReader::Open(test::Media("sample.y4m")), b = MediaReader::Open(out);
  ASSERT_TRUE(a.ok() && b.ok());
  for (int i = 0; i < 5; ++i) {
    auto fa = std::get<FramePtr>((*a)->Next()), fb = std::get<FramePtr>((*b)->Next());
    for (int y = 0; y < fa->height; ++y)
      ASSERT_EQ(0, std::memcmp(fa->y.row(y), fb->y.row(y), fa->width)) << "frame " << i << " row " << y;
  }
  std::filesystem::remove(out);
}

TEST(MediaReader, TruncatedAndCorruptInputsKeepTheFramesBeforeTheDamage) {
  for (const char* name : {"truncated.ivf", "corrupt.ivf"}) {
    const std::string out = test::TempPath(std::string(name) + ".webm");
    Counts c = Transcode(test::Media(name), out);
    EXPECT_GT(c.frames, 100) << name;
    EXPECT_LT(c.frames, 300) << name;
    EXPECT_FALSE(c.end.ok()) << name << ": damage must be reported";
    Counts back = Transcode(out);  // the output is a valid file with every recovered frame
    EXPECT_EQ(back.frames, c.frames) << name;
    std::filesystem::remove(out);
  }
}

TEST(MediaReader, NonVideoInputsAreClearErrors) {
  for (const char* name : {"garbage.mp4", "not_video.ivf"}) {
    auto r = MediaReader::Open(test::Media(name));
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_NE(r.error().find(name), std::string::npos) << r.error();
  }
  EXPECT_FALSE(MediaReader::Open("/nonexistent/x.ivf").ok());
}

TEST(MediaWriter, RejectsUnknownExtensionsAndAbsurdParameters) {
  VideoInfo vi = test::SmallVideo(64, 64);
  EXPECT_FALSE(MediaWriter::Open(test::TempPath("x.avi"), vi, {}, nullptr).ok());
  EncoderOptions eo;
  eo.threads = 0;
  EXPECT_FALSE(MediaWriter::Open(test::TempPath("x.ivf"), vi, eo, nullptr).ok());
  vi.width = 100000;
  EXPECT_FALSE(MediaWriter::Open(test::TempPath("x.ivf"), vi, {}, nullptr).ok());
}

}  // namespace
}  // namespace veil
