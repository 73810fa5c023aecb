// analysis/sql/sqlite.hpp — a thin RAII layer over libsqlite3 for the SQL
// export and `tracery query`: a database handle, prepared statements, and
// identifiers and text quoted for SQL. Every error is a SqlError whose
// message is SQLite's, naming the statement that failed.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tracery::analysis::sql {

class SqlError : public std::runtime_error {
public:
	using std::runtime_error::runtime_error;
};

// "name" with its double quotes doubled: any text as an SQL identifier.
std::string quote_ident(std::string_view name);
// 'text' with its single quotes doubled: any text as an SQL string literal.
std::string quote_text(std::string_view text);

class Stmt;

// Whether path is an SQLite database file (its header's magic string).
bool is_sqlite_file(const std::string &path);

class Db {
public:
	// path: a file (created when flags allow), ":memory:", or "" for a
	// private temporary file on disk that SQLite deletes when closed (pages
	// cached in memory up to cache_size, the rest on disk). Throws SqlError.
	Db(const std::string &path, int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
	~Db();
	Db(const Db &) = delete;
	Db &operator=(const Db &) = delete;

	sqlite3 *handle() const { return db_; }
	// Runs statements that return no rows. Throws SqlError naming sql.
	void exec(const std::string &sql);
	// SQLite's message of the last error.
	std::string message() const;

private:
	sqlite3 *db_ = nullptr;
	std::string path_;
};

// One prepared statement, reset after each step to the end.
class Stmt {
public:
	Stmt() = default;
	// Throws SqlError naming sql.
	Stmt(Db &db, const std::string &sql);
	~Stmt();
	Stmt(Stmt &&o) noexcept : st_(o.st_), db_(o.db_) { o.st_ = nullptr; }
	Stmt &operator=(Stmt &&o) noexcept;
	Stmt(const Stmt &) = delete;
	Stmt &operator=(const Stmt &) = delete;

	explicit operator bool() const { return st_ != nullptr; }
	sqlite3_stmt *handle() const { return st_; }

	// Parameters from 1. Text is bound without a copy: it must stay valid
	// until the statement runs.
	void bind(int i, int64_t v) { sqlite3_bind_int64(st_, i, v); }
	void bind(int i, double v) { sqlite3_bind_double(st_, i, v); }
	void bind(int i, std::string_view s)
	{
		sqlite3_bind_text(st_, i, s.data(), static_cast<int>(s.size()), SQLITE_STATIC);
	}
	void bind_null(int i) { sqlite3_bind_null(st_, i); }
	template <class T>
	void bind_opt(int i, const T &v)
	{
		if (v)
			bind(i, *v);
		else
			bind_null(i);
	}
	// Runs an INSERT (or any statement returning no row) and resets it.
	// Throws SqlError.
	void run();
	// Steps a query: true while a row is ready. Throws SqlError.
	bool step();
	void reset() { sqlite3_reset(st_); }

private:
	[[noreturn]] void fail(int rc);
	sqlite3_stmt *st_ = nullptr;
	Db *db_ = nullptr;
};

// A transaction committed every `batch` rows (and at the end), so that a
// long load neither holds everything in one transaction nor pays a commit
// per row.
class Batches {
public:
	Batches(Db &db, uint64_t batch);
	~Batches();
	// Counts one row; commits and begins anew every `batch` rows.
	void row()
	{
		if (++rows_ == batch_)
			commit_and_begin();
	}
	// Commits what is pending. Throws SqlError.
	void finish();

private:
	void commit_and_begin();
	Db &db_;
	uint64_t batch_, rows_ = 0;
	bool open_ = false;
};

} // namespace tracery::analysis::sql
