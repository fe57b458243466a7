// Bytes from an API client: the daemon's HTTP/1.1 request parser (the server
// parses each request head with the same code, common/http.cpp). Errors are
// fine; crashes, sanitizer reports, exceptions and hangs are not.
#include "common/http.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    auto request = ds::http::parse_request(ds::fuzz::as_text(data, size));
    if (!request.ok()) return 0;
    // A decoded path is what the routes see: it must still be a path.
    ds::fuzz::require(!request->path.empty() && request->path.front() == '/',
                      "a parsed request's path starts with '/'");
    return 0;
}
