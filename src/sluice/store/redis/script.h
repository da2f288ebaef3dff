// sluice::redis::Script: a Lua script and the name Redis gives it (its SHA-1).
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace sluice::redis {

// SHA-1 of `data` as 40 lowercase hex digits: the name Redis gives a script (EVALSHA). OpenSSL's.
std::string sha1_hex(std::string_view data);

// A Lua script and its SHA-1, computed once when the Script is built. Cheap to copy (shared).
// The same script can run as a Redis Function (script_engine.h), named after its content, and, for
// the scripts the sluice.so module mirrors, as the module's command (`module_command`, e.g.
// "SLUICE.EVALUATE"; empty: none).
class Script {
 public:
  explicit Script(std::string source, std::string module_command = {});

  const std::string& source() const { return data_->source; }
  const std::string& sha1() const { return data_->sha1; }
  // "sluice_<the SHA-1's first 16 hex digits>": the FCALL name of this very source.
  const std::string& function_name() const { return data_->function_name; }
  const std::string& module_command() const { return data_->module_command; }

 private:
  struct Data {
    std::string source;
    std::string sha1;
    std::string function_name;
    std::string module_command;
  };
  std::shared_ptr<const Data> data_;
};

}  // namespace sluice::redis
