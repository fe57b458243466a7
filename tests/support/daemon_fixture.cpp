#include "support/daemon_fixture.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "support/skip.h"

namespace ds::test {
namespace fs = std::filesystem;

std::string hostctl_binary() {
    return HOSTCTL_BIN;
}
std::string daemon_binary() {
    return DISKSWEEPD_BIN;
}

DaemonFixture::DaemonFixture(std::vector<std::string> extra_args, std::string binary)
    : args_(std::move(extra_args)), binary_(std::move(binary)) {
    char pattern[] = "/tmp/disksweep-test-XXXXXX";
    state_dir_ = ::mkdtemp(pattern);
    socket_ = state_dir_ + "/api.sock";
    ready_ = launch();
}

bool DaemonFixture::launch() {
    std::vector<std::string> argv = {binary_, "--state-dir", state_dir_, "--socket", socket_};
    argv.insert(argv.end(), args_.begin(), args_.end());
    pid_ = ::fork();
    if (pid_ == 0) {
        // A daemon under test must not report to the host's systemd.
        ::unsetenv("NOTIFY_SOCKET");
        int log = ::open((state_dir_ + "/daemon.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        ::dup2(log, 1);
        ::dup2(log, 2);
        std::vector<char*> args;
        for (auto& arg : argv) args.push_back(arg.data());
        args.push_back(nullptr);
        ::execv(args[0], args.data());
        ::_exit(127);
    }
    // Ready when the API answers (the daemon may probe acceleration first).
    for (int i = 0; i < 1200; ++i) {
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            return false;
        }
        if (fs::exists(socket_) && hostctl({"sweep", "list"}).exit_code == 0) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
}

bool DaemonFixture::restart() {
    ready_ = launch();
    return ready_;
}

int DaemonFixture::stop(int signal) {
    if (pid_ <= 0) return -1;
    ::kill(pid_, signal);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
}

DaemonFixture::~DaemonFixture() {
    if (pid_ > 0) stop(SIGTERM);
    if (std::getenv("DISKSWEEP_KEEP_TEST_DIRS") == nullptr) {
        std::error_code ec;
        fs::remove_all(state_dir_, ec);
    }
}

std::string DaemonFixture::log() const {
    std::ifstream in(state_dir_ + "/daemon.log");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

HostctlResult DaemonFixture::hostctl(const std::vector<std::string>& args,
                                     std::chrono::seconds timeout) const {
    std::vector<std::string> argv = {hostctl_binary(), "--socket", socket_};
    argv.insert(argv.end(), args.begin(), args.end());
    RealProcessRunner runner;
    auto output = runner.run(argv, timeout);
    if (!output.ok()) return {-1, "", output.error().message};
    return {output->exit_code, output->stdout_text, output->stderr_text};
}

namespace {

// A directory created with the object and removed with everything in it.
// Without it no test can run: failing to create it aborts.
class ProcessTempDir {
  public:
    ProcessTempDir() {
        char pattern[] = "/tmp/disksweep-test-files-XXXXXX";
        if (::mkdtemp(pattern) == nullptr) {
            std::perror("test support: mkdtemp /tmp/disksweep-test-files-XXXXXX");
            std::abort();
        }
        path_ = pattern;
    }
    ~ProcessTempDir() {
        std::error_code ignored;
        fs::remove_all(path_, ignored);
    }
    const std::string& path() const { return path_; }

  private:
    std::string path_;
};

}  // namespace

const std::string& test_temp_dir() {
    static const ProcessTempDir dir;
    return dir.path();
}

std::string write_temp_file(const std::string& name, const std::string& content) {
    std::string path = test_temp_dir() + "/" + name;
    std::ofstream(path) << content;
    return path;
}

std::vector<pid_t> qemu_processes_mentioning(const std::string& needle) {
    std::vector<pid_t> pids;
    for (const auto& entry : fs::directory_iterator("/proc")) {
        const std::string name = entry.path().filename();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream in(entry.path() / "cmdline");
        std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        for (auto& c : cmdline) {
            if (c == '\0') c = ' ';
        }
        if (cmdline.find("qemu-system") != std::string::npos &&
            cmdline.find(needle) != std::string::npos) {
            pids.push_back(std::stoi(name));
        }
    }
    return pids;
}

std::string test_image_dir() {
    const char* dir = std::getenv("DISKSWEEP_TEST_IMAGE_DIR");
    if (dir == nullptr || *dir == '\0') skip_test("DISKSWEEP_TEST_IMAGE_DIR not set");
    return dir;
}

}  // namespace ds::test
