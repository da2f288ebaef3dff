#include "sluice/core/logger.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace sluice {
namespace {

// What the process writes to stderr while `body` runs.
template <typename Body>
std::string captured_stderr(Body body) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("sluice-logger-" + std::to_string(::getpid())))
          .string();
  std::fflush(stderr);
  const int saved = ::dup(STDERR_FILENO);
  const int file = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ::dup2(file, STDERR_FILENO);
  ::close(file);
  body();
  std::fflush(stderr);
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::filesystem::remove(path);
  return text.str();
}

std::vector<nlohmann::json> lines_of(const std::string& text) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

TEST(Logger, WritesOneJsonObjectPerLineWithLevelAndMessage) {
  const std::string out = captured_stderr([] {
    log_info("listening", {{"port", 8080}, {"scheme", "http"}});
    log_error("redis refuses", {{"error", "NOPERM"}});
    log_info("stopped");
  });
  const std::vector<nlohmann::json> lines = lines_of(out);
  ASSERT_EQ(lines.size(), 3u) << out;
  EXPECT_EQ(lines[0],
            nlohmann::json(
                {{"level", "info"}, {"msg", "listening"}, {"port", 8080}, {"scheme", "http"}}));
  EXPECT_EQ(lines[1].value("level", ""), "error");
  EXPECT_EQ(lines[1].value("error", ""), "NOPERM");
  EXPECT_EQ(lines[2], nlohmann::json({{"level", "info"}, {"msg", "stopped"}}));
  // Keys in order, as before the logger: tests and scripts search for "key":value, pairs.
  EXPECT_NE(out.find("{\"level\":\"info\",\"msg\":\"listening\",\"port\":8080,"), std::string::npos)
      << out;
}

TEST(Logger, LinesBelowTheThresholdAreNotWritten) {
  const std::string out = captured_stderr([] {
    log(LogLevel::kDebug, "hidden by default");
    set_log_level(LogLevel::kError);
    log_warn("hidden at error");
    log_error("shown");
    set_log_level(LogLevel::kInfo);
  });
  const std::vector<nlohmann::json> lines = lines_of(out);
  ASSERT_EQ(lines.size(), 1u) << out;
  EXPECT_EQ(lines[0].value("msg", ""), "shown");
}

TEST(Logger, InvalidUtf8IsReplacedNotThrown) {
  const std::string out = captured_stderr([] {
    log_info("bytes", {{"subject", std::string("a\xff"
                                               "b")}});
  });
  const std::vector<nlohmann::json> lines = lines_of(out);
  ASSERT_EQ(lines.size(), 1u) << out;
  EXPECT_EQ(lines[0].value("subject", ""),
            "a\xEF\xBF\xBD"
            "b");
}

}  // namespace
}  // namespace sluice
