#include "vision/model_registry.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/sha256.h"
#include "test_util.h"
#include "vision/detector.h"

namespace veil {
namespace {
namespace fs = std::filesystem;

class ModelRegistry : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::TempPath("models");
    fs::create_directories(dir_);
    unsetenv("VEIL_MODEL_DIR");
    const char* a = std::getenv("VEIL_ASSETS");
    had_assets_ = a != nullptr;
    if (a) assets_ = a;
  }
  // Puts VEIL_ASSETS back as it was: a test that points it at the temporary folder must not
  // leave the tests after it (yunet_engine_test in this binary) looking there.
  void TearDown() override {
    fs::remove_all(dir_);
    unsetenv("VEIL_MODEL_DIR");
    if (had_assets_) setenv("VEIL_ASSETS", assets_.c_str(), 1);
    else unsetenv("VEIL_ASSETS");
  }
  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string p = dir_ + "/" + name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  std::string dir_;
  std::string assets_;
  bool had_assets_ = false;
};

TEST_F(ModelRegistry, ExplicitFileWithWrongShaIsAnError) {
  const std::string p = Write("face_detection_yunet_2023mar.onnx", "not really a model");
  auto r = ResolveModel("yunet", p, "");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("sha256"), std::string::npos) << r.error();
  DetectorConfig c;
  c.model_path = p;
  EXPECT_FALSE(LoadDetector(c).ok());  // load failure is an error, never a silent bypass
}

TEST_F(ModelRegistry, MissingExplicitFileIsAnError) {
  auto r = ResolveModel("yunet", dir_ + "/nope.onnx", "");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("not found"), std::string::npos);
}

TEST_F(ModelRegistry, CustomShaAcceptedOnPurposeButGarbageStillFailsToLoad) {
  const std::string bytes = "garbage bytes that are not ONNX";
  const std::string p = Write("custom.onnx", bytes);
  DetectorConfig c;
  c.model_path = p;
  c.model_sha256 = Sha256Hex(bytes.data(), bytes.size());
  auto r = ResolveModel("yunet", p, c.model_sha256);
  ASSERT_TRUE(r.ok()) << r.error();
  auto d = LoadDetector(c);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().find("cannot load"), std::string::npos) << d.error();
}

TEST_F(ModelRegistry, ModelOfTheOtherFamilyIsRejected) {
  auto r = ResolveModel("yunet", test::Models() + "/version-RFB-320.onnx", "");
  EXPECT_FALSE(r.ok());
}

TEST_F(ModelRegistry, EnvironmentDirectoryComesBeforeAssets) {
  fs::copy_file(test::Models() + "/version-RFB-640.onnx", dir_ + "/version-RFB-320.onnx");
  setenv("VEIL_MODEL_DIR", dir_.c_str(), 1);
  // The file has the 320 name but the 640 bytes: the sha says which it is.
  auto r = ResolveModel("ultraface", "", "");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->source, "$VEIL_MODEL_DIR");
  EXPECT_EQ(r->spec.input_w, 640);
}

TEST_F(ModelRegistry, FallsBackToTheEmbeddedYuNet) {
  setenv("VEIL_ASSETS", dir_.c_str(), 1);  // no models/ there
  auto r = ResolveModel("yunet", "", "");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->source, "embedded");
  EXPECT_EQ(r->spec.file, "face_detection_yunet_2023mar.onnx");
  auto u = ResolveModel("ultraface", "", "");  // nothing embedded for the second family
  ASSERT_FALSE(u.ok());
  EXPECT_NE(u.error().find("looked in"), std::string::npos);
}

TEST_F(ModelRegistry, UnknownFamily) { EXPECT_FALSE(ResolveModel("yolo", "", "").ok()); }

}  // namespace
}  // namespace veil
