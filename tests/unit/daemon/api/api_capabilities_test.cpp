// GET /v1/version's capabilities: the fixed ones in their order, then one
// "workload:NAME" per workload kind of common/workload_kind.h, in the
// table's order.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "common/http.h"
#include "daemon/api/api.h"

namespace ds {

TEST_CASE("the API's capabilities name every workload kind", "[api][capabilities]") {
    const http::Handler api = make_api_handler(ApiContext{});
    auto request = http::parse_request("GET /v1/version HTTP/1.1\r\nHost: x\r\n\r\n");
    REQUIRE(request.ok());
    const http::Response response = api(request.value());
    REQUIRE(response.status == 200);
    const auto body = nlohmann::json::parse(response.body);
    CHECK(body.at("capabilities") == nlohmann::json{"sweeps", "events", "compare", "report",
                                                    "cancel", "backends", "workload:fio",
                                                    "workload:io", "workload:mariadb-atis",
                                                    "workload:sysbench-oltp", "workload:ledger",
                                                    "workload:pgbench", "status:timed_out"});
}

}  // namespace ds
