// KdfGate: at most `concurrency` permits at once, never a wait, a slot back when a permit ends.
#include "sluice/auth/kdf_gate.h"

#include <gtest/gtest.h>

#include <vector>

namespace sluice::auth {
namespace {

TEST(KdfGate, HandsOutAtMostItsConcurrencyAndRefusesTheRestAtOnce) {
  KdfGate gate(2);
  std::optional<KdfGate::Permit> first = gate.try_enter();
  std::optional<KdfGate::Permit> second = gate.try_enter();
  ASSERT_TRUE(first && second);
  EXPECT_FALSE(gate.try_enter());
  EXPECT_FALSE(gate.try_enter());
  first.reset();  // a hash finished: its slot is free again
  std::optional<KdfGate::Permit> third = gate.try_enter();
  EXPECT_TRUE(third);
  EXPECT_FALSE(gate.try_enter());
  EXPECT_EQ(gate.entered(), 3u);
  EXPECT_EQ(gate.refused(), 3u);
}

TEST(KdfGate, AMovedPermitFreesItsSlotOnce) {
  KdfGate gate(1);
  std::vector<KdfGate::Permit> held;
  held.push_back(*gate.try_enter());  // moved out of the optional, then into the vector
  EXPECT_FALSE(gate.try_enter());
  held.clear();
  EXPECT_TRUE(gate.try_enter());
  EXPECT_TRUE(gate.try_enter());  // the temporary above ended at once
}

}  // namespace
}  // namespace sluice::auth
