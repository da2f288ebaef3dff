// sluice::redis::Script: a Lua script and the name Redis gives it (its SHA-1).
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace sluice::redis {

// SHA-1 of `data` as 40 lowercase hex digits: the name Redis gives a script (EVALSHA). OpenSSL's.
std::string sha1_hex(std::string_view data);

// A Lua script and its SHA-1, computed once when the Script is built. Cheap to copy (shared).
class Script {
 public:
  explicit Script(std::string source);

  const std::string& source() const { return data_->source; }
  const std::string& sha1() const { return data_->sha1; }

 private:
  struct Data {
    std::string source;
    std::string sha1;
  };
  std::shared_ptr<const Data> data_;
};

}  // namespace sluice::redis
