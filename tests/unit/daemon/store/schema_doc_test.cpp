// docs/schema.md against the schema itself: a database Store::open has just
// migrated, read back through SQLite's PRAGMAs. Each fact of the schema is
// written as the line the doc shows for it (the form is described in the
// doc's "Tables" section), from the database on one side and from the doc
// on the other; the two sets must be equal.
#include <SQLiteCpp/SQLiteCpp.h>

#include <catch2/catch.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/store/store.h"
#include "support/temp_dir.h"
#include "unit/doc_tables.h"

namespace ds {
namespace {

using test::DocSection;
using test::TempDir;
using Facts = std::set<std::string>;

constexpr const char* kDoc = "docs/schema.md";

// A database at the current schema version, migrated from nothing.
std::string migrated_database(const TempDir& dir) {
    const std::string path = dir.file("schema.db");
    auto store = Store::open(path);
    INFO((store.ok() ? "" : store.error().message));
    REQUIRE(store.ok());
    return path;
}

// "`(a, b)`": column names as the doc writes a key or an index.
std::string quoted_column_list(const std::vector<std::string>& names) {
    std::string text;
    for (const auto& name : names) text += (text.empty() ? "" : ", ") + name;
    return "`(" + text + ")`";
}

// The column names of one index, in index order.
std::vector<std::string> index_columns(SQLite::Database& db, const std::string& index) {
    std::vector<std::string> columns;
    SQLite::Statement info(db, "SELECT name FROM pragma_index_info(?) ORDER BY seqno");
    info.bind(1, index);
    while (info.executeStep()) columns.push_back(info.getColumn(0).getString());
    return columns;
}

// "WHERE `expression`" of a partial index's CREATE statement, "" for a full one.
std::string where_clause(const std::string& create_sql) {
    const std::size_t where = create_sql.find(" WHERE ");
    if (where == std::string::npos) return "";
    const std::string expression =
        std::regex_replace(create_sql.substr(where + 7), std::regex("\\s+"), " ");
    return " WHERE `" + expression + "`";
}

// The facts of one table's columns: "TABLE.COLUMN: TYPE [NOT NULL]
// [PRIMARY KEY] [DEFAULT value]", and "Primary key: `(a, b)`" for a key of
// more than one column.
void add_column_facts(SQLite::Database& db, const std::string& table, Facts& facts) {
    SQLite::Statement columns(
        db, "SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?) ORDER BY pk");
    columns.bind(1, table);
    std::vector<std::string> key;
    while (columns.executeStep()) {
        const std::string name = columns.getColumn(0).getString();
        std::string type = columns.getColumn(1).getString();
        if (columns.getColumn(2).getInt() != 0) type += " NOT NULL";
        if (columns.getColumn(4).getInt() > 0) {
            type += " PRIMARY KEY";
            key.push_back(name);
        }
        if (!columns.getColumn(3).isNull()) type += " DEFAULT " + columns.getColumn(3).getString();
        facts.insert(table + "." + name + ": " + type);
    }
    if (key.size() > 1) facts.insert(table + ": Primary key: " + quoted_column_list(key));
}

// "TABLE.COLUMN: → `OTHER.COLUMN`[ (ON DELETE CASCADE)]" per foreign key.
void add_foreign_key_facts(SQLite::Database& db, const std::string& table, Facts& facts) {
    SQLite::Statement keys(db,
                           "SELECT \"from\", \"table\", \"to\", on_delete FROM "
                           "pragma_foreign_key_list(?)");
    keys.bind(1, table);
    while (keys.executeStep()) {
        const bool cascades = keys.getColumn(3).getString() == "CASCADE";
        facts.insert(table + "." + keys.getColumn(0).getString() + ": → `" +
                     keys.getColumn(1).getString() + "." + keys.getColumn(2).getString() + "`" +
                     (cascades ? " (ON DELETE CASCADE)" : ""));
    }
}

// "TABLE: Unique: `(a, b)`" per UNIQUE constraint, and "TABLE: index NAME
// [UNIQUE ]`(a, b)`[ WHERE `expression`]" per CREATE INDEX.
void add_index_facts(SQLite::Database& db, const std::string& table, Facts& facts) {
    SQLite::Statement indexes(
        db,
        "SELECT l.name, l.\"unique\", l.origin, coalesce(m.sql, '') "
        "FROM pragma_index_list(?) AS l "
        "LEFT JOIN sqlite_master AS m ON m.type = 'index' AND m.name = l.name");
    indexes.bind(1, table);
    while (indexes.executeStep()) {
        const std::string name = indexes.getColumn(0).getString();
        const std::string origin = indexes.getColumn(2).getString();
        const std::string columns = quoted_column_list(index_columns(db, name));
        if (origin == "u") facts.insert(table + ": Unique: " + columns);
        if (origin != "c") continue;
        const std::string unique = indexes.getColumn(1).getInt() != 0 ? "UNIQUE " : "";
        facts.insert(table + ": index " + name + " " + unique + columns +
                     where_clause(indexes.getColumn(3).getString()));
    }
}

// Every fact of every table of the database at `path`.
Facts database_facts(const std::string& path) {
    SQLite::Database db(path, SQLite::OPEN_READONLY);
    Facts facts;
    SQLite::Statement tables(
        db,
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'");
    while (tables.executeStep()) {
        const std::string table = tables.getColumn(0).getString();
        facts.insert(table + ": table");
        if (tables.getColumn(1).getString().find("WITHOUT ROWID") != std::string::npos)
            facts.insert(table + ": `WITHOUT ROWID`");
        add_column_facts(db, table, facts);
        add_foreign_key_facts(db, table, facts);
        add_index_facts(db, table, facts);
    }
    return facts;
}

// The facts one "### `TABLE` — ..." section of the doc states.
void add_doc_table_facts(const DocSection& section, Facts& facts) {
    const std::string table = test::unquoted(section.heading.substr(0, section.heading.find(' ')));
    facts.insert(table + ": table");
    for (const auto& row : test::table_rows(section.body, {"column", "type", "meaning"})) {
        REQUIRE(row.size() == 3);
        const std::string column = table + "." + test::unquoted(row[0]);
        facts.insert(column + ": " + row[1]);
        static const std::regex foreign_key("^→ `[a-z_]+\\.[a-z_]+`( \\(ON DELETE CASCADE\\))?");
        std::smatch reference;
        if (std::regex_search(row[2], reference, foreign_key))
            facts.insert(column + ": " + reference.str());
    }
    for (const auto& row : test::table_rows(section.body, {"index", "on", "why"})) {
        REQUIRE(row.size() == 3);
        facts.insert(table + ": index " + test::unquoted(row[0]) + " " + row[1]);
    }
    std::istringstream lines(section.body);
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind("Primary key: ", 0) == 0 || line.rfind("Unique: ", 0) == 0 ||
            line == "`WITHOUT ROWID`")
            facts.insert(table + ": " + line);
    }
}

Facts doc_facts(const std::string& doc) {
    const auto tables_part = test::doc_sections(doc, 2, "Tables");
    REQUIRE(tables_part.size() == 1);
    Facts facts;
    for (const auto& section : test::doc_sections(tables_part[0].body, 3))
        add_doc_table_facts(section, facts);
    return facts;
}

}  // namespace

TEST_CASE("docs/schema.md shows every table, column, key and index of a migrated database",
          "[store][docs]") {
    TempDir dir;
    const Facts database = database_facts(migrated_database(dir));
    const Facts doc = doc_facts(test::repository_text(kDoc));
    REQUIRE(database.size() > 50);
    // Each side's facts the other lacks, as the doc would spell them.
    CHECK(test::missing_from(database, doc) == Facts{});
    CHECK(test::missing_from(doc, database) == Facts{});
}

TEST_CASE("docs/schema.md names the current schema version and every migration", "[store][docs]") {
    TempDir dir;
    SQLite::Database db(migrated_database(dir), SQLite::OPEN_READONLY);
    const int version = db.execAndGet("PRAGMA user_version").getInt();
    const std::string doc = test::repository_text(kDoc);
    CHECK(doc.find("**Current schema version: " + std::to_string(version) + ".**") !=
          std::string::npos);
    std::vector<std::string> listed;
    for (const auto& row : test::table_rows(doc, {"version", "change"})) listed.push_back(row[0]);
    std::vector<std::string> expected;
    for (int n = 1; n <= version; ++n) expected.push_back(std::to_string(n));
    CHECK(listed == expected);
}

}  // namespace ds
