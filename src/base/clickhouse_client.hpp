// base/clickhouse_client.hpp — a ClickHouse server over its HTTP interface,
// through libcurl: statements run, their result read as it arrives, rows
// inserted in a body (`INSERT INTO t (...) FORMAT TabSeparated`), and the
// errors a user can act on: a server that cannot be reached, one that does
// not answer in time, and ClickHouse's own error text for a refused
// statement. Knows nothing of traces: the SQL export, `tracery query
// --clickhouse` and a relay's sink share it (library tracery_clickhouse,
// the only part of base that uses libcurl, loaded at the first client).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tracery::clickhouse {

// http://[USER[:PASSWORD]@]HOST[:PORT]/DATABASE (no database: "default").
struct Endpoint {
	std::string url;      // http://HOST:PORT/ (no credentials)
	std::string shown;    // the URL as messages show it (no password)
	std::string database; // the database statements run in
	std::string user, password;
};

// Throws std::invalid_argument naming the URL and the form expected.
Endpoint parse_url(std::string_view url);

// A statement that did not run, or a server that could not be reached; what
// says which, with ClickHouse's message when it sent one.
class Error : public std::runtime_error {
public:
	enum Kind { unreachable, timeout, refused };
	Error(Kind kind, const std::string &what) : std::runtime_error(what), kind_(kind) {}
	Kind kind() const { return kind_; }

private:
	Kind kind_;
};

struct Timeouts {
	long connect_ms = 5000;
	// A request fails when nothing moved for this long, either way (a server
	// that stopped answering; a slow large insert or a long query, which
	// sends progress headers, keeps going).
	long stall_s = 60;
};

class Client {
public:
	explicit Client(Endpoint endpoint, Timeouts timeouts = {});
	~Client();
	Client(const Client &) = delete;
	Client &operator=(const Client &) = delete;

	// Runs one statement; its result (in the FORMAT the statement names)
	// arrives in pieces to `data`. Throws Error.
	void run(std::string_view sql, const std::function<void(std::string_view)> &data);
	// Runs one statement and returns its whole result, at most max_bytes
	// (more: Error refused). Throws Error.
	std::string run(std::string_view sql, size_t max_bytes = 64 << 20);
	// Sends body as the data of `insert` (INSERT INTO ... FORMAT ...).
	// Throws Error.
	void insert(std::string_view insert, std::string_view body);

	const Endpoint &endpoint() const { return endpoint_; }

private:
	void request(std::string_view query_param, std::string_view body,
	             const std::function<void(std::string_view)> *data);
	Endpoint endpoint_;
	Timeouts timeouts_;
	void *curl_ = nullptr; // CURL *
};

// A value as a field of TabSeparated: backslash, tab, newline, carriage
// return, NUL, backspace, form feed escaped.
void append_tsv(std::string &out, std::string_view s);
// A name as a ClickHouse identifier (backquoted, escaped).
std::string quote_name(std::string_view s);
// A string literal (single-quoted, escaped).
std::string quote_string(std::string_view s);
// One field of a TabSeparated line unescaped; sets null for \N.
std::string unescape_tsv(std::string_view field, bool &null);

} // namespace tracery::clickhouse
