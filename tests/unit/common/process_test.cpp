// The process seam's streaming: lines reach the caller while the program
// still runs, and the fakes' default hands them on at the end.
#include "common/process.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "support/fakes/process_runner_fakes.h"
#include "support/temp_dir.h"

namespace ds {
namespace {

using namespace std::chrono_literals;

TEST_CASE("run_streaming hands each stdout line on as it arrives") {
    RealProcessRunner runner;
    // The program prints its second line only once the test has seen the
    // first: a runner that handed the lines on at the program's exit would
    // leave it waiting until its timeout (a hang guard, not a speed bound).
    const test::TempDir dir;
    const std::string seen = dir.file("seen");
    std::vector<std::string> lines;
    auto output = runner.run_streaming(
        {"sh", "-c", R"(echo 1; while [ ! -e "$0" ]; do sleep 0.01; done; echo 2; printf tail)",
         seen},
        10s, [&](std::string_view line) {
            lines.emplace_back(line);
            if (line == "1") std::ofstream{seen}.close();
        });
    REQUIRE(output.ok());
    CHECK_FALSE(output->timed_out);
    CHECK(output->exit_code == 0);
    CHECK(lines == std::vector<std::string>{"1", "2", "tail"});
    CHECK(output->stdout_text == "1\n2\ntail");
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
