#include "sluice/app/settings.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "sluice/app/recording.h"
#include "sluice/app/settings_loader.h"

namespace sluice::app {
namespace {

namespace fs = std::filesystem;

// A directory of its own for config files, removed at the end.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "sluice-settings-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

EnvironmentReader environment_of(std::map<std::string, std::string> variables) {
  return [variables = std::move(variables)](const std::string& name) -> std::optional<std::string> {
    const auto it = variables.find(name);
    if (it == variables.end()) return std::nullopt;
    return it->second;
  };
}

SettingSources no_sources() { return {.environment = environment_of({})}; }

std::string write_file(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
  return path.string();
}

TEST(Settings, EveryKeyHasItsVariableAndFlag) {
  for (const Setting& setting : settings()) {
    SCOPED_TRACE(setting.key);
    std::string upper = setting.key;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    EXPECT_EQ(setting.env, "SLUICE_" + upper);
    EXPECT_EQ(flag_name(setting).find('_'), std::string::npos);
    EXPECT_TRUE(flag_name(setting).starts_with("--"));
  }
}

TEST(Settings, NoSourceGivesTheDefaults) {
  StatusOr<Settings> loaded = load_settings(no_sources());
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_EQ(loaded->listen, "127.0.0.1:8080");
  EXPECT_EQ(loaded->max_pending_decisions, 10'000);
  EXPECT_EQ(loaded->redis_timeout, kMicrosPerSecond);
  EXPECT_TRUE(loaded->policy_files.empty());
}

TEST(Settings, FlagsOverrideEnvironmentWhichOverridesTheFile) {
  TempDir dir;
  const std::string file =
      write_file(dir.path() / "sluice.yaml", "listen: 0.0.0.0:9000\nthreads: 2\nmax_batch: 10\n");
  StatusOr<Settings> loaded = load_settings(
      {.config_file = file,
       .environment = environment_of({{"SLUICE_THREADS", "4"}, {"SLUICE_MAX_BATCH", "20"}}),
       .flags = {{"max_batch", {"30"}}}});
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_EQ(loaded->listen, "0.0.0.0:9000");  // file
  EXPECT_EQ(loaded->threads, 4);              // environment over file
  EXPECT_EQ(loaded->max_batch, 30);           // flag over both
}

TEST(Settings, TheConfigFileMayComeFromTheEnvironment) {
  TempDir dir;
  const std::string file = write_file(dir.path() / "c.yaml", "threads: 7\n");
  StatusOr<Settings> loaded =
      load_settings({.environment = environment_of({{"SLUICE_CONFIG", file}})});
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_EQ(loaded->threads, 7);
}

TEST(Settings, EachSourceNamingTheListReplacesIt) {
  TempDir dir;
  const std::string file =
      write_file(dir.path() / "c.yaml", "policy_file:\n  - a.yaml\n  - /abs/b.yaml\n");
  StatusOr<Settings> from_file =
      load_settings({.config_file = file, .environment = environment_of({})});
  ASSERT_TRUE(from_file.ok()) << from_file.status().to_string();
  // Relative to the file's directory.
  EXPECT_EQ(from_file->policy_files,
            (std::vector<std::string>{(dir.path() / "a.yaml").string(), "/abs/b.yaml"}));

  StatusOr<Settings> from_env =
      load_settings({.config_file = file,
                     .environment = environment_of({{"SLUICE_POLICY_FILE", "x.yaml,,y.yaml"}})});
  ASSERT_TRUE(from_env.ok()) << from_env.status().to_string();
  EXPECT_EQ(from_env->policy_files, (std::vector<std::string>{"x.yaml", "y.yaml"}));

  StatusOr<Settings> from_flags =
      load_settings({.config_file = file,
                     .environment = environment_of({{"SLUICE_POLICY_FILE", "x.yaml"}}),
                     .flags = {{"policy_file", {"p.yaml", "q.yaml"}}}});
  ASSERT_TRUE(from_flags.ok()) << from_flags.status().to_string();
  EXPECT_EQ(from_flags->policy_files, (std::vector<std::string>{"p.yaml", "q.yaml"}));
}

TEST(Settings, ErrorsNameTheirSource) {
  TempDir dir;
  const std::string unknown = write_file(dir.path() / "u.yaml", "listen_port: 1\n");
  StatusOr<Settings> file =
      load_settings({.config_file = unknown, .environment = environment_of({})});
  EXPECT_EQ(file.status().message(), "config file " + unknown + ": listen_port: unknown setting");

  const std::string bad = write_file(dir.path() / "b.yaml", "threads: many\nlisten_port: 1\n");
  StatusOr<Settings> first = load_settings({.config_file = bad, .environment = environment_of({})});
  EXPECT_NE(first.status().message().find("config file " + bad + ": threads: must be an integer"),
            std::string::npos)
      << first.status().message();

  StatusOr<Settings> env =
      load_settings({.environment = environment_of({{"SLUICE_READ_TIMEOUT", "soon"}})});
  EXPECT_EQ(env.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(env.status().message().starts_with("SLUICE_READ_TIMEOUT: "))
      << env.status().message();

  StatusOr<Settings> flag = load_settings(
      {.environment = environment_of({}), .flags = {{"rate_limit_headers", {"bogus"}}}});
  EXPECT_TRUE(flag.status().message().starts_with("--rate-limit-headers: "))
      << flag.status().message();
}

TEST(Settings, CheckNamesTheSettingsThatDisagree) {
  Settings s;
  EXPECT_TRUE(check_settings(s).ok());
  s.grpc_listen = "nowhere";
  EXPECT_TRUE(check_settings(s).message().starts_with("grpc-listen: "))
      << check_settings(s).message();
  s = Settings{};
  s.admin_page_size = 500;
  s.admin_max_page_size = 100;
  EXPECT_EQ(check_settings(s).message(),
            "admin_page_size: must be at most admin_max_page_size (100), not 500");
  s = Settings{};
  s.tls_cert = "cert.pem";
  EXPECT_EQ(check_settings(s).message(),
            "tls_cert: set, but tls_key is not; HTTPS needs both (--tls-cert and --tls-key)");
  s = Settings{};
  s.metrics = http::MetricsAccess::kToken;
  EXPECT_EQ(check_settings(s).message(), "metrics_token: must be set when metrics is token");
}

// Recording (issue 36): off by default; the sample as a fraction or a percentage; each bad value
// refused naming its setting; the settings that depend on each other checked together.
TEST(Settings, RecordingSettingsReadCheckAndNameTheirErrors) {
  StatusOr<Settings> defaults = load_settings(no_sources());
  ASSERT_TRUE(defaults.ok()) << defaults.status().to_string();
  EXPECT_EQ(defaults->record_dir, "");
  EXPECT_EQ(defaults->record_sample, 1.0);
  EXPECT_EQ(defaults->record_subjects, simulate::SubjectStorage::kClear);

  StatusOr<Settings> loaded =
      load_settings({.environment = environment_of({{"SLUICE_RECORD_KEY", "k3y"}}),
                     .flags = {{"record_dir", {"/tmp/rec"}},
                               {"record_sample", {"25%"}},
                               {"record_subjects", {"hashed"}},
                               {"record_file_bytes", {"1048576"}},
                               {"record_max_bytes", {"2097152"}}}});
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_EQ(loaded->record_dir, "/tmp/rec");
  EXPECT_DOUBLE_EQ(loaded->record_sample, 0.25);
  EXPECT_EQ(loaded->record_subjects, simulate::SubjectStorage::kHashed);
  EXPECT_EQ(loaded->record_key, "k3y");
  EXPECT_EQ(loaded->record_file_bytes, 1 << 20);
  EXPECT_TRUE(check_settings(*loaded).ok()) << check_settings(*loaded).message();
  EXPECT_DOUBLE_EQ(*parse_sample("0.5"), 0.5);
  EXPECT_DOUBLE_EQ(*parse_sample("100%"), 1.0);

  for (const auto& [flag, value] :
       std::vector<std::pair<std::string, std::string>>{{"record_sample", "1.5"},
                                                        {"record_sample", "-1%"},
                                                        {"record_sample", "half"},
                                                        {"record_sample", "%"},
                                                        {"record_subjects", "sha256"},
                                                        {"record_file_bytes", "10"},
                                                        {"record_max_bytes", "lots"}}) {
    SCOPED_TRACE(flag + "=" + value);
    StatusOr<Settings> bad =
        load_settings({.environment = environment_of({}), .flags = {{flag, {value}}}});
    ASSERT_FALSE(bad.ok());
    std::string dashed = flag;
    std::replace(dashed.begin(), dashed.end(), '_', '-');
    EXPECT_TRUE(bad.status().message().starts_with("--" + dashed + ": ")) << bad.status().message();
  }

  Settings s;
  s.record_subjects = simulate::SubjectStorage::kHashed;
  EXPECT_TRUE(check_settings(s).message().starts_with("record_key: must be set"))
      << check_settings(s).message();
  s = Settings{};
  s.record_file_bytes = s.record_max_bytes + 1;
  EXPECT_TRUE(check_settings(s).message().starts_with("record_file_bytes: must be at most"))
      << check_settings(s).message();

  s = Settings{};
  s.record_key = "recording-secret";
  const std::string printed = print_settings(s);
  EXPECT_EQ(printed.find("recording-secret"), std::string::npos) << printed;
  EXPECT_NE(printed.find("record_key: \"***\""), std::string::npos) << printed;
}

TEST(Settings, SplitListenReadsHostsAndPorts) {
  StatusOr<HostPort> v4 = split_listen("0.0.0.0:80");
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ(v4->host, "0.0.0.0");
  EXPECT_EQ(v4->port, 80);
  StatusOr<HostPort> v6 = split_listen("[::1]:0");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_FALSE(split_listen(":80").ok());
  EXPECT_FALSE(split_listen("host:65536").ok());
}

TEST(Settings, PrintingMasksSecrets) {
  Settings s;
  s.redis = "redis://limiter:hunter2@127.0.0.1:6379/0";
  s.metrics_token = "scrape-secret";
  const std::string printed = print_settings(s);
  EXPECT_EQ(printed.find("hunter2"), std::string::npos) << printed;
  EXPECT_EQ(printed.find("scrape-secret"), std::string::npos) << printed;
  EXPECT_NE(printed.find("metrics_token: \"***\""), std::string::npos) << printed;
  EXPECT_NE(printed.find("policy_file: []"), std::string::npos) << printed;
}

TEST(Settings, HelpShowsVariableKeyAndDefault) {
  const Setting& listen = settings().front();
  EXPECT_EQ(flag_help(listen).substr(flag_help(listen).find('\n')),
            "\n  env SLUICE_LISTEN, file key listen, default 127.0.0.1:8080");
}

}  // namespace
}  // namespace sluice::app
