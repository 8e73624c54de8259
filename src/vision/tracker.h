// Multi-face tracker: Kalman filter + IoU association in the ByteTrack style.
// No optical flow: between detections tracks coast on their velocity, and a
// coasting track's mask grows with its position uncertainty.
#pragma once
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "vision/box.h"

namespace veil {

struct TrackerParams {
  float high_score = 0.5f;     // detections at/above: first-stage matching and track birth
  float low_score = 0.25f;     // [low, high): second-stage matching only (plus tentative birth)
  float match_iou = 0.2f;      // first-stage gate
  float low_match_iou = 0.4f;  // second-stage gate
  int max_coast_frames = 30;   // a confirmed track survives this many frames without a match
  int tentative_frames = 6;    // an unconfirmed track dies after this many frames without a match
  int confirm_hits = 2;        // matches needed to confirm a track born from a low score
  float sigma_k = 2.0f;        // mask grows by sigma_k standard deviations of position/size
  float max_growth = 1.0f;     // ...but at most this fraction of the box per side
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
  int hits = 0;
  int frames_since_update = 0;
  bool confirmed = false;
  Box box() const { return {cx.x - w.x / 2, cy.x - h.x / 2, w.x, h.x}; }
};

struct Mask {
  Box box;          // region to pixelate (before the mosaic margin)
  float face_w = 0; // estimated face width, for the mosaic cell size
  int64_t track_id = 0;
};

class Tracker {
 public:
  explicit Tracker(TrackerParams p = {}) : p_(p) {}
  // Advances every track by one frame (call once per frame, before Update).
  void Predict();
  // Associates this frame's detections (full-resolution coordinates).
  void Update(const Detections& dets);
  // Regions to pixelate on the current frame, grown by each track's uncertainty.
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
