// The daemon's journal of the traces it writes: see trace_journal.hpp.
#include "daemon/trace_journal.hpp"

#include "base/ascii.hpp"
#include "base/fd.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <stdexcept>

namespace tracery::daemon {

namespace {

bool needs_escape(unsigned char c) { return c == '%' || c < 0x20 || c == 0x7f; }

void escape_into(std::string &out, std::string_view path)
{
	static const char hex[] = "0123456789ABCDEF";
	for (const char ch : path) {
		const auto c = static_cast<unsigned char>(ch);
		if (needs_escape(c)) {
			out += '%';
			out += hex[c >> 4];
			out += hex[c & 15];
		} else {
			out += ch;
		}
	}
}

// False if `in` has a bad escape or decodes to a NUL.
bool unescape(std::string_view in, std::string &out)
{
	for (size_t i = 0; i < in.size(); ++i) {
		if (in[i] != '%') {
			out += in[i];
			continue;
		}
		if (i + 2 >= in.size())
			return false;
		const int hi = base::hex_digit_value(in[i + 1]), lo = base::hex_digit_value(in[i + 2]);
		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
			return false;
		out += static_cast<char>(hi << 4 | lo);
		i += 2;
	}
	return true;
}

template <typename T>
bool parse_id(std::string_view s, T &out)
{
	const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
	return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}

bool parse_line(std::string_view line, JournalEntry &e)
{
	const size_t a = line.find(' ');
	if (a == std::string_view::npos)
		return false;
	const size_t b = line.find(' ', a + 1);
	if (b == std::string_view::npos)
		return false;
	if (!parse_id(line.substr(0, a), e.uid) || !parse_id(line.substr(a + 1, b - a - 1), e.gid))
		return false;
	e.dir.clear();
	return unescape(line.substr(b + 1), e.dir) && !e.dir.empty() && e.dir[0] == '/';
}

[[noreturn]] void fail(const std::string &what, const std::string &path)
{
	throw std::runtime_error("cannot " + what + " " + path + ": " + strerror(errno));
}

} // namespace

std::string format_journal(const std::vector<JournalEntry> &entries)
{
	std::string out;
	for (const JournalEntry &e : entries) {
		out += std::to_string(e.uid) + ' ' + std::to_string(e.gid) + ' ';
		escape_into(out, e.dir);
		out += '\n';
	}
	return out;
}

std::vector<JournalEntry> parse_journal(std::string_view text, size_t *skipped)
{
	std::vector<JournalEntry> out;
	*skipped = 0;
	while (!text.empty()) {
		const size_t nl = text.find('\n');
		const std::string_view line = text.substr(0, nl);
		text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
		if (line.empty())
			continue;
		JournalEntry e;
		if (parse_line(line, e))
			out.push_back(std::move(e));
		else
			++*skipped;
	}
	return out;
}

TraceJournal::TraceJournal(const std::string &rundir) : path_(rundir + "/" + kJournalName) {}

std::vector<JournalEntry> TraceJournal::read(size_t *skipped) const
{
	*skipped = 0;
	const base::Fd fd(::open(path_.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
	if (!fd) {
		if (errno == ENOENT)
			return {};
		fail("open", path_);
	}
	struct stat st;
	if (::fstat(fd.get(), &st) < 0)
		fail("stat", path_);
	if (!S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) > kMaxJournalBytes)
		throw std::runtime_error(path_ + " is not a journal of open traces (not a regular file of at most " +
		                         std::to_string(kMaxJournalBytes >> 20) + " MiB): remove it");
	std::string text(static_cast<size_t>(st.st_size), '\0');
	size_t done = 0;
	while (done < text.size()) {
		const ssize_t r = ::read(fd.get(), text.data() + done, text.size() - done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			fail("read", path_);
		if (r == 0)
			break; // shrank meanwhile: parse what there is
		done += static_cast<size_t>(r);
	}
	text.resize(done);
	return parse_journal(text, skipped);
}

void TraceJournal::write(const std::vector<JournalEntry> &entries) const
{
	if (entries.empty()) {
		if (::unlink(path_.c_str()) < 0 && errno != ENOENT)
			fail("remove", path_);
		return;
	}
	const std::string tmp = path_ + ".tmp";
	const std::string text = format_journal(entries);
	{
		const base::Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
		if (!fd)
			fail("create", tmp);
		size_t done = 0;
		while (done < text.size()) {
			const ssize_t r = ::write(fd.get(), text.data() + done, text.size() - done);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				if (r == 0)
					errno = EIO;
				const int err = errno;
				::unlink(tmp.c_str());
				errno = err;
				fail("write", tmp);
			}
			done += static_cast<size_t>(r);
		}
	}
	if (::rename(tmp.c_str(), path_.c_str()) < 0)
		fail("rename " + tmp + " to", path_);
}

} // namespace tracery::daemon
