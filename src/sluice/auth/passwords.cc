#include "sluice/auth/passwords.h"

#include <argon2.h>

#include <algorithm>
#include <charconv>
#include <vector>

#include "sluice/auth/secrets.h"
#include "sluice/core/low_priority.h"
#include "sluice/core/status_macros.h"

namespace sluice::auth {
namespace {

struct EncodedParameters {
  std::uint32_t memory_kib = 0;
  std::uint32_t time_cost = 0;
  std::uint32_t parallelism = 0;
};

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

// "name=<decimal>" with no sign or leading zero.
bool parse_parameter(std::string_view text, std::string_view name, std::uint32_t& value) {
  if (text.size() <= name.size() + 1 || text.substr(0, name.size()) != name ||
      text[name.size()] != '=') {
    return false;
  }
  const std::string_view digits = text.substr(name.size() + 1);
  if (digits.size() > 1 && digits.front() == '0') return false;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  return error == std::errc{} && end == digits.data() + digits.size();
}

bool is_base64_unpadded(std::string_view text) {
  return !text.empty() && text.size() % 4 != 1 && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
           c == '/';
  });
}

Status malformed(std::string detail) {
  return invalid_argument("stored password hash is not a valid argon2id hash: " +
                          std::move(detail));
}

// Checks the shape "$argon2id$v=19$m=<m>,t=<t>,p=<p>$<salt>$<hash>" and the parameter bounds
// before argon2 allocates anything.
StatusOr<EncodedParameters> parse_encoded(std::string_view encoded) {
  if (encoded.find('\0') != std::string_view::npos) return malformed("contains a NUL byte");
  const std::vector<std::string_view> parts = split(encoded, '$');
  if (parts.size() < 2 || !parts[0].empty()) return malformed("must start with \"$argon2id$\"");
  if (parts[1] != "argon2id") {
    return malformed("algorithm \"" + std::string(parts[1]) +
                     "\" is not supported (only argon2id)");
  }
  if (parts.size() != 6) return malformed("expected 5 '$'-separated fields");
  if (parts[2] != "v=19") return malformed("version must be v=19");
  const std::vector<std::string_view> parameters = split(parts[3], ',');
  EncodedParameters p;
  if (parameters.size() != 3 || !parse_parameter(parameters[0], "m", p.memory_kib) ||
      !parse_parameter(parameters[1], "t", p.time_cost) ||
      !parse_parameter(parameters[2], "p", p.parallelism)) {
    return malformed("parameters must be \"m=<KiB>,t=<passes>,p=<lanes>\"");
  }
  if (p.parallelism < 1 || p.parallelism > kMaxVerifyParallelism) {
    return malformed("p must be between 1 and " + std::to_string(kMaxVerifyParallelism));
  }
  if (p.time_cost < 1 || p.time_cost > kMaxVerifyTimeCost) {
    return malformed("t must be between 1 and " + std::to_string(kMaxVerifyTimeCost));
  }
  if (p.memory_kib < 8 * p.parallelism || p.memory_kib > kMaxVerifyMemoryKib) {
    return malformed("m must be between 8·p and " + std::to_string(kMaxVerifyMemoryKib) + " KiB");
  }
  if (!is_base64_unpadded(parts[4])) return malformed("salt is not unpadded base64");
  if (!is_base64_unpadded(parts[5])) return malformed("hash is not unpadded base64");
  return p;
}

}  // namespace

Status check_password_strength(std::string_view password, std::string_view user) {
  if (password.size() > kMaxPasswordBytes) {
    return invalid_argument("password: must be at most " + std::to_string(kMaxPasswordBytes) +
                            " bytes");
  }
  // Count characters, not bytes: UTF-8 continuation bytes are 10xxxxxx.
  const auto characters =
      static_cast<std::size_t>(std::count_if(password.begin(), password.end(), [](char c) {
        return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
      }));
  if (characters < kMinPasswordLength) {
    return invalid_argument("password: must be at least " + std::to_string(kMinPasswordLength) +
                            " characters (got " + std::to_string(characters) + ")");
  }
  if (!user.empty() && password == user) {
    return invalid_argument("password: must not be the user name");
  }
  return {};
}

StatusOr<std::string> hash_password(std::string_view password, const PasswordHashOptions& options) {
  if (password.size() > kMaxPasswordBytes) {
    return invalid_argument("password: must be at most " + std::to_string(kMaxPasswordBytes) +
                            " bytes");
  }
  if (options.time_cost < 1 || options.parallelism < 1 ||
      options.memory_kib < 8 * options.parallelism || options.salt_bytes < 8 ||
      options.hash_bytes < 16) {
    return invalid_argument(
        "password hash options: need time_cost ≥ 1, parallelism ≥ 1, memory_kib ≥ 8·parallelism, "
        "salt_bytes ≥ 8 and hash_bytes ≥ 16");
  }
  SLUICE_ASSIGN_OR_RETURN(std::string salt, random_bytes(options.salt_bytes));
  std::string encoded(argon2_encodedlen(options.time_cost, options.memory_kib, options.parallelism,
                                        static_cast<std::uint32_t>(options.salt_bytes),
                                        static_cast<std::uint32_t>(options.hash_bytes), Argon2_id),
                      '\0');
  int result = ARGON2_OK;
  run_at_low_priority([&] {  // decisions first: a hash never delays them (low_priority.h)
    result = argon2id_hash_encoded(options.time_cost, options.memory_kib, options.parallelism,
                                   password.data(), password.size(), salt.data(), salt.size(),
                                   options.hash_bytes, encoded.data(), encoded.size());
  });
  if (result != ARGON2_OK) {
    return internal_error(std::string("argon2id hashing failed: ") + argon2_error_message(result));
  }
  encoded.resize(encoded.find('\0'));  // argon2_encodedlen counts the terminator
  return encoded;
}

std::string mark_one_time(std::string_view encoded) {
  return std::string(kOneTimeMark) + std::string(encoded);
}

bool is_one_time(std::string_view encoded) { return encoded.starts_with(kOneTimeMark); }

Status verify_password(std::string_view password, std::string_view encoded) {
  if (is_one_time(encoded)) encoded.remove_prefix(kOneTimeMark.size());
  SLUICE_RETURN_IF_ERROR(parse_encoded(encoded).status());  // refuses a malformed hash first
  if (password.size() > kMaxPasswordBytes) return {StatusCode::kUnauthenticated, "wrong password"};
  const std::string terminated(encoded);
  int result = ARGON2_OK;
  run_at_low_priority([&] {
    result = argon2_verify(terminated.c_str(), password.data(), password.size(), Argon2_id);
  });
  if (result == ARGON2_OK) return {};
  if (result == ARGON2_VERIFY_MISMATCH) return {StatusCode::kUnauthenticated, "wrong password"};
  if (result == ARGON2_MEMORY_ALLOCATION_ERROR) {
    return {StatusCode::kResourceExhausted, "argon2id verification could not allocate memory"};
  }
  return malformed(argon2_error_message(result));
}

bool password_needs_rehash(std::string_view encoded, const PasswordHashOptions& options) {
  if (is_one_time(encoded)) encoded.remove_prefix(kOneTimeMark.size());
  StatusOr<EncodedParameters> parameters = parse_encoded(encoded);
  return !parameters.ok() || parameters->memory_kib != options.memory_kib ||
         parameters->time_cost != options.time_cost ||
         parameters->parallelism != options.parallelism;
}

StatusOr<std::string> generate_password(std::size_t length) { return random_base62(length); }

}  // namespace sluice::auth
