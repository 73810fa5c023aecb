// analysis/sql/sqlite.cpp — the RAII layer over libsqlite3 (see sqlite.hpp).
#include "analysis/sql/sqlite.hpp"

#include <cstdio>
#include <cstring>

namespace tracery::analysis::sql {

namespace {

std::string quoted(std::string_view s, char q)
{
	std::string r;
	r.reserve(s.size() + 2);
	r += q;
	for (const char c : s) {
		r += c;
		if (c == q)
			r += q;
	}
	r += q;
	return r;
}

// The statement, cut short when long, for messages.
std::string shown(const std::string &sql)
{
	constexpr size_t kMax = 300;
	if (sql.size() <= kMax)
		return sql;
	std::string s = sql.substr(0, kMax);
	s += "...";
	return s;
}

} // namespace

bool is_sqlite_file(const std::string &path)
{
	FILE *f = fopen(path.c_str(), "rb");
	if (!f)
		return false;
	char head[16] = {};
	const size_t n = fread(head, 1, sizeof head, f);
	fclose(f);
	return n == sizeof head && std::memcmp(head, "SQLite format 3", 16) == 0;
}

std::string quote_ident(std::string_view name) { return quoted(name, '"'); }
std::string quote_text(std::string_view text) { return quoted(text, '\''); }

Db::Db(const std::string &path, int flags) : path_(path)
{
	// Before SQLite initializes: no memory statistics (a global mutex per
	// allocation). Each connection is used by one thread: no mutex either.
	static const bool configured = [] {
		sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
		return true;
	}();
	(void)configured;
	const int rc = sqlite3_open_v2(path.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr);
	if (rc != SQLITE_OK) {
		std::string msg = "cannot open the database '";
		msg += path;
		msg += "': ";
		msg += db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
		sqlite3_close(db_);
		db_ = nullptr;
		throw SqlError(msg);
	}
	sqlite3_extended_result_codes(db_, 1);
}

Db::~Db() { sqlite3_close_v2(db_); }

std::string Db::message() const { return sqlite3_errmsg(db_); }

void Db::exec(const std::string &sql)
{
	char *err = nullptr;
	if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
		std::string msg = err ? err : message();
		sqlite3_free(err);
		std::string full = "SQLite: ";
		full += msg;
		full += ", in: ";
		full += shown(sql);
		throw SqlError(full);
	}
}

Stmt::Stmt(Db &db, const std::string &sql) : db_(&db)
{
	if (sqlite3_prepare_v3(db.handle(), sql.c_str(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &st_,
	                       nullptr) != SQLITE_OK) {
		std::string msg = "SQLite: ";
		msg += db.message();
		msg += ", in: ";
		msg += shown(sql);
		throw SqlError(msg);
	}
}

Stmt::~Stmt() { sqlite3_finalize(st_); }

Stmt &Stmt::operator=(Stmt &&o) noexcept
{
	if (this != &o) {
		sqlite3_finalize(st_);
		st_ = o.st_;
		db_ = o.db_;
		o.st_ = nullptr;
	}
	return *this;
}

void Stmt::fail(int rc)
{
	std::string msg = "SQLite: ";
	msg += db_ ? db_->message() : sqlite3_errstr(rc);
	if (const char *sql = sqlite3_sql(st_)) {
		msg += ", in: ";
		msg += shown(sql);
	}
	sqlite3_reset(st_);
	throw SqlError(msg);
}

void Stmt::run()
{
	const int rc = sqlite3_step(st_);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		fail(rc);
	sqlite3_reset(st_);
}

bool Stmt::step()
{
	const int rc = sqlite3_step(st_);
	if (rc == SQLITE_ROW)
		return true;
	if (rc != SQLITE_DONE)
		fail(rc);
	return false;
}

Batches::Batches(Db &db, uint64_t batch) : db_(db), batch_(batch)
{
	db_.exec("BEGIN");
	open_ = true;
}

Batches::~Batches()
{
	if (open_)
		sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Batches::commit_and_begin()
{
	rows_ = 0;
	db_.exec("COMMIT");
	open_ = false;
	db_.exec("BEGIN");
	open_ = true;
}

void Batches::finish()
{
	if (open_) {
		open_ = false;
		db_.exec("COMMIT");
	}
}

} // namespace tracery::analysis::sql
