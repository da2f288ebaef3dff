#include "sluice/core/logger.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <array>
#include <cstddef>
#include <memory>
#include <string>

namespace sluice {
namespace {

// Each LogLevel, in its order: spdlog's level and the name a line carries.
struct LevelRow {
  spdlog::level::level_enum level;
  std::string_view name;
};
constexpr std::array<LevelRow, 4> kLevels = {{{spdlog::level::debug, "debug"},
                                              {spdlog::level::info, "info"},
                                              {spdlog::level::warn, "warn"},
                                              {spdlog::level::err, "error"}}};

const LevelRow& row(LogLevel level) { return kLevels.at(static_cast<std::size_t>(level)); }

spdlog::level::level_enum spdlog_level(LogLevel level) { return row(level).level; }

// Not registered with spdlog's registry: nothing else in the process can change or drop it.
spdlog::logger& process_logger() {
  static const std::shared_ptr<spdlog::logger> logger = [] {
    auto made = std::make_shared<spdlog::logger>("sluice",
                                                 std::make_shared<spdlog::sinks::stderr_sink_mt>());
    made->set_pattern("%v");  // the line is the JSON object, nothing around it
    made->set_level(spdlog::level::info);
    made->flush_on(spdlog::level::trace);
    return made;
  }();
  return *logger;
}

}  // namespace

std::string_view log_level_name(LogLevel level) { return row(level).name; }

void set_log_level(LogLevel level) { process_logger().set_level(spdlog_level(level)); }

void log(LogLevel level, std::string_view msg, nlohmann::json fields) {
  spdlog::logger& logger = process_logger();
  if (!logger.should_log(spdlog_level(level))) return;
  if (!fields.is_object()) fields = nlohmann::json::object();
  fields["level"] = log_level_name(level);
  fields["msg"] = msg;
  const std::string line = fields.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  logger.log(spdlog_level(level), spdlog::string_view_t(line.data(), line.size()));
}

}  // namespace sluice
