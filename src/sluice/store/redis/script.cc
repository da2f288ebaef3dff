#include "sluice/store/redis/script.h"

#include <openssl/sha.h>

#include <array>

namespace sluice::redis {

std::string sha1_hex(std::string_view data) {
  std::array<unsigned char, SHA_DIGEST_LENGTH> digest{};
  SHA1(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest.data());
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * digest.size());
  for (unsigned char byte : digest) {
    out.push_back(kHex[byte >> 4]);
    out.push_back(kHex[byte & 0xf]);
  }
  return out;
}

Script::Script(std::string source, std::string module_command) {
  std::string sha1 = sha1_hex(source);
  std::string function_name = "sluice_" + sha1.substr(0, 16);
  data_ = std::make_shared<const Data>(Data{std::move(source), std::move(sha1),
                                            std::move(function_name), std::move(module_command)});
}

}  // namespace sluice::redis
