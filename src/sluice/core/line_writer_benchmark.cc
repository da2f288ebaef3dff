// The access log's cost per line (docs/server.md, "Access log and request ids"): LineWriter
// against spdlog's asynchronous logger with a stderr-style sink, both writing to a temporary
// file from two request threads. "cpu_ns_per_line" is the whole process's CPU (request threads
// and writer thread) per line, which is what the log takes from a 2-core server.
#include <benchmark/benchmark.h>
#include <spdlog/async.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "sluice/core/line_writer.h"
#include "testing/measure.h"

namespace sluice {
namespace {

// A line shaped like the access log's.
const std::string kLine =
    R"({"ts":"2026-11-25T03:00:00.000123Z","request_id":"6f1c0e9a00000001","remote":"127.0.0.1:50412","method":"GET","path":"/v1/check","route":"/v1/check","status":200,"bytes_in":0,"bytes_out":244,"duration_us":31})";

// What both variants share: a temporary file, and the process CPU counted from the first thread.
struct Run {
  std::FILE* file = nullptr;
  double cpu_before = 0;
};
Run g_run;

template <typename Setup, typename Write, typename Teardown>
void run(benchmark::State& state, Setup setup, Write write, Teardown teardown) {
  if (state.thread_index() == 0) {
    g_run.file = std::tmpfile();
    setup(g_run.file);
    g_run.cpu_before = test::cpu_us() * 1e3;
  }
  for (auto _ : state) write();
  if (state.thread_index() == 0) {
    teardown();  // waits until every line is written, so the writer's CPU is counted
    const double lines = static_cast<double>(state.iterations()) * state.threads();
    state.counters["cpu_ns_per_line"] = (test::cpu_us() * 1e3 - g_run.cpu_before) / lines;
    std::fclose(g_run.file);
  }
}

std::unique_ptr<LineWriter> g_writer;

void BM_LineWriter(benchmark::State& state) {
  run(
      state,
      [](std::FILE* file) {
        // Room for every line of the run (2 × 100 000 × 211 bytes), so none is dropped and each
        // is written: the cost measured is the cost of logging, not of dropping.
        g_writer = std::make_unique<LineWriter>(fileno(file),
                                                LineWriterOptions{.max_buffered_bytes = 1 << 28});
      },
      [] { g_writer->write(kLine); },
      [] {
        if (g_writer->dropped() != 0) std::abort();
        g_writer.reset();
      });
}
// A fixed number of lines, so both variants write the same bytes.
BENCHMARK(BM_LineWriter)->Threads(2)->UseRealTime()->Iterations(100'000);

std::shared_ptr<spdlog::logger> g_spdlog;

void BM_SpdlogAsyncStderrSink(benchmark::State& state) {
  run(
      state,
      [](std::FILE* file) {
        // The sink spdlog offers for stderr, pointed at the file: one fwrite and one fflush per
        // message, from spdlog's thread pool (one thread, 8192 queued messages, blocking when
        // full).
        spdlog::init_thread_pool(8192, 1);
        auto sink =
            std::make_shared<spdlog::sinks::stdout_sink_base<spdlog::details::console_mutex>>(file);
        g_spdlog = std::make_shared<spdlog::async_logger>("access", sink, spdlog::thread_pool(),
                                                          spdlog::async_overflow_policy::block);
        g_spdlog->set_pattern("%v");
      },
      [] { g_spdlog->info(kLine); },
      [] {
        g_spdlog.reset();
        spdlog::shutdown();  // joins the pool once its queue is written
      });
}
BENCHMARK(BM_SpdlogAsyncStderrSink)->Threads(2)->UseRealTime()->Iterations(100'000);

}  // namespace
}  // namespace sluice
