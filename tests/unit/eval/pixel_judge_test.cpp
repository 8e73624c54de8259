// The pixel judge against its definition and against the instrument it reimplements: the same
// images are scored by ../shared/tools/leakcheck's own Python (score.py's ssim_map, patch64,
// overblur and frame_ssim), and the numbers must agree.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "eval/pixel_judge.h"
#include "test_util.h"

namespace veil {
namespace {

// A 1280x720 luma picture with texture everywhere: an annotated photo from the assets, stretched.
cv::Mat Master(cv::Rect2d* face) {
  const std::string dir = std::string(VEIL_TEST_ASSETS) + "/faces/";
  cv::Mat img = cv::imread(dir + "images/0--Parade/0_Parade_Parade_0_376.jpg", cv::IMREAD_GRAYSCALE);
  EXPECT_FALSE(img.empty());
  cv::Mat m;
  const double sx = 1280.0 / img.cols, sy = 720.0 / img.rows;
  cv::resize(img, m, cv::Size(1280, 720), 0, 0, cv::INTER_LINEAR);
  *face = {142 * sx, 270 * sy, 34 * sx, 44 * sy};  // the photo's first annotated face
  return m;
}

void Pixelate(cv::Mat& img, cv::Rect r, int cell) {
  for (int y = r.y; y < r.y + r.height; y += cell)
    for (int x = r.x; x < r.x + r.width; x += cell) {
      const cv::Rect c = cv::Rect(x, y, cell, cell) & r;
      img(c).setTo(cv::mean(img(c)));
    }
}

TEST(PixelJudge, IntactFaceIsVisibleAMosaicIsNotAndHalfAFaceIsStillVisible) {
  cv::Rect2d face;
  const cv::Mat m = Master(&face);
  EXPECT_NEAR(BestHalfSsim(m, m, face), 1.0, 1e-6);
  cv::Mat p = m.clone();
  const cv::Rect r = ClipBoxLikeLeakcheck(face, m.size());
  Pixelate(p, r, std::max(4, r.width / 4));
  EXPECT_LT(BestHalfSsim(m, p, face), kLeakSsim);
  // Only the left half covered: the right half is intact, so the face counts as visible.
  cv::Mat half = m.clone();
  Pixelate(half, cv::Rect(r.x, r.y, r.width / 2, r.height), std::max(4, r.width / 4));
  EXPECT_GE(BestHalfSsim(m, half, face), kLeakSsim);
}

TEST(PixelJudge, OverblurCountsDestroyedTextureOutsideTheFaces) {
  cv::Rect2d face;
  const cv::Mat m = Master(&face);
  const FrameJudgement same = JudgeFrame(m, m, {face});
  EXPECT_NEAR(same.overblur, 0.0, 1e-9);
  EXPECT_FALSE(same.whole_frame_mosaic());
  cv::Mat all = m.clone();
  Pixelate(all, cv::Rect(0, 0, 1280, 720), 40);  // a whole-frame mosaic (mosaic.full_cell = 40)
  const FrameJudgement wf = JudgeFrame(m, all, {face});
  EXPECT_GT(wf.overblur, 0.8);
  EXPECT_TRUE(wf.whole_frame_mosaic());
  cv::Mat left = m.clone();
  Pixelate(left, cv::Rect(0, 0, 640, 720), 40);  // half the picture destroyed
  const FrameJudgement hf = JudgeFrame(m, left, {face});
  EXPECT_GT(hf.overblur, 0.3);
  EXPECT_LT(hf.overblur, 0.7);
}

// The same numbers from leakcheck's own code.
TEST(PixelJudge, AgreesWithLeakchecksPython) {
  const std::string lc = std::string(VEIL_SOURCE_DIR) + "/../shared/tools/leakcheck";
  ASSERT_TRUE(std::filesystem::exists(lc + "/score.py")) << lc << ": the instrument is part of the shared material";
  cv::Rect2d face;
  const cv::Mat m = Master(&face);
  cv::Mat p = m.clone();
  const cv::Rect r = ClipBoxLikeLeakcheck(face, m.size());
  Pixelate(p, cv::Rect(r.x, r.y, r.width, r.height / 2), 6);  // the top half, fine cells
  Pixelate(p, cv::Rect(700, 100, 400, 300), 24);                // some background
  const auto dir = std::filesystem::temp_directory_path() / ("veil-pixel-judge-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  cv::imwrite((dir / "m.png").string(), m);
  cv::imwrite((dir / "p.png").string(), p);
  std::ostringstream py;
  py << "import sys, json, cv2\n"
     << "sys.dont_write_bytecode = True\n"
     << "sys.path.insert(0, '" << lc << "')\n"
     << "from score import ssim_map, patch64, overblur, frame_ssim\n"
     << "from common import int_box\n"
     << "m = cv2.imread('" << (dir / "m.png").string() << "', 0); p = cv2.imread('" << (dir / "p.png").string()
     << "', 0)\n"
     << "box = (" << face.x << ", " << face.y << ", " << face.width << ", " << face.height << ")\n"
     << "s = ssim_map(patch64(m, int_box(*box, m.shape)), patch64(p, int_box(*box, m.shape)))[0]\n"
     << "half = max(s[:, :32].mean(), s[:, 32:].mean(), s[:32].mean(), s[32:].mean())\n"
     << "print(json.dumps({'half': float(half), 'overblur': overblur(m, p, [box]), "
        "'frame_ssim': frame_ssim(m, p, [box])}))\n";
  std::ofstream((dir / "judge.py").string()) << py.str();
  FILE* f = popen(("/usr/bin/python3 " + (dir / "judge.py").string()).c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, f)) out += buf;
  ASSERT_EQ(pclose(f), 0) << out;
  std::filesystem::remove_all(dir);
  const auto j = nlohmann::json::parse(out);
  const FrameJudgement fj = JudgeFrame(m, p, {face});
  const double half = BestHalfSsim(m, p, face);
  std::printf("best half %.5f (leakcheck %.5f), over-blur %.5f (%.5f), frame SSIM %.5f (%.5f)\n", half,
              j["half"].get<double>(), fj.overblur, j["overblur"].get<double>(), fj.frame_ssim,
              j["frame_ssim"].get<double>());
  EXPECT_NEAR(half, j["half"].get<double>(), 1e-3);
  EXPECT_NEAR(fj.overblur, j["overblur"].get<double>(), 1e-3);
  EXPECT_NEAR(fj.frame_ssim, j["frame_ssim"].get<double>(), 1e-3);
  EXPECT_GT(fj.overblur, 0.01);  // the background patch was destroyed: the comparison is not of zeros
}

}  // namespace
}  // namespace veil
