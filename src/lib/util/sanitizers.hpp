#pragma once
// Which sanitizers this translation unit is built with, for g++ and clang.

#if defined(__SANITIZE_ADDRESS__)
#define WEFT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WEFT_ASAN 1
#endif
#endif

#ifndef WEFT_ASAN
#define WEFT_ASAN 0
#endif
