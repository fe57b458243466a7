// The store's connection: opening the database, its migrations and its
// instance id. The store's other jobs have files of their own: sweeps.cpp,
// runs.cpp, run_recovery.cpp and comparison_queries.cpp; what they share is
// store_sql.h. The API's view of the records is daemon/api/record_messages.h.
#include "daemon/store/store.h"

#include <SQLiteCpp/SQLiteCpp.h>
#include <sys/random.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "daemon/store/store_sql.h"

namespace ds {
using namespace store_sql;
namespace {

// How long a statement waits for another connection's lock before giving up
// with SQLITE_BUSY (-> errc::kUnavailable). Writes here are small; a lock held
// this long means something is wrong elsewhere.
constexpr int kBusyTimeoutMs = 5000;
// At most this much of the database file is memory-mapped for reading (address
// space, not memory: the pages are the kernel's page cache).
constexpr std::int64_t kMmapBytes = std::int64_t{1} << 30;

Error newer_schema_error(const std::string& path, int stored_version, int known_version) {
    return make_error(errc::kConflict,
                      "database " + path + " has schema version " + std::to_string(stored_version) +
                          ", newer than the newest this disksweepd knows (" +
                          std::to_string(known_version) +
                          "): it was written by a newer disksweep; upgrade, or use another "
                          "database");
}

// Brings the schema from its stored version up to migrations.size(), one
// migration per IMMEDIATE transaction (re-reading the version inside it, so
// two processes opening a fresh file at once do not both migrate).
Status migrate(SQLite::Database& db, const std::string& path,
               std::span<const Migration> migrations) {
    const int known_version = static_cast<int>(migrations.size());
    for (;;) {
        SQLite::Transaction transaction(db, SQLite::TransactionBehavior::IMMEDIATE);
        const int current_version = db.execAndGet("PRAGMA user_version").getInt();
        if (current_version > known_version) {
            return newer_schema_error(path, current_version, known_version);
        }
        if (current_version == known_version) return ok_status();

        const Migration& migration = migrations[current_version];
        try {
            db.exec(std::string(migration.sql));
            db.exec("PRAGMA user_version = " + std::to_string(migration.version));
            transaction.commit();
        } catch (const SQLite::Exception& exception) {
            return sqlite_error("database " + path + ": migration " +
                                    std::to_string(migration.version) + " (" +
                                    std::string(migration.description) + ") failed",
                                exception);
        }
    }
}

// A new instance id: 8 lowercase hex digits from the kernel's random source.
// Unpredictable rather than derived from the host or path, so two databases
// (two daemons) get different ids even on one machine.
Result<std::string> random_instance_id() {
    std::array<unsigned char, 4> bytes{};
    if (::getrandom(bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size())) {
        return make_error(errc::kIo, std::string("getrandom: ") + std::strerror(errno));
    }
    static constexpr char kHexDigits[] = "0123456789abcdef";
    std::string id;
    for (const unsigned char byte : bytes) {
        id += kHexDigits[byte >> 4];
        id += kHexDigits[byte & 0x0f];
    }
    return id;
}

}  // namespace

std::span<const std::string_view> all_run_statuses() {
    return all_run_status_names();
}

Store::Store(std::string path, std::unique_ptr<SQLite::Database> db)
    : path_(std::move(path)), db_(std::move(db)) {}

Store::~Store() = default;

Result<std::unique_ptr<Store>> Store::open(const std::string& path) {
    return open(path, schema_migrations());
}

Result<std::unique_ptr<Store>> Store::open(const std::string& path,
                                           std::span<const Migration> migrations) {
    for (std::size_t index = 0; index < migrations.size(); ++index) {
        if (migrations[index].version != static_cast<int>(index) + 1) {
            return make_error(errc::kInternal, "migration list out of order: entry " +
                                                   std::to_string(index) + " has version " +
                                                   std::to_string(migrations[index].version));
        }
    }
    return guarded("opening database " + path, [&]() -> Result<std::unique_ptr<Store>> {
        auto db = std::make_unique<SQLite::Database>(
            path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE, kBusyTimeoutMs);
        // Refuse a newer schema before touching the file (even the journal mode).
        const int stored_version = db->execAndGet("PRAGMA user_version").getInt();
        if (stored_version > static_cast<int>(migrations.size())) {
            return newer_schema_error(path, stored_version, static_cast<int>(migrations.size()));
        }
        // WAL: readers (API) do not block the writer (scheduler). The mode is
        // persistent; the pragma answers the mode in force.
        db->execAndGet("PRAGMA journal_mode = WAL");
        // Per connection, and a no-op inside a transaction: set before migrating.
        db->exec("PRAGMA foreign_keys = ON");
        // Reads map the file rather than copy every page through pread(2): a
        // comparison scans an index entry of each of a sweep's runs.
        db->execAndGet("PRAGMA mmap_size = " + std::to_string(kMmapBytes));
        DS_TRY(migrate(*db, path, migrations));
        return std::unique_ptr<Store>(new Store(path, std::move(db)));
    });
}

Result<int> Store::schema_version() {
    std::lock_guard lock(mutex_);
    return guarded("reading schema version of " + path_, [&]() -> Result<int> {
        return db_->execAndGet("PRAGMA user_version").getInt();
    });
}

Result<std::string> Store::instance_id() {
    std::lock_guard lock(mutex_);
    return guarded("reading the instance id of " + path_, [&]() -> Result<std::string> {
        // IMMEDIATE: two processes opening a new database at once store one id.
        SQLite::Transaction transaction(*db_, SQLite::TransactionBehavior::IMMEDIATE);
        SQLite::Statement stored(*db_, "SELECT instance_id FROM daemon_instance");
        if (stored.executeStep()) return stored.getColumn(0).getString();
        auto generated = random_instance_id();
        DS_TRY(generated);
        SQLite::Statement insert(
            *db_, "INSERT INTO daemon_instance (singleton, instance_id) VALUES (1, ?)");
        insert.bind(1, generated.value());
        insert.exec();
        transaction.commit();
        return generated;
    });
}

}  // namespace ds
