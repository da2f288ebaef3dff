#include "sluice/simulate/traffic_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sluice/simulate/binary_format.h"
#include "sluice/simulate/traffic_stream.h"

namespace sluice::simulate {
namespace {

using ::testing::HasSubstr;

constexpr Micros kEpoch = 1'700'000'000'000'000;

class TrafficReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("sluice-traffic-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  std::string write_gzip(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    gzFile file = gzopen(path.c_str(), "wb");
    EXPECT_NE(file, nullptr);
    EXPECT_EQ(gzwrite(file, text.data(), static_cast<unsigned>(text.size())),
              static_cast<int>(text.size()));
    gzclose(file);
    return path;
  }

  // Every event of `path` as (time, subject, policy, app, cost) text, or the first error.
  StatusOr<std::vector<std::string>> read_all(const std::string& path, OpenOptions options = {},
                                              std::uint64_t* skipped = nullptr) {
    StatusOr<std::unique_ptr<TrafficReader>> reader = open_traffic(path, names_, options);
    if (!reader.ok()) return reader.status();
    std::vector<std::string> events;
    Event event;
    for (;;) {
      StatusOr<bool> more = (*reader)->next(event);
      if (!more.ok()) return more.status();
      if (!*more) break;
      events.push_back(describe(event));
    }
    if (skipped != nullptr) *skipped = (*reader)->skipped();
    return events;
  }
  std::string describe(const Event& event) const {
    auto name = [](const NameTable& table, std::uint32_t id) {
      return id == kUnnamed ? std::string("-") : std::string(table.name(id));
    };
    return std::to_string(event.time - kEpoch) + " " +
           std::string(names_.subjects.name(event.subject)) + " " +
           name(names_.policies, event.policy) + " " + name(names_.apps, event.app) + " " +
           std::to_string(event.cost);
  }

  std::filesystem::path dir_;
  TrafficNames names_;
};

TEST_F(TrafficReaderTest, ReadsJsonLinesWithMicrosOrRfc3339TimesAndOptionalFields) {
  const std::string path = write(
      "a.jsonl",
      R"({"time": 1700000000000000, "key": "alice"})"
      "\n\n"  // a blank line is no event
      R"({"time": "2023-11-14T22:13:20.000005Z", "key": 42, "cost": 3, "app": "web", "policy": "api"})"
      "\r\n"
      R"({"time": "2023-11-14T23:13:20.000007+01:00", "key": "bob", "cost": 0})");
  const StatusOr<std::vector<std::string>> events = read_all(path);
  ASSERT_TRUE(events.ok()) << events.status().message();
  EXPECT_EQ(*events, (std::vector<std::string>{"0 alice - - 1", "5 42 api web 3", "7 bob - - 0"}));
}

TEST_F(TrafficReaderTest, MapsFieldsOfOtherShapes) {
  FieldMap map;
  ASSERT_TRUE(parse_field_map("t=.ts,key=.client.ip,cost=.bytes,app=,policy=", map).ok());
  const std::string path = write(
      "nginx.jsonl",
      R"({"ts": 1700000000000001, "client": {"ip": "10.0.0.1"}, "bytes": 512, "app": "ignored"})");
  const StatusOr<std::vector<std::string>> events = read_all(path, {.json = {.fields = map}});
  ASSERT_TRUE(events.ok()) << events.status().message();
  EXPECT_EQ(*events, std::vector<std::string>{"1 10.0.0.1 - - 512"});
}

TEST_F(TrafficReaderTest, RefusesBadMappingsNamingTheEntry) {
  struct Case {
    std::string text;
    std::string error;
  };
  for (const Case& c : std::vector<Case>{{"when=.ts", "when: unknown field"},
                                         {"t", "t: expected name=.path"},
                                         {"key=client.ip", "member names, each after a '.'"},
                                         {"t=", "t: the time field needs a path"},
                                         {"key=.a..b", "empty member name"}}) {
    SCOPED_TRACE(c.text);
    FieldMap map;
    const Status status = parse_field_map(c.text, map);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.error));
  }
}

TEST_F(TrafficReaderTest, BadLinesAreErrorsNamingTheLineAndField) {
  struct Case {
    std::string line2;
    std::string error;
  };
  const std::string first = R"({"time": 1700000000000010, "key": "a"})";
  for (const Case& c : std::vector<Case>{
           {R"({"time": 1700000000000011, "key": "a")", "line 2: not valid JSON"},
           {R"([1, 2])", "line 2: not a JSON object"},
           {R"({"key": "a"})", "line 2: .time: missing"},
           {R"({"time": 1700000000000011})", "line 2: .key: missing"},
           {R"({"time": 1700000000000011, "list": [{"key": "a"}]})", "line 2: .key: missing"},
           {R"({"time": 1700000000000011, "key": {"id": "a"}})",
            "line 2: .key: must be a string or an integer"},
           {R"({"time": 1700000000000009, "key": "a"})",
            "line 2: .time: 1700000000000009 µs is earlier than the line before"},
           {R"({"time": "yesterday", "key": "a"})", "line 2: .time: not an RFC 3339 date-time"},
           {R"({"time": 1.5, "key": "a"})",
            "line 2: .time: must be an RFC 3339 string or an integer"},
           {R"({"time": 1700000000000011, "key": "a", "cost": -1})",
            "line 2: .cost: cost: must not be negative"},
           {R"({"time": 1700000000000011, "key": "a", "cost": "3"})",
            "line 2: .cost: must be an integer"},
           {R"({"time": 1700000000000011, "key": ["a"]})",
            "line 2: .key: must be a string or an integer"},
       }) {
    SCOPED_TRACE(c.line2);
    const std::string path = write("bad.jsonl", first + "\n" + c.line2 + "\n" + first + "\n");
    const StatusOr<std::vector<std::string>> events = read_all(path);
    ASSERT_FALSE(events.ok());
    EXPECT_EQ(events.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(events.status().message()), HasSubstr(path + ": " + c.error));

    std::uint64_t skipped = 0;
    const StatusOr<std::vector<std::string>> kept =
        read_all(path, {.json = {.skip_bad_lines = true}}, &skipped);
    ASSERT_TRUE(kept.ok()) << kept.status().message();
    EXPECT_EQ(kept->size(), 2u);
    EXPECT_EQ(skipped, 1u);
  }
}

TEST_F(TrafficReaderTest, ParsesRfc3339ToTheMicrosecond) {
  EXPECT_EQ(*parse_rfc3339("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(*parse_rfc3339("2023-11-14T22:13:20Z"), kEpoch);
  EXPECT_EQ(*parse_rfc3339("2023-11-14T22:13:20.1Z"), kEpoch + 100'000);
  EXPECT_EQ(*parse_rfc3339("2023-11-14T22:13:20.123456789Z"), kEpoch + 123'456);
  EXPECT_EQ(*parse_rfc3339("2023-11-14t21:43:20-00:30"), kEpoch);
  EXPECT_EQ(*parse_rfc3339("2024-02-29T00:00:00+00:00"), 1'709'164'800'000'000);
  for (const char* bad : {"2023-02-29T00:00:00Z", "2023-11-14T24:00:00Z", "2023-11-14T22:13:20",
                          "2023-11-14T22:13:20.Z", "2023-11-14", "2023-11-14T22:13:20Zx"}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(parse_rfc3339(bad).status().code(), StatusCode::kInvalidArgument);
  }
}

TEST_F(TrafficReaderTest, ReadsGzipCompressedJsonLines) {
  std::string text;
  for (int i = 0; i < 50'000; ++i) {  // larger than one read block once inflated
    text += R"({"time": )" + std::to_string(kEpoch + i) + R"(, "key": "user-)" +
            std::to_string(i % 7) + "\"}\n";
  }
  const std::string path = write_gzip("big.jsonl.gz", text);
  ASSERT_LT(std::filesystem::file_size(path), text.size() / 4);  // really compressed
  const StatusOr<std::vector<std::string>> events = read_all(path);
  ASSERT_TRUE(events.ok()) << events.status().message();
  ASSERT_EQ(events->size(), 50'000u);
  EXPECT_EQ(events->back(), "49999 user-5 - - 1");
}

TEST_F(TrafficReaderTest, BinaryRecordingRoundTripsPlainAndGzipped) {
  const std::string path = (dir_ / "a.sltr").string();
  {
    StatusOr<BinaryWriter> writer = BinaryWriter::create(path);
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE(writer->write(kEpoch, "alice", "api", "web", 1).ok());
    ASSERT_TRUE(writer->write(kEpoch, "bob", "", "", 0, RecordedOutcome::kDenied).ok());
    ASSERT_TRUE(writer->write(kEpoch + 300, "alice", "api", "", 1'000'000).ok());
    const Status late = writer->write(kEpoch + 299, "carol", "", "", 1);
    EXPECT_EQ(late.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(late.message()), HasSubstr("earlier than the previous event"));
    ASSERT_TRUE(writer->close().ok());
  }
  const std::vector<std::string> expected = {"0 alice api web 1", "0 bob - - 0",
                                             "300 alice api - 1000000"};
  const StatusOr<std::vector<std::string>> events = read_all(path);
  ASSERT_TRUE(events.ok()) << events.status().message();
  EXPECT_EQ(*events, expected);

  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(bytes.substr(0, 8), "SLUICETR");
  const StatusOr<std::vector<std::string>> gzipped = read_all(write_gzip("a.sltr.gz", bytes));
  ASSERT_TRUE(gzipped.ok()) << gzipped.status().message();
  EXPECT_EQ(*gzipped, expected);

  const StatusOr<std::vector<std::string>> cut =
      read_all(write("cut.sltr", bytes.substr(0, bytes.size() - 2)));
  EXPECT_EQ(cut.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(std::string(cut.status().message()), HasSubstr("record cut short"));

  std::string newer = bytes;
  newer[8] = 2;
  const StatusOr<std::vector<std::string>> future = read_all(write("v2.sltr", newer));
  EXPECT_THAT(std::string(future.status().message()), HasSubstr("format version 2"));
}

TEST_F(TrafficReaderTest, MergesFilesInTimeOrder) {
  const std::string a = write("a.jsonl", R"({"time": 1700000000000001, "key": "a1"})"
                                         "\n"
                                         R"({"time": 1700000000000005, "key": "a5"})");
  const std::string b = write("b.jsonl", R"({"time": 1700000000000001, "key": "b1"})"
                                         "\n"
                                         R"({"time": 1700000000000003, "key": "b3"})");
  std::vector<std::string> order;
  const StatusOr<TrafficSummary> summary = stream_traffic({a, b}, names_, {}, [&](const Event& e) {
    order.emplace_back(names_.subjects.name(e.subject));
  });
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(order, (std::vector<std::string>{"a1", "b1", "b3", "a5"}));
  EXPECT_EQ(summary->events, 4u);
  EXPECT_EQ(summary->first, kEpoch + 1);
  EXPECT_EQ(summary->last, kEpoch + 5);
}

TEST_F(TrafficReaderTest, AMissingFileIsNotFoundNamingIt) {
  const StatusOr<std::vector<std::string>> events = read_all((dir_ / "none.jsonl").string());
  EXPECT_EQ(events.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(std::string(events.status().message()), HasSubstr("none.jsonl: cannot open"));
}

}  // namespace
}  // namespace sluice::simulate
