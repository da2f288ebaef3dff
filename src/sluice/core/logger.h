// The process's logger: one JSON object per line on stderr — its "level", its "msg" and the
// fields given — each line written whole, whatever thread logs it (store I/O threads log too).
// Lines below the threshold (set_log_level; default info) are not written. spdlog filters and
// writes (one thread-safe stderr sink, flushed at each line); the JSON is nlohmann's (keys in
// order, invalid UTF-8 replaced). The HTTP access log keeps its own writer (line_writer.h): a line
// per request is handed off without waiting for the fd, which this logger does not promise.
// Messages a `sluice` subcommand prints for its user (its errors and warnings) are its output,
// not logs (docs/decisions.md).
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

namespace sluice {

enum class LogLevel { kDebug, kInfo, kWarn, kError };

// "debug", "info", "warn", "error".
std::string_view log_level_name(LogLevel level);

// Lines at `level` and above are written from now on. Thread-safe.
void set_log_level(LogLevel level);

// Writes {"level", "msg", ...fields} when `level` passes the threshold. `fields` is an object (or
// null for none); its own "level" or "msg" are replaced. Thread-safe.
void log(LogLevel level, std::string_view msg, nlohmann::json fields = nullptr);

inline void log_info(std::string_view msg, nlohmann::json fields = nullptr) {
  log(LogLevel::kInfo, msg, std::move(fields));
}
inline void log_warn(std::string_view msg, nlohmann::json fields = nullptr) {
  log(LogLevel::kWarn, msg, std::move(fields));
}
inline void log_error(std::string_view msg, nlohmann::json fields = nullptr) {
  log(LogLevel::kError, msg, std::move(fields));
}

}  // namespace sluice
