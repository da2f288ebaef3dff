// `sluice simulate`: back-testing (docs/backtesting.md). Replays recorded or imported traffic
// against candidate policies on a simulated clock, reports what each would have done, and with
// --recommend searches each limit's tightest size for a target denied share.
#include <CLI/CLI.hpp>
#include <memory>

#include "sluice/cli/command_support.h"
#include "sluice/cli/commands.h"
#include "sluice/cli/simulate_output.h"
#include "sluice/core/duration.h"
#include "sluice/core/status_macros.h"
#include "sluice/policy/policy_files.h"
#include "sluice/simulate/binary_format.h"

namespace sluice::cli {
namespace {

struct SimulateOptions {
  std::vector<std::string> traffic;
  std::vector<std::string> policy_files;
  bool json = false;
  std::string recommend;
  std::string map;
  bool skip_bad_lines = false;
  std::string bucket = "1m";
  std::size_t top = 10;
  bool over_time = false;
  std::string write_recording;
};

// --write-recording: the traffic, merged in time order, as one binary recording.
Status write_recording(const Run& run, const SimulateOptions& options,
                       const simulate::OpenOptions& open) {
  SLUICE_ASSIGN_OR_RETURN(simulate::BinaryWriter writer,
                          simulate::BinaryWriter::create(options.write_recording));
  simulate::TrafficNames names;
  Status written;
  auto name = [](const simulate::NameTable& table, std::uint32_t id) {
    return id == simulate::kUnnamed ? std::string_view() : table.name(id);
  };
  SLUICE_ASSIGN_OR_RETURN(
      const simulate::TrafficSummary summary,
      simulate::stream_traffic(options.traffic, names, open, [&](const simulate::Event& e) {
        if (!written.ok()) return;
        written = writer.write(e.time, names.subjects.name(e.subject),
                               name(names.policies, e.policy), name(names.apps, e.app), e.cost);
      }));
  SLUICE_RETURN_IF_ERROR(written);
  SLUICE_RETURN_IF_ERROR(writer.close());
  run.note() << "wrote " << summary.events << " events to " << options.write_recording;
  if (summary.skipped > 0) run.note() << " (" << summary.skipped << " bad lines skipped)";
  run.note() << "\n";
  return Status();
}

Status run_simulate(const Run& run, const SimulateOptions& options) {
  simulate::OpenOptions open{.json = {.skip_bad_lines = options.skip_bad_lines}};
  SLUICE_RETURN_IF_ERROR(simulate::parse_field_map(options.map, open.json.fields));
  if (!options.write_recording.empty()) return write_recording(run, options, open);
  if (options.policy_files.empty()) {
    return invalid_argument("--policy-file: at least one is needed (or --write-recording)");
  }
  SLUICE_ASSIGN_OR_RETURN(const Micros bucket,
                          invalid_input("--bucket: ", parse_duration(options.bucket)));
  SimulateResult result{.traffic = options.traffic, .bucket = bucket};
  if (!options.recommend.empty()) {
    SLUICE_ASSIGN_OR_RETURN(result.target, simulate::parse_target(options.recommend));
  }

  // Each file's policies are variants labelled by the file: two files may hold two versions of
  // one policy, which load_policy_files would refuse as a name defined twice.
  std::vector<simulate::Variant> variants;
  for (const std::string& path : options.policy_files) {
    SLUICE_ASSIGN_OR_RETURN(std::vector<policy::Policy> policies,
                            policy::load_policy_files({path}));
    for (policy::Policy& p : policies) variants.push_back({.label = path, .policy = std::move(p)});
  }
  std::vector<simulate::Variant> candidates = variants;

  simulate::TrafficNames names;
  SLUICE_ASSIGN_OR_RETURN(
      simulate::Replay replay,
      simulate::Replay::create(std::move(variants), names, {.bucket = bucket, .top = options.top}));
  SLUICE_ASSIGN_OR_RETURN(
      result.summary,
      simulate::stream_traffic(options.traffic, names, open,
                               [&replay](const simulate::Event& event) { replay.add(event); }));
  result.reports = replay.reports();
  result.changes = replay.outcome_changes();

  if (result.target) {
    const simulate::TrafficPass pass = [&](const simulate::EventSink& sink) {
      return simulate::stream_traffic(options.traffic, names, open, sink).status();
    };
    for (const simulate::Variant& candidate : candidates) {
      SLUICE_ASSIGN_OR_RETURN(std::vector<simulate::LimitRecommendation> found,
                              simulate::recommend(candidate.policy, *result.target, names, pass));
      result.recommendations.push_back(std::move(found));
    }
  }
  run.out() << (options.json ? simulate_json(result) : simulate_table(result, options.over_time));
  return Status();
}

}  // namespace

void add_simulate_command(CLI::App& app, std::shared_ptr<const Environment> env) {
  auto options = std::make_shared<SimulateOptions>();
  CLI::App* command = app.add_subcommand(
      "simulate",
      "Back-test: replay recorded or imported traffic against candidate policies and report what "
      "each would have denied; --recommend searches each limit's tightest value "
      "(docs/backtesting.md)");
  command
      ->add_option("--traffic", options->traffic,
                   "Traffic: JSON lines or a binary recording, gzip-compressed or not; repeat for "
                   "several files (merged in time order)")
      ->required();
  command->add_option("--policy-file", options->policy_files,
                      "Candidate policies (YAML or JSON, as `sluice policy` reads them); repeat to "
                      "compare versions of one policy");
  command->add_flag("--json", options->json, "Print one JSON document instead of tables");
  command->add_option("--recommend", options->recommend,
                      "subjects=P% or requests=P%: per limit, the tightest value keeping the "
                      "denied share at or below P%, and the curve searched");
  command->add_option("--map", options->map,
                      "Where JSON fields are, e.g. t=.ts,key=.client.ip,cost=.bytes (defaults: "
                      "t=.time,key=.key,cost=.cost,app=.app,policy=.policy)");
  command->add_flag(
      "--skip-bad-lines", options->skip_bad_lines,
      "Skip and count bad or out-of-order JSON lines instead of stopping at the first");
  command->add_option("--bucket", options->bucket,
                      "Width of the denials-over-time buckets (default 1m)");
  command->add_option("--top", options->top,
                      "How many of the most denied subjects to list (default 10)");
  command->add_flag("--over-time", options->over_time,
                    "Print denials over time in the table output");
  command->add_option("--write-recording", options->write_recording,
                      "Write the traffic as one binary recording to FILE and exit (no replay)");
  command->callback([env, options] {
    const Run run(*env, "simulate");
    env->exit(run.finish(run_simulate(run, *options)));
  });
}

}  // namespace sluice::cli
