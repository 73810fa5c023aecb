// base/clickhouse_client.cpp — ClickHouse's HTTP interface through libcurl
// (see clickhouse_client.hpp).
#include "base/clickhouse_client.hpp"
#include "base/ascii.hpp"

#include "base/cat.hpp"

#include <curl/curl.h>
#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <type_traits>

namespace tracery::clickhouse {

namespace {

constexpr size_t kMaxErrorText = 2000;

// libcurl's functions, from the library loaded when the first client is
// made rather than linked: libcurl needs some thirty libraries (TLS,
// Kerberos, LDAP, SSH...) whose loading cost every run of the tracery
// command about 20 ms and 5 MiB at start (`tracery view` included), when
// only the ClickHouse export, `tracery query --clickhouse` and a relay's
// sink use it. The list names each once: the member, its type (the
// header's declaration) and the symbol looked up all come from it.
// clang-format off
#define TRACERY_CURL_FUNCTIONS(X) \
	X(global_init) X(easy_init) X(easy_cleanup) X(easy_reset) X(easy_escape) X(free) \
	X(easy_setopt) X(easy_perform) X(easy_strerror) X(easy_getinfo) X(slist_append) X(slist_free_all)
// clang-format on
struct Curl {
#define TRACERY_CURL_MEMBER(f) decltype(&curl_##f) f;
	TRACERY_CURL_FUNCTIONS(TRACERY_CURL_MEMBER)
#undef TRACERY_CURL_MEMBER
};

// Loads libcurl once (the OpenSSL build's soname, then the GnuTLS one's),
// and runs its global initialization. Throws Error when it cannot.
const Curl &curl()
{
	static const Curl loaded = [] {
		void *lib = nullptr;
		std::string why;
		for (const char *soname : {"libcurl.so.4", "libcurl-gnutls.so.4"}) {
			lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
			if (lib)
				break;
			const char *e = dlerror();
			why += base::cat(why.empty() ? "" : "; ", e ? e : soname);
		}
		if (!lib)
			throw Error(Error::unreachable, "ClickHouse: cannot load libcurl (" + why +
			                                        "): install it (Debian: the package libcurl4)");
		Curl c{};
		auto bind = [&](auto &fn, const char *name) {
			fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
			if (!fn)
				throw Error(Error::unreachable, base::cat("ClickHouse: the libcurl loaded has no ",
				                                          name, " (too old a libcurl)"));
		};
#define TRACERY_CURL_BIND(f) bind(c.f, "curl_" #f);
		TRACERY_CURL_FUNCTIONS(TRACERY_CURL_BIND)
#undef TRACERY_CURL_BIND
		c.global_init(CURL_GLOBAL_DEFAULT);
		return c;
	}();
	return loaded;
}
#undef TRACERY_CURL_FUNCTIONS

// %XX decoding of the URL's user, password and database.
std::string percent_decoded(std::string_view s)
{
	std::string r;
	for (size_t i = 0; i < s.size(); ++i) {
		if (s[i] == '%' && i + 2 < s.size() && base::hex_digit_value(s[i + 1]) >= 0 &&
		    base::hex_digit_value(s[i + 2]) >= 0) {
			r += static_cast<char>(base::hex_digit_value(s[i + 1]) * 16 + base::hex_digit_value(s[i + 2]));
			i += 2;
		} else {
			r += s[i];
		}
	}
	return r;
}

using Clock = std::chrono::steady_clock;

struct Received {
	const std::function<void(std::string_view)> *data = nullptr;
	// Anything heard or sent (a header, a piece of the body, bytes of ours
	// going out) moves this; a request with none for the stall time fails.
	Clock::time_point last_activity = Clock::now();
	curl_off_t sent = 0;
	std::chrono::seconds stall{60};
	bool stalled = false;
	bool ok = true; // the status, once known
	std::string error;
	std::exception_ptr thrown;
};

size_t on_body(char *p, size_t size, size_t n, void *user)
{
	auto *r = static_cast<Received *>(user);
	const size_t bytes = size * n;
	r->last_activity = Clock::now();
	if (!r->ok) {
		if (r->error.size() < kMaxErrorText)
			r->error.append(p, std::min(bytes, kMaxErrorText - r->error.size()));
		return bytes;
	}
	if (r->data) {
		try {
			(*r->data)(std::string_view(p, bytes));
		} catch (...) {
			r->thrown = std::current_exception();
			return 0; // aborts the transfer
		}
	}
	return bytes;
}

size_t on_header(char *p, size_t size, size_t n, void *user)
{
	auto *r = static_cast<Received *>(user);
	r->last_activity = Clock::now(); // the server's progress headers while a statement runs
	const std::string_view line(p, size * n);
	// "HTTP/1.1 500 Internal Server Error": ClickHouse's error text follows as the body
	if (line.rfind("HTTP/", 0) == 0) {
		const size_t sp = line.find(' ');
		r->ok = sp != std::string_view::npos && line.substr(sp + 1, 3) == "200";
	}
	return size * n;
}

int on_progress(void *user, curl_off_t, curl_off_t, curl_off_t, curl_off_t sent)
{
	auto *r = static_cast<Received *>(user);
	const Clock::time_point now = Clock::now();
	if (sent != r->sent) {
		r->sent = sent;
		r->last_activity = now;
	}
	if (now - r->last_activity > r->stall) {
		r->stalled = true;
		return 1; // aborts the transfer
	}
	return 0;
}

std::string trimmed(std::string s)
{
	while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' '))
		s.pop_back();
	return s;
}

} // namespace

Endpoint parse_url(std::string_view url)
{
	const auto bad = [&](const std::string &why) {
		return std::invalid_argument("ClickHouse URL '" + std::string(url) + "': " + why +
		                             "; give http://[USER[:PASSWORD]@]HOST[:PORT]/DATABASE "
		                             "(e.g. http://127.0.0.1:8123/traces)");
	};
	if (base::ascii_lower(url.substr(0, 7)) != "http://") {
		if (base::ascii_lower(url.substr(0, 8)) == "https://")
			throw bad(
				"https is not supported (put a TLS proxy's plain side, or the server, on a trusted network)");
		throw bad("not an http:// URL");
	}
	std::string_view rest = url.substr(7);
	const size_t slash = rest.find('/');
	std::string_view authority = rest.substr(0, slash);
	std::string_view path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
	if (path.find_first_of("?#/") != std::string_view::npos)
		throw bad("the path is the database name alone");
	Endpoint e;
	if (const size_t at = authority.rfind('@'); at != std::string_view::npos) {
		const std::string_view userinfo = authority.substr(0, at);
		authority = authority.substr(at + 1);
		const size_t colon = userinfo.find(':');
		e.user = percent_decoded(userinfo.substr(0, colon));
		if (colon != std::string_view::npos)
			e.password = percent_decoded(userinfo.substr(colon + 1));
	}
	if (authority.empty())
		throw bad("no host");
	for (const char c : authority)
		if (!(isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':' || c == '[' ||
		      c == ']' || c == '_'))
			throw bad("the host holds '" + std::string(1, c) + "'");
	e.database = path.empty() ? std::string("default") : percent_decoded(path);
	for (const char c : e.database)
		if (!(isalnum(static_cast<unsigned char>(c)) || c == '_'))
			throw bad("the database name holds '" + std::string(1, c) + "' (letters, digits and _ only)");
	e.url = "http://" + std::string(authority) + "/";
	e.shown =
		"http://" + (e.user.empty() ? std::string() : e.user + "@") + std::string(authority) + "/" + e.database;
	return e;
}

Client::Client(Endpoint endpoint, Timeouts timeouts) : endpoint_(std::move(endpoint)), timeouts_(timeouts)
{
	curl_ = curl().easy_init();
	if (!curl_)
		throw Error(Error::unreachable, "ClickHouse: libcurl could not make a handle");
}

Client::~Client() { curl().easy_cleanup(static_cast<CURL *>(curl_)); }

void Client::request(std::string_view query_param, std::string_view body,
                     const std::function<void(std::string_view)> *data)
{
	const Curl &lib = curl();
	CURL *c = static_cast<CURL *>(curl_);
	lib.easy_reset(c);
	// The server sends a progress header every few seconds while a statement
	// runs: a long query is not taken for a server that stopped answering.
	std::string url = endpoint_.url + "?database=" + endpoint_.database +
	                  "&send_progress_in_http_headers=1&http_headers_progress_interval_ms=" +
	                  std::to_string(std::max<long>(1, timeouts_.stall_s / 4) * 1000);
	if (!query_param.empty()) {
		char *escaped = lib.easy_escape(c, query_param.data(), static_cast<int>(query_param.size()));
		url += "&query=";
		url += escaped ? escaped : "";
		lib.free(escaped);
	}
	Received r;
	r.data = data;
	r.stall = std::chrono::seconds(timeouts_.stall_s);
	char curl_message[CURL_ERROR_SIZE] = {};
	lib.easy_setopt(c, CURLOPT_URL, url.c_str());
	lib.easy_setopt(c, CURLOPT_POST, 1L);
	lib.easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
	lib.easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
	lib.easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	lib.easy_setopt(c, CURLOPT_WRITEDATA, &r);
	lib.easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	lib.easy_setopt(c, CURLOPT_HEADERDATA, &r);
	lib.easy_setopt(c, CURLOPT_ERRORBUFFER, curl_message);
	lib.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	lib.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeouts_.connect_ms);
	lib.easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	lib.easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	lib.easy_setopt(c, CURLOPT_XFERINFODATA, &r);
	lib.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http");
	// no "Expect: 100-continue" round trip before a large body
	curl_slist *headers = lib.slist_append(nullptr, "Expect:");
	lib.easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	if (!endpoint_.user.empty()) {
		lib.easy_setopt(c, CURLOPT_USERNAME, endpoint_.user.c_str());
		lib.easy_setopt(c, CURLOPT_PASSWORD, endpoint_.password.c_str());
	}
	const CURLcode rc = lib.easy_perform(c);
	lib.slist_free_all(headers);
	if (r.thrown)
		std::rethrow_exception(r.thrown);
	if (r.stalled)
		throw Error(Error::timeout, base::cat("ClickHouse at ", endpoint_.shown, " sent nothing for ",
		                                      std::to_string(timeouts_.stall_s), " s: no answer"));
	if (rc == CURLE_OPERATION_TIMEDOUT)
		throw Error(Error::timeout, base::cat("ClickHouse at ", endpoint_.shown, " did not answer in time (",
		                                      curl_message[0] ? std::string(curl_message) : "timeout", ")"));
	if (rc != CURLE_OK)
		throw Error(Error::unreachable,
		            "cannot reach ClickHouse at " + endpoint_.shown + ": " +
		                    (curl_message[0] ? std::string(curl_message) : std::string(lib.easy_strerror(rc))) +
		                    " (is clickhouse-server running, and is that its HTTP port?)");
	long status = 0;
	lib.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (status != 200)
		throw Error(Error::refused, "ClickHouse at " + endpoint_.shown + " refused the statement (HTTP " +
		                                    std::to_string(status) + "): " + trimmed(r.error));
}

void Client::run(std::string_view sql, const std::function<void(std::string_view)> &data) { request({}, sql, &data); }

std::string Client::run(std::string_view sql, size_t max_bytes)
{
	std::string out;
	const std::function<void(std::string_view)> data = [&](std::string_view piece) {
		if (out.size() + piece.size() > max_bytes)
			throw Error(Error::refused, "ClickHouse: the result of '" + std::string(sql.substr(0, 200)) +
			                                    "' is larger than " + std::to_string(max_bytes) + " bytes");
		out += piece;
	};
	request({}, sql, &data);
	return out;
}

void Client::insert(std::string_view insert, std::string_view body) { request(insert, body, nullptr); }

void append_tsv(std::string &out, std::string_view s)
{
	for (const char c : s) {
		switch (c) {
		case '\\':
			out += "\\\\";
			break;
		case '\t':
			out += "\\t";
			break;
		case '\n':
			out += "\\n";
			break;
		case '\r':
			out += "\\r";
			break;
		case '\0':
			out += "\\0";
			break;
		case '\b':
			out += "\\b";
			break;
		case '\f':
			out += "\\f";
			break;
		default:
			out += c;
		}
	}
}

std::string quote_name(std::string_view s)
{
	std::string r = "`";
	for (const char c : s) {
		if (c == '`' || c == '\\')
			r += '\\';
		r += c;
	}
	r += '`';
	return r;
}

std::string quote_string(std::string_view s)
{
	std::string r = "'";
	for (const char c : s) {
		if (c == '\'' || c == '\\')
			r += '\\';
		r += c;
	}
	r += '\'';
	return r;
}

std::string unescape_tsv(std::string_view field, bool &null)
{
	null = field == "\\N";
	std::string r;
	if (null)
		return r;
	for (size_t i = 0; i < field.size(); ++i) {
		if (field[i] != '\\' || i + 1 == field.size()) {
			r += field[i];
			continue;
		}
		switch (const char e = field[++i]) {
		case 't':
			r += '\t';
			break;
		case 'n':
			r += '\n';
			break;
		case 'r':
			r += '\r';
			break;
		case '0':
			r += '\0';
			break;
		case 'b':
			r += '\b';
			break;
		case 'f':
			r += '\f';
			break;
		default:
			r += e;
		}
	}
	return r;
}

} // namespace tracery::clickhouse
