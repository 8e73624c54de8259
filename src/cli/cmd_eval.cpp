// veil eval: detector accuracy on annotated photos, and privacy (face-frame
// leak rate, flicker) on a moving clip rendered from them.
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/cmd_anonymize.h"
#include "cli/options.h"
#include "core/assets.h"
#include "eval/motion_eval.h"
#include "eval/photo_eval.h"

namespace veil::cli {

void RegisterEval(CLI::App& app, int* rc) {
  struct Opts {
    std::string faces;
    std::string photo_size = "640x640";
    float photo_score = 0.6f;
    bool no_letterbox = false, photos_only = false, motion_only = false, json = false;
    int max_images = 0;
    MotionEvalOptions motion;
    ConfigOptions config;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand("eval", "Detector recall/precision and privacy leak rate on annotated photos");
  sub->add_option("--faces", o->faces, "Folder with images and ground_truth.csv (default: <assets>/faces)");
  sub->add_option("--detect-size", o->photo_size, "Photo eval: detector input box, WxH (default 640x640)");
  sub->add_option("--photo-score", o->photo_score, "Photo eval: score threshold")->check(CLI::Range(0.01, 0.99));
  sub->add_flag("--no-letterbox", o->no_letterbox, "Photo eval: do not pad to the full input box");
  sub->add_option("--max-images", o->max_images, "Use at most N photos (0 = all)")->check(CLI::NonNegativeNumber);
  sub->add_option("--pixel-every", o->motion.pixel_every,
                  "Motion eval: judge over-blur and whole-frame mosaic on every Nth frame (default 5; faces: every frame)")
      ->check(CLI::Range(1, 1000));
  sub->add_option("--leaks-csv", o->motion.leaks_csv,
                  "Motion eval: write every face-frame the pixels show or the masks cover less than --covered of "
                  "(photo, image, face, frame, size, attributes, share covered, visible 0/1, box) to this CSV");
  sub->add_option("--frames-per-photo", o->motion.frames_per_photo, "Motion eval: frames per photo")
      ->check(CLI::Range(3, 3000));
  sub->add_flag("--photos-only", o->photos_only, "Only the photo evaluation");
  sub->add_flag("--motion-only", o->motion_only, "Only the moving-clip evaluation");
  sub->add_flag("--json", o->json, "JSON on stdout");
  AddConfigOptions(*sub, o->config, {{"privacy.detect_size", "live-detect-size"}});
  sub->callback([o, rc] {
    if (o->faces.empty()) o->faces = AssetsDir() + "/faces";
    int skipped = 0;
    auto gt = LoadGroundTruth(o->faces, &skipped);
    if (gt.ok() && skipped > 0)
      fmt::print(stderr, "warning: {}/ground_truth.csv: skipped {} box(es) of zero or negative width or height\n",
                 o->faces, skipped);
    auto size = ParseBoundedSize(o->photo_size);
    auto cfg = Resolve(o->config);
    if (!cfg) return Fail(rc, 2, cfg.error());
    if (PrintConfigIfAsked(o->config, cfg->config)) return;
    const PrivacyConfig* pc = &cfg->privacy;
    for (const Status& s : {gt.status(), size.status()})
      if (!s.ok()) return Fail(rc, 2, s.message());
    if (pc->mode != Mode::kAnonymize)
      return Fail(rc, 2, "eval measures the anonymize mode; --mode " + ModeName(pc->mode) + " makes no sense here");
    std::string source;
    auto det = LoadDetector(cfg->detector, &source);
    if (!det) return Fail(rc, 2, det.error());
    nlohmann::json out = {{"detector", (*det)->name()}, {"faces_dir", o->faces}, {"skipped_boxes", skipped}};
    if (!o->motion_only) {
      PhotoEvalOptions po;
      po.input = *size;
      po.letterbox = !o->no_letterbox;
      po.score = o->photo_score;
      po.max_images = o->max_images;
      auto r = RunPhotoEval(*gt, **det, po);
      if (!r) return Fail(rc, 1, r.error());
      out["photos"] = r->ToJson();
      out["photos"]["input"] = o->photo_size + (po.letterbox ? " letterbox" : "");
      out["photos"]["score"] = po.score;
      if (!o->json) {
        fmt::print("Photo evaluation: {} on {} images, input {}{}, score {:.2f}, IoU 0.5\n", (*det)->name(),
                   r->images, o->photo_size, po.letterbox ? " letterbox" : "", po.score);
        fmt::print("  recall  >=20 px  {:4d}/{:4d} = {:.3f}\n", r->hit_ge20, r->gt_ge20, r->recall_ge20());
        fmt::print("  recall  >=40 px  {:4d}/{:4d} = {:.3f}   (clear faces {:.3f})\n", r->hit_ge40, r->gt_ge40,
                   r->recall_ge40(), r->recall_clear_ge40());
        fmt::print("  precision        {:4d}/{:4d} = {:.3f}\n", r->true_detections, r->detections, r->precision());
        fmt::print("  {:.1f} ms per image (preprocess + forward + decode)\n", r->ms_per_image);
        fmt::print("  true face beyond its detection (>=40 px, {} faces), fraction of the box, p50/p90/p95/p99:\n",
                   r->reach_left.size());
        const nlohmann::json& reach = out["photos"]["reach_beyond_detection"];
        for (const char* side : {"left", "right", "top", "bottom"}) {
          const nlohmann::json& q = reach[side];
          fmt::print("    {:6s} {:+.3f} {:+.3f} {:+.3f} {:+.3f}\n", side, q["p50"].get<double>(), q["p90"].get<double>(),
                     q["p95"].get<double>(), q["p99"].get<double>());
        }
      }
    }
    if (!o->photos_only) {
      o->motion.max_photos = o->max_images;
      auto r = RunMotionEval(*gt, *pc, det->get(), o->motion);
      if (!r) return Fail(rc, 1, r.error());
      out["motion"] = r->ToJson();
      // The keys' own text, as --print-config shows them.
      const auto key = [&](const char* k) { return FormatValue(FindKey(k)->get(cfg->config.settings())); };
      const auto num = [&](const char* k) { return std::stod(key(k)); };
      const auto text = [&](const char* k) { return key(k).substr(1, key(k).size() - 2); };  // without the quotes
      const std::string detect_size = text("privacy.detect_size"), detect_every = text("privacy.detect_every");
      out["motion"]["settings"] = {{"detect_size", detect_size}, {"detect_every", detect_every},
                                   {"score", num("tracker.score")}, {"low_score", num("tracker.low_score")},
                                   {"margin", num("mosaic.margin")}, {"frames_per_photo", o->motion.frames_per_photo}};
      if (!o->json) {
        fmt::print("Moving clip: {} frames ({}x{}, {} per photo), detect {} every {} frame(s)\n", r->frames,
                   o->motion.canvas.width, o->motion.canvas.height, o->motion.frames_per_photo, detect_size,
                   detect_every);
        fmt::print("  face-frame leak rate (>=40 px): all {:.2f}% ({}/{}), clear {:.2f}% ({}/{})\n",
                   100 * r->leak_rate(), r->leaked, r->face_frames, 100 * r->clear_leak_rate(), r->clear_leaked,
                   r->clear_face_frames);
        fmt::print("  judged on the pixels (leakcheck's criteria, vs the lossless frame): leak all {:.2f}% ({}/{}), "
                   "clear {:.2f}% ({}/{})\n",
                   100 * r->pixel_leak_rate(), r->pixel_leaked, r->face_frames, 100 * r->clear_pixel_leak_rate(),
                   r->clear_pixel_leaked, r->clear_face_frames);
        fmt::print("  over-blur (textured non-face area destroyed): mean {:.1f}%, p90 {:.1f}%, frames over half {}; "
                   "whole-frame mosaic frames {} of {} judged\n",
                   100 * r->overblur_mean, 100 * r->overblur_p90, r->frames_overblur_gt50, r->mosaic_frames,
                   r->judged_frames);
        std::string parts;
        for (int k = 0; k < kOverblurParts; ++k)
          parts.append(fmt::format("{}{} {:.2f}", k ? ", " : "", kOverblurPartNames[k], 100 * r->overblur_parts[size_t(k)]));
        fmt::print("  over-blur by what destroyed it (points of the mean): {}\n", parts);
        fmt::print("  flicker: all {}, clear {};  fail-closed frames {}\n", r->flicker, r->clear_flicker,
                   r->fail_closed_frames);
        fmt::print("  cost per frame: detect {:.2f} ms, track {:.3f} ms, mosaic {:.3f} ms\n", r->ms_detect_per_frame,
                   r->ms_track_per_frame, r->ms_mosaic_per_frame);
      }
    }
    if (o->json) fmt::print("{}\n", out.dump(2));
  });
}

}  // namespace veil::cli
