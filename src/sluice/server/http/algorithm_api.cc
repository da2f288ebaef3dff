#include "sluice/server/http/algorithm_api.h"

#include <string>

#include "sluice/algorithm/catalogue.h"
#include "sluice/core/duration.h"
#include "sluice/server/http/admin_api.h"

namespace sluice::http {
namespace {

using nlohmann::json;

std::string_view type_name(algorithm::ParameterType type) {
  switch (type) {
    case algorithm::ParameterType::kCount:
      return "count";
    case algorithm::ParameterType::kDuration:
      return "duration";
    case algorithm::ParameterType::kChoice:
      return "choice";
  }
  return "count";
}

std::string_view when_name(algorithm::PhraseWhen when) {
  switch (when) {
    case algorithm::PhraseWhen::kAlways:
      return "always";
    case algorithm::PhraseWhen::kEquals:
      return "equals";
    case algorithm::PhraseWhen::kNotEquals:
      return "not_equals";
    case algorithm::PhraseWhen::kBelow:
      return "below";
    case algorithm::PhraseWhen::kNonZero:
      return "nonzero";
    case algorithm::PhraseWhen::kZero:
      return "zero";
  }
  return "always";
}

// A value of `parameter` as a document writes it.
json document_value(const algorithm::Parameter& parameter, std::int64_t value) {
  switch (parameter.type) {
    case algorithm::ParameterType::kCount:
      return value;
    case algorithm::ParameterType::kDuration:
      return format_duration(value);
    case algorithm::ParameterType::kChoice:
      return std::string(parameter.choices[static_cast<std::size_t>(value)]);
  }
  return value;
}

json parameter_json(const algorithm::Parameter& parameter) {
  json out = {{"name", parameter.name},
              {"type", type_name(parameter.type)},
              {"required", parameter.required}};
  if (parameter.absent) out["default"] = document_value(parameter, *parameter.absent);
  if (!parameter.choices.empty()) {
    json choices = json::array();
    for (std::string_view choice : parameter.choices) choices.push_back(choice);
    out["choices"] = std::move(choices);
  }
  if (!parameter.example.empty()) {
    // Counts as numbers, as a document holds them.
    out["example"] = parameter.type == algorithm::ParameterType::kCount
                         ? json(std::stoll(std::string(parameter.example)))
                         : json(parameter.example);
  }
  if (!parameter.hint.empty()) out["hint"] = parameter.hint;
  return out;
}

json phrase_json(const algorithm::Phrase& phrase) {
  json out = {{"text", phrase.text}, {"when", when_name(phrase.when)}};
  if (!phrase.field.empty()) out["field"] = phrase.field;
  if (!phrase.operand.empty()) out["operand"] = phrase.operand;
  return out;
}

}  // namespace

json algorithms_json() {
  json list = json::array();
  for (const algorithm::Algorithm& row : algorithm::algorithms()) {
    json parameters = json::array();
    for (const algorithm::Parameter& parameter : row.parameters) {
      parameters.push_back(parameter_json(parameter));
    }
    json words = json::array();
    for (const algorithm::Phrase& phrase : row.brief_words) words.push_back(phrase_json(phrase));
    list.push_back({{"name", row.name},
                    {"summary", row.summary},
                    {"size", row.size},
                    {"window", row.window},
                    {"scaling", row.scaling},
                    {"quota_unit", row.quota_unit.empty() ? "requests" : row.quota_unit},
                    {"calendar", row.calendar},
                    {"leases", row.leases},
                    {"parameters", std::move(parameters)},
                    {"words", std::move(words)}});
  }
  return {{"algorithms", std::move(list)}};
}

Status AdminApi::list_algorithms(Exchange& exchange, const Principal& /*caller*/) {
  // Built and serialised once: the catalogue is constant.
  static const Response kAlgorithms = json_response(200, algorithms_json());
  return respond_with(exchange, kAlgorithms);
}

}  // namespace sluice::http
