#include "sluice/auth/secrets.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <array>
#include <climits>

#include "sluice/core/status_macros.h"

namespace sluice::auth {
namespace {

constexpr std::string_view kBase62 =
    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
// The largest multiple of 62 not above 256: bytes at or above it are redrawn so every
// character is equally likely.
constexpr unsigned kBase62Accept = 256 - 256 % 62;

}  // namespace

StatusOr<std::string> random_bytes(std::size_t count) {
  std::string bytes(count, '\0');
  if (count == 0) return bytes;
  if (count > static_cast<std::size_t>(INT_MAX) ||
      RAND_bytes(reinterpret_cast<unsigned char*>(bytes.data()), static_cast<int>(count)) != 1) {
    return internal_error("the random number generator failed");
  }
  return bytes;
}

StatusOr<std::string> random_base62(std::size_t length) {
  std::string out;
  out.reserve(length);
  while (out.size() < length) {
    // About 3% of bytes are rejected; draw a little more than needed per round.
    SLUICE_ASSIGN_OR_RETURN(std::string bytes, random_bytes(length - out.size() + 8));
    for (const char byte : bytes) {
      const auto value = static_cast<unsigned char>(byte);
      if (value >= kBase62Accept) continue;
      out.push_back(kBase62[value % 62]);
      if (out.size() == length) break;
    }
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  // EVP_Digest only fails on allocation failure or a missing provider; SHA-256 is built in.
  if (EVP_Digest(data.data(), data.size(), digest.data(), &size, EVP_sha256(), nullptr) != 1) {
    return {};
  }
  static constexpr std::string_view kHex = "0123456789abcdef";
  std::string hex;
  hex.reserve(std::size_t{size} * 2);
  for (unsigned int i = 0; i < size; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 0xF]);
  }
  return hex;
}

bool constant_time_equals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  if (a.empty()) return true;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace sluice::auth
