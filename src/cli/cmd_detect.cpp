// veil detect: runs veil's face detector on still images (PNG, JPEG) and
// prints the faces found. Used by the browser tests on frames captured from
// a viewer's <video> element, and handy to check a model on one's own photos.
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "cli/cmd_anonymize.h"
#include "cli/options.h"

namespace veil::cli {

void RegisterDetect(CLI::App& app, int* rc) {
  struct Opts {
    std::vector<std::string> images;
    std::string size = "640x360";
    float score = 0.5f;
    bool json = false;
    ConfigOptions config;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand("detect", "Find faces in still images with veil's detector (PNG/JPEG)");
  sub->add_option("images", o->images, "Image files")->required();
  sub->add_option("--size", o->size, "Each image is fitted into this box first, WxH (aspect kept; the live detection copy is 640x360)");
  sub->add_option("--min-score", o->score, "Score threshold (default 0.5, as tracker.score)")->check(CLI::Range(0.01, 0.99));
  sub->add_flag("--json", o->json, "JSON on stdout");
  AddConfigOptions(*sub, o->config, {});
  sub->callback([o, rc] {
    auto cfg = Resolve(o->config);
    if (!cfg) return Fail(rc, 2, cfg.error());
    if (PrintConfigIfAsked(o->config, cfg->config)) return;
    auto box = ParseBoundedSize(o->size);
    if (!box) return Fail(rc, 2, box.error());
    auto det = LoadDetector(cfg->detector);
    if (!det) return Fail(rc, 2, det.error());
    nlohmann::json out = {{"detector", (*det)->name()}, {"images", nlohmann::json::array()}};
    int unreadable = 0;
    for (const std::string& path : o->images) {
      nlohmann::json item = {{"path", path}};
      cv::Mat img = cv::imread(path, cv::IMREAD_COLOR);
      if (img.empty()) {
        item["error"] = "cannot read the image";
        ++unreadable;
        out["images"].push_back(item);
        continue;
      }
      const double scale = std::min(double(box->width) / img.cols, double(box->height) / img.rows);
      cv::Mat small;
      cv::resize(img, small, cv::Size(std::max(1, int(img.cols * scale)), std::max(1, int(img.rows * scale))), 0, 0,
                 cv::INTER_AREA);
      auto r = (*det)->Detect({small}, o->score);
      if (!r) return Fail(rc, 1, path + ": " + r.error());
      nlohmann::json faces = nlohmann::json::array();
      for (const Detection& d : (*r)[0])
        faces.push_back({{"x", d.box.x / scale}, {"y", d.box.y / scale}, {"w", d.box.w / scale}, {"h", d.box.h / scale},
                         {"score", d.score}});
      item.update({{"width", img.cols}, {"height", img.rows}, {"faces", faces}});
      if (!o->json) fmt::print("{}: {} face(s)\n", path, faces.size());
      out["images"].push_back(item);
    }
    if (o->json) fmt::print("{}\n", out.dump(2));
    if (unreadable) Fail(rc, 1, fmt::format("{} image(s) could not be read", unreadable));
  });
}

}  // namespace veil::cli
