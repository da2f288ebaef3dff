// Durations ("1500ms", "1h30m") and ISO-8601 timestamps from policy documents, flags and
// config files: any text is parsed or refused, and what is accepted reads back as written.
#include "fuzz/fuzz_input.h"
#include "sluice/core/duration.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace sluice;
  const std::string_view text = fuzz::as_text(data, size);
  if (StatusOr<Micros> duration = parse_duration(text); duration.ok()) {
    StatusOr<Micros> again = parse_duration(format_duration(*duration));
    fuzz::require(again.ok() && *again == *duration, "format_duration reads back");
  }
  if (StatusOr<Micros> timestamp = parse_timestamp(text); timestamp.ok()) {
    StatusOr<Micros> again = parse_timestamp(format_timestamp(*timestamp));
    fuzz::require(again.ok() && *again == *timestamp, "format_timestamp reads back");
  }
  return 0;
}
