#include <gtest/gtest.h>

#include "gmem/detail/capture_tracker.hpp"
#include "gmem/usage_error.hpp"

namespace {

using gmem::capture_tracker;
using gmem::usage_error;

TEST(CaptureTracker, ForkAndJoinLeaveNothingUnjoined) {
  capture_tracker t(0x100, "g");
  t.fork(0x100, 0x200);
  t.fork(0x200, 0x300);  // forking from a forked stream is fine
  EXPECT_TRUE(t.in_capture(0x300));
  t.join(0x300, 0x100);
  t.join(0x200, 0x100);
  EXPECT_TRUE(t.unjoined().empty());
  EXPECT_FALSE(t.in_capture(0x200));
}

TEST(CaptureTracker, UnjoinedStreamsAreListedInForkOrderAndNamedInTheMessage) {
  capture_tracker t(0x100, "decoder step");
  t.fork(0x100, 0x300);
  t.fork(0x100, 0x200);
  ASSERT_EQ(t.unjoined(), (std::vector<gmem::stream_handle>{0x300, 0x200}));
  const std::string msg = t.unjoined_message();
  EXPECT_NE(msg.find("graph 'decoder step'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("2 forked stream(s) not joined back: stream 0x300, stream 0x200"),
            std::string::npos)
      << msg;
}

TEST(CaptureTracker, ForkFromOutsideTheCaptureIsRefused) {
  capture_tracker t(0x100, "g");
  EXPECT_THROW(t.fork(0x999, 0x200), usage_error);
  EXPECT_THROW(t.fork(0x100, 0x100), usage_error);  // the origin cannot be forked
  t.fork(0x100, 0x200);
  EXPECT_THROW(t.fork(0x100, 0x200), usage_error);  // twice
}

TEST(CaptureTracker, JoinOfAStreamNeverForkedIsRefused) {
  capture_tracker t(0x100, "g");
  EXPECT_THROW(t.join(0x200, 0x100), usage_error);
  t.fork(0x100, 0x200);
  EXPECT_THROW(t.join(0x200, 0x200), usage_error);  // into itself
  t.join(0x200, 0x100);
  EXPECT_THROW(t.join(0x200, 0x100), usage_error);  // twice
}

TEST(CaptureTracker, WorkInAStreamOutsideTheCaptureIsRefusedNamingIt) {
  capture_tracker t(0x100, "g");
  try {
    t.check_in_capture(0x500, "cudaMallocAsync of 64 B");
    FAIL() << "expected usage_error";
  } catch (const usage_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("cudaMallocAsync of 64 B in stream 0x500"), std::string::npos) << msg;
  }
  EXPECT_NO_THROW(t.check_in_capture(0x100, "x"));
}

}  // namespace
