/* Whether this build runs under AddressSanitizer or ThreadSanitizer, whose
 * run-times keep per-thread state that a crash handler or a process
 * sharing a thread's memory would confuse (GCC's and clang's spellings). */
#ifndef EIFS_SANITIZER_H
#define EIFS_SANITIZER_H

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif

#endif
