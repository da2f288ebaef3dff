#include "sluice/cli/simulate_output.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sluice/cli/command_support.h"
#include "sluice/core/duration.h"

namespace sluice::cli {
namespace {

using nlohmann::json;
using simulate::ShareOf;

std::string percent(std::uint64_t part, std::uint64_t whole) {
  if (whole == 0) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.3g%%",
                100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return text;
}

std::string share_name(const simulate::Target& target) {
  return target.of == ShareOf::kSubjects ? "subjects" : "requests";
}

}  // namespace

std::string simulate_table(const SimulateResult& result, bool over_time) {
  std::ostringstream out;
  const simulate::TrafficSummary& s = result.summary;
  out << "traffic: " << s.events << " events";
  if (s.events > 0) out << " from " << format_time(s.first) << " to " << format_time(s.last);
  out << " (" << result.traffic.size() << (result.traffic.size() == 1 ? " file" : " files");
  if (s.skipped > 0) out << ", " << s.skipped << " bad lines skipped";
  out << ")\n\n";

  std::vector<std::vector<std::string>> rows = {{"policy", "variant", "requests", "allowed",
                                                 "denied", "denied%", "subjects", "subjects_denied",
                                                 "subjects_denied%"}};
  for (const simulate::VariantReport& r : result.reports) {
    rows.push_back({r.policy, r.label, std::to_string(r.requests), std::to_string(r.allowed),
                    std::to_string(r.denied), percent(r.denied, r.requests),
                    std::to_string(r.subjects), std::to_string(r.subjects_denied),
                    percent(r.subjects_denied, r.subjects)});
  }
  out << format_table(rows);
  for (const simulate::VariantReport& r : result.reports) {
    if (r.other_app > 0) {
      out << "\n"
          << r.policy << " (" << r.label << "): " << r.other_app
          << " events from apps the policy does not list were not decided\n";
    }
    if (!r.top_denied.empty()) {
      out << "\nmost denied subjects, " << r.policy << " (" << r.label << "):\n";
      std::vector<std::vector<std::string>> top = {{"key", "denied", "requests"}};
      for (const simulate::DeniedSubject& d : r.top_denied) {
        top.push_back({d.key, std::to_string(d.denied), std::to_string(d.requests)});
      }
      out << format_table(top);
    }
    if (over_time && !r.over_time.empty()) {
      out << "\ndenials over time, " << r.policy << " (" << r.label << "), per "
          << format_duration(result.bucket) << ":\n";
      std::vector<std::vector<std::string>> buckets = {{"start", "requests", "denied"}};
      for (const simulate::TimeBucket& b : r.over_time) {
        buckets.push_back(
            {format_time(b.start), std::to_string(b.requests), std::to_string(b.denied)});
      }
      out << format_table(buckets);
    }
  }
  for (const simulate::OutcomeChanges& c : result.changes) {
    out << "\n"
        << c.policy << ": " << c.first << " denies " << c.denied_only_by_first << " subjects that "
        << c.second << " never denies";
    for (std::size_t i = 0; i < c.examples_first.size(); ++i) {
      out << (i == 0 ? " (e.g. " : ", ") << c.examples_first[i];
    }
    out << (c.examples_first.empty() ? "" : ")") << "; " << c.second << " denies "
        << c.denied_only_by_second << " that " << c.first << " never denies";
    for (std::size_t i = 0; i < c.examples_second.size(); ++i) {
      out << (i == 0 ? " (e.g. " : ", ") << c.examples_second[i];
    }
    out << (c.examples_second.empty() ? "" : ")") << "\n";
  }
  for (std::size_t v = 0; v < result.recommendations.size(); ++v) {
    const simulate::VariantReport& r = result.reports[v];
    for (const simulate::LimitRecommendation& rec : result.recommendations[v]) {
      out << "\nrecommendation, " << r.policy << " (" << r.label << ") limits[" << rec.limit_index
          << "] " << rec.algorithm << "." << rec.parameter << ": current " << rec.current << ", ";
      if (!rec.note.empty()) {
        out << "not searched: " << rec.note << "\n";
        continue;
      }
      if (rec.recommended) {
        out << "tightest meeting " << share_name(*result.target)
            << " denied <= " << result.target->share * 100 << "%: " << *rec.recommended << "\n";
      } else {
        out << "no value meets " << share_name(*result.target)
            << " denied <= " << result.target->share * 100 << "%"
            << (rec.plateau ? ": the share stops falling, the policy's other limits or this "
                              "limit's other parameters deny the rest"
                            : " up to the search's bound")
            << "\n";
      }
      std::vector<std::vector<std::string>> curve = {
          {rec.parameter, share_name(*result.target) + "_denied", "of", "share"}};
      for (const simulate::CurvePoint& p : rec.curve) {
        curve.push_back({std::to_string(p.value), std::to_string(p.denied), std::to_string(p.total),
                         percent(p.denied, p.total)});
      }
      out << format_table(curve);
    }
  }
  return out.str();
}

std::string simulate_json(const SimulateResult& result) {
  json policies = json::array();
  for (std::size_t v = 0; v < result.reports.size(); ++v) {
    const simulate::VariantReport& r = result.reports[v];
    json top = json::array();
    for (const simulate::DeniedSubject& d : r.top_denied) {
      top.push_back({{"key", d.key}, {"denied", d.denied}, {"requests", d.requests}});
    }
    json buckets = json::array();
    for (const simulate::TimeBucket& b : r.over_time) {
      buckets.push_back({{"start_us", b.start}, {"requests", b.requests}, {"denied", b.denied}});
    }
    json entry = {{"policy", r.policy},
                  {"variant", r.label},
                  {"requests", r.requests},
                  {"allowed", r.allowed},
                  {"denied", r.denied},
                  {"subjects", r.subjects},
                  {"subjects_denied", r.subjects_denied},
                  {"other_app", r.other_app},
                  {"top_denied", top},
                  {"over_time", buckets}};
    if (v < result.recommendations.size()) {
      json recommendations = json::array();
      for (const simulate::LimitRecommendation& rec : result.recommendations[v]) {
        json curve = json::array();
        for (const simulate::CurvePoint& p : rec.curve) {
          curve.push_back(
              {{"value", p.value}, {"denied", p.denied}, {"of", p.total}, {"share", p.share()}});
        }
        recommendations.push_back(
            {{"limit_index", rec.limit_index},
             {"algorithm", rec.algorithm},
             {"parameter", rec.parameter},
             {"current", rec.current},
             {"recommended", rec.recommended ? json(*rec.recommended) : json()},
             {"curve", curve}});
      }
      entry["recommendations"] = recommendations;
    }
    policies.push_back(entry);
  }
  json changes = json::array();
  for (const simulate::OutcomeChanges& c : result.changes) {
    changes.push_back({{"policy", c.policy},
                       {"first", c.first},
                       {"second", c.second},
                       {"denied_only_by_first", c.denied_only_by_first},
                       {"denied_only_by_second", c.denied_only_by_second},
                       {"examples_first", c.examples_first},
                       {"examples_second", c.examples_second}});
  }
  json document = {{"traffic",
                    {{"files", result.traffic},
                     {"events", result.summary.events},
                     {"skipped_lines", result.summary.skipped},
                     {"first_us", result.summary.first},
                     {"last_us", result.summary.last}}},
                   {"bucket_us", result.bucket},
                   {"policies", policies},
                   {"outcome_changes", changes}};
  if (result.target) {
    document["target"] = {{"of", share_name(*result.target)}, {"share", result.target->share}};
  }
  return document.dump(2) + "\n";
}

}  // namespace sluice::cli
