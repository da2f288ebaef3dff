#include "sluice/redis_module/request.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <utility>

#include "sluice/algorithm/validate.h"
#include "sluice/core/status_macros.h"

namespace sluice::redis_module {
namespace {

using algorithm::ScriptKind;

constexpr std::size_t kHeaderBytes = 4 * 8;
constexpr std::size_t kLimitBytes = 5 * 8;
constexpr std::size_t kPenaltyBytes = 6 * 8;

// Reads packed doubles that must hold integers below 2^53 in magnitude (everything the store
// sends: script_set.cc append_double).
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}

  StatusOr<std::int64_t> integer_at(std::size_t offset, std::string_view field) const {
    std::uint64_t bits = 0;
    for (std::size_t i = 0; i < 8; ++i) {
      bits |= std::uint64_t{static_cast<unsigned char>(bytes_[offset + i])} << (8 * i);
    }
    const double value = std::bit_cast<double>(bits);
    // NaN and the infinities fail the first test.
    if (!(std::fabs(value) < 0x1p53) || value != std::trunc(value)) {
      return invalid_argument(std::string(field) + " is not an integer below 2^53");
    }
    return static_cast<std::int64_t>(value);
  }

 private:
  std::string_view bytes_;
};

std::string joined(const std::vector<algorithm::FieldError>& errors) {
  std::string text;
  for (const algorithm::FieldError& error : errors) {
    if (!text.empty()) text += "; ";
    text += error.field + ": " + error.message;
  }
  return text;
}

// The limit the memory store would run for a script record (catalogue.cc script_record, read
// backwards). gcra arrives as the smooth bucket it is identical to; the bucket reproduces it.
StatusOr<RequestLimit> limit_of(std::int64_t kind, const std::int64_t (&p)[4], std::size_t index) {
  RequestLimit out;
  switch (kind) {
    case static_cast<int>(ScriptKind::kSmoothBucket):
    case static_cast<int>(ScriptKind::kIntervalBucket): {
      const bool interval = kind == static_cast<int>(ScriptKind::kIntervalBucket);
      out.limit = algorithm::TokenBucket{.capacity = p[0],
                                         .refill = p[1],
                                         .period = p[2],
                                         .refill_mode = interval ? algorithm::RefillMode::kInterval
                                                                 : algorithm::RefillMode::kSmooth,
                                         .initial = p[3]};
      break;
    }
    case static_cast<int>(ScriptKind::kLeakyBucket):
      out.limit = algorithm::LeakyBucket{.rate = p[0], .period = p[1], .max_delay = p[2]};
      break;
    case static_cast<int>(ScriptKind::kFixedWindow):
      // p3 = 1: denied costs counted (fixed_window.lua); any other value: free, as the script
      // reads it.
      out.limit = algorithm::FixedWindow{.limit = p[0],
                                         .window = p[1],
                                         .denied_cost = p[2] == 1 ? algorithm::DeniedCost::kCounted
                                                                  : algorithm::DeniedCost::kFree};
      break;
    case static_cast<int>(ScriptKind::kSlidingWindow):
      out.limit = algorithm::SlidingWindow{.limit = p[0], .window = p[1]};
      break;
    case static_cast<int>(ScriptKind::kSlidingLog):
      out.limit = algorithm::SlidingLog{.limit = p[0], .window = p[1]};
      break;
    case static_cast<int>(ScriptKind::kConcurrency):
      out.limit = algorithm::Concurrency{.limit = p[0], .lease_ttl = p[1]};
      break;
    case static_cast<int>(ScriptKind::kCalendarWindow): {
      // The three windows must follow each other; the limit is a window's.
      if (p[0] < 1 || p[1] < 0 || p[1] >= p[2] || p[2] >= p[3]) {
        return invalid_argument("limits[" + std::to_string(index) +
                                "]: a calendar window needs limit >= 1 and s0 < s1 < s2");
      }
      out.kind = ScriptKind::kCalendarWindow;
      out.calendar = {.limit = p[0], .ends = {p[1], p[2], p[3]}};
      return out;
    }
    default:
      return invalid_argument("limits[" + std::to_string(index) + "]: unknown kind " +
                              std::to_string(kind));
  }
  out.kind = static_cast<ScriptKind>(kind);
  // Named only when refused: building the prefix for every request would cost an allocation.
  const std::vector<algorithm::FieldError> errors = algorithm::validate_limit(out.limit, "");
  if (!errors.empty()) {
    return invalid_argument("limits[" + std::to_string(index) + "]." + joined(errors));
  }
  return out;
}

}  // namespace

// Lua's struct '<d' is little-endian: so is every host the module builds for.
static_assert(std::endian::native == std::endian::little);

void append_double(std::string& out, double value) { append_doubles(out, std::span(&value, 1)); }

void append_doubles(std::string& out, std::span<const double> values) {
  const std::size_t at = out.size();
  out.resize(at + 8 * values.size());
  std::memcpy(out.data() + at, values.data(), 8 * values.size());
}

std::size_t keys_per_decision(const Request& request) {
  return request.limits.size() + (request.penalty ? 1 : 0);
}

StatusOr<Request> parse_request(std::string_view bytes) {
  if (bytes.size() < kHeaderBytes + kLimitBytes) {
    return invalid_argument("request of " + std::to_string(bytes.size()) +
                            " bytes: shorter than a header and one limit");
  }
  const Reader reader(bytes);
  Request request;
  SLUICE_ASSIGN_OR_RETURN(request.repeats, reader.integer_at(0, "repeats"));
  SLUICE_ASSIGN_OR_RETURN(const std::int64_t operation, reader.integer_at(8, "operation"));
  SLUICE_ASSIGN_OR_RETURN(request.cost, reader.integer_at(16, "cost"));
  SLUICE_ASSIGN_OR_RETURN(const std::int64_t count, reader.integer_at(24, "limit count"));
  if (request.repeats < 0) return invalid_argument("repeats must not be negative");
  if (operation < 0 || operation > static_cast<int>(Operation::kPenalizedAcquire)) {
    return invalid_argument("unknown operation " + std::to_string(operation));
  }
  request.operation = static_cast<Operation>(operation);
  SLUICE_RETURN_IF_ERROR(algorithm::validate_cost(request.cost));
  const bool penalized = request.operation == Operation::kPenalizedAcquire;
  const std::size_t tail = penalized ? kPenaltyBytes : 0;
  if (count < 1 ||
      static_cast<std::uint64_t>(count) > (bytes.size() - kHeaderBytes - tail) / kLimitBytes) {
    return invalid_argument("limit count " + std::to_string(count) + " does not fit the " +
                            std::to_string(bytes.size()) + " bytes sent");
  }
  for (std::int64_t i = 0; i < count; ++i) {
    const std::size_t at = kHeaderBytes + static_cast<std::size_t>(i) * kLimitBytes;
    SLUICE_ASSIGN_OR_RETURN(const std::int64_t kind, reader.integer_at(at, "kind"));
    std::int64_t parameters[4];
    for (std::size_t j = 0; j < 4; ++j) {
      SLUICE_ASSIGN_OR_RETURN(parameters[j], reader.integer_at(at + 8 * (j + 1), "parameter"));
    }
    SLUICE_ASSIGN_OR_RETURN(RequestLimit limit,
                            limit_of(kind, parameters, static_cast<std::size_t>(i)));
    request.limits.push_back(std::move(limit));
  }
  const std::size_t lease_start = kHeaderBytes + static_cast<std::size_t>(count) * kLimitBytes;
  const std::size_t lease_end = bytes.size() - tail;
  // The script reads a lease id only when acquiring (inspect sends none).
  if (request.operation != Operation::kInspect) {
    request.lease = std::string(bytes.substr(lease_start, lease_end - lease_start));
  }
  if (penalized) {
    std::int64_t field[6];
    for (std::size_t j = 0; j < 6; ++j) {
      SLUICE_ASSIGN_OR_RETURN(field[j], reader.integer_at(lease_end + 8 * j, "penalty"));
    }
    const algorithm::Penalty penalty{.after = field[0],
                                     .within = field[1],
                                     .block = field[2],
                                     .escalate = field[3],
                                     .max = field[4],
                                     .quiet = field[5]};
    const std::vector<algorithm::FieldError> errors = algorithm::validate_penalty(penalty);
    if (!errors.empty()) return invalid_argument(joined(errors));
    request.penalty = penalty;
  }
  return request;
}

}  // namespace sluice::redis_module
