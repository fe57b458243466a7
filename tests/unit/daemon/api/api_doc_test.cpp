// docs/api.md's error table against the code: every error code there is
// (common/result.h's errc), each with the HTTP status the API's one mapping
// (http_status_for) gives it, and nothing else.
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
    const auto errors = test::doc_sections(test::repository_text("docs/api.md"), 2, "Errors");
    REQUIRE(errors.size() == 1);
    Lines lines;
    static const std::regex quoted_code("`([a-z_]+)`");
    for (const auto& row : test::table_rows(errors[0].body, {"code", "HTTP", "meaning"})) {
        REQUIRE(row.size() == 3);
        const std::string status = row[1].substr(0, row[1].find(' '));
        for (auto match = std::sregex_iterator(row[0].begin(), row[0].end(), quoted_code);
             match != std::sregex_iterator(); ++match)
            lines.insert((*match)[1].str() + ": " + status);
    }
    return lines;
}

}  // namespace

TEST_CASE("docs/api.md lists every error code with its HTTP status", "[api][docs]") {
    const Lines code = code_statuses();
    const Lines doc = doc_statuses();
    REQUIRE(code.size() > 10);
    // Each side's lines the other lacks.
    CHECK(test::missing_from(code, doc) == Lines{});
    CHECK(test::missing_from(doc, code) == Lines{});
}

}  // namespace ds
