// `sluice serve` as a real process: defaults and settings precedence, SIGTERM, two servers on one
// Redis, a server killed and restarted over Redis-held state, and nginx's auth_request in front
// of a static page. Every process is started on free loopback ports and stopped by PID.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "sluice/client/remote_limiter.h"
#include "sluice/core/connection_budget.h"
#include "sluice/server/http/test_http_client.h"
#include "sluice/service/rollout.h"
#include "testing/eventually.h"
#include "testing/redis_cluster.h"
#include "testing/redis_server.h"
#include "testing/subprocess.h"
#include "testing/test_certificates.h"

extern char** environ;

namespace sluice::http {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::http_request;
using test::RawConnection;
using test::RawResponse;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_file(const fs::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

class TempDir {
 public:
  TempDir() {
    std::string templ = (fs::temp_directory_path() / "sluice-serve-XXXXXX").string();
    EXPECT_NE(::mkdtemp(templ.data()), nullptr);
    path_ = templ;
    ::chmod(path_.c_str(), 0755);  // nginx workers may run as another user
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// A child process with stdout and stderr in files, stopped by PID.
class Process {
 public:
  static StatusOr<std::unique_ptr<Process>> spawn(std::vector<std::string> args,
                                                  const fs::path& out, const fs::path& err,
                                                  std::vector<std::string> extra_env = {}) {
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_strings;
    for (char** e = environ; *e != nullptr; ++e) {
      if (!std::string_view(*e).starts_with("SLUICE_")) env_strings.emplace_back(*e);
    }
    for (std::string& e : extra_env) env_strings.push_back(std::move(e));
    std::vector<char*> envp;
    for (std::string& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = 0;
    const int rc = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) return internal_error("spawn " + args[0] + ": " + std::strerror(rc));
    return std::unique_ptr<Process>(new Process(pid));
  }

  ~Process() {
    if (pid_ != 0) {
      ::kill(pid_, SIGKILL);
      (void)wait();
    }
  }

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ != 0; }

  // Waits for exit; returns the exit code (128 + signal when killed).
  int wait() {
    int status = 0;
    while (::waitpid(pid_, &status, 0) == -1 && errno == EINTR) {
    }
    pid_ = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  int signal_and_wait(int sig) {
    ::kill(pid_, sig);
    return wait();
  }

 private:
  explicit Process(pid_t pid) : pid_(pid) {}
  pid_t pid_;
};

// Runs a command to completion; returns (exit code, stdout, stderr).
struct Ran {
  int code = -1;
  std::string out;
  std::string err;
};
Ran run(std::vector<std::string> args, std::vector<std::string> env = {}) {
  TempDir dir;
  env.push_back("XDG_DATA_HOME=" + (dir.path() / "data").string());
  StatusOr<std::unique_ptr<Process>> process =
      Process::spawn(std::move(args), dir.path() / "out", dir.path() / "err", std::move(env));
  if (!process.ok()) return {};
  Ran ran;
  ran.code = (*process)->wait();
  ran.out = read_file(dir.path() / "out");
  ran.err = read_file(dir.path() / "err");
  return ran;
}

// `sluice serve` on a free port (listen 127.0.0.1:0), ready once its "listening" line appears.
// Its default policy database is private to it (XDG_DATA_HOME in its own directory) unless
// `data_home` names one to share with a later start.
class Serve {
 public:
  static StatusOr<std::unique_ptr<Serve>> start(std::vector<std::string> flags,
                                                std::uint16_t port = 0,
                                                const fs::path& data_home = {}) {
    auto serve = std::unique_ptr<Serve>(new Serve());
    std::vector<std::string> args = {SLUICE_BINARY, "serve", "--listen",
                                     "127.0.0.1:" + std::to_string(port)};
    args.insert(args.end(), flags.begin(), flags.end());
    const fs::path data = data_home.empty() ? serve->dir_.path() / "data" : data_home;
    StatusOr<std::unique_ptr<Process>> process =
        Process::spawn(args, serve->dir_.path() / "stdout", serve->dir_.path() / "stderr",
                       {"XDG_DATA_HOME=" + data.string()});
    if (!process.ok()) return process.status();
    serve->process_ = std::move(*process);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      std::istringstream lines(serve->log());
      for (std::string line; std::getline(lines, line);) {
        const json entry = json::parse(line, nullptr, false);
        if (entry.is_object() && entry.value("msg", "") == "listening") {
          serve->port_ = entry["port"].get<std::uint16_t>();
          return serve;
        }
      }
      int status = 0;
      if (::waitpid(serve->process_->pid(), &status, WNOHANG) != 0) {
        return internal_error("sluice serve exited at start:\n" + serve->log());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return deadline_exceeded("sluice serve did not start:\n" + serve->log());
  }

  std::uint16_t port() const { return port_; }
  std::string log() const { return read_file(dir_.path() / "stderr"); }
  // Whether the log shows `needle` within 5 s: access-log lines reach stderr from a writer
  // thread that batches them (up to ~50 ms after the response, docs/server.md).
  bool log_shows(std::string_view needle) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (log().find(needle) == std::string::npos) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
  }
  Process& process() { return *process_; }

 private:
  Serve() = default;
  TempDir dir_;
  std::unique_ptr<Process> process_;
  std::uint16_t port_ = 0;
};

std::string acquire_body(std::string_view key) {
  return json{{"app", "web"}, {"policy", "demo.api"}, {"key", key}}.dump();
}

TEST(ServeTest, DefaultsServeTheDemoPolicyOnLocalhost8080) {
  const Ran printed = run({SLUICE_BINARY, "serve", "--print-config"});
  ASSERT_EQ(printed.code, 0) << printed.err;
  EXPECT_NE(printed.out.find("listen: \"127.0.0.1:8080\""), std::string::npos) << printed.out;
  EXPECT_NE(printed.out.find("redis: \"\""), std::string::npos);

  StatusOr<std::unique_ptr<Serve>> serve = Serve::start({});
  ASSERT_TRUE(serve.ok()) << serve.status().to_string();
  StatusOr<RawResponse> response =
      http_request((*serve)->port(), "POST", "/v1/acquire", acquire_body("alice"));
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(json::parse(response->body)["limit"], 5);
  EXPECT_NE((*serve)->log().find("\"store\":\"memory\""), std::string::npos);
}

// Issue 32 (L2, info, M6, M8) as `sluice serve` sets them: /metrics behind a token, cross-site
// decision calls refused by default, and the new bounds refused with an error naming the field.
TEST(ServeTest, MetricsTokenCrossSiteRefusalAndTheNewBoundsAreSettings) {
  StatusOr<std::unique_ptr<Serve>> serve =
      Serve::start({"--metrics", "token", "--metrics-token", "scrape-me"});
  ASSERT_TRUE(serve.ok()) << serve.status().to_string();
  const std::uint16_t port = (*serve)->port();
  EXPECT_EQ(http_request(port, "GET", "/metrics")->status, 401);
  StatusOr<RawResponse> scraped =
      http_request(port, "GET", "/metrics", {}, {{"Authorization", "Bearer scrape-me"}});
  ASSERT_TRUE(scraped.ok());
  EXPECT_EQ(scraped->status, 200);
  EXPECT_NE(scraped->body.find("sluice_http_buffered_body_bytes 0"), std::string::npos);
  EXPECT_EQ(scraped->header("X-Content-Type-Options"), "nosniff");
  // What a page on another site can send without a preflight: refused.
  StatusOr<RawConnection> form = RawConnection::open(port);
  ASSERT_TRUE(form.ok());
  const std::string body = acquire_body("victim");
  ASSERT_TRUE(form->send("POST /v1/acquire HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n"
                         "Content-Length: " +
                         std::to_string(body.size()) + "\r\n\r\n" + body)
                  .ok());
  EXPECT_EQ(form->read()->status, 415);
  EXPECT_EQ(
      http_request(port, "POST", "/v1/acquire", body, {{"Sec-Fetch-Site", "cross-site"}})->status,
      403);
  EXPECT_EQ(http_request(port, "POST", "/v1/acquire", body)->status, 200);

  const Ran no_token = run({SLUICE_BINARY, "serve", "--metrics", "token"});
  EXPECT_EQ(no_token.code, 2);
  EXPECT_NE(no_token.err.find("metrics_token"), std::string::npos) << no_token.err;
  const Ran small_budget = run({SLUICE_BINARY, "serve", "--listen", "127.0.0.1:0",
                                "--max-buffered-body-bytes", "1000", "--max-body-bytes", "2000"});
  EXPECT_EQ(small_budget.code, 2);
  EXPECT_NE(small_budget.err.find("max_buffered_body_bytes"), std::string::npos)
      << small_budget.err;
  const Ran printed = run({SLUICE_BINARY, "serve", "--metrics", "off", "--print-config"});
  EXPECT_NE(printed.out.find("metrics: \"off\""), std::string::npos) << printed.out;
  EXPECT_NE(printed.out.find("max_pending_per_client: \"0\""), std::string::npos);
  EXPECT_NE(printed.out.find("allow_cross_site_decisions: \"false\""), std::string::npos);
}

// Issue 32 L4: --print-config printed the Redis and PostgreSQL passwords in clear.
TEST(ServeTest, PrintConfigMasksThePasswordsInUrls) {
  const Ran printed = run({SLUICE_BINARY, "serve", "--print-config", "--redis",
                           "redis://limiter:redis-pass-1@127.0.0.1:6379/0", "--policies",
                           "postgresql://sluice:pg-pass-2@db.internal:5432/sluice"});
  ASSERT_EQ(printed.code, 0) << printed.err;
  for (const std::string secret : {"redis-pass-1", "pg-pass-2"}) {
    EXPECT_EQ(printed.out.find(secret), std::string::npos) << printed.out;
  }
  EXPECT_NE(printed.out.find("redis://limiter:***@127.0.0.1:6379/0"), std::string::npos)
      << printed.out;
  EXPECT_NE(printed.out.find("postgresql://sluice:***@db.internal:5432/sluice"), std::string::npos)
      << printed.out;
  const Ran token = run({SLUICE_BINARY, "serve", "--print-config", "--metrics", "token",
                         "--metrics-token", "scrape-secret-3"});
  ASSERT_EQ(token.code, 0) << token.err;
  EXPECT_EQ(token.out.find("scrape-secret-3"), std::string::npos) << token.out;
  EXPECT_NE(token.out.find("metrics_token: \"***\""), std::string::npos) << token.out;
}

TEST(ServeTest, SigtermDrainsAndExitsZero) {
  StatusOr<std::unique_ptr<Serve>> serve = Serve::start({});
  ASSERT_TRUE(serve.ok()) << serve.status().to_string();
  ASSERT_EQ(http_request((*serve)->port(), "GET", "/healthz")->status, 200);
  EXPECT_EQ((*serve)->process().signal_and_wait(SIGTERM), 0);
  const std::string log = (*serve)->log();
  EXPECT_NE(log.find("\"msg\":\"shutting down\""), std::string::npos) << log;
  EXPECT_NE(log.find("\"msg\":\"stopped\""), std::string::npos);
  // By default the access log is off: a server started in a terminal does not flood it.
  EXPECT_EQ(log.find("\"route\":"), std::string::npos) << log;
}

// --access-log FILE appends one line per request to FILE and none to stderr; `stderr` (or the
// old `true`) writes them there.
TEST(ServeTest, AccessLogGoesToTheFileItNamesOrToStderrWhenAsked) {
  TempDir dir;
  const std::string file = (dir.path() / "access.log").string();
  write_file(dir.path() / "access.log", "kept\n");  // appended to, not truncated
  StatusOr<std::unique_ptr<Serve>> to_file = Serve::start({"--access-log", file});
  ASSERT_TRUE(to_file.ok()) << to_file.status().to_string();
  ASSERT_EQ(http_request((*to_file)->port(), "GET", "/healthz")->status, 200);
  EXPECT_EQ((*to_file)->process().signal_and_wait(SIGTERM), 0);
  const std::string written = read_file(dir.path() / "access.log");
  EXPECT_EQ(written.rfind("kept\n", 0), 0u) << written;
  EXPECT_NE(written.find("\"route\":\"/healthz\""), std::string::npos) << written;
  EXPECT_EQ((*to_file)->log().find("\"route\":"), std::string::npos) << (*to_file)->log();

  for (const char* value : {"stderr", "true"}) {
    SCOPED_TRACE(value);
    StatusOr<std::unique_ptr<Serve>> to_stderr = Serve::start({"--access-log", value});
    ASSERT_TRUE(to_stderr.ok()) << to_stderr.status().to_string();
    ASSERT_EQ(http_request((*to_stderr)->port(), "GET", "/healthz")->status, 200);
    EXPECT_TRUE((*to_stderr)->log_shows("\"route\":\"/healthz\"")) << (*to_stderr)->log();
  }

  // A file that cannot be opened stops the start, naming the setting.
  const Ran refused = run({SLUICE_BINARY, "serve", "--listen", "127.0.0.1:0", "--access-log",
                           (dir.path() / "no" / "such" / "dir" / "access.log").string()});
  EXPECT_NE(refused.code, 0);
  EXPECT_NE(refused.err.find("access_log: cannot open"), std::string::npos) << refused.err;
}

// Issue 36: with record_dir set, every decision `sluice serve` answers is recorded; the recording
// replayed with `sluice simulate` decides the same counts the server did, and /metrics counts the
// records. Hashed subjects keep the clients' keys out of the files and replay alike.
std::vector<std::string> recordings_in(const fs::path& dir) {
  std::vector<std::string> files;
  if (!fs::exists(dir)) return files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.path().extension() == ".sltr") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The metric's value in `text` (a /metrics page), -1 when absent.
long long metric_value(const std::string& text, const std::string& name) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(name + " ", 0) == 0) return std::stoll(line.substr(name.size() + 1));
  }
  return -1;
}

TEST(ServeTest, RecordingReplaysToTheCountsTheServerDecided) {
  for (const std::string subjects : {"clear", "hashed"}) {
    SCOPED_TRACE(subjects);
    TempDir dir;
    const fs::path policy = dir.path() / "p.yaml";
    write_file(policy,
               "name: rec\napps: [\"*\"]\nlimits:\n  - algorithm: fixed_window\n    limit: 3\n"
               "    window: 1h\n");
    StatusOr<std::unique_ptr<Serve>> serve = Serve::start(
        {"--policy-file", policy.string(), "--record-dir", (dir.path() / "rec").string(),
         "--record-subjects", subjects, "--record-key", "test-key"});
    ASSERT_TRUE(serve.ok()) << serve.status().to_string();
    int allowed = 0;
    int denied = 0;
    for (const char* key : {"alice", "alice", "alice", "alice", "alice", "bob", "bob"}) {
      StatusOr<RawResponse> response =
          http_request((*serve)->port(), "POST", "/v1/acquire",
                       json{{"app", "web"}, {"policy", "rec"}, {"key", key}}.dump());
      ASSERT_TRUE(response.ok());
      ASSERT_EQ(response->status, 200) << response->body;
      ++(json::parse(response->body)["allowed"].get<bool>() ? allowed : denied);
    }
    ASSERT_EQ(allowed, 5);
    ASSERT_EQ(denied, 2);
    // The writer thread files the records after the answers: poll /metrics for them.
    std::string metrics;
    EXPECT_TRUE(test::eventually(
        [&] {
          metrics = http_request((*serve)->port(), "GET", "/metrics")->body;
          return metric_value(metrics, "sluice_recording_records_total") == 7;
        },
        std::chrono::seconds(10)))
        << metrics;
    EXPECT_EQ(metric_value(metrics, "sluice_recording_dropped_total"), 0);
    EXPECT_GT(metric_value(metrics, "sluice_recording_bytes_total"), 16);
    EXPECT_EQ(metric_value(metrics, "sluice_recording_files_total"), 1);
    EXPECT_EQ((*serve)->process().signal_and_wait(SIGTERM), 0);

    const std::vector<std::string> files = recordings_in(dir.path() / "rec");
    ASSERT_EQ(files.size(), 1u);
    EXPECT_EQ(read_file(files[0]).find("alice") == std::string::npos, subjects == "hashed");
    std::vector<std::string> args = {SLUICE_BINARY, "simulate", "--policy-file", policy.string(),
                                     "--json"};
    for (const std::string& file : files) args.insert(args.end(), {"--traffic", file});
    const Ran replay = run(args);
    ASSERT_EQ(replay.code, 0) << replay.err;
    const json report = json::parse(replay.out)["policies"][0];
    EXPECT_EQ(report["policy"], "rec");
    EXPECT_EQ(report["requests"], 7);
    EXPECT_EQ(report["allowed"], allowed);
    EXPECT_EQ(report["denied"], denied);
    EXPECT_EQ(report["subjects"], 2);
    EXPECT_EQ(report["top_denied"][0]["key"] == "alice", subjects == "clear") << report;
  }
}

// Recording off (the default): no recorder is made — no file, no recording metrics, no log line.
TEST(ServeTest, RecordingOffRecordsNothing) {
  StatusOr<std::unique_ptr<Serve>> serve = Serve::start({});
  ASSERT_TRUE(serve.ok()) << serve.status().to_string();
  ASSERT_EQ(http_request((*serve)->port(), "POST", "/v1/acquire", acquire_body("alice"))->status,
            200);
  const std::string metrics = http_request((*serve)->port(), "GET", "/metrics")->body;
  EXPECT_NE(metrics.find("sluice_decisions_total"), std::string::npos) << metrics;
  EXPECT_EQ(metrics.find("sluice_recording_"), std::string::npos) << metrics;
  EXPECT_EQ((*serve)->log().find("recording decisions"), std::string::npos);
  EXPECT_EQ((*serve)->process().signal_and_wait(SIGTERM), 0);

  // A record_dir that cannot be created stops the start, naming the setting.
  TempDir dir;
  write_file(dir.path() / "file", "");
  const Ran refused = run({SLUICE_BINARY, "serve", "--listen", "127.0.0.1:0", "--record-dir",
                           (dir.path() / "file" / "rec").string()});
  EXPECT_EQ(refused.code, 2) << refused.err;
  EXPECT_NE(refused.err.find("record_dir: "), std::string::npos) << refused.err;
}

TEST(ServeTest, SigintAlsoStopsTheServer) {
  StatusOr<std::unique_ptr<Serve>> serve = Serve::start({});
  ASSERT_TRUE(serve.ok()) << serve.status().to_string();
  EXPECT_EQ((*serve)->process().signal_and_wait(SIGINT), 0);
}

TEST(ServeTest, FlagsBeatEnvironmentWhichBeatsTheConfigFile) {
  TempDir dir;
  write_file(dir.path() / "sluice.yaml",
             "listen: 0.0.0.0:9000\nthreads: 3\nmax_batch: 10\naccess_log: true\n"
             "policy_file: [policies]\n");
  const Ran ran = run({SLUICE_BINARY, "serve", "--config", (dir.path() / "sluice.yaml").string(),
                       "--max-batch", "30", "--print-config"},
                      {"SLUICE_THREADS=4", "SLUICE_MAX_BATCH=20"});
  ASSERT_EQ(ran.code, 0) << ran.err;
  EXPECT_NE(ran.out.find("listen: \"0.0.0.0:9000\""), std::string::npos) << ran.out;  // file
  EXPECT_NE(ran.out.find("threads: \"4\""), std::string::npos) << ran.out;            // env
  EXPECT_NE(ran.out.find("max_batch: \"30\""), std::string::npos) << ran.out;         // flag
  EXPECT_NE(ran.out.find("access_log: \"stderr\""), std::string::npos) << ran.out;    // file
  // Relative policy paths in a config file are relative to the file.
  EXPECT_NE(ran.out.find("  - " + (dir.path() / "policies").string()), std::string::npos)
      << ran.out;
  // SLUICE_CONFIG names the file when --config does not.
  const Ran from_env = run({SLUICE_BINARY, "serve", "--print-config"},
                           {"SLUICE_CONFIG=" + (dir.path() / "sluice.yaml").string()});
  EXPECT_NE(from_env.out.find("threads: \"3\""), std::string::npos) << from_env.out;
}

TEST(ServeTest, GrpcSettingsFollowTheSamePrecedence) {
  TempDir dir;
  write_file(dir.path() / "sluice.yaml",
             "grpc_listen: 0.0.0.0:9001\ngrpc_headers: ratelimit\ngrpc_max_message_bytes: 2048\n");
  const Ran ran =
      run({SLUICE_BINARY, "serve", "--config", (dir.path() / "sluice.yaml").string(),
           "--grpc-headers", "x-ratelimit", "--print-config"},
          {"SLUICE_GRPC_MAX_CONCURRENT_STREAMS=7", "SLUICE_GRPC_MAX_MESSAGE_BYTES=4096"});
  ASSERT_EQ(ran.code, 0) << ran.err;
  EXPECT_NE(ran.out.find("grpc_listen: \"0.0.0.0:9001\""), std::string::npos) << ran.out;
  EXPECT_NE(ran.out.find("grpc_headers: \"x-ratelimit\""), std::string::npos) << ran.out;
  EXPECT_NE(ran.out.find("grpc_max_message_bytes: \"4096\""), std::string::npos) << ran.out;
  EXPECT_NE(ran.out.find("grpc_max_concurrent_streams: \"7\""), std::string::npos) << ran.out;
  const Ran bad_headers = run({SLUICE_BINARY, "serve", "--grpc-headers", "github"});
  EXPECT_EQ(bad_headers.code, 2);
  EXPECT_NE(bad_headers.err.find("--grpc-headers"), std::string::npos) << bad_headers.err;
  const Ran bad_listen = run({SLUICE_BINARY, "serve", "--grpc-listen", "nowhere"});
  EXPECT_EQ(bad_listen.code, 2);
  EXPECT_NE(bad_listen.err.find("grpc-listen"), std::string::npos) << bad_listen.err;
  // The transport's bounds (issue 32) are settings like the others.
  const Ran bounds = run({SLUICE_BINARY, "serve", "--grpc-max-connections", "64", "--print-config"},
                         {"SLUICE_GRPC_STREAM_TIMEOUT=250ms", "SLUICE_GRPC_REFLECTION=false"});
  ASSERT_EQ(bounds.code, 0) << bounds.err;
  EXPECT_NE(bounds.out.find("grpc_max_connections: \"64\""), std::string::npos) << bounds.out;
  EXPECT_NE(bounds.out.find("grpc_stream_timeout: \"250ms\""), std::string::npos) << bounds.out;
  EXPECT_NE(bounds.out.find("grpc_reflection: \"false\""), std::string::npos) << bounds.out;
  const Ran bad_bound = run({SLUICE_BINARY, "serve", "--grpc-max-connections", "-1"});
  EXPECT_EQ(bad_bound.code, 2);
  EXPECT_NE(bad_bound.err.find("grpc-max-connections"), std::string::npos) << bad_bound.err;
}

// Issue 32 H1: with both ports listening, HTTP's default cap leaves gRPC its share of the
// descriptors, so floods on both at once cannot take those the store and database need.
TEST(ServeTest, BothPortsShareOneDescriptorBudget) {
  StatusOr<std::unique_ptr<Serve>> serve = Serve::start({"--grpc-listen", "127.0.0.1:0"});
  ASSERT_TRUE(serve.ok()) << serve.status().to_string();
  const ConnectionBudget budget = connection_budget(descriptor_limit(), /*with_grpc=*/true);
  EXPECT_NE((*serve)->log().find("\"max_connections\":" + std::to_string(budget.http) + ","),
            std::string::npos)
      << (*serve)->log();
  EXPECT_LE(budget.http + budget.grpc, descriptor_limit() - kReservedDescriptors);
}

TEST(ServeTest, BadSettingsExitTwoNamingTheSetting) {
  TempDir dir;
  write_file(dir.path() / "bad.yaml", "listen: 127.0.0.1:1\nlisten_port: 80\n");
  const Ran unknown = run({SLUICE_BINARY, "serve", "--config", (dir.path() / "bad.yaml").string()});
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find("listen_port: unknown setting"), std::string::npos) << unknown.err;
  // A stray comma after a flow map sends yaml-cpp into an endless loop; it must stop at once.
  write_file(dir.path() / "comma.yaml", "# settings\n{listen: 127.0.0.1:1},\n");
  const Ran comma = run({SLUICE_BINARY, "serve", "--config", (dir.path() / "comma.yaml").string()});
  EXPECT_EQ(comma.code, 2);
  EXPECT_NE(comma.err.find("comma.yaml: not valid YAML"), std::string::npos) << comma.err;
  const Ran env = run({SLUICE_BINARY, "serve", "--print-config"}, {"SLUICE_READ_TIMEOUT=soon"});
  EXPECT_EQ(env.code, 2);
  EXPECT_NE(env.err.find("SLUICE_READ_TIMEOUT"), std::string::npos) << env.err;
  const Ran flag = run({SLUICE_BINARY, "serve", "--rate-limit-headers", "github,rfc"});
  EXPECT_EQ(flag.code, 2);
  EXPECT_NE(flag.err.find("--rate-limit-headers"), std::string::npos) << flag.err;
  write_file(dir.path() / "broken.yaml", "name: x\nlimits: []\n");
  const Ran policy =
      run({SLUICE_BINARY, "serve", "--policy-file", (dir.path() / "broken.yaml").string()});
  EXPECT_EQ(policy.code, 2);
  EXPECT_NE(policy.err.find("invalid policy"), std::string::npos) << policy.err;
}

std::string first_admin_password(const std::string& log);  // defined below

// HTTPS end to end: `sluice serve --tls-cert --tls-key` answered by curl trusting the test's CA,
// and every TLS file problem stopping the start with exit 2 and a line naming the setting.
TEST(ServeTest, HttpsAnswersCurlAndBadTlsFilesStopTheStartNamingTheSetting) {
  if (::access("/usr/bin/curl", X_OK) != 0 || ::access("/usr/bin/openssl", X_OK) != 0) {
    GTEST_SKIP() << "curl or openssl is not installed";
  }
  TempDir dir;
  const std::string d = dir.path().string();
  StatusOr<test::TestCertificates> certificates = test::make_test_certificates(d);
  ASSERT_TRUE(certificates.ok()) << certificates.status().to_string();
  const std::string& ca = certificates->ca_cert;
  const std::string& cert = certificates->server_cert;
  const std::string& key = certificates->server_key;
  const std::string& other_key = certificates->client_key;  // a key that is not the server's
  write_file(dir.path() / "tls.yaml", "tls_cert: " + cert + "\ntls_key: " + key + "\n");
  StatusOr<std::unique_ptr<Serve>> serve =
      Serve::start({"--config", (dir.path() / "tls.yaml").string()});
  ASSERT_TRUE(serve.ok()) << serve.status().to_string();
  EXPECT_NE((*serve)->log().find("\"scheme\":\"https\""), std::string::npos) << (*serve)->log();
  const std::string url = "https://127.0.0.1:" + std::to_string((*serve)->port()) + "/healthz";
  const Ran curl = run({"/usr/bin/curl", "-sS", "-i", "--max-time", "10", "--cacert", ca, url});
  ASSERT_EQ(curl.code, 0) << curl.err << curl.out;
  EXPECT_NE(curl.out.find("HTTP/1.1 200 OK"), std::string::npos) << curl.out;
  EXPECT_NE(curl.out.find("Strict-Transport-Security: max-age=31536000"), std::string::npos)
      << curl.out;
  const Ran old = run({"/usr/bin/curl", "-sS", "--max-time", "10", "--tls-max", "1.1", "--cacert",
                       ca, "--ciphers", "DEFAULT@SECLEVEL=0", url});
  EXPECT_NE(old.code, 0) << old.out;
  const Ran untrusted =
      run({"/usr/bin/curl", "-sS", "--max-time", "10", url});  // the system's CAs only
  EXPECT_NE(untrusted.code, 0) << untrusted.out;
  // Over HTTPS the session cookie is Secure without --secure-cookies.
  const std::string password = first_admin_password((*serve)->log());
  ASSERT_FALSE(password.empty()) << (*serve)->log();
  const Ran login = run({"/usr/bin/curl", "-sS", "-i", "--max-time", "10", "--cacert", ca, "-H",
                         "Content-Type: application/json", "-d",
                         json{{"user", "admin"}, {"password", password}}.dump(),
                         "https://127.0.0.1:" + std::to_string((*serve)->port()) + "/v1/session"});
  ASSERT_EQ(login.code, 0) << login.err;
  EXPECT_NE(login.out.find("HTTP/1.1 200 OK"), std::string::npos) << login.out;
  EXPECT_NE(login.out.find("; Secure"), std::string::npos) << login.out;
  EXPECT_EQ((*serve)->process().signal_and_wait(SIGTERM), 0);

  struct Case {
    std::vector<std::string> flags;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{"--tls-cert", d + "/missing.pem", "--tls-key", key},
       "sluice serve: tls_cert " + d + "/missing.pem: cannot be read: No such file or directory"},
      {{"--tls-cert", cert, "--tls-key", other_key},
       "sluice serve: tls_key " + other_key + ": does not match the certificate in " + cert},
      {{"--tls-cert", cert, "--tls-key", cert},
       "sluice serve: tls_key " + cert + ": not an unencrypted PEM private key"},
      {{"--tls-cert", cert}, "sluice serve: tls_cert: set, but tls_key is not"},
      {{"--tls-client-ca", cert}, "sluice serve: tls_client_ca: needs HTTPS"},
      {{"--tls-cert", cert, "--tls-key", key, "--tls-client-ca", d + "/tls.yaml"},
       "sluice serve: tls_client_ca " + d + "/tls.yaml: "},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {SLUICE_BINARY, "serve", "--listen", "127.0.0.1:0"};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    const Ran refused = run(args);
    SCOPED_TRACE(c.expected);
    EXPECT_EQ(refused.code, 2);
    EXPECT_EQ(refused.err.rfind(c.expected, 0), 0u) << refused.err;
    EXPECT_EQ(refused.err.find("listening"), std::string::npos);
  }
}

TEST(ServeTest, HelpExplainsEverySetting) {
  const Ran help = run({SLUICE_BINARY, "serve", "--help"});
  ASSERT_EQ(help.code, 0);
  for (const char* name : {"--listen",
                           "SLUICE_LISTEN",
                           "--redis",
                           "SLUICE_REDIS",
                           "--policy-file",
                           "--config",
                           "--threads",
                           "--store-threads",
                           "--max-header-bytes",
                           "--max-body-bytes",
                           "--read-timeout",
                           "--idle-timeout",
                           "--shutdown-timeout",
                           "--max-wait",
                           "--max-batch",
                           "--rate-limit-headers",
                           "--check-app-header",
                           "--check-deny-status",
                           "--access-log",
                           "--local-fraction",
                           "Precedence"}) {
    EXPECT_NE(help.out.find(name), std::string::npos) << name;
  }
}

TEST(ServeTest, PoliciesComeFromFilesAndDirectories) {
  TempDir dir;
  fs::create_directory(dir.path() / "policies");
  write_file(dir.path() / "policies" / "a.yaml",
             "name: one\napps: [\"*\"]\nlimits:\n  - algorithm: fixed_window\n    limit: 1\n"
             "    window: 1h\n---\nname: two\napps: [\"*\"]\nlimits:\n"
             "  - algorithm: fixed_window\n    limit: 2\n    window: 1h\n");
  write_file(dir.path() / "three.json",
             R"({"name": "three", "apps": ["*"], "limits": [
                 {"algorithm": "gcra", "rate": 3, "period": "1s", "burst": 0}]})");
  StatusOr<std::unique_ptr<Serve>> serve =
      Serve::start({"--policy-file", (dir.path() / "policies").string(), "--policy-file",
                    (dir.path() / "three.json").string()});
  ASSERT_TRUE(serve.ok()) << serve.status().to_string();
  for (const auto& [policy, limit] : {std::pair{"one", 1}, {"two", 2}, {"three", 1}}) {
    StatusOr<RawResponse> response =
        http_request((*serve)->port(), "POST", "/v1/acquire",
                     json{{"app", "x"}, {"policy", policy}, {"key", "k"}}.dump());
    ASSERT_EQ(response->status, 200) << policy;
    EXPECT_EQ(json::parse(response->body)["limit"], limit) << policy;
  }
  EXPECT_EQ(http_request((*serve)->port(), "POST", "/v1/acquire", acquire_body("k"))->status,
            404);  // the demo policy is only the default
}

// The first admin's one-time password, from the log line that announced it ("" if none).
std::string first_admin_password(const std::string& log) {
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    const json entry = json::parse(line, nullptr, false);
    if (entry.is_object() && entry.contains("password")) return entry["password"];
  }
  return "";
}

// A browser-like session: the cookie and CSRF token of a password login.
struct Login {
  std::vector<Header> headers;
};
StatusOr<Login> log_in(std::uint16_t port, const std::string& user, const std::string& password) {
  StatusOr<RawResponse> response = http_request(
      port, "POST", "/v1/session", json{{"user", user}, {"password", password}}.dump());
  if (!response.ok()) return response.status();
  if (response->status != 200) return internal_error("login failed: " + response->body);
  const std::string cookie = response->header("Set-Cookie").value_or("");
  return Login{{{"Cookie", cookie.substr(0, cookie.find(';'))},
                {"X-CSRF-Token", json::parse(response->body)["csrf_token"].get<std::string>()}}};
}

TEST(ServeAdminTest, FirstStartSeedsThenPolicyChangesApplyAtOnceAndSurviveARestart) {
  TempDir data;
  StatusOr<std::unique_ptr<Serve>> serve = Serve::start({}, 0, data.path());
  ASSERT_TRUE(serve.ok()) << serve.status().to_string();
  const std::string password = first_admin_password((*serve)->log());
  ASSERT_FALSE(password.empty()) << (*serve)->log();
  EXPECT_NE((*serve)->log().find("first start: added the demo policies"), std::string::npos);
  const std::uint16_t port = (*serve)->port();
  EXPECT_EQ(http_request(port, "GET", "/v1/policies")->status, 401);
  StatusOr<Login> one_time = log_in(port, "admin", password);
  ASSERT_TRUE(one_time.ok()) << one_time.status().to_string();
  // The one-time password's session may only replace it.
  EXPECT_EQ(http_request(port, "GET", "/v1/policies", "", one_time->headers)->status, 403);
  const std::string chosen = "the admin's own password";
  ASSERT_EQ(http_request(port, "PUT", "/v1/users/admin/password",
                         json{{"password", chosen}, {"current_password", password}}.dump(),
                         one_time->headers)
                ->status,
            204);
  StatusOr<Login> admin = log_in(port, "admin", chosen);
  ASSERT_TRUE(admin.ok()) << admin.status().to_string();

  const std::string policy = R"({"name": "orders.create", "apps": ["web"], "limits": [
      {"algorithm": "fixed_window", "limit": 2, "window": "1h"}]})";
  StatusOr<RawResponse> created =
      http_request(port, "POST", "/v1/policies", policy, admin->headers);
  ASSERT_EQ(created->status, 201) << created->body;
  // The server's own decisions see the change at once, not after the next poll.
  const std::string acquire =
      json{{"app", "web"}, {"policy", "orders.create"}, {"key", "k"}}.dump();
  StatusOr<RawResponse> decided = http_request(port, "POST", "/v1/acquire", acquire);
  ASSERT_EQ(decided->status, 200) << decided->body;
  EXPECT_EQ(json::parse(decided->body)["limit"], 2);
  ASSERT_EQ(http_request(port, "DELETE", "/v1/policies/demo.api", "", admin->headers)->status, 204);
  EXPECT_EQ(http_request(port, "POST", "/v1/acquire", acquire_body("k"))->status, 404);

  // Killed without warning and restarted on the same database: nothing re-seeded, nothing lost.
  EXPECT_EQ((*serve)->process().signal_and_wait(SIGKILL), 128 + SIGKILL);
  StatusOr<std::unique_ptr<Serve>> again = Serve::start({}, 0, data.path());
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(first_admin_password((*again)->log()), "");
  EXPECT_EQ((*again)->log().find("demo policies"), std::string::npos) << (*again)->log();
  EXPECT_EQ(http_request((*again)->port(), "POST", "/v1/acquire", acquire)->status, 200);
  EXPECT_EQ(http_request((*again)->port(), "POST", "/v1/acquire", acquire_body("k"))->status, 404);
  StatusOr<Login> relogin = log_in((*again)->port(), "admin", chosen);
  ASSERT_TRUE(relogin.ok()) << relogin.status().to_string();
  StatusOr<RawResponse> history =
      http_request((*again)->port(), "GET", "/v1/policies/demo.api/history", "", relogin->headers);
  ASSERT_EQ(history->status, 200);
  const json changes = json::parse(history->body)["changes"];
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[1]["action"], "delete");
  EXPECT_EQ(changes[1]["actor"], "admin");
}

TEST(ServeAdminTest, ChangesFromAnotherProcessArriveWithinOnePollInterval) {
  TempDir data;
  const std::string url = "sqlite://" + (data.path() / "shared.db").string();
  StatusOr<std::unique_ptr<Serve>> serve =
      Serve::start({"--policies", url, "--policy-poll", "50ms"});
  ASSERT_TRUE(serve.ok()) << serve.status().to_string();
  write_file(data.path() / "p.yaml",
             "name: late\napps: [web]\nlimits:\n  - algorithm: fixed_window\n    limit: 7\n"
             "    window: 1h\n");
  const Ran created = run(
      {SLUICE_BINARY, "policy", "create", "--policies", url, (data.path() / "p.yaml").string()});
  ASSERT_EQ(created.code, 0) << created.err << created.out;
  const std::string acquire = json{{"app", "web"}, {"policy", "late"}, {"key", "k"}}.dump();
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (status != 200 && std::chrono::steady_clock::now() < deadline) {
    status = http_request((*serve)->port(), "POST", "/v1/acquire", acquire)->status;
    if (status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(status, 200);
  StatusOr<RawResponse> ready = http_request((*serve)->port(), "GET", "/readyz");
  EXPECT_EQ(ready->status, 200) << ready->body;
}

class ServeRedisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<std::unique_ptr<test::RedisServer>> server = test::RedisServer::start();
    ASSERT_TRUE(server.ok()) << server.status().to_string();
    redis_ = std::move(*server);
  }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(redis_->port()); }
  std::unique_ptr<test::RedisServer> redis_;
};

// Wrong credentials or missing permissions are configuration errors: serve and acquire stop at
// start (exit 4) naming Redis's answer. An unreachable Redis is an outage: one warning line
// naming the address and the failure mode, and the command goes on.
TEST(ServeRedisConfigTest, ConfigurationErrorsStopAtStartAnOutageOnlyWarns) {
  StatusOr<std::unique_ptr<test::RedisServer>> redis = test::RedisServer::start(
      {.requirepass = "s3cret",
       .extra_args = {"--user", "limited", "on", ">pw", "~other:*", "+@all"}});
  ASSERT_TRUE(redis.ok()) << redis.status().to_string();
  const std::string address = "127.0.0.1:" + std::to_string((*redis)->port());
  TempDir dir;
  const std::string policies = "sqlite://" + (dir.path() / "policies.db").string();
  const char* source = std::getenv("SLUICE_SOURCE_DIR");
  ASSERT_NE(source, nullptr) << "run through ctest (SLUICE_SOURCE_DIR)";
  const std::string demo = std::string(source) + "/examples/demo-policy.yaml";

  const Ran serve = run({SLUICE_BINARY, "serve", "--listen", "127.0.0.1:0", "--policies", policies,
                         "--redis", "redis://:wrong@" + address});
  EXPECT_EQ(serve.code, 4);
  EXPECT_NE(serve.err.find("WRONGPASS"), std::string::npos) << serve.err;

  const Ran wrong = run({SLUICE_BINARY, "acquire", "--policy-file", demo, "--key", "k", "--redis",
                         "redis://:wrong@" + address});
  EXPECT_EQ(wrong.code, 4);
  EXPECT_NE(wrong.err.find("WRONGPASS"), std::string::npos) << wrong.err;

  const Ran limited = run({SLUICE_BINARY, "acquire", "--policy-file", demo, "--key", "k", "--redis",
                           "redis://limited:pw@" + address});
  EXPECT_EQ(limited.code, 4);
  EXPECT_NE(limited.err.find("NOPERM"), std::string::npos) << limited.err;

  const Ran right = run({SLUICE_BINARY, "acquire", "--policy-file", demo, "--key", "k", "--redis",
                         "redis://:s3cret@" + address});
  EXPECT_EQ(right.code, 0) << right.err;
  EXPECT_EQ(right.err, "");

  StatusOr<std::uint16_t> free_port = test::RedisServer::pick_free_port();
  ASSERT_TRUE(free_port.ok());
  const Ran down = run({SLUICE_BINARY, "acquire", "--policy-file", demo, "--key", "k", "--redis",
                        "redis://127.0.0.1:" + std::to_string(*free_port)});
  EXPECT_EQ(down.code, 0) << down.err;
  EXPECT_NE(down.err.find("warning: redis 127.0.0.1:" + std::to_string(*free_port) +
                          "/0 does not answer"),
            std::string::npos)
      << down.err;
  EXPECT_NE(down.err.find("on_store_failure: fail_open"), std::string::npos) << down.err;
}

// The flood that reset live limits (issue: 1.1 M distinct keys through /v1/acquire/batch pushed
// a used-up subject out of the memory store): a full store now answers new subjects by their
// policy's failure mode (here fail_closed) and keeps every live limit.
TEST(ServeTest, AFloodOfNewSubjectsCannotResetALiveLimit) {
  TempDir dir;
  write_file(dir.path() / "hourly.yaml",
             "name: hourly\napps: [\"*\"]\non_store_failure: fail_closed\nlimits:\n"
             "  - algorithm: fixed_window\n    limit: 3\n    window: 1h\n");
  StatusOr<std::unique_ptr<Serve>> serve = Serve::start(
      {"--memory-max-keys", "10", "--policy-file", (dir.path() / "hourly.yaml").string()});
  ASSERT_TRUE(serve.ok()) << serve.status().to_string();
  const std::uint16_t port = (*serve)->port();
  const std::string victim = json{{"app", "web"}, {"policy", "hourly"}, {"key", "victim"}}.dump();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(json::parse(http_request(port, "POST", "/v1/acquire", victim)->body)["allowed"],
              true);
  }
  json flood = {{"requests", json::array()}};
  for (int i = 0; i < 200; ++i) {
    flood["requests"].push_back(
        {{"app", "web"}, {"policy", "hourly"}, {"key", "f" + std::to_string(i)}});
  }
  StatusOr<RawResponse> answered = http_request(port, "POST", "/v1/acquire/batch", flood.dump());
  ASSERT_TRUE(answered.ok() && answered->status == 200) << answered.status().to_string();
  int refused = 0;
  const json decisions = json::parse(answered->body)["decisions"];
  for (const json& decision : decisions) {
    if (decision.value("degraded", false)) {
      ++refused;
      EXPECT_EQ(decision.value("allowed", true), false) << decision.dump();  // fail_closed
    }
  }
  EXPECT_EQ(refused, 200 - 9);  // room for 9 beside the victim
  const json after = json::parse(http_request(port, "POST", "/v1/acquire", victim)->body);
  EXPECT_EQ(after["allowed"], false) << after.dump();
  EXPECT_EQ(after.value("degraded", true), false) << after.dump();  // its own state said no
  const std::string metrics = http_request(port, "GET", "/metrics")->body;
  EXPECT_NE(metrics.find("sluice_memory_store_subjects 10\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("sluice_memory_store_refusals_total 191\n"), std::string::npos) << metrics;
}

// A Redis Cluster node behind a redis:// URL is a configuration error, whichever node holds the
// probe's key: here a node that serves no slot at all, where any key would be refused.
TEST(ServeRedisConfigTest, AClusterNodeBehindARedisUrlStopsAtStart) {
  StatusOr<std::unique_ptr<test::RedisServer>> node =
      test::RedisServer::start({.extra_args = {"--cluster-enabled", "yes"}});
  ASSERT_TRUE(node.ok()) << node.status().to_string();
  const std::string url = "redis://127.0.0.1:" + std::to_string((*node)->port());
  // Started as a server, so that a regression (serving, degraded) fails instead of hanging.
  StatusOr<std::unique_ptr<Serve>> serve = Serve::start({"--redis", url});
  ASSERT_FALSE(serve.ok()) << "serves on a cluster node";
  EXPECT_NE(serve.status().message().find("is a Redis Cluster node"), std::string::npos)
      << serve.status().message();
  EXPECT_NE(serve.status().message().find("redis+cluster://"), std::string::npos)
      << "names the right scheme: " << serve.status().message();
  const char* source = std::getenv("SLUICE_SOURCE_DIR");
  ASSERT_NE(source, nullptr) << "run through ctest (SLUICE_SOURCE_DIR)";
  const Ran acquire =
      run({SLUICE_BINARY, "acquire", "--policy-file",
           std::string(source) + "/examples/demo-policy.yaml", "--key", "k", "--redis", url});
  EXPECT_EQ(acquire.code, 5) << acquire.err;
  EXPECT_NE(acquire.err.find("is a Redis Cluster node"), std::string::npos) << acquire.err;
}

// `--redis redis+cluster://` routes every subject to its slot's master: decisions across the
// three masters are exact and never degraded, from `serve` and from `acquire`. The reverse
// mistake, a cluster URL naming a standalone server, stops at start naming redis://.
TEST(ServeRedisConfigTest, ServesOnARedisClusterAndRefusesAClusterUrlForAStandaloneServer) {
  StatusOr<std::unique_ptr<test::RedisCluster>> cluster =
      test::RedisCluster::start({.masters = 3, .replicas_per_master = 0});
  ASSERT_TRUE(cluster.ok()) << cluster.status().to_string();
  TempDir dir;
  write_file(dir.path() / "three.yaml",
             "name: three\napps: [\"*\"]\non_store_failure: fail_closed\nlimits:\n"
             "  - algorithm: fixed_window\n    limit: 3\n    window: 1h\n"
             "  - algorithm: gcra\n    rate: 100\n    period: 1s\n    burst: 10\n");
  StatusOr<std::unique_ptr<Serve>> serve =
      Serve::start({"--redis", (*cluster)->url_with_one_seed(), "--policy-file",
                    (dir.path() / "three.yaml").string()});
  ASSERT_TRUE(serve.ok()) << serve.status().to_string();
  const std::uint16_t port = (*serve)->port();
  int allowed = 0;
  for (int attempt = 0; attempt < 4; ++attempt) {
    for (int k = 0; k < 30; ++k) {
      const std::string body =
          json{{"app", "web"}, {"policy", "three"}, {"key", "user" + std::to_string(k)}}.dump();
      StatusOr<RawResponse> response = http_request(port, "POST", "/v1/acquire", body);
      ASSERT_TRUE(response.ok()) << response.status().to_string();
      const json decision = json::parse(response->body);
      EXPECT_EQ(decision.value("degraded", true), false) << decision.dump();
      if (decision.value("allowed", false)) ++allowed;
    }
  }
  EXPECT_EQ(allowed, 30 * 3);
  EXPECT_EQ(http_request(port, "GET", "/readyz")->status, 200);

  const Ran acquire =
      run({SLUICE_BINARY, "acquire", "--policy-file", (dir.path() / "three.yaml").string(), "--key",
           "user0", "--redis", (*cluster)->url()});
  EXPECT_EQ(acquire.err, "");
  EXPECT_NE(acquire.out.find("denied"), std::string::npos) << acquire.out;

  StatusOr<std::unique_ptr<test::RedisServer>> standalone = test::RedisServer::start();
  ASSERT_TRUE(standalone.ok());
  StatusOr<std::unique_ptr<Serve>> wrong = Serve::start(
      {"--redis", "redis+cluster://127.0.0.1:" + std::to_string((*standalone)->port())});
  ASSERT_FALSE(wrong.ok()) << "serves a cluster URL on a standalone server";
  EXPECT_NE(wrong.status().message().find("not a Redis Cluster node"), std::string::npos)
      << wrong.status().message();
}

// rediss://: the right CA decides over TLS; a wrong CA stops `acquire` and `serve` at start with
// the handshake's reason, never serving degraded.
TEST(ServeRedisConfigTest, RedissDecidesOverTlsAndAWrongCaStopsAtStart) {
  TempDir dir;
  StatusOr<test::TestCertificates> certificates = test::make_test_certificates(dir.path().string());
  ASSERT_TRUE(certificates.ok()) << certificates.status().to_string();
  StatusOr<std::uint16_t> tls_port = test::RedisServer::pick_free_port();
  ASSERT_TRUE(tls_port.ok());
  StatusOr<std::unique_ptr<test::RedisServer>> redis = test::RedisServer::start(
      {.extra_args = {"--tls-port", std::to_string(*tls_port), "--tls-cert-file",
                      certificates->server_cert, "--tls-key-file", certificates->server_key,
                      "--tls-ca-cert-file", certificates->ca_cert, "--tls-auth-clients", "no"}});
  ASSERT_TRUE(redis.ok()) << redis.status().to_string();
  const char* source = std::getenv("SLUICE_SOURCE_DIR");
  ASSERT_NE(source, nullptr) << "run through ctest (SLUICE_SOURCE_DIR)";
  const std::string demo = std::string(source) + "/examples/demo-policy.yaml";
  const std::string base = "rediss://localhost:" + std::to_string(*tls_port) + "?tls_ca=";

  const Ran right = run({SLUICE_BINARY, "acquire", "--policy-file", demo, "--key", "k", "--redis",
                         base + certificates->ca_cert});
  EXPECT_EQ(right.code, 0) << right.err;
  EXPECT_EQ(right.err, "");

  const Ran wrong = run({SLUICE_BINARY, "acquire", "--policy-file", demo, "--key", "k", "--redis",
                         base + certificates->other_ca_cert});
  EXPECT_EQ(wrong.code, 5) << wrong.err;  // a failed precondition, as for a cluster node
  EXPECT_NE(wrong.err.find("TLS handshake with redis localhost:" + std::to_string(*tls_port)),
            std::string::npos)
      << wrong.err;
  StatusOr<std::unique_ptr<Serve>> serve =
      Serve::start({"--redis", base + certificates->other_ca_cert});
  ASSERT_FALSE(serve.ok()) << "serves with a certificate it cannot verify";
  EXPECT_NE(serve.status().message().find("TLS handshake"), std::string::npos)
      << serve.status().message();
}

// A Redis down at start: /readyz answers 503 and decisions follow the failure mode until Redis
// comes up, then the server connects by itself. A permission revoked while serving: decisions
// follow the failure mode, each refusal counts in sluice_store_refusals_total, and an error line
// names Redis's answer, about once per 10 s rather than once per decision.
TEST(ServeRedisConfigTest, ReadyOnceRedisAnswersAndARevokedPermissionIsLoud) {
  StatusOr<std::uint16_t> redis_port = test::RedisServer::pick_free_port();
  ASSERT_TRUE(redis_port.ok());
  const std::string port_text = std::to_string(*redis_port);
  StatusOr<std::unique_ptr<Serve>> serve =
      Serve::start({"--redis", "redis://app:pw@127.0.0.1:" + port_text});
  ASSERT_TRUE(serve.ok()) << serve.status().to_string();
  const std::uint16_t port = (*serve)->port();
  const auto acquire = [port] {
    StatusOr<RawResponse> response = http_request(port, "POST", "/v1/acquire", acquire_body("k"));
    return response.ok() ? json::parse(response->body, nullptr, false) : json();
  };
  EXPECT_EQ(http_request(port, "GET", "/readyz")->status, 503);
  EXPECT_EQ(acquire().value("degraded", false), true);

  StatusOr<std::unique_ptr<test::RedisServer>> redis = test::RedisServer::start(
      {.port = *redis_port, .extra_args = {"--user", "app", "on", ">pw", "~*", "+@all"}});
  ASSERT_TRUE(redis.ok()) << redis.status().to_string();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (http_request(port, "GET", "/readyz")->status != 200 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(http_request(port, "GET", "/readyz")->status, 200) << (*serve)->log();
  const json connected = acquire();
  EXPECT_EQ(connected.value("allowed", false), true) << connected.dump();
  EXPECT_EQ(connected.value("degraded", false), false) << connected.dump();
  EXPECT_EQ((*serve)->log().find("refuses"), std::string::npos);

  StatusOr<std::string> revoked =
      test::run_checked({"redis-cli", "-p", port_text, "ACL", "SETUSER", "app", "-@all"});
  ASSERT_TRUE(revoked.ok()) << revoked.status().to_string();
  constexpr int kRefused = 5;
  for (int i = 0; i < kRefused; ++i) {
    const json decision = acquire();
    EXPECT_EQ(decision.value("degraded", false), true) << decision.dump();
    EXPECT_EQ(decision.value("allowed", false), true) << decision.dump();  // fail_open
  }
  const std::string metrics = http_request(port, "GET", "/metrics")->body;
  EXPECT_NE(metrics.find("sluice_store_refusals_total " + std::to_string(kRefused) + "\n"),
            std::string::npos)
      << metrics;
  std::vector<json> alarms;
  std::istringstream lines((*serve)->log());
  for (std::string line; std::getline(lines, line);) {
    const json entry = json::parse(line, nullptr, false);
    if (entry.is_object() && entry.value("level", "") == "error") alarms.push_back(entry);
  }
  ASSERT_FALSE(alarms.empty()) << (*serve)->log();
  EXPECT_LT(alarms.size(), static_cast<std::size_t>(kRefused)) << (*serve)->log();
  EXPECT_NE(alarms.front().value("msg", "").find("refuses sluice's credentials or permissions"),
            std::string::npos);
  EXPECT_NE(alarms.front().value("error", "").find("NOPERM"), std::string::npos);
  EXPECT_EQ(alarms.front().value("redis", ""), "127.0.0.1:" + port_text + "/0");

  // A password changed and the server's connections dropped: reconnecting is refused too.
  ASSERT_TRUE(test::run_checked({"redis-cli", "-p", port_text, "ACL", "SETUSER", "app", "+@all",
                                 "resetpass", ">changed"})
                  .ok());
  ASSERT_TRUE(
      test::run_checked({"redis-cli", "-p", port_text, "CLIENT", "KILL", "USER", "app"}).ok());
  // The first decision may still find a dropped connection (an outage); a reconnect is refused.
  const auto refusals = [port] {
    const std::string text = http_request(port, "GET", "/metrics")->body;
    const std::string name = "\nsluice_store_refusals_total ";
    const std::size_t at = text.find(name);
    return at == std::string::npos ? -1 : std::stoi(text.substr(at + name.size()));
  };
  for (int i = 0; i < 10 && refusals() == kRefused; ++i) {
    const json decision = acquire();
    EXPECT_EQ(decision.value("degraded", false), true) << decision.dump();
  }
  EXPECT_GT(refusals(), kRefused);
}

TEST_F(ServeRedisTest, TwoServersShareStateThatSurvivesAServerKilledAndRestarted) {
  // 5 per hour: nothing refills while a server restarts, whatever the machine's speed.
  TempDir dir;
  write_file(dir.path() / "shared.yaml",
             "name: shared.api\napps: [\"*\"]\nlimits:\n  - algorithm: fixed_window\n"
             "    limit: 5\n    window: 1h\n---\nname: jobs\napps: [\"*\"]\nlimits:\n"
             "  - algorithm: concurrency\n    limit: 1\n    lease_ttl: 1h\n");
  const std::vector<std::string> flags = {"--redis", url(), "--policy-file",
                                          (dir.path() / "shared.yaml").string()};
  StatusOr<std::unique_ptr<Serve>> a = Serve::start(flags, 0, dir.path() / "a");
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  StatusOr<std::unique_ptr<Serve>> b = Serve::start(flags);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_NE((*a)->log().find("\"store\":\"redis\""), std::string::npos);
  auto client_a = RemoteLimiter::create({.port = (*a)->port()}).value();
  auto client_b = RemoteLimiter::create({.port = (*b)->port()}).value();
  // Three through a, two through b.
  for (int i = 0; i < 5; ++i) {
    RemoteLimiter& client = i < 3 ? *client_a : *client_b;
    StatusOr<service::Decision> d = client.try_acquire("shared.api", "web", "shared", 1);
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    EXPECT_TRUE(d->verdict.allowed) << i;
  }
  EXPECT_FALSE(client_b->try_acquire("shared.api", "web", "shared", 1)->verdict.allowed);

  // Kill a hard and start it again on the same port: the state lives in Redis.
  const std::uint16_t port = (*a)->port();
  EXPECT_EQ((*a)->process().signal_and_wait(SIGKILL), 128 + SIGKILL);
  a->reset();
  StatusOr<std::unique_ptr<Serve>> restarted = Serve::start(flags, port, dir.path() / "a");
  ASSERT_TRUE(restarted.ok()) << restarted.status().to_string();
  StatusOr<service::Decision> after = client_a->try_acquire("shared.api", "web", "shared", 1);
  ASSERT_TRUE(after.ok()) << after.status().to_string();  // reconnects after the kill
  EXPECT_FALSE(after->verdict.allowed);
  EXPECT_EQ(after->verdict.remaining, 0);
  EXPECT_FALSE(after->degraded);
  EXPECT_EQ(http_request(port, "GET", "/readyz")->status, 200);

  // A concurrency lease taken through one server is held for both, and freed through the other.
  StatusOr<service::Decision> held = client_a->try_acquire("jobs", "worker", "queue", 1);
  ASSERT_TRUE(held.ok() && held->verdict.allowed && held->lease) << held.status().to_string();
  EXPECT_FALSE(client_b->try_acquire("jobs", "worker", "queue", 1)->verdict.allowed);
  EXPECT_EQ(client_b->release("jobs", "worker", "queue", *held->lease).value(), true);
  EXPECT_TRUE(client_b->try_acquire("jobs", "worker", "queue", 1)->verdict.allowed);
}

// The defences (docs/defences.md) as `sluice serve` runs them on Redis: a staged rollout whose
// denials are enforced for the hashed share and shadowed for the rest, repeated denials answered
// by the over-limit cache, and the circuit breaker opening on a stalled Redis — all on /metrics.
TEST_F(ServeRedisTest, DefencesRolloutOverLimitCacheAndBreakerShowOnMetrics) {
  TempDir dir;
  write_file(dir.path() / "staged.yaml",
             "name: staged\napps: [\"*\"]\nrollout: 50%\non_store_failure: fail_closed\n"
             "limits:\n  - algorithm: fixed_window\n    limit: 1\n    window: 1h\n");
  StatusOr<std::unique_ptr<Serve>> serve = Serve::start(
      {"--redis", url(), "--policy-file", (dir.path() / "staged.yaml").string(), "--redis-timeout",
       "200ms", "--breaker-failures", "2", "--breaker-open-for", "1h"});
  ASSERT_TRUE(serve.ok()) << serve.status().to_string();
  const std::uint16_t port = (*serve)->port();
  const auto acquire = [port](const std::string& key) {
    return json::parse(http_request(port, "POST", "/v1/acquire",
                                    json{{"app", "web"}, {"policy", "staged"}, {"key", key}}.dump())
                           ->body);
  };
  policy::Policy staged{.name = "staged", .rollout = 50.0};
  int enforced = 0;
  for (int i = 0; i < 20; ++i) {
    const std::string key = "k" + std::to_string(i);
    const bool in_group = service::enforced_for(staged, key);
    enforced += in_group;
    EXPECT_EQ(acquire(key)["allowed"], true);
    for (int repeat = 0; repeat < 2; ++repeat) {  // Redis's denial, then the cache's
      const json denied = acquire(key);
      EXPECT_EQ(denied["allowed"], !in_group) << denied.dump();
      EXPECT_EQ(denied["shadow_denied"], !in_group) << denied.dump();
      EXPECT_EQ(denied["mode"], in_group ? "enforce" : "shadow") << denied.dump();
    }
  }
  std::string metrics = http_request(port, "GET", "/metrics")->body;
  EXPECT_NE(metrics.find("sluice_over_limit_cache_hits_total{policy=\"staged\"} 20\n"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("sluice_rollout_decisions_total{policy=\"staged\",group=\"enforced\","
                         "outcome=\"denied\"} " +
                         std::to_string(2 * enforced) + "\n"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("sluice_rollout_decisions_total{policy=\"staged\",group=\"shadowed\","
                         "outcome=\"shadow_denied\"} " +
                         std::to_string(2 * (20 - enforced)) + "\n"),
            std::string::npos)
      << metrics;

  // Redis stalls: two decisions wait for redis_timeout, then the breaker answers the rest.
  ASSERT_EQ(::kill(redis_->pid(), SIGSTOP), 0);
  struct Resume {
    pid_t pid;
    ~Resume() { ::kill(pid, SIGCONT); }
  } resume{redis_->pid()};
  for (int i = 0; i < 12; ++i) {
    const json decision = acquire("stalled-" + std::to_string(i));
    EXPECT_EQ(decision["degraded"], true) << decision.dump();
  }
  metrics = http_request(port, "GET", "/metrics")->body;
  EXPECT_NE(metrics.find("sluice_circuit_breaker_state 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("sluice_circuit_breaker_rejections_total 10\n"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("sluice_store_errors_total 2\n"), std::string::npos) << metrics;
}

// nginx in front of a static page, asking `sluice serve` through auth_request. nginx passes only
// 401/403 from an auth subrequest (anything else becomes 500), so the check answers 403 for
// denials (?deny_status=403) and nginx turns it into a 429 carrying sluice's headers.
TEST(ServeNginxTest, AuthRequestPasses200And429WithRateLimitHeaders) {
  if (::access("/usr/sbin/nginx", X_OK) != 0) GTEST_SKIP() << "nginx is not installed";
  StatusOr<std::unique_ptr<Serve>> serve = Serve::start({"--access-log", "stderr"});
  ASSERT_TRUE(serve.ok()) << serve.status().to_string();
  TempDir dir;
  fs::create_directories(dir.path() / "www");
  fs::create_directories(dir.path() / "tmp");
  write_file(dir.path() / "www" / "index.html", "<h1>hello from nginx</h1>\n");
  ::chmod((dir.path() / "www").c_str(), 0755);
  ::chmod((dir.path() / "www" / "index.html").c_str(), 0644);
  StatusOr<std::uint16_t> port = test::RedisServer::pick_free_port();
  ASSERT_TRUE(port.ok());
  const std::string d = dir.path().string();
  std::string config = R"(
worker_processes 1;
daemon off;
master_process off;
pid DIR/nginx.pid;
error_log DIR/error.log warn;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path DIR/tmp/body;
  proxy_temp_path DIR/tmp/proxy;
  fastcgi_temp_path DIR/tmp/fastcgi;
  uwsgi_temp_path DIR/tmp/uwsgi;
  scgi_temp_path DIR/tmp/scgi;
  upstream sluice { server 127.0.0.1:SLUICE_PORT; keepalive 8; }
  server {
    listen 127.0.0.1:NGINX_PORT;
    root DIR/www;
    location / {
      auth_request /_sluice;
      auth_request_set $rl_limit $upstream_http_x_ratelimit_limit;
      auth_request_set $rl_remaining $upstream_http_x_ratelimit_remaining;
      auth_request_set $rl_reset $upstream_http_x_ratelimit_reset;
      auth_request_set $rl_policy $upstream_http_ratelimit_policy;
      auth_request_set $rl $upstream_http_ratelimit;
      auth_request_set $rl_retry $upstream_http_retry_after;
      add_header X-RateLimit-Limit $rl_limit always;
      add_header X-RateLimit-Remaining $rl_remaining always;
      add_header X-RateLimit-Reset $rl_reset always;
      add_header RateLimit-Policy $rl_policy always;
      add_header RateLimit $rl always;
      error_page 403 = @sluice_denied;
      index index.html;
    }
    location = /_sluice {
      internal;
      proxy_pass http://sluice/v1/check?deny_status=403;
      proxy_pass_request_body off;
      proxy_set_header Content-Length "";
      proxy_set_header X-Sluice-App nginx;
      proxy_set_header X-Sluice-Policy demo.api;
      proxy_set_header X-Sluice-Key $remote_addr;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
    location @sluice_denied {
      types { }  # not text/html from the file name: the body is a problem
      default_type application/problem+json;
      add_header Retry-After $rl_retry always;
      add_header X-RateLimit-Limit $rl_limit always;
      add_header X-RateLimit-Remaining $rl_remaining always;
      add_header X-RateLimit-Reset $rl_reset always;
      add_header RateLimit-Policy $rl_policy always;
      add_header RateLimit $rl always;
      return 429 '{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429}';
    }
  }
}
)";
  const auto replace_all = [&](std::string_view from, const std::string& to) {
    for (std::size_t at = config.find(from); at != std::string::npos; at = config.find(from)) {
      config.replace(at, from.size(), to);
    }
  };
  replace_all("DIR", d);
  replace_all("SLUICE_PORT", std::to_string((*serve)->port()));
  replace_all("NGINX_PORT", std::to_string(*port));
  write_file(dir.path() / "nginx.conf", config);
  StatusOr<std::unique_ptr<Process>> nginx =
      Process::spawn({"/usr/sbin/nginx", "-p", d, "-c", d + "/nginx.conf", "-e", d + "/error.log"},
                     dir.path() / "nginx.out", dir.path() / "nginx.err");
  ASSERT_TRUE(nginx.ok()) << nginx.status().to_string();
  StatusOr<RawResponse> first = unavailable("not tried");
  for (int i = 0; i < 500 && !first.ok(); ++i) {
    first = http_request(*port, "GET", "/index.html");
    if (!first.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(first.ok()) << first.status().to_string() << read_file(dir.path() / "error.log")
                          << read_file(dir.path() / "nginx.err");
  EXPECT_EQ(first->status, 200) << read_file(dir.path() / "error.log");
  EXPECT_EQ(first->body, "<h1>hello from nginx</h1>\n");
  EXPECT_EQ(first->header("X-RateLimit-Limit"), "5");
  EXPECT_EQ(first->header("X-RateLimit-Remaining"), "4");
  EXPECT_EQ(first->header("RateLimit"), "\"demo.api\";r=4;t=1");
  // (Ask for the file itself: "/" would be redirected to index.html internally and pass the
  // auth_request twice.)
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(http_request(*port, "GET", "/index.html")->status, 200);
  }
  StatusOr<RawResponse> denied = http_request(*port, "GET", "/index.html");
  ASSERT_TRUE(denied.ok());
  EXPECT_EQ(denied->status, 429) << read_file(dir.path() / "error.log");
  EXPECT_EQ(denied->header("Content-Type"), "application/problem+json");
  EXPECT_EQ(denied->header("Retry-After"), "1");
  EXPECT_EQ(denied->header("X-RateLimit-Remaining"), "0");
  EXPECT_EQ(denied->header("RateLimit-Policy"),
            "\"demo.api\";q=5;w=3, \"demo.api/1\";q=100;w=3600");
  EXPECT_EQ(denied->header("RateLimit"), "\"demo.api\";r=0;t=1");
  EXPECT_NE(denied->body.find("quota-exceeded"), std::string::npos);
  // nginx answered through sluice's check: sluice logged it.
  EXPECT_TRUE((*serve)->log_shows("\"route\":\"/v1/check\",\"status\":403")) << (*serve)->log();
  EXPECT_EQ((*nginx)->signal_and_wait(SIGQUIT), 0);
}

}  // namespace
}  // namespace sluice::http
