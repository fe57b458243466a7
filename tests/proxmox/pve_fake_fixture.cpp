#include "proxmox/pve_fake_fixture.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
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

void skip_without_prerequisites(FakeRelease release) {
    if (!is_executable(PYTHON3_EXECUTABLE)) skip_test("no python3 to run the fake PVE API");
    if (!is_executable(OPENSSL_PROGRAM)) skip_test("no openssl CLI to make the test certificates");
    if (!fs::exists(pve_schema_path(release))) {
        skip_test("the PVE " + std::string(fake_version(release)) + " API schema " +
                  pve_schema_path(release) +
                  " is not there (set DISKSWEEP_PVE_SCHEMA or DISKSWEEP_PVE9_SCHEMA)");
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

std::string_view fake_version(FakeRelease release) {
    return release == FakeRelease::k9_1 ? "9.1" : "8.4";
}

const PveRelease& release_rules(FakeRelease release) {
    auto rules = pve_release_of(Json{{"release", std::string(fake_version(release))}});
    REQUIRE(rules.ok());
    return **rules;
}

std::string pve_schema_path(FakeRelease release) {
    const bool nine = release == FakeRelease::k9_1;
    const char* from_environment =
        std::getenv(nine ? "DISKSWEEP_PVE9_SCHEMA" : "DISKSWEEP_PVE_SCHEMA");
    if (from_environment != nullptr) return from_environment;
    return nine ? DISKSWEEP_PVE9_SCHEMA : DISKSWEEP_PVE_SCHEMA;
}

namespace {
PveFakeOptions default_options(std::vector<std::string> extra_args) {
    PveFakeOptions options;
    options.extra_args = std::move(extra_args);
    return options;
}
}  // namespace

PveFake::PveFake(std::vector<std::string> extra_args)
    : PveFake(default_options(std::move(extra_args))) {}

PveFake::PveFake(PveFakeOptions options) : PveFake(std::move(options), Start::kServe) {}

std::string PveFake::refusal(PveFakeOptions options) {
    PveFake fake(std::move(options), Start::kRefuse);
    return fake.log();
}

PveFake::PveFake(PveFakeOptions options, Start start) : options_(std::move(options)) {
    skip_without_prerequisites(options_.release);
    char pattern[] = "/tmp/disksweep-pve-fake-XXXXXX";
    REQUIRE(::mkdtemp(pattern) != nullptr);
    dir_ = pattern;
    pid_ = spawn(argv(), dir_ + "/log");
    REQUIRE(pid_ > 0);
    const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
    while (!fs::exists(dir_ + "/port") && std::chrono::steady_clock::now() < deadline) {
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            if (start == Start::kRefuse) return;
            FAIL("the fake PVE API exited: " << log());
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    INFO("fake PVE API log: " << log());
    if (start == Start::kRefuse) FAIL("the fake PVE API did not refuse to start");
    REQUIRE(fs::exists(dir_ + "/port"));
    port_ = std::stoi(read_file(dir_ + "/port"));
}

// pve_fake.py's command line; the access and state files are written first.
std::vector<std::string> PveFake::argv() const {
    std::vector<std::string> argv = {
        PYTHON3_EXECUTABLE, PVE_FAKE_SCRIPT,
        "--schema",         pve_schema_path(options_.release),
        "--pve-version",    std::string(fake_version(options_.release)),
        "--cert-dir",       dir_ + "/certs",
        "--port-file",      dir_ + "/port",
        "--token",          options_.token_id + "=" + options_.secret,
        "--task-seconds",   "0.1",
        "--agent-delay",    "0.1"};
    const std::pair<const std::string*, const char*> files[] = {{&options_.access, "access"},
                                                                {&options_.state, "state"}};
    for (const auto& [text, name] : files) {
        if (text->empty()) continue;
        const std::string path = dir_ + "/" + name + ".json";
        std::ofstream(path) << *text;
        argv.insert(argv.end(), {std::string("--") + name, path});
    }
    argv.insert(argv.end(), options_.extra_args.begin(), options_.extra_args.end());
    return argv;
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

std::string PveFake::secret_file() const {
    return secret_file(options_.secret);
}

std::string PveFake::secret_file(const std::string& secret, mode_t mode) const {
    static int counter = 0;
    std::string path = dir_ + "/secret-" + std::to_string(++counter);
    std::ofstream(path) << secret << "\n";
    REQUIRE(::chmod(path.c_str(), mode) == 0);
    return path;
}

PveClientOptions PveFake::pinned_options() const {
    return pinned_options(options_.token_id);
}

PveClientOptions PveFake::pinned_options(const std::string& token_id) const {
    PveClientOptions options;
    options.host = "127.0.0.1";
    options.port = port_;
    options.token_id = token_id;
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

std::vector<Json> PveFake::requests_answered(int status) const {
    std::vector<Json> found;
    for (const Json& request : Json::parse(control("GET", "requests"))) {
        if (request.value("status", 0) == status) found.push_back(request);
    }
    return found;
}

std::vector<Json> PveFake::requests_to(std::string_view tail) const {
    std::vector<Json> found;
    for (const Json& request : Json::parse(control("GET", "requests"))) {
        if (request.value("path", "").ends_with(tail)) found.push_back(request);
    }
    return found;
}

// ---- least privilege -----------------------------------------------------------------------

std::vector<std::string> least_privilege_role(const PveRelease& release) {
    std::vector<std::string> role;
    for (const PvePrivilege& need : pve_privileges(release)) {
        std::string privilege(need.privileges.substr(0, need.privileges.find('|')));
        if (std::find(role.begin(), role.end(), privilege) == role.end())
            role.push_back(std::move(privilege));
    }
    return role;
}

std::string least_privilege_access(const std::vector<std::string>& role,
                                   const std::vector<LeastPrivilegeToken>& tokens) {
    const std::string paths[] = {"/vms", std::string("/storage/") + kRoleStorage,
                                 std::string("/sdn/zones/localnetwork/") + kRoleBridge};
    Json access = {{"users", {kSweepUser}},
                   {"roles", {{"DiskSweep", role}}},
                   {"tokens", Json::array()},
                   {"acls", Json::array()}};
    const auto grant = [&](const std::string& type, const std::string& ugid,
                           const std::string& role_name) {
        for (const std::string& path : paths) {
            access["acls"].push_back(
                {{"path", path}, {"type", type}, {"ugid", ugid}, {"role", role_name}});
        }
    };
    grant("user", kSweepUser, "DiskSweep");
    for (const LeastPrivilegeToken& token : tokens) {
        access["tokens"].push_back(
            {{"tokenid", token.token_id()}, {"privsep", 1}, {"secret", kTokenSecret}});
        std::vector<std::string> held;
        for (const std::string& privilege : role) {
            if (std::find(token.without.begin(), token.without.end(), privilege) ==
                token.without.end())
                held.push_back(privilege);
        }
        const std::string role_name = "Token-" + token.name;
        access["roles"][role_name] = held;
        grant("token", token.token_id(), role_name);
    }
    return access.dump(2);
}

PveFakeOptions least_privilege_fake(FakeRelease release,
                                    const std::vector<LeastPrivilegeToken>& tokens,
                                    std::vector<std::string> extra_args) {
    REQUIRE_FALSE(tokens.empty());
    PveFakeOptions options;
    options.release = release;
    options.token_id = tokens.front().token_id();
    options.access = least_privilege_access(least_privilege_role(release_rules(release)), tokens);
    options.state = kNicTemplateState;
    options.extra_args = std::move(extra_args);
    return options;
}

// server.py's DEFAULT_TEMPLATE and default storages, plus net0.
const char* const kNicTemplateState = R"({
  "nodes": ["pve1"],
  "storages": [{"id": "local", "type": "dir", "content": ["iso", "vztmpl", "backup", "images"]},
               {"id": "local-lvm", "type": "lvmthin", "content": ["images", "rootdir"]}],
  "vms": [{"vmid": 9000, "node": "pve1",
           "config": {"name": "disksweep-template", "template": "1", "agent": "1",
                      "memory": "1024", "cores": "1", "ostype": "l26",
                      "scsihw": "virtio-scsi-single", "boot": "order=scsi0", "serial0": "socket",
                      "scsi0": "local-lvm:base-9000-disk-0,size=2G",
                      "net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0"}}]
})";

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
