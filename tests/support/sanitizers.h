// Whether the test runs under AddressSanitizer or ThreadSanitizer: GCC defines
// __SANITIZE_ADDRESS__ / __SANITIZE_THREAD__, clang (make test-sanitize) says so only
// through __has_feature. Tests that cap memory or bound time skip themselves there.
#pragma once

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define COMMGATE_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define COMMGATE_UNDER_SANITIZER 1
#endif
#endif
#ifndef COMMGATE_UNDER_SANITIZER
#define COMMGATE_UNDER_SANITIZER 0
#endif
