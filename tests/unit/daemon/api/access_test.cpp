// API access: root and members of the API group only, checked per connection
// by SO_PEERCRED even when the socket itself lets anyone connect.
#include "daemon/api/access.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "common/http.h"
#include "daemon/api/api.h"
#include "support/skip.h"
#include "support/temp_dir.h"

using namespace ds;

namespace {
constexpr uid_t kNobody = 65534;
constexpr gid_t kNogroup = 65534;
}  // namespace

TEST_CASE("root and the API group may use the API, nobody else", "[access]") {
    CHECK(peer_may_use_api(0, 0, std::nullopt));
    CHECK(peer_may_use_api(0, 1234, gid_t{999}));
    CHECK_FALSE(peer_may_use_api(kNobody, kNogroup, std::nullopt));
    CHECK_FALSE(peer_may_use_api(kNobody, kNogroup, gid_t{999}));
    CHECK(peer_may_use_api(kNobody, 999, gid_t{999}));  // primary group
    CHECK_FALSE(lookup_group("no-such-group-disksweep-test").has_value());
    REQUIRE(lookup_group("root").has_value());
    CHECK(*lookup_group("root") == 0);
}

TEST_CASE("a peer outside the API group gets 403 even on a world-writable socket", "[access]") {
    if (::geteuid() != 0) ds::test::skip_test("needs root to connect as another user");
    test::TempDir dir("access");
    ::chmod(dir.path().c_str(), 0755);
    const std::string socket = dir.file("api.sock");
    std::vector<std::string> logged;
    ApiContext context;
    context.peer_allowed = [](uid_t uid, gid_t gid) {
        return peer_may_use_api(uid, gid, std::nullopt);
    };
    context.log = [&logged](const std::string& line) { logged.push_back(line); };
    context.status = [] { return api::StatusReply{}; };
    // 0666: the per-connection check alone must keep the stranger out.
    http::UnixServer server(socket, make_api_handler(context), 0666);
    REQUIRE(server.start().ok());

    auto as_root = http::request(socket, "GET", "/v1/status");
    REQUIRE(as_root.ok());
    CHECK(as_root->status == 200);

    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        if (::setgid(kNogroup) != 0 || ::setuid(kNobody) != 0) ::_exit(10);
        auto reply = http::request(socket, "GET", "/v1/status");
        if (!reply.ok()) ::_exit(11);
        const bool refused = reply->status == 403 &&
                             reply->body.find("\"forbidden\"") != std::string::npos &&
                             reply->body.find("'disksweep' group") != std::string::npos;
        ::_exit(refused ? 0 : 12);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    server.stop();
    REQUIRE(logged.size() == 1);
    CHECK_THAT(logged[0], Catch::Contains("refused API request GET /v1/status from uid 65534"));
}
