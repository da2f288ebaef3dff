// Passwords: argon2id hashing into the self-describing PHC string
// ("$argon2id$v=19$m=65536,t=3,p=1$<salt>$<hash>", salt and parameters inside), verification
// against such a string, a minimum-strength check, and generated one-time passwords. Only the
// encoded hash is ever stored; the password itself is never logged or kept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/status.h"

namespace sluice::auth {

inline constexpr std::size_t kMinPasswordLength = 12;   // characters (UTF-8 code points)
inline constexpr std::size_t kMaxPasswordBytes = 1024;  // bounds the work one login can cause

// Argon2id cost parameters. The defaults follow RFC 9106 §4's second recommendation in
// memory and time (64 MiB, 3 passes) with one lane, so a hash costs one core ≈0.1-0.3 s.
struct PasswordHashOptions {
  std::uint32_t time_cost = 3;        // passes over memory, ≥ 1
  std::uint32_t memory_kib = 65'536;  // KiB, ≥ 8 × parallelism
  std::uint32_t parallelism = 1;      // lanes (and threads)
  std::size_t salt_bytes = 16;        // from the CSPRNG
  std::size_t hash_bytes = 32;
};

// The largest parameters verify_password accepts from a stored hash, so a corrupted or
// hostile row cannot make one login allocate gigabytes or run for minutes.
inline constexpr std::uint32_t kMaxVerifyMemoryKib = 1u << 20;  // 1 GiB
inline constexpr std::uint32_t kMaxVerifyTimeCost = 64;
inline constexpr std::uint32_t kMaxVerifyParallelism = 64;

// OK, or InvalidArgument naming the field "password" and the rule it breaks: at least
// kMinPasswordLength characters, at most kMaxPasswordBytes bytes, and not the user name itself.
Status check_password_strength(std::string_view password, std::string_view user = {});

// The argon2id encoded string of `password` with a fresh random salt. Does not check strength
// (callers choosing a password call check_password_strength first). InvalidArgument for a
// password above kMaxPasswordBytes or bad options; Internal if the CSPRNG or argon2 fails.
// Thread-safe; CPU- and memory-heavy by design.
StatusOr<std::string> hash_password(std::string_view password,
                                    const PasswordHashOptions& options = {});

// OK when `password` matches `encoded` (compared by argon2 in constant time);
// Unauthenticated ("wrong password") when it does not; InvalidArgument when `encoded` is not an
// argon2id hash this library can verify (malformed, another algorithm, parameters above the
// kMaxVerify* bounds). Callers must treat every non-OK result as a failed login.
Status verify_password(std::string_view password, std::string_view encoded);

// Whether `encoded` was made with parameters other than `options` (time, memory, lanes), so a
// successful login can re-hash the password with the current ones. True for malformed input.
bool password_needs_rehash(std::string_view encoded, const PasswordHashOptions& options = {});

// A random password of `length` base62 characters (20 → ≈119 bits) for one-time use, e.g.
// the first admin's. Internal if the CSPRNG fails.
StatusOr<std::string> generate_password(std::size_t length = 20);

}  // namespace sluice::auth
