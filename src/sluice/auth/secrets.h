// Secret material for the auth library: bytes from the operating system's CSPRNG, random
// base62 strings built from them without modulo bias, SHA-256 in hex, and constant-time
// comparison. Thin wrappers over OpenSSL so the rest of Sluice never includes it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "sluice/status.h"

namespace sluice::auth {

// `count` bytes from OpenSSL's CSPRNG (seeded by the OS). Internal when the generator fails,
// which callers must treat as fatal for the secret they were making. Thread-safe.
StatusOr<std::string> random_bytes(std::size_t count);

// `length` characters from [0-9A-Za-z], each uniformly distributed (rejection sampling), so a
// string of n characters carries n·log2(62) ≈ 5.95·n bits. Thread-safe.
StatusOr<std::string> random_base62(std::size_t length);

// Lower-case hex SHA-256 of `data` (64 characters).
std::string sha256_hex(std::string_view data);

// Whether a and b are equal, in time that depends only on their lengths (CRYPTO_memcmp), so
// comparing a stored hash with a computed one leaks nothing about where they differ.
bool constant_time_equals(std::string_view a, std::string_view b);

}  // namespace sluice::auth
