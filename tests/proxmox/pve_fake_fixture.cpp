#include "proxmox/pve_fake_fixture.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/text.h"
#include "support/skip.h"

namespace ds::test {

namespace fs = std::filesystem;

namespace {

constexpr auto kStartTimeout = std::chrono::seconds(30);

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

bool is_executable(const std::string& path) {
    return !path.empty() && ::access(path.c_str(), X_OK) == 0;
}

void skip_without_prerequisites() {
    if (!is_executable(PYTHON3_EXECUTABLE)) skip_test("no python3 to run the fake PVE API");
    if (!is_executable(OPENSSL_PROGRAM)) skip_test("no openssl CLI to make the test certificates");
    if (!fs::exists(pve_schema_path())) {
        skip_test("the PVE API schema " + pve_schema_path() +
                  " is not there (set DISKSWEEP_PVE_SCHEMA)");
    }
}

pid_t spawn(const std::vector<std::string>& argv, const std::string& log_path) {
    pid_t pid = ::fork();
    if (pid == 0) {
        int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        ::dup2(log, 1);
        ::dup2(log, 2);
        std::vector<char*> args;
        for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
        args.push_back(nullptr);
        ::execv(args[0], args.data());
        ::_exit(127);
    }
    return pid;
}

}  // namespace

std::string pve_schema_path() {
    const char* from_environment = std::getenv("DISKSWEEP_PVE_SCHEMA");
    return from_environment != nullptr ? from_environment : DISKSWEEP_PVE_SCHEMA;
}

PveFake::PveFake(std::vector<std::string> extra_args) {
    skip_without_prerequisites();
    char pattern[] = "/tmp/disksweep-pve-fake-XXXXXX";
    REQUIRE(::mkdtemp(pattern) != nullptr);
    dir_ = pattern;
    std::vector<std::string> argv = {PYTHON3_EXECUTABLE, PVE_FAKE_SCRIPT,
                                     "--schema",         pve_schema_path(),
                                     "--cert-dir",       dir_ + "/certs",
                                     "--port-file",      dir_ + "/port",
                                     "--token",          std::string(kTokenId) + "=" + kSecret,
                                     "--task-seconds",   "0.1",
                                     "--agent-delay",    "0.1"};
    argv.insert(argv.end(), extra_args.begin(), extra_args.end());
    pid_ = spawn(argv, dir_ + "/log");
    REQUIRE(pid_ > 0);
    const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
    while (!fs::exists(dir_ + "/port") && std::chrono::steady_clock::now() < deadline) {
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            FAIL("the fake PVE API exited: " << log());
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    INFO("fake PVE API log: " << log());
    REQUIRE(fs::exists(dir_ + "/port"));
    port_ = std::stoi(read_file(dir_ + "/port"));
}

PveFake::~PveFake() {
    if (pid_ > 0) {
        ::kill(pid_, SIGTERM);
        int status = 0;
        ::waitpid(pid_, &status, 0);
    }
    if (!dir_.empty() && std::getenv("DISKSWEEP_KEEP_TEST_DIRS") == nullptr) {
        std::error_code ignored;
        fs::remove_all(dir_, ignored);
    }
}

std::string PveFake::fingerprint() const {
    return trim_trailing(read_file(dir_ + "/certs/server.sha256"));
}

std::string PveFake::other_fingerprint() const {
    return trim_trailing(read_file(dir_ + "/certs/other.sha256"));
}

std::string PveFake::secret_file(const std::string& secret, mode_t mode) const {
    static int counter = 0;
    std::string path = dir_ + "/secret-" + std::to_string(++counter);
    std::ofstream(path) << secret << "\n";
    REQUIRE(::chmod(path.c_str(), mode) == 0);
    return path;
}

PveClientOptions PveFake::pinned_options() const {
    PveClientOptions options;
    options.host = "127.0.0.1";
    options.port = port_;
    options.token_id = kTokenId;
    options.token_secret_file = secret_file();
    options.fingerprint = fingerprint();
    options.connect_timeout = std::chrono::seconds(5);
    options.request_timeout = std::chrono::seconds(10);
    options.task_poll_interval = std::chrono::milliseconds(30);
    return options;
}

// Through python3's urllib (the fake needs python3 anyway), trusting the
// fake's own CA: the control endpoints are outside PveClient's /api2/json.
std::string PveFake::control(const std::string& method, const std::string& what,
                             const std::string& body) const {
    const std::string body_file = dir_ + "/control-body";
    std::ofstream(body_file) << body;
    const std::string script =
        "import ssl,sys,urllib.request\n"
        "context = ssl.create_default_context(cafile=sys.argv[1])\n"
        "context.check_hostname = False\n"
        "data = open(sys.argv[4], 'rb').read() or None\n"
        "request = urllib.request.Request(sys.argv[2], data=data, method=sys.argv[3],\n"
        "                                 headers={'Content-Type': 'application/json'})\n"
        "import json\n"
        "answer = urllib.request.urlopen(request, context=context, timeout=30).read()\n"
        "sys.stdout.write(json.dumps(json.loads(answer)['data']))\n";
    const std::string script_file = dir_ + "/control.py";
    std::ofstream(script_file) << script;
    const std::string url = "https://127.0.0.1:" + std::to_string(port_) + "/_fake/" + what;
    const std::string command = std::string(PYTHON3_EXECUTABLE) + " " + script_file + " " +
                                ca_file() + " " + url + " " + method + " " + body_file;
    FILE* pipe = ::popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::string answer;
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
        answer.append(buffer, n);
    const int status = ::pclose(pipe);
    INFO("control " << method << " " << what << ": " << answer);
    REQUIRE(status == 0);
    return answer;
}

std::string PveFake::log() const {
    return read_file(dir_ + "/log");
}

std::string guest_exec_wrapper(const std::string& program) {
    return "#!/bin/sh\n"
           "shift  # the guest's program path\n"
           "mkdir -p \"$PVE_FAKE_GUEST_ROOT/run\"\n"
           "for arg; do\n"
           "  case $arg in /*) arg=\"$PVE_FAKE_GUEST_ROOT$arg\";; esac\n"
           "  set -- \"$@\" \"$arg\"; shift\n"
           "done\n"
           "exec " +
           program + " \"$@\"\n";
}

}  // namespace ds::test
