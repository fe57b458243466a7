// The EventBus: its history bounds, by count and by bytes, and the time it stamps.
#include "daemon/run/events.h"

#include <catch2/catch.hpp>
#include <chrono>

#include "support/fake_clock.h"

namespace ds {
namespace {

using namespace std::chrono_literals;

Json event_of(std::size_t text_bytes, int number) {
    return Json{{"type", "run_progress"}, {"n", number}, {"message", std::string(text_bytes, 'm')}};
}

std::size_t compact_size(const Json& event) {
    return event.dump().size();
}

TEST_CASE("event bus: each event carries its sweep and the clock's UTC time", "[events]") {
    test::FakeClock clock;
    EventBus bus(EventBus::kDefaultHistoryEvents, EventBus::kDefaultHistoryBytes, clock);
    bus.publish(2, event_of(1, -1));  // so that the cursor below is not 0 ("from now")
    std::uint64_t cursor = bus.latest();
    bus.publish(7, event_of(1, 1));
    clock.advance(61s);
    bus.publish(7, event_of(1, 2));
    const auto events = bus.wait(7, &cursor, 0ms);
    REQUIRE(events.size() == 2);
    CHECK(events[0].at("sweep_id") == 7);
    CHECK(events[0].at("time") == "2026-01-01T00:00:00Z");
    CHECK(events[1].at("time") == "2026-01-01T00:01:01Z");
}

TEST_CASE("event bus: the history is bounded by count", "[events]") {
    EventBus bus(5, 1u << 20);
    bus.publish(2, event_of(10, -1));  // so that the cursor below is not 0 ("from now")
    for (int i = 0; i < 20; ++i) bus.publish(1, event_of(10, i));
    CHECK(bus.history_size() == 5);
    std::uint64_t cursor = bus.latest() - 20;  // a waiter that fell far behind
    const auto events = bus.wait(1, &cursor, 0ms);
    REQUIRE(events.size() == 5);
    CHECK(events.front().at("n") == 15);  // the oldest went first
    CHECK(events.back().at("n") == 19);
}

TEST_CASE("event bus: the history is bounded in bytes", "[events]") {
    constexpr std::size_t kLimit = 64 * 1024;
    EventBus bus(10000, kLimit);
    for (int i = 0; i < 1000; ++i) bus.publish(1, event_of(1000, i));
    CHECK(bus.history_bytes() <= kLimit);
    CHECK(bus.history_bytes() > kLimit - 1100);  // it keeps what fits, not less
    CHECK(bus.history_size() < 70);

    // What it counts is each event's compact JSON, as published (with
    // sweep_id and time added).
    std::uint64_t cursor = bus.latest() - 1;
    const auto newest = bus.wait(1, &cursor, 0ms);
    REQUIRE(newest.size() == 1);
    CHECK(newest.front().at("n") == 999);
    CHECK(compact_size(newest.front()) > 1000);

    // The newest event is kept even when it alone is over the bound.
    bus.publish(2, event_of(2 * kLimit, -1));
    CHECK(bus.history_size() == 1);
    CHECK(bus.history_bytes() > 2 * kLimit);
    bus.publish(2, event_of(10, -2));
    CHECK(bus.history_size() == 1);
    CHECK(bus.history_bytes() < 200);
}

TEST_CASE("event bus: the default bounds are 10,000 events and 4 MiB", "[events]") {
    EventBus bus;
    // 1 MiB each: the byte bound keeps three (a fourth would pass 4 MiB).
    // Six are enough to show the oldest going; more only cost time (250 took
    // 29 s at the tests' -O0).
    for (int i = 0; i < 6; ++i) bus.publish(1, event_of(1u << 20, i));
    CHECK(bus.history_bytes() <= EventBus::kDefaultHistoryBytes);
    CHECK(bus.history_size() == 3);
    CHECK(EventBus::kDefaultHistoryEvents == 10000);
    CHECK(EventBus::kDefaultHistoryBytes == 4u << 20);
}

}  // namespace
}  // namespace ds
