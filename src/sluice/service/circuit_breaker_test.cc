// The circuit breaker's states on an injected timeline.
#include "sluice/service/circuit_breaker.h"

#include <gtest/gtest.h>

namespace sluice::service {
namespace {

using Admission = CircuitBreaker::Admission;
using Outcome = CircuitBreaker::Outcome;
constexpr Outcome kAnswered = Outcome::kAnswered;
constexpr Outcome kOutage = Outcome::kOutage;
constexpr Admission kPass = Admission::kPass;
constexpr Admission kProbe = Admission::kProbe;

TEST(CircuitBreakerTest, OpensAfterThresholdConsecutiveOutagesOnly) {
  DefenceMetrics metrics;
  CircuitBreaker breaker({.failure_threshold = 3, .open_for = 100}, metrics);
  breaker.record(kOutage, kPass, 0);
  breaker.record(kOutage, kPass, 0);
  breaker.record(kAnswered, kPass, 0);  // an answer in between: the count starts again
  breaker.record(kOutage, kPass, 0);
  breaker.record(kOutage, kPass, 0);
  EXPECT_EQ(breaker.state(), BreakerState::kClosed);
  EXPECT_EQ(breaker.admit(0), Admission::kPass);
  breaker.record(kOutage, kPass, 10);
  EXPECT_EQ(breaker.state(), BreakerState::kOpen);
  EXPECT_EQ(breaker.admit(10), Admission::kRefuse);
  EXPECT_EQ(breaker.admit(109), Admission::kRefuse);
  EXPECT_EQ(metrics.breaker_state(), BreakerState::kOpen);
  EXPECT_EQ(metrics.breaker_transitions(BreakerState::kOpen), 1u);
  EXPECT_EQ(metrics.breaker_rejections(), 2u);
}

TEST(CircuitBreakerTest, AfterOpenForOneProbeGoesThroughAndItsAnswerClosesOrReopens) {
  DefenceMetrics metrics;
  CircuitBreaker breaker({.failure_threshold = 1, .open_for = 100}, metrics);
  breaker.record(kOutage, kPass, 0);
  ASSERT_EQ(breaker.state(), BreakerState::kOpen);
  EXPECT_EQ(breaker.admit(100), Admission::kProbe);
  EXPECT_EQ(breaker.state(), BreakerState::kHalfOpen);
  EXPECT_EQ(breaker.admit(100), Admission::kRefuse) << "one probe at a time";
  EXPECT_EQ(breaker.admit(500), Admission::kRefuse) << "until the probe answers";
  breaker.record(kOutage, kProbe, 150);  // the probe failed: open for another open_for
  EXPECT_EQ(breaker.state(), BreakerState::kOpen);
  EXPECT_EQ(breaker.admit(249), Admission::kRefuse);
  EXPECT_EQ(breaker.admit(250), Admission::kProbe);
  breaker.record(kAnswered, kProbe, 260);
  EXPECT_EQ(breaker.state(), BreakerState::kClosed);
  EXPECT_EQ(breaker.admit(260), Admission::kPass);
  EXPECT_EQ(metrics.breaker_transitions(BreakerState::kOpen), 2u);
  EXPECT_EQ(metrics.breaker_transitions(BreakerState::kHalfOpen), 2u);
  EXPECT_EQ(metrics.breaker_transitions(BreakerState::kClosed), 1u);
  EXPECT_EQ(metrics.breaker_state(), BreakerState::kClosed);
}

TEST(CircuitBreakerTest, LateAnswersOfCallsAdmittedBeforeItOpenedChangeNothing) {
  DefenceMetrics metrics;
  CircuitBreaker breaker({.failure_threshold = 2, .open_for = 100}, metrics);
  breaker.record(kOutage, kPass, 0);
  breaker.record(kOutage, kPass, 0);
  ASSERT_EQ(breaker.state(), BreakerState::kOpen);
  breaker.record(kOutage, kPass, 5);    // more timeouts of calls already in flight
  breaker.record(kAnswered, kPass, 5);  // or a late answer: only the probe decides
  EXPECT_EQ(breaker.state(), BreakerState::kOpen);
  EXPECT_EQ(breaker.admit(99), Admission::kRefuse) << "open_for counts from the opening";
  EXPECT_EQ(metrics.breaker_transitions(BreakerState::kOpen), 1u);
}

TEST(CircuitBreakerTest, ARefusedCallAskedNothingAndRecordsNothing) {
  DefenceMetrics metrics;
  CircuitBreaker breaker({.failure_threshold = 1, .open_for = 100}, metrics);
  breaker.record(kOutage, Admission::kRefuse, 0);
  EXPECT_EQ(breaker.state(), BreakerState::kClosed);
  breaker.record(kOutage, kPass, 0);
  ASSERT_EQ(breaker.admit(100), kProbe);
  breaker.record(kAnswered, Admission::kRefuse, 110);  // not the probe's answer
  EXPECT_EQ(breaker.state(), BreakerState::kHalfOpen);
}

TEST(CircuitBreakerTest, ThresholdZeroNeverOpens) {
  DefenceMetrics metrics;
  CircuitBreaker breaker({.failure_threshold = 0, .open_for = 100}, metrics);
  for (int i = 0; i < 1000; ++i) breaker.record(kOutage, kPass, i);
  EXPECT_EQ(breaker.admit(1000), Admission::kPass);
  EXPECT_EQ(metrics.breaker_transitions(BreakerState::kOpen), 0u);
}

TEST(CircuitBreakerTest, MetricsTextNamesStateTransitionsAndRejections) {
  DefenceMetrics metrics;
  CircuitBreaker breaker({.failure_threshold = 1, .open_for = 100}, metrics);
  breaker.record(kOutage, kPass, 0);
  (void)breaker.admit(1);
  std::string text;
  metrics.write(text);
  EXPECT_NE(text.find("sluice_circuit_breaker_state 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("sluice_circuit_breaker_transitions_total{to=\"open\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("sluice_circuit_breaker_rejections_total 1\n"), std::string::npos);
}

}  // namespace
}  // namespace sluice::service
