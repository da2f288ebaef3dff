// Redis Cluster's key-to-slot mapping: CRC16-XMODEM of the key (or of its hash tag) modulo 16384.
#pragma once

#include <cstdint>
#include <string_view>

namespace sluice::redis {

inline constexpr int kClusterSlots = 16384;

// CRC16-XMODEM (polynomial 0x1021, initial value 0, no reflection): the checksum Redis Cluster
// hashes keys with. crc16_xmodem("123456789") == 0x31C3.
std::uint16_t crc16_xmodem(std::string_view bytes);

// The slot of `key`, with the hash-tag rule: if the key has a `{` and a `}` after it with at least
// one byte between them, only the bytes between the first `{` and the first `}` after it are
// hashed ("{user1000}.following" and "{user1000}.followers" share a slot; "{}x" hashes whole).
// Sluice's keys ("sluice:{<policy>:<subject>}:<i>") tag policy and subject, so all limits of one
// subject share a slot and one script call can reach them.
int key_hash_slot(std::string_view key);

}  // namespace sluice::redis
