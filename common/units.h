// Sizes and times as specs and fio write them: one parser per meaning, used by
// the spec parser (daemon/spec/spec.cpp) and the guest agent alike, so a value
// means the same on both sides of the wire.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace ds {

// How the unit prefixes of a size are read.
enum class SizePrefixes {
    // fio's, with its default kb_base=1024 (fio 3.33 HOWTO, "int" and
    // "kb_base"): k, m, g, t, p are powers of 1024 and the IEC spellings ki,
    // mi, gi, ti, pi are powers of 1000. That is backwards from SI and IEC on
    // purpose: fio keeps old job files meaning what they meant. "4k" = 4096,
    // "4KiB" = 4000.
    kFio,
    // The spec's own sizes (matrix.disk_size): every prefix, k or ki, is a
    // power of 1024. "4k" = "4KiB" = 4096.
    kBinary,
};

// A size: decimal digits, then optionally a prefix (k m g t p, or ki mi gi ti
// pi) and optionally "b" for bytes; case-insensitive ("4K", "4kb", "4KiB",
// "4096B"). No sign, fraction, blank or hex. nullopt when `text` is not such a
// size or its value does not fit in 64 bits.
std::optional<std::uint64_t> parse_size(std::string_view text, SizePrefixes prefixes);

// parse_size with fio's prefixes: how every fio size option is read.
std::optional<std::uint64_t> parse_fio_size(std::string_view text);

// fio's time syntax ("time" in the HOWTO): decimal digits, then optionally a
// unit d, h, m, s, ms or msec, us or usec (case-insensitive); no unit is
// seconds, fio's default for runtime and ramp_time. Refused, because fio
// itself reads them otherwise than they look: a fraction (fio drops it: "1.5"
// runs 1 s, "0.5s" not at all) and the units sec, min, hour, day (fio reads
// them as microseconds). In microseconds; nullopt when `text` is not such a
// time or it does not fit in 64 bits.
std::optional<std::uint64_t> parse_fio_time_us(std::string_view text);

// parse_fio_time_us in seconds.
std::optional<double> parse_fio_seconds(std::string_view text);

}  // namespace ds
