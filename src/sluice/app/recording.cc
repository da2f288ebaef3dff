#include "sluice/app/recording.h"

#include <cstdlib>
#include <utility>

#include "sluice/core/prometheus_text.h"

namespace sluice::app {

StatusOr<double> parse_sample(std::string_view text) {
  const bool percent = text.ends_with('%');
  const std::string number(percent ? text.substr(0, text.size() - 1) : text);
  char* end = nullptr;
  const double value = std::strtod(number.c_str(), &end) / (percent ? 100.0 : 1.0);
  if (number.empty() || *end != '\0' || !(value >= 0.0 && value <= 1.0)) {
    return invalid_argument("must be a fraction from 0 to 1 or a percentage, not \"" +
                            std::string(text) + "\"");
  }
  return value;
}

Status check_record_settings(const Settings& s) {
  if (s.record_file_bytes > s.record_max_bytes) {
    return invalid_argument("record_file_bytes: must be at most record_max_bytes (" +
                            std::to_string(s.record_max_bytes) + "), not " +
                            std::to_string(s.record_file_bytes));
  }
  if (s.record_subjects == simulate::SubjectStorage::kHashed && s.record_key.empty()) {
    return invalid_argument(
        "record_key: must be set when record_subjects is hashed (SLUICE_RECORD_KEY)");
  }
  return Status();
}

simulate::RecorderOptions recorder_options(const Settings& s) {
  return {.directory = s.record_dir,
          .max_file_bytes = static_cast<std::uint64_t>(s.record_file_bytes),
          .max_total_bytes = static_cast<std::uint64_t>(s.record_max_bytes),
          .sample = s.record_sample,
          .key = s.record_key,
          .subjects = s.record_subjects};
}

StatusOr<std::unique_ptr<simulate::Recorder>> start_recorder(const Settings& s) {
  if (s.record_dir.empty()) return std::unique_ptr<simulate::Recorder>();
  // Its errors name the setting at fault (record_dir: a directory that cannot be created).
  return simulate::Recorder::start(recorder_options(s));
}

simulate::RecordedOutcome recorded_outcome(const service::Decision& decision) {
  if (decision.degraded) return simulate::RecordedOutcome::kUnknown;
  if (decision.shadow_denied || !decision.verdict.allowed) {
    return simulate::RecordedOutcome::kDenied;
  }
  return simulate::RecordedOutcome::kAllowed;
}

service::DecisionObserver record_decisions(simulate::Recorder& recorder, const Clock& clock) {
  return [&recorder, &clock](const service::DecisionRequest& request,
                             const service::Decision& decision) {
    // The decision's policy: a descriptor's request names none until it is resolved.
    recorder.record(clock.now(), decision.policy, request.app, request.subject, request.cost,
                    recorded_outcome(decision));
  };
}

void write_recording_metrics(std::string& out, const simulate::RecorderStats& stats) {
  PrometheusText text(out);
  text.single("sluice_recording_records_total", MetricType::kCounter,
              "Decisions the recorder wrote to its files (record_dir).", stats.written);
  text.single("sluice_recording_dropped_total", MetricType::kCounter,
              "Decisions the recorder dropped because its queue was full or a write failed "
              "(never delayed).",
              stats.dropped);
  text.single("sluice_recording_bytes_total", MetricType::kCounter,
              "Bytes the recorder wrote to its files, headers included.", stats.bytes);
  text.single("sluice_recording_files_total", MetricType::kCounter,
              "Recording files the recorder opened (rotation at record_file_bytes).", stats.files);
  text.single("sluice_recording_errors_total", MetricType::kCounter,
              "Recorder write errors (each loses one batch, counted in dropped).", stats.errors);
}

}  // namespace sluice::app
