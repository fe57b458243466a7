// docs/api.md against the code: the error table against every error code
// there is (common/result.h's errc), each with the HTTP status the API's one
// mapping (http_status_for) gives it; the Endpoints table against the route
// table the dispatcher is built from (api_routes()), the query parameters
// included; the Capabilities table against api_capabilities(). Each side's
// lines the other lacks are the failure.
#include <algorithm>
#include <catch2/catch.hpp>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "daemon/api/api.h"
#include "unit/doc_tables.h"

namespace ds {
namespace {

using Lines = std::set<std::string>;

// The doc's section `heading` (level 2 or 3): exactly one.
std::string api_doc_section(std::size_t level, const std::string& heading) {
    const auto sections = test::doc_sections(test::repository_text("docs/api.md"), level, heading);
    REQUIRE(sections.size() == 1);
    return sections[0].body;
}

// The codes of common/result.h's `namespace errc`, as its constants spell
// them (errc has no list of its own: read from the source, so a code added
// there without a row in the doc fails here).
std::vector<std::string> error_codes() {
    const std::string header = test::repository_text("common/result.h");
    const std::size_t begin = header.find("namespace errc {");
    const std::size_t end = header.find("}  // namespace errc", begin);
    REQUIRE(begin != std::string::npos);
    REQUIRE(end != std::string::npos);
    const std::string block = header.substr(begin, end - begin);
    static const std::regex constant("k[A-Za-z]+ = \"([a-z_]+)\";");
    std::vector<std::string> codes;
    for (auto match = std::sregex_iterator(block.begin(), block.end(), constant);
         match != std::sregex_iterator(); ++match)
        codes.push_back((*match)[1]);
    return codes;
}

// "CODE: STATUS" per code of the code.
Lines code_statuses() {
    Lines lines;
    for (const auto& code : error_codes())
        lines.insert(code + ": " + std::to_string(http_status_for(make_error(code, ""))));
    return lines;
}

// "CODE: STATUS" per code of the doc's `| code | HTTP | meaning |` table: a
// row may name several codes (`a`, `b`); its status is the HTTP cell's
// leading number ("400 (405 for a wrong method)" is 400).
Lines doc_statuses() {
    Lines lines;
    static const std::regex quoted_code("`([a-z_]+)`");
    for (const auto& row :
         test::table_rows(api_doc_section(2, "Errors"), {"code", "HTTP", "meaning"})) {
        REQUIRE(row.size() == 3);
        const std::string status = row[1].substr(0, row[1].find(' '));
        for (auto match = std::sregex_iterator(row[0].begin(), row[0].end(), quoted_code);
             match != std::sregex_iterator(); ++match)
            lines.insert((*match)[1].str() + ": " + status);
    }
    return lines;
}

// "METHOD PATTERN" of a route, its pattern as route_match.h writes it.
std::string endpoint_line(std::string_view method, std::string_view pattern) {
    return std::string(method) + " " + std::string(pattern);
}

// "METHOD PATTERN NAME required|optional" of one of a route's query parameters.
std::string query_line(const std::string& endpoint, std::string_view name, QueryPresence presence) {
    return endpoint + " " + std::string(name) +
           (presence == QueryPresence::kRequired ? " required" : " optional");
}

struct RouteLines {
    Lines endpoints;
    Lines query;
};

RouteLines code_routes() {
    RouteLines lines;
    for (const RouteDoc& route : api_routes()) {
        const std::string endpoint = endpoint_line(route.method, route.pattern);
        lines.endpoints.insert(endpoint);
        for (const QueryParameter& parameter : route.query)
            lines.query.insert(query_line(endpoint, parameter.name, parameter.presence));
    }
    return lines;
}

// One path cell of the Endpoints table, in the syntax the section states:
// `/v1/sweeps/{id}/compare[?metric=NAME][&all=1]`. The pattern has '*' for
// each `{name}` segment; a cell whose query part does not read in that
// syntax gives an "unreadable" line, which no route has.
void add_doc_route(const std::string& method, const std::string& cell, RouteLines& lines) {
    const std::size_t query_begin = std::min(cell.find('?'), cell.find('['));
    static const std::regex id_segment("\\{[a-z_]+\\}");
    const std::string endpoint =
        endpoint_line(method, std::regex_replace(cell.substr(0, query_begin), id_segment, "*"));
    lines.endpoints.insert(endpoint);
    if (query_begin == std::string::npos) return;
    const std::string query = cell.substr(query_begin);
    static const std::regex parameter("(\\[?)([?&])([a-z_]+)=[^\\[\\]&?]+(\\]?)");
    std::size_t read = 0;
    for (auto match = std::sregex_iterator(query.begin(), query.end(), parameter);
         match != std::sregex_iterator(); ++match) {
        const bool optional = (*match)[1].length() == 1;
        const char separator = read == 0 ? '?' : '&';
        if (match->position() != static_cast<std::ptrdiff_t>(read) ||
            (*match)[2].str()[0] != separator || optional != ((*match)[4].length() == 1))
            break;
        lines.query.insert(
            query_line(endpoint, (*match)[3].str(),
                       optional ? QueryPresence::kOptional : QueryPresence::kRequired));
        read += match->length();
    }
    if (read != query.size()) lines.query.insert("unreadable: " + method + " " + cell);
}

RouteLines doc_routes() {
    RouteLines lines;
    for (const auto& row :
         test::table_rows(api_doc_section(2, "Endpoints"), {"method", "path", "answer"})) {
        REQUIRE(row.size() == 3);
        add_doc_route(row[0], test::unquoted(row[1]), lines);
    }
    return lines;
}

Lines code_capabilities() {
    Lines lines;
    for (const Capability& capability : api_capabilities())
        lines.insert(std::string(capability.name));
    return lines;
}

Lines doc_capabilities() {
    Lines lines;
    for (const auto& row :
         test::table_rows(api_doc_section(3, "Capabilities"), {"capability", "meaning"})) {
        REQUIRE(row.size() == 2);
        lines.insert(test::unquoted(row[0]));
    }
    return lines;
}

// The code and the doc describe one thing alike: a failure shows each
// side's lines the other lacks.
void check_same_lines(const Lines& code, const Lines& doc) {
    {
        INFO("in the code, not in docs/api.md");
        CHECK(test::missing_from(code, doc) == Lines{});
    }
    {
        INFO("in docs/api.md, not in the code");
        CHECK(test::missing_from(doc, code) == Lines{});
    }
}

}  // namespace

TEST_CASE("docs/api.md lists every route of the API", "[api][docs]") {
    const RouteLines code = code_routes();
    REQUIRE(code.endpoints.size() > 10);
    check_same_lines(code.endpoints, doc_routes().endpoints);
}

TEST_CASE("docs/api.md lists the query parameters each route reads", "[api][docs]") {
    const RouteLines code = code_routes();
    REQUIRE(code.query.size() > 5);
    check_same_lines(code.query, doc_routes().query);
}

TEST_CASE("docs/api.md lists every capability of GET /v1/version", "[api][docs]") {
    const Lines code = code_capabilities();
    REQUIRE(code.size() > 5);
    check_same_lines(code, doc_capabilities());
}

TEST_CASE("docs/api.md lists every error code with its HTTP status", "[api][docs]") {
    const Lines code = code_statuses();
    const Lines doc = doc_statuses();
    REQUIRE(code.size() > 10);
    // Each side's lines the other lacks.
    CHECK(test::missing_from(code, doc) == Lines{});
    CHECK(test::missing_from(doc, code) == Lines{});
}

}  // namespace ds
