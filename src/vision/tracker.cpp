#include "vision/tracker.h"

#include <cmath>

#include "vision/assignment.h"

namespace veil {
namespace {
// Noise model after ByteTrack/DeepSORT: standard deviations proportional to
// the box size, so a big (near) face may move more pixels per frame.
constexpr float kStdPos = 1.f / 20.f;
constexpr float kStdVel = 1.f / 160.f;
constexpr float kMinSize = 2.f;
}  // namespace

Status Validate(const TrackerParams& p) {
  if (!(p.low_score > 0.f && p.low_score <= p.high_score && p.high_score < 1.f))
    return Status::Error("tracker scores need 0 < low_score <= high_score < 1");
  if (!(p.match_iou > 0.f && p.match_iou < 1.f && p.low_match_iou > 0.f && p.low_match_iou < 1.f))
    return Status::Error("tracker IoU gates must be in (0, 1)");
  if (p.max_coast_frames < 0 || p.max_coast_frames > 600 || p.tentative_frames < 0 ||
      p.tentative_frames > p.max_coast_frames)
    return Status::Error("tracker needs 0 <= tentative_frames <= max_coast_frames <= 600");
  if (p.weak_coast_frames < 0 || p.weak_coast_frames > 600)
    return Status::Error("tracker needs weak_coast_frames in [0, 600]");
  if (p.confirm_hits < 1 || p.confirm_hits > 100) return Status::Error("tracker confirm_hits in [1, 100]");
  if (!(p.large_share >= 0.f && p.large_share <= 1.f) || p.large_misses < 1 || p.large_misses > 100)
    return Status::Error("tracker needs large_share in [0, 1] (0: off) and large_misses in [1, 100]");
  if (!(p.growth_base >= 0.f && p.growth_base <= 1.f) || !(p.growth_per_frame >= 0.f && p.growth_per_frame <= 1.f) ||
      !(p.speed_share >= 0.f && p.speed_share <= 10.f) || !(p.max_growth >= 0.f && p.max_growth <= 5.f))
    return Status::Error(
        "tracker needs growth_base and growth_per_frame in [0, 1], speed_share in [0, 10], max_growth in [0, 5]");
  return Status::Ok();
}

void Kalman1D::Init(float pos, float std_pos, float std_vel) {
  x = pos;
  v = 0;
  p00 = std_pos * std_pos;
  p01 = 0;
  p11 = std_vel * std_vel;
}

void Kalman1D::Predict(float q_pos, float q_vel) {
  // F = [1 1; 0 1]: P = F P F^T + Q
  x += v;
  const float n00 = p00 + 2 * p01 + p11 + q_pos;
  const float n01 = p01 + p11;
  const float n11 = p11 + q_vel;
  p00 = n00;
  p01 = n01;
  p11 = n11;
}

void Kalman1D::Update(float z, float r) {
  // H = [1 0]
  const float s = p00 + r;
  const float k0 = p00 / s, k1 = p01 / s;
  const float y = z - x;
  x += k0 * y;
  v += k1 * y;
  const float n00 = (1 - k0) * p00;
  const float n01 = (1 - k0) * p01;
  const float n11 = p11 - k1 * p01;
  p00 = n00;
  p01 = n01;
  p11 = n11;
}

Track Tracker::Birth(const Detection& d, bool confirmed) {
  Track t;
  t.id = next_id_++;
  const float w = std::max(d.box.w, kMinSize), h = std::max(d.box.h, kMinSize);
  t.cx.Init(d.box.cx(), 2 * kStdPos * w, 10 * kStdVel * w);
  t.cy.Init(d.box.cy(), 2 * kStdPos * h, 10 * kStdVel * h);
  t.w.Init(w, 2 * kStdPos * w, 10 * kStdVel * w);
  t.h.Init(h, 2 * kStdPos * h, 10 * kStdVel * h);
  t.score = d.score;
  t.best_score = d.score;
  t.hits = 1;
  t.confirmed = confirmed;
  return t;
}

void Tracker::Correct(Track& t, const Detection& d) {
  const float w = std::max(d.box.w, kMinSize), h = std::max(d.box.h, kMinSize);
  const float rw = (kStdPos * w) * (kStdPos * w), rh = (kStdPos * h) * (kStdPos * h);
  t.cx.Update(d.box.cx(), rw);
  t.cy.Update(d.box.cy(), rh);
  t.w.Update(w, rw);
  t.h.Update(h, rh);
  t.score = d.score;
  t.best_score = std::max(t.best_score, d.score);
  t.frames_since_update = 0;
  t.misses = 0;
  t.prior_shot = false;
  if (++t.hits >= p_.confirm_hits && !d.doubtful) t.confirmed = true;
}

void Tracker::Predict() {
  for (auto& t : tracks_) {
    const float w = std::max(t.w.x, kMinSize), h = std::max(t.h.x, kMinSize);
    const float qpw = (kStdPos * w) * (kStdPos * w), qvw = (kStdVel * w) * (kStdVel * w);
    const float qph = (kStdPos * h) * (kStdPos * h), qvh = (kStdVel * h) * (kStdVel * h);
    t.cx.Predict(qpw, qvw);
    t.cy.Predict(qph, qvh);
    t.w.Predict(qpw, qvw);
    t.h.Predict(qph, qvh);
    // A shrinking size must not go negative while coasting.
    t.w.x = std::max(t.w.x, kMinSize);
    t.h.x = std::max(t.h.x, kMinSize);
    ++t.frames_since_update;
  }
  std::erase_if(tracks_, [&](const Track& t) {
    const int limit = !t.confirmed                      ? p_.tentative_frames
                      : t.best_score >= p_.high_score ? p_.max_coast_frames
                                                      : std::min(p_.weak_coast_frames, p_.max_coast_frames);
    return t.frames_since_update > limit;
  });
}

void Tracker::Update(const Detections& dets, int age_frames) {
  age_frames = std::max(age_frames, 0);
  std::vector<int> high, low;
  for (int i = 0; i < int(dets.size()); ++i) {
    if (dets[i].doubtful && !p_.doubtful_match) continue;
    if (dets[i].score >= p_.high_score) high.push_back(i);
    else if (dets[i].score >= p_.low_score) low.push_back(i);
  }
  std::vector<char> track_used(tracks_.size(), 0);
  // Match detections `idx` to the still-unmatched tracks; returns unmatched detections.
  auto match = [&](const std::vector<int>& idx, float gate) {
    std::vector<int> free_tracks;
    for (int t = 0; t < int(tracks_.size()); ++t)
      if (!track_used[t]) free_tracks.push_back(t);
    std::vector<double> cost(free_tracks.size() * idx.size());
    for (size_t r = 0; r < free_tracks.size(); ++r) {
      const Box pb = tracks_[free_tracks[r]].box();
      for (size_t c = 0; c < idx.size(); ++c) cost[r * idx.size() + c] = 1.0 - IoU(pb, dets[idx[c]].box);
    }
    std::vector<char> det_used(idx.size(), 0);
    for (auto [r, c] : LinearAssignment(cost, int(free_tracks.size()), int(idx.size()), 1.0 - gate)) {
      Correct(tracks_[free_tracks[r]], dets[idx[c]]);
      tracks_[free_tracks[r]].frames_since_update = age_frames;
      track_used[free_tracks[r]] = 1;
      det_used[c] = 1;
    }
    std::vector<int> rest;
    for (size_t c = 0; c < idx.size(); ++c)
      if (!det_used[c]) rest.push_back(idx[c]);
    return rest;
  };
  const std::vector<int> new_high = match(high, p_.match_iou);
  const std::vector<int> new_low = match(low, p_.low_match_iou);
  for (size_t t = 0; t < tracks_.size(); ++t)
    if (!track_used[t]) ++tracks_[t].misses;
  for (size_t t = tracks_.size(); t-- > 0;)
    if (tracks_[t].prior_shot && !track_used[t]) tracks_.erase(tracks_.begin() + long(t));
  const size_t born = tracks_.size();
  // A doubtful detection starts a track only as tentative (doubtful_birth) or not at all.
  for (int i : new_high)
    if (!dets[i].doubtful || p_.doubtful_birth) tracks_.push_back(Birth(dets[i], /*confirmed=*/!dets[i].doubtful));
  // Unmatched low-score detections still get masked (a false mosaic is cheap,
  // a missed face is not) but die quickly unless a later detection confirms them.
  for (int i : new_low)
    if (!dets[i].doubtful || p_.doubtful_birth)
      tracks_.push_back(Birth(dets[i], /*confirmed=*/p_.confirm_hits <= 1 && !dets[i].doubtful));
  for (size_t t = born; t < tracks_.size(); ++t) tracks_[t].frames_since_update = age_frames;
}

void Tracker::MarkShotChange() {
  for (auto& t : tracks_) t.prior_shot = true;
}

std::vector<Mask> Tracker::Masks(int frame_w, int frame_h) const {
  std::vector<Mask> out;
  out.reserve(tracks_.size());
  for (const auto& t : tracks_) {
    const Box b = t.box();
    const bool large = p_.large_share > 0 && std::min(b.w, b.h) > p_.large_share * float(std::min(frame_w, frame_h));
    if (large && t.misses >= p_.large_misses) continue;
    const float n = float(t.frames_since_update);
    // The centre drifts by the speed, and the half-size by half its rate of change.
    const float vx = std::abs(t.cx.v) + 0.5f * std::abs(t.w.v), vy = std::abs(t.cy.v) + 0.5f * std::abs(t.h.v);
    const float gx = std::min(p_.growth_base * b.w + n * std::max(p_.growth_per_frame * b.w, p_.speed_share * vx),
                              p_.max_growth * b.w);
    const float gy = std::min(p_.growth_base * b.h + n * std::max(p_.growth_per_frame * b.h, p_.speed_share * vy),
                              p_.max_growth * b.h);
    const Box m{b.x - gx, b.y - gy, b.w + 2 * gx, b.h + 2 * gy};
    if (m.x2() <= 0 || m.y2() <= 0 || m.x >= frame_w || m.y >= frame_h) continue;
    out.push_back({m, b.w, t.id, b, t.frames_since_update, t.confirmed});
  }
  return out;
}

}  // namespace veil
