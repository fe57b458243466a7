// The process seam's streaming: lines reach the caller while the program
// still runs, and the fakes' default hands them on at the end.
#include "common/process.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "support/fakes/process_runner_fakes.h"

namespace ds {
namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

TEST_CASE("run_streaming hands each stdout line on as it arrives") {
    RealProcessRunner runner;
    std::vector<std::string> lines;
    std::vector<Steady::time_point> arrived;
    const auto start = Steady::now();
    auto output = runner.run_streaming({"sh", "-c", "echo 1; sleep 1; echo 2; printf tail"}, 10s,
                                       [&](std::string_view line) {
                                           lines.emplace_back(line);
                                           arrived.push_back(Steady::now());
                                       });
    REQUIRE(output.ok());
    CHECK(output->exit_code == 0);
    CHECK(lines == std::vector<std::string>{"1", "2", "tail"});
    CHECK(output->stdout_text == "1\n2\ntail");
    // The first line came before the sleep was over, not with the exit.
    REQUIRE(arrived.size() == 3);
    CHECK(arrived[0] - start < 900ms);
    CHECK(arrived[1] - start >= 900ms);
}

TEST_CASE("run_streaming: a program stopped at its timeout keeps the lines it printed") {
    RealProcessRunner runner;
    std::vector<std::string> lines;
    auto output = runner.run_streaming({"sh", "-c", "echo one; echo two; sleep 30"}, 500ms,
                                       [&](std::string_view line) { lines.emplace_back(line); });
    REQUIRE(output.ok());
    CHECK(output->timed_out);
    CHECK(lines == std::vector<std::string>{"one", "two"});
}

TEST_CASE("run_streaming's default hands on the finished output line by line") {
    // The scripted double has only run(): the seam's default streams after the end.
    testing::ScriptedProcessRunner runner;
    runner.replies["x"] = testing::exited(0, "a\n\nb");
    std::vector<std::string> lines;
    auto output =
        runner.run_streaming({"x"}, 1s, [&](std::string_view line) { lines.emplace_back(line); });
    REQUIRE(output.ok());
    CHECK(lines == std::vector<std::string>{"a", "", "b"});
}

}  // namespace
}  // namespace ds
