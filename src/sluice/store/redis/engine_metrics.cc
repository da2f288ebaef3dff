#include "sluice/store/redis/engine_metrics.h"

#include "sluice/core/prometheus_text.h"

namespace sluice::redis {

void write_engine_metrics(std::string& out, const Multiplexer& client) {
  PrometheusText text(out);
  text.family("sluice_redis_engine", MetricType::kGauge,
              "The engine script calls run on, per Redis node they reach: module, functions or "
              "scripts (1 per node).");
  for (const auto& [node, engine] : client.engines()) {
    text.sample("sluice_redis_engine", {{"node", node}, {"engine", engine_name(engine)}}, 1);
  }
  const ClientStats stats = client.stats();
  text.single("sluice_redis_engine_fallbacks_total", MetricType::kCounter,
              "Script calls sent again as EVALSHA because a node lacked the module's command or "
              "the function.",
              stats.engine_fallbacks);
  text.single("sluice_redis_script_reloads_total", MetricType::kCounter,
              "Script calls Redis answered NOSCRIPT, sent again with the script's source.",
              stats.script_reloads);
}

}  // namespace sluice::redis
