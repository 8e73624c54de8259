// veil load's compare table (load/report.h): figures by hand, including runs that stopped early.
#include "load/report.h"

#include <gtest/gtest.h>

namespace veil {
namespace {

StageResult Stage(int sessions, double fps_mean, double window_s = 20) {
  StageResult s;
  s.sessions = sessions;
  s.window_s = window_s;
  s.fps_mean = fps_mean;
  return s;
}

LoadRun RunOf(std::vector<StageResult> stages) {
  LoadRun r;
  r.stages = std::move(stages);
  return r;
}

const CompareFigure* Find(const std::vector<CompareFigure>& f, const std::string& name) {
  for (const auto& c : f)
    if (c.name == name) return &c;
  return nullptr;
}

// The report's table of when the tail came: a row for a stage with late frames, none for one
// without, and no table at all when no stage had any.
TEST(LoadReport, LateFramesGetARowPerStageThatHadThem) {
  StageResult late = Stage(5, 30, 15.05);
  late.late_frames = 31;
  late.late_slices = 4;
  late.late_worst_slice_frames = 24;
  late.late_worst_slice_at_s = 7;
  LoadRun r = RunOf({Stage(4, 30, 15), late});
  r.label = "h264";
  const std::string md = MarkdownTable({r});
  EXPECT_NE(md.find("| h264 | 5 | 31 | 4 of 16 | 24 (at 7 s) |"), std::string::npos) << md;
  EXPECT_EQ(md.find("| h264 | 4 | 0 |"), std::string::npos) << md;
  const std::string calm = MarkdownTable({RunOf({Stage(4, 30, 15)})});
  EXPECT_EQ(calm.find("later than the p99 mark"), std::string::npos) << calm;
}

TEST(LoadCompare, MeansRangesAndOverlapByHand) {
  const std::vector<LoadRun> a = {RunOf({Stage(2, 30)}), RunOf({Stage(2, 28)})};
  const std::vector<LoadRun> b = {RunOf({Stage(2, 25)}), RunOf({Stage(2, 26)})};
  const auto figs = CompareFigures(a, b);
  const CompareFigure* fps = Find(figs, "recv fps mean @2");
  ASSERT_NE(fps, nullptr);
  EXPECT_EQ(fps->a, (std::vector<double>{30, 28}));
  EXPECT_EQ(fps->b, (std::vector<double>{25, 26}));
  const std::string t = CompareTable("A", "B", figs);
  EXPECT_NE(t.find("| recv fps mean @2 | 29.00 [28.00, 30.00] | 25.50 [25.00, 26.00] | -3.50 | **no** |"),
            std::string::npos)
      << t;
  const nlohmann::json j = CompareJson("A", "B", figs);
  bool seen = false;
  for (const auto& f : j["figures"])
    if (f["name"] == "recv fps mean @2") {
      seen = true;
      EXPECT_FALSE(f["overlap"].get<bool>());
      EXPECT_DOUBLE_EQ(f["b"]["mean"].get<double>(), 25.5);
    }
  EXPECT_TRUE(seen);
}

// A run the server stopped at its second stage (refused as overloaded): the first stage counts,
// the second is measured by fewer runs, and a stage no run of one side measured has no figure.
TEST(LoadCompare, RunsThatStoppedEarlySayHowManyRunsMeasuredAFigure) {
  const std::vector<LoadRun> a = {RunOf({Stage(2, 30), Stage(3, 29)}), RunOf({Stage(2, 30), Stage(3, 27)})};
  const std::vector<LoadRun> b = {RunOf({Stage(2, 12), Stage(3, 7)}), RunOf({Stage(2, 14), Stage(3, 0, 0)})};
  const auto figs = CompareFigures(a, b);
  const std::string t = CompareTable("A", "B", figs);
  EXPECT_NE(t.find("| recv fps mean @3 | 28.00 [27.00, 29.00] | 7.00 [7.00, 7.00] (1 of 2 runs) | -21.00 | **no** |"),
            std::string::npos)
      << t;
  const std::vector<LoadRun> none = {RunOf({Stage(2, 13), Stage(3, 0, 0)})};
  const std::string t2 = CompareTable("A", "B", CompareFigures(a, none));
  EXPECT_NE(t2.find("| recv fps mean @3 | 28.00 [27.00, 29.00] | - (no run measured it) | - | - |"), std::string::npos)
      << t2;
  const nlohmann::json j = CompareJson("A", "B", CompareFigures(a, none));
  for (const auto& f : j["figures"])
    if (f["name"] == "recv fps mean @3") {
      EXPECT_FALSE(f.contains("overlap")) << f.dump();
      EXPECT_TRUE(f["b"]["values"].empty());
    }
}

}  // namespace
}  // namespace veil
