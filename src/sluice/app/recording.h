// Recording in `sluice serve` (docs/backtesting.md, "Recording in sluice serve"): the recorder
// (simulate/recorder.h) the record_* settings describe, the observer that hands it every decision
// the limiter answers, and its /metrics families. The limiter only sees a DecisionObserver, so
// service does not depend on simulate.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "sluice/app/settings.h"
#include "sluice/core/clock.h"
#include "sluice/service/limiter.h"
#include "sluice/simulate/recorder.h"
#include "sluice/status.h"

namespace sluice::app {

// `record_sample`: a fraction ("0.25") or a percentage ("25%"), 0 to 1; InvalidArgument otherwise.
StatusOr<double> parse_sample(std::string_view text);

// The record_* settings that depend on each other (check_settings' share): record_file_bytes at
// most record_max_bytes, record_key set when record_subjects is hashed. Checked even while
// record_dir is empty, so that turning recording on later finds no surprise.
Status check_record_settings(const Settings& settings);

// The recorder's options from the settings (record_dir must be set).
simulate::RecorderOptions recorder_options(const Settings& settings);

// The recorder when record_dir is set, else null (recording off: nothing is recorded and no file
// is written). InvalidArgument naming the setting when the directory cannot be used.
StatusOr<std::unique_ptr<simulate::Recorder>> start_recorder(const Settings& settings);

// What the recording says was decided: allowed, or denied by the limits — a shadow-mode denial
// too (what the limits decided, as a replay counts it) — or unknown for a degraded decision (the
// failure mode decided; the limits were not asked).
simulate::RecordedOutcome recorded_outcome(const service::Decision& decision);

// The observer handing each decision to `recorder`, at `clock`'s time (µs since the epoch) when
// it is answered. Never blocks (Recorder::record queues or drops).
service::DecisionObserver record_decisions(simulate::Recorder& recorder, const Clock& clock);

// sluice_recording_records_total, _dropped_total, _bytes_total, _files_total, _errors_total.
void write_recording_metrics(std::string& out, const simulate::RecorderStats& stats);

}  // namespace sluice::app
