#include "sluice/simulate/recorder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <future>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "sluice/simulate/traffic_stream.h"

namespace sluice::simulate {
namespace {

constexpr Micros kEpoch = 1'700'000'000'000'000;

class RecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("sluice-recorder-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::vector<std::string> files() const {
    std::vector<std::string> paths;
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      paths.push_back(entry.path().string());
    }
    std::sort(paths.begin(), paths.end());
    return paths;
  }
  // Every recorded event as "time-offset subject policy app cost", in time order.
  std::vector<std::string> read_back() {
    std::vector<std::string> events;
    TrafficNames names;
    const StatusOr<TrafficSummary> summary =
        stream_traffic(files(), names, {}, [&](const Event& e) {
          auto name = [](const NameTable& table, std::uint32_t id) {
            return id == kUnnamed ? std::string("-") : std::string(table.name(id));
          };
          events.push_back(std::to_string(e.time - kEpoch) + " " +
                           std::string(names.subjects.name(e.subject)) + " " +
                           name(names.policies, e.policy) + " " + name(names.apps, e.app) + " " +
                           std::to_string(e.cost));
        });
    EXPECT_TRUE(summary.ok()) << summary.status().message();
    return events;
  }
  RecorderOptions options() const { return {.directory = dir_.string()}; }

  std::filesystem::path dir_;
};

TEST_F(RecorderTest, LosesNothingWhileTheQueueHasRoom) {
  StatusOr<std::unique_ptr<Recorder>> recorder = Recorder::start(options());
  ASSERT_TRUE(recorder.ok()) << recorder.status().message();
  // Two threads, as decisions come from several I/O threads.
  auto produce = [&](int first) {
    for (int i = first; i < 2000; i += 2) {
      (*recorder)->record(kEpoch + i, "api", "web", "user-" + std::to_string(i % 50), i % 3,
                          RecordedOutcome::kAllowed);
    }
  };
  std::thread a(produce, 0), b(produce, 1);
  a.join();
  b.join();
  (*recorder)->flush();
  const RecorderStats stats = (*recorder)->stats();
  EXPECT_EQ(stats.recorded, 2000u);
  EXPECT_EQ(stats.written, 2000u);
  EXPECT_EQ(stats.dropped, 0u);
  EXPECT_GT(stats.bytes, 2000u);
  const std::vector<std::string> events = read_back();
  ASSERT_EQ(events.size(), 2000u);
  // Each subject's own requests are all there (times may be clamped forward across threads).
  std::map<std::string, int> per_subject;
  for (const std::string& e : events)
    ++per_subject[e.substr(e.find(' ') + 1, e.find(" api") - e.find(' ') - 1)];
  EXPECT_EQ(per_subject.size(), 50u);
  for (const auto& [subject, count] : per_subject) EXPECT_EQ(count, 40) << subject;
}

TEST_F(RecorderTest, AFullQueueDropsAndCountsWithoutBlocking) {
  std::promise<void> entered;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  bool first = true;
  RecorderOptions o = options();
  o.queue_capacity = 10;
  // The disk stalls on the first batch until the test lets it go.
  o.before_write = [&] {
    if (!first) return;
    first = false;
    entered.set_value();
    released.wait();
  };
  StatusOr<std::unique_ptr<Recorder>> recorder = Recorder::start(std::move(o));
  ASSERT_TRUE(recorder.ok());
  (*recorder)->record(kEpoch, "api", "", "a", 1, RecordedOutcome::kUnknown);
  entered.get_future().wait();     // the writer holds that one and is stalled
  for (int i = 1; i <= 15; ++i) {  // 10 fit in the queue, 5 do not; none of these calls waits
    (*recorder)->record(kEpoch + i, "api", "", "a", 1, RecordedOutcome::kUnknown);
  }
  EXPECT_EQ((*recorder)->stats().dropped, 5u);
  EXPECT_EQ((*recorder)->stats().recorded, 11u);
  release.set_value();
  (*recorder)->flush();
  EXPECT_EQ((*recorder)->stats().written, 11u);
  EXPECT_EQ(read_back().size(), 11u);
}

TEST_F(RecorderTest, RotatesFilesAndKeepsTheNewestWithinTheTotalBound) {
  RecorderOptions o = options();
  o.max_file_bytes = 200;
  o.max_total_bytes = 600;
  o.queue_capacity = 1;  // one record per batch: rotation is checked between every write
  StatusOr<std::unique_ptr<Recorder>> recorder = Recorder::start(std::move(o));
  ASSERT_TRUE(recorder.ok());
  for (int i = 0; i < 300; ++i) {
    (*recorder)->record(kEpoch + i, "api", "", "subject-" + std::to_string(i), 1,
                        RecordedOutcome::kUnknown);
    (*recorder)->flush();
  }
  const RecorderStats stats = (*recorder)->stats();
  EXPECT_EQ(stats.written, 300u);
  EXPECT_GT(stats.files, 5u);
  std::uintmax_t on_disk = 0;
  for (const std::string& path : files()) on_disk += std::filesystem::file_size(path);
  // Every file but the open one is at most one record over max_file_bytes.
  EXPECT_LE(on_disk, 600u + 40u);
  EXPECT_LT(files().size(), stats.files);
  const std::vector<std::string> kept = read_back();
  ASSERT_FALSE(kept.empty());
  EXPECT_EQ(kept.back(), "299 subject-299 api - 1");  // the newest survive
}

TEST_F(RecorderTest, SamplesWholeSubjectsByAKeyedHash) {
  RecorderOptions o = options();
  o.sample = 0.5;
  o.key = "k1";
  StatusOr<std::unique_ptr<Recorder>> recorder = Recorder::start(o);
  ASSERT_TRUE(recorder.ok());
  for (int round = 0; round < 5; ++round) {
    for (int s = 0; s < 400; ++s) {
      (*recorder)->record(kEpoch + round * 1000 + s, "api", "", "u" + std::to_string(s), 1,
                          RecordedOutcome::kUnknown);
    }
  }
  (*recorder)->flush();
  std::map<std::string, int> per_subject;
  for (const std::string& e : read_back())
    ++per_subject[e.substr(e.find(' ') + 1, e.find(" api") - e.find(' ') - 1)];
  for (const auto& [subject, count] : per_subject) EXPECT_EQ(count, 5) << subject;  // whole
  EXPECT_GT(per_subject.size(), 140u);  // about half of 400
  EXPECT_LT(per_subject.size(), 260u);
  o.key = "k2";
  o.directory = (dir_ / "other").string();
  StatusOr<std::unique_ptr<Recorder>> other = Recorder::start(o);
  int differ = 0;
  for (int s = 0; s < 400; ++s) {
    const std::string subject = "u" + std::to_string(s);
    differ += (*recorder)->sampled(subject) != (*other)->sampled(subject);
  }
  EXPECT_GT(differ, 100);  // another key picks another sample
}

TEST_F(RecorderTest, HashedSubjectsAreStableAndNotInClear) {
  RecorderOptions o = options();
  o.subjects = SubjectStorage::kHashed;
  o.key = "secret";
  StatusOr<std::unique_ptr<Recorder>> recorder = Recorder::start(o);
  ASSERT_TRUE(recorder.ok());
  (*recorder)->record(kEpoch, "api", "", "alice@example.com", 1, RecordedOutcome::kDenied);
  (*recorder)->record(kEpoch + 1, "api", "", "alice@example.com", 1, RecordedOutcome::kDenied);
  (*recorder)->record(kEpoch + 2, "api", "", "bob@example.com", 1, RecordedOutcome::kDenied);
  (*recorder)->flush();
  const std::vector<std::string> events = read_back();
  ASSERT_EQ(events.size(), 3u);
  const std::string alice = events[0].substr(2, 32);
  EXPECT_THAT(alice, ::testing::MatchesRegex("[0-9a-f]{32}"));
  EXPECT_EQ(events[1].substr(2, 32), alice);
  EXPECT_NE(events[2].substr(2, 32), alice);
  for (const std::string& e : events) EXPECT_EQ(e.find("example.com"), std::string::npos);

  o.key.clear();
  EXPECT_THAT(std::string(Recorder::start(o).status().message()),
              ::testing::HasSubstr("record_key"));
}

}  // namespace
}  // namespace sluice::simulate
