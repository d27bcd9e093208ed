#include <gtest/gtest.h>

#include "gmem/alloc_request.hpp"
#include "gmem/usage_error.hpp"

namespace {

using gmem::alloc_request;
using gmem::usage_error;
using gmem::validate_alloc_request;

bool all_peers(int, int) { return true; }

std::string error_of(const alloc_request& r, int devices, gmem::peer_access_query q = all_peers) {
  try {
    (void)validate_alloc_request(r, devices, q, "g");
  } catch (const usage_error& e) {
    return e.what();
  }
  return "";
}

TEST(AllocRequest, ZeroBytesIsRefusedNamingGraphAndDevice) {
  const std::string msg = error_of({0, 1, {}}, 2);
  EXPECT_NE(msg.find("zero-byte"), std::string::npos) << msg;
  EXPECT_NE(msg.find("graph 'g'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("device 1"), std::string::npos) << msg;
}

TEST(AllocRequest, ResidentDeviceOutOfRangeNamesTheValidRange) {
  const std::string msg = error_of({4096, 2, {}}, 2);
  EXPECT_NE(msg.find("resident device 2 is out of range"), std::string::npos) << msg;
  EXPECT_NE(msg.find("0..1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4096 B"), std::string::npos) << msg;
  EXPECT_NE(error_of({4096, -1, {}}, 2), "");
}

TEST(AllocRequest, PeerOutOfRangeIsRefused) {
  const std::string msg = error_of({4096, 0, {3}}, 2);
  EXPECT_NE(msg.find("peer device 3 is out of range"), std::string::npos) << msg;
}

TEST(AllocRequest, PeerThatCannotAccessResidentIsRefusedWithBothDevices) {
  // Device 2 cannot reach device 0; devices 0 and 1 reach each other.
  auto topology = [](int peer, int resident) { return !(peer == 2 && resident == 0); };
  const std::string msg = error_of({1 << 21, 0, {1, 2}}, 3, topology);
  EXPECT_NE(msg.find("device 2 cannot access memory resident on device 0"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("2097152 B (2.0 MiB)"), std::string::npos) << msg;
}

TEST(AllocRequest, ValidPeersAreReturnedInOrderWithoutTheResidentDevice) {
  const auto peers =
      validate_alloc_request({64, 1, {2, 1, 0}}, 3, all_peers, "g");
  EXPECT_EQ(peers, (std::vector<int>{2, 0}));
}

TEST(AllocRequest, RepeatedPeerIsRefused) {
  const std::string msg = error_of({64, 0, {1, 1}}, 2);
  EXPECT_NE(msg.find("listed twice"), std::string::npos) << msg;
}

TEST(AllocRequest, NoDeviceAtAllIsRefused) {
  EXPECT_NE(error_of({64, 0, {}}, 0).find("no CUDA device"),
            std::string::npos);
}

// The inline shortcut add_alloc takes: exactly the requests that validate without peers.
TEST(AllocRequest, PlainRequestIsOneValidationWouldPassWithNoPeers) {
  using gmem::is_plain_request;
  EXPECT_TRUE(is_plain_request({64, 0}, 1));
  EXPECT_TRUE(is_plain_request({64, 1}, 2));
  EXPECT_FALSE(is_plain_request({0, 0}, 1));       // refused by validation
  EXPECT_FALSE(is_plain_request({64, 1}, 1));      // device out of range
  EXPECT_FALSE(is_plain_request({64, -1}, 1));
  EXPECT_FALSE(is_plain_request({64, 0}, 0));      // no device at all
  EXPECT_FALSE(is_plain_request({64, 0, {0}}, 1)); // peers go through validation
  for (const alloc_request& r : {alloc_request{64, 0}, alloc_request{64, 1}}) {
    if (is_plain_request(r, 2)) {
      EXPECT_TRUE(validate_alloc_request(r, 2, all_peers, "g").empty());
    }
  }
}

}  // namespace
