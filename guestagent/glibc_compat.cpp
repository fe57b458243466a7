// The agent built on a newer Debian than its guest runs: glibc 2.38 turned
// strtol and its family into __isoc23_strtol & co. (C23: they also accept a
// "0b" prefix) for every C++ source, since g++ always defines _GNU_SOURCE.
// Built on Debian 13 (glibc 2.41) the agent, and the static libstdc++ it
// links (std::stoi, std::stoul, ...), would then need GLIBC_2.38, and would
// not start in a Debian 12 guest (glibc 2.36): "version `GLIBC_2.38' not
// found", a kernel panic as PID 1.
//
// Contract: the agent defines those four names itself, as the C library's
// long-standing strtol family, which every glibc exports; the executable's
// definitions bind before libc's, so the agent needs no glibc newer than
// its other symbols do (2.36 here). The "0b" prefix is the one difference,
// and the agent parses no binary literals. On glibc older than 2.38 nothing
// refers to these names and they are unused. Linked into the executable,
// not the library: a library member would not be pulled in for references
// from libstdc++, which comes later on the link line.
extern "C" {
// The classic functions under their own names, whatever stdlib.h redirects.
long legacy_strtol(const char* text, char** end, int base) __asm__("strtol");
long long legacy_strtoll(const char* text, char** end, int base) __asm__("strtoll");
unsigned long legacy_strtoul(const char* text, char** end, int base) __asm__("strtoul");
unsigned long long legacy_strtoull(const char* text, char** end, int base) __asm__("strtoull");

long __isoc23_strtol(const char* text, char** end, int base) {
    return legacy_strtol(text, end, base);
}
long long __isoc23_strtoll(const char* text, char** end, int base) {
    return legacy_strtoll(text, end, base);
}
unsigned long __isoc23_strtoul(const char* text, char** end, int base) {
    return legacy_strtoul(text, end, base);
}
unsigned long long __isoc23_strtoull(const char* text, char** end, int base) {
    return legacy_strtoull(text, end, base);
}
}
