#include "sluice/core/rendezvous.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace sluice {
namespace {

TEST(RendezvousTest, AValueDeliveredBeforeTheWaitIsReturned) {
  Rendezvous<std::string> rendezvous;
  rendezvous.deliver("early");
  EXPECT_EQ(rendezvous.wait(100), "early");
}

// As blocking wrappers use it: the deliverer holds its own share, so the waiter may return and
// drop its share while the delivery is still finishing; spinning or not, each gets its value.
TEST(RendezvousTest, ValuesDeliveredFromOtherThreadsReachTheirWaiters) {
  constexpr int kCalls = 500;
  for (const Micros spin : {Micros{0}, Micros{50}}) {
    for (int call = 0; call < kCalls; ++call) {
      auto rendezvous = std::make_shared<Rendezvous<int>>();
      std::thread deliverer([rendezvous, call] { rendezvous->deliver(call); });
      EXPECT_EQ(rendezvous->wait(spin), call);
      rendezvous.reset();
      deliverer.join();
    }
  }
}

}  // namespace
}  // namespace sluice
