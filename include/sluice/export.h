// SLUICE_API marks what libsluice.so exports: the public API of include/sluice/. Everything else
// is compiled with hidden visibility, so no internal symbol becomes a contract by accident.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define SLUICE_API __attribute__((visibility("default")))
#else
#define SLUICE_API
#endif
