// MayHoldPrevious (server/live_session.h): when a frame that fails closed at a cut may leave as
// the session's previous output instead of a whole-frame mosaic.
#include <gtest/gtest.h>

#include "server/live_session.h"

namespace veil {
namespace {

FrameReport AwaitingShot() {
  FrameReport r;
  r.fail_closed = true;
  r.awaiting_shot = true;
  return r;
}

TEST(HoldPrevious, OnlyAnAnonymizedPreviousOutputOfTheSameSizeForAFewFrames) {
  const FramePtr previous = MakeFrame(64, 36), f = MakeFrame(64, 36), smaller = MakeFrame(32, 18);
  EXPECT_TRUE(MayHoldPrevious(AwaitingShot(), previous.get(), Mode::kAnonymize, *f, 0, 2));
  EXPECT_TRUE(MayHoldPrevious(AwaitingShot(), previous.get(), Mode::kFullBlur, *f, 1, 2));
  EXPECT_FALSE(MayHoldPrevious(AwaitingShot(), previous.get(), Mode::kAnonymize, *f, 2, 2))
      << "at most max_hold in a row";
  EXPECT_FALSE(MayHoldPrevious(AwaitingShot(), previous.get(), Mode::kAnonymize, *f, 0, 0)) << "off";
  EXPECT_FALSE(MayHoldPrevious(AwaitingShot(), previous.get(), Mode::kBypass, *f, 0, 2))
      << "a bypass frame's faces were never pixelated";
  EXPECT_FALSE(MayHoldPrevious(AwaitingShot(), nullptr, Mode::kAnonymize, *f, 0, 2)) << "nothing sent yet";
  EXPECT_FALSE(MayHoldPrevious(AwaitingShot(), smaller.get(), Mode::kAnonymize, *f, 0, 2))
      << "the picture changed size";
  FrameReport stalled = AwaitingShot();
  stalled.awaiting_shot = false;  // a stalled or failed AI path: the live picture, mosaicked
  EXPECT_FALSE(MayHoldPrevious(stalled, previous.get(), Mode::kAnonymize, *f, 0, 2));
  FrameReport fine;  // not fail-closed at all
  fine.awaiting_shot = true;
  EXPECT_FALSE(MayHoldPrevious(fine, previous.get(), Mode::kAnonymize, *f, 0, 2));
}

}  // namespace
}  // namespace veil
