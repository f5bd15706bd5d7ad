// Kubernetes quantity strings ("340M", "1.5Gi", "7e9") and Go duration strings
// ("1h30m", "90s"): the notations admins and researchers already write in manifests.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace commgate {

// Parses a Kubernetes resource quantity (decimal SI k M G T P E, binary SI Ki..Ei,
// milli/micro/nano suffixes, or a decimal exponent e/E). Returns nullopt and sets
// `error` when the text is not a quantity; the error says how to write what was meant
// ("350 million" -> "write 350M", "7B" -> "write 7G", "12 M" -> "no space").
std::optional<double> parse_quantity(std::string_view text, std::string* error);

// Parses a Go time.Duration string ("300ms", "1.5h", "1h30m"). Units: ns us µs ms s m h.
std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text, std::string* error);

// The shortest Go-style rendering of a duration: 86400s -> "24h0m0s" style is noisy, so
// this prints "24h", "1h30m", "90s", "250ms".
std::string format_duration(std::chrono::nanoseconds d);

// Human-readable counts: 340000000 -> "340M", 7000000000 -> "7G" (decimal SI).
std::string format_count(double value);

// A number as an exact Kubernetes quantity, for messages that quote what a user wrote:
// -3.5e8 -> "-350M", 1234567 -> "1.234567M", 1 -> "1", 0.5 -> "0.5": the largest decimal
// SI suffix with which 15 significant digits still say the same number (never rounded to
// look shorter, unlike format_count).
std::string format_quantity(double value);

// "1 node", "8 nodes": for messages that quote node counts.
std::string format_nodes(int64_t count);

// A byte count as an exact Kubernetes quantity: 67108864 -> "64Mi", 1000 -> "1000".
// Round-trips through parse_quantity.
std::string format_byte_quantity(double bytes);

// A share as a percentage with one decimal: 0.359 -> "35.9%".
std::string format_percent(double share);

// A rate in GB/s (1e9 bytes) as nccl-tests prints it, 3 significant digits: "0.118 GB/s".
std::string format_gbps(double bytes_per_s);

// Human-readable byte sizes: 26214400 -> "25 MiB".
std::string format_bytes(double bytes);

}  // namespace commgate
