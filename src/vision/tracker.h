// Multi-face tracker: Kalman filter + IoU association in the ByteTrack style.
// No optical flow: between detections tracks coast on their velocity, and a
// coasting track's mask grows with the time since its last detection and its
// measured speed.
#pragma once
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "vision/box.h"

namespace veil {

struct TrackerParams {
  float high_score = 0.5f;     // detections at/above: first-stage matching and track birth
  float low_score = 0.15f;     // [low, high): second-stage matching only (plus tentative birth)
  float match_iou = 0.2f;      // first-stage gate
  float low_match_iou = 0.4f;  // second-stage gate
  int max_coast_frames = 30;   // a confirmed track survives this many frames without a match
  int tentative_frames = 6;    // an unconfirmed track dies after this many frames without a match
  int confirm_hits = 2;        // matches needed to confirm a track born from a low score
  // A confirmed track that no detection ever scored at high_score (seen only at low scores)
  // survives this many frames without a match (at most max_coast_frames).
  int weak_coast_frames = 30;
  // A mask is the predicted box grown per side by what the face can have moved
  // away from the prediction since its last detection (n frames):
  //   growth_base * size + n * max(growth_per_frame * size, speed_share * |velocity|)
  // capped at max_growth * size. The velocity is the track's measured one.
  float growth_base = 0.05f;      // detection jitter, fraction of the box per side
  float growth_per_frame = 0.02f; // fraction of the box per side per frame since the last detection
  float speed_share = 0.5f;       // ...or this share of the measured speed, when larger
  float max_growth = 1.0f;        // never more than this fraction of the box per side
  // A large box (its smaller side over large_share of the frame's smaller side) is not masked
  // while the last large_misses detections in a row have not seen it: a large face is one the
  // detector usually keeps finding, so a large track it stopped seeing is more often a false
  // positive gone or a face that left than a face still there. The track lives on, and is masked
  // again when a detection matches it. Off by default (0): it costs leak on a large face the
  // detector finds only now and then (docs/privacy.md, "What destroys the background").
  float large_share = 0.f;
  int large_misses = 2;
  // A doubtful detection (vision/second_look.h) never starts a track; with doubtful_match it may
  // still match an existing one (second stage), without, it is ignored.
  bool doubtful_match = true;
  // With doubtful_birth, a doubtful detection starts a tentative track (masked, but never
  // confirmed by doubtful detections, so it dies tentative_frames after its last match instead
  // of coasting max_coast_frames); without, it starts none.
  bool doubtful_birth = false;
};

Status Validate(const TrackerParams& p);

// One Kalman filter over [pos, vel] for one coordinate (cx, cy, w or h);
// the four coordinates are independent under the constant-velocity model
// with diagonal noise, so 4 x 2-state filters equal one 8-state filter.
struct Kalman1D {
  float x = 0, v = 0;            // state
  float p00 = 0, p01 = 0, p11 = 0;  // covariance
  void Init(float pos, float std_pos, float std_vel);
  void Predict(float q_pos, float q_vel);  // variances added per frame
  void Update(float z, float r);           // r = measurement variance
};

struct Track {
  int64_t id = 0;
  Kalman1D cx, cy, w, h;
  float score = 0;
  float best_score = 0;  // the highest score a detection of this track had
  int hits = 0;
  int frames_since_update = 0;
  int misses = 0;  // detections in a row that did not match this track
  bool confirmed = false;
  bool prior_shot = false;  // born before the last scene cut and not matched since
  Box box() const { return {cx.x - w.x / 2, cy.x - h.x / 2, w.x, h.x}; }
};

struct Mask {
  Box box;          // region to pixelate (before the mosaic margin)
  float face_w = 0; // estimated face width, for the mosaic cell size
  int64_t track_id = 0;
  // Where it came from (veil eval splits over-blur by these): the track's own predicted box
  // before any growth, frames since its last detection, and whether it is confirmed.
  Box core;
  int coast = 0;
  bool confirmed = false;
};

class Tracker {
 public:
  explicit Tracker(TrackerParams p = {}) : p_(p) {}
  // Advances every track by one frame (call once per frame, before Update).
  void Predict();
  // Associates this frame's detections (full-resolution coordinates).
  // Tracks still flagged by MarkShotChange and left unmatched here are dropped:
  // they describe the previous shot.
  // `age_frames`: how many frames ago the detections were taken (a live result
  // arrives late); the masks of the tracks they update grow from that age.
  void Update(const Detections& dets, int age_frames = 0);
  // A scene cut: every track belongs to the old shot. They keep their masks
  // until the next Update (the detection of the new shot), which only keeps
  // those it matches, instead of coasting for max_coast_frames over a picture
  // that no longer has those faces.
  void MarkShotChange();
  // Regions to pixelate on the current frame, grown by each track's motion bound.
  std::vector<Mask> Masks(int frame_w, int frame_h) const;
  const std::vector<Track>& tracks() const { return tracks_; }
  void Reset() { tracks_.clear(); }

 private:
  Track Birth(const Detection& d, bool confirmed);
  void Correct(Track& t, const Detection& d);
  TrackerParams p_;
  std::vector<Track> tracks_;
  int64_t next_id_ = 1;
};

}  // namespace veil
