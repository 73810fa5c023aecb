// kernel/tracefs.cpp — see tracefs.hpp.
#include "kernel/tracefs.hpp"

#include "filter/glob.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>
#include <utility>

namespace tracery::kernel {

namespace {

constexpr long kTracefsMagic = 0x74726163; // TRACEFS_MAGIC, linux/magic.h

bool is_tracefs(const char *path)
{
	struct statfs st {};
	return ::statfs(path, &st) == 0 && st.f_type == kTracefsMagic;
}

[[noreturn]] void fail(const std::string &what, int err)
{
	throw TracefsError("tracefs: " + what + ": " + errno_text(err), err);
}

std::string trim(std::string_view s)
{
	while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
		s.remove_suffix(1);
	return std::string(s);
}

std::string join_pids(std::span<const pid_t> pids)
{
	std::string s;
	for (const pid_t p : pids) {
		if (!s.empty())
			s += ' ';
		s += std::to_string(p);
	}
	return s;
}

} // namespace

std::string errno_text(int err)
{
	const char *name = ::strerrorname_np(err);
	return std::string(name ? name : "E?") + " (" + std::strerror(err) + ")";
}

Tracefs open_tracefs(bool mount_if_absent)
{
	if (is_tracefs(kTracefsPath))
		return {kTracefsPath, false};
	if (is_tracefs(kDebugfsTracingPath))
		return {kDebugfsTracingPath, false};
	if (!mount_if_absent)
		throw TracefsError("tracefs: not mounted (at " + std::string(kTracefsPath) + " or " +
		                           kDebugfsTracingPath + ")",
		                   ENOENT);
	if (::mount("nodev", kTracefsPath, "tracefs", 0, nullptr) != 0) {
		const int err = errno;
		std::string why = err == ENODEV ? "this kernel has no tracefs"
		                  : (err == EPERM || err == EACCES)
		                          ? "mounting it needs root (CAP_SYS_ADMIN)"
		                          : "mount -t tracefs nodev " + std::string(kTracefsPath) + " failed";
		throw TracefsError("tracefs: not mounted, and " + why + ": " + errno_text(err), err);
	}
	return {kTracefsPath, true};
}

std::string read_control(const std::string &path)
{
	base::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
	if (!fd)
		fail("open " + path, errno);
	std::string text;
	char buf[4096];
	for (;;) {
		const ssize_t n = ::read(fd.get(), buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			fail("read " + path, errno);
		if (n == 0)
			return text;
		text.append(buf, static_cast<size_t>(n));
	}
}

void write_control(const std::string &path, std::string_view value, bool append)
{
	base::Fd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC | (append ? O_APPEND : O_TRUNC)));
	if (!fd)
		fail("open " + path, errno);
	ssize_t n;
	do {
		n = ::write(fd.get(), value.data(), value.size());
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		fail("write '" + std::string(value) + "' to " + path, errno);
	if (static_cast<size_t>(n) != value.size())
		fail("write '" + std::string(value) + "' to " + path + " (short write)", EIO);
}

std::vector<Tracepoint> list_tracepoints(const std::string &root)
{
	const std::string text = read_control(root + "/available_events");
	std::vector<Tracepoint> out;
	size_t pos = 0;
	while (pos < text.size()) {
		size_t end = text.find('\n', pos);
		if (end == std::string::npos)
			end = text.size();
		const std::string_view line(text.data() + pos, end - pos);
		const size_t colon = line.find(':');
		if (colon != std::string_view::npos && colon > 0 && colon + 1 < line.size())
			out.push_back({std::string(line.substr(0, colon)), std::string(line.substr(colon + 1))});
		pos = end + 1;
	}
	std::sort(out.begin(), out.end());
	return out;
}

std::vector<std::string> list_syscalls(std::span<const Tracepoint> tracepoints)
{
	constexpr std::string_view kEnter = "sys_enter_", kExit = "sys_exit_";
	std::vector<std::string> entries, exits, out;
	for (const Tracepoint &tp : tracepoints) {
		if (tp.system != "syscalls")
			continue;
		if (tp.name.starts_with(kEnter))
			entries.push_back(tp.name.substr(kEnter.size()));
		else if (tp.name.starts_with(kExit))
			exits.push_back(tp.name.substr(kExit.size()));
	}
	std::sort(entries.begin(), entries.end());
	std::sort(exits.begin(), exits.end());
	std::set_intersection(entries.begin(), entries.end(), exits.begin(), exits.end(), std::back_inserter(out));
	return out;
}

std::vector<Tracepoint> match_tracepoints(std::span<const Tracepoint> tracepoints, std::string_view pattern)
{
	const size_t colon = pattern.find(':');
	const std::string_view system = colon == std::string_view::npos ? "*" : pattern.substr(0, colon);
	const std::string_view name = colon == std::string_view::npos ? pattern : pattern.substr(colon + 1);
	std::vector<Tracepoint> out;
	for (const Tracepoint &tp : tracepoints)
		if (filter::glob_match(system.data(), system.size(), tp.system.data(), tp.system.size()) &&
		    filter::glob_match(name.data(), name.size(), tp.name.data(), tp.name.size()))
			out.push_back(tp);
	return out;
}

std::string instance_name(pid_t owner, std::string_view session)
{
	std::string name = std::string(kInstancePrefix) + std::to_string(owner) + "-";
	for (const char c : session) {
		const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		                c == '_' || c == '.' || c == '-';
		name += ok ? c : '_';
	}
	return name;
}

std::vector<std::string> stale_instances(const std::string &root)
{
	const std::string dir = root + "/instances";
	DIR *d = ::opendir(dir.c_str());
	if (!d)
		fail("open " + dir, errno);
	std::vector<std::string> out;
	while (const dirent *e = ::readdir(d)) {
		const std::string_view name(e->d_name);
		if (!name.starts_with(kInstancePrefix))
			continue;
		const std::string_view rest = name.substr(kInstancePrefix.size());
		pid_t pid = 0;
		const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), pid);
		if (ec != std::errc() || pid <= 0 || end == rest.data() + rest.size() || *end != '-')
			continue;
		if (::kill(pid, 0) != 0 && errno == ESRCH)
			out.emplace_back(name);
	}
	::closedir(d);
	std::sort(out.begin(), out.end());
	return out;
}

bool remove_instance(const std::string &root, const std::string &name)
{
	const std::string path = root + "/instances/" + name;
	// ENOENT: gone; ENODEV: its files outlive an rmdir under way elsewhere.
	const auto gone = [](int err) { return err == ENOENT || err == ENODEV; };
	try {
		write_control(path + "/tracing_on", "0");
	} catch (const TracefsError &e) {
		if (gone(e.error()))
			return false;
		throw;
	}
	// rmdir fails with EBUSY while a file of the instance is open (a reader
	// thread closing its trace_pipe_raw): give it a moment.
	for (int attempt = 0;; ++attempt) {
		if (::rmdir(path.c_str()) == 0)
			return true;
		if (gone(errno))
			return false;
		if (errno != EBUSY || attempt == 50)
			fail("remove instance " + path, errno);
		const timespec pause{0, 10'000'000};
		::nanosleep(&pause, nullptr);
	}
}

Instance::Instance(std::string root, std::string name)
	: root_(std::move(root)), name_(std::move(name)), path_(root_ + "/instances/" + name_)
{
	if (::mkdir(path_.c_str(), 0700) != 0) {
		const int err = errno;
		path_.clear();
		const std::string where = root_ + "/instances/" + name_;
		if (err == EEXIST)
			fail("create instance " + where + " (an instance of that name exists)", err);
		if (err == EACCES || err == EPERM)
			fail("create instance " + where + " (kernel tracing needs root or write access to tracefs)",
			     err);
		fail("create instance " + where, err);
	}
}

Instance::~Instance()
{
	try {
		remove();
	} catch (const TracefsError &) {
		// Left behind: stale_instances() finds it (its owner will be gone).
	}
}

Instance::Instance(Instance &&o) noexcept
	: root_(std::move(o.root_)), name_(std::move(o.name_)), path_(std::exchange(o.path_, std::string()))
{
}

void Instance::remove()
{
	if (path_.empty())
		return;
	remove_instance(root_, name_);
	path_.clear();
}

std::vector<std::string> Instance::clocks() const
{
	std::vector<std::string> out;
	const std::string text = read_control(file("trace_clock"));
	size_t pos = 0;
	while (pos < text.size()) {
		const size_t end = std::min(text.find_first_of(" \n", pos), text.size());
		std::string word = text.substr(pos, end - pos);
		if (word.size() > 2 && word.front() == '[' && word.back() == ']')
			word = word.substr(1, word.size() - 2);
		if (!word.empty())
			out.push_back(std::move(word));
		pos = end + 1;
	}
	return out;
}

std::string Instance::clock() const
{
	const std::string text = read_control(file("trace_clock"));
	const size_t open = text.find('['), close = text.find(']');
	if (open == std::string::npos || close == std::string::npos || close < open)
		fail("no current clock in " + file("trace_clock"), EINVAL);
	return text.substr(open + 1, close - open - 1);
}

void Instance::set_clock(std::string_view clock) const
{
	const std::vector<std::string> offered = clocks();
	if (std::find(offered.begin(), offered.end(), clock) == offered.end()) {
		std::string list;
		for (const std::string &c : offered)
			list += (list.empty() ? "" : ", ") + c;
		fail("trace clock '" + std::string(clock) + "' is not one of this kernel's (" + list + ")", EINVAL);
	}
	write_control(file("trace_clock"), clock);
}

void Instance::set_buffer_size_kb(uint64_t kb) const
{
	if (kb == 0)
		fail("buffer size of 0 KiB for " + path_, EINVAL);
	write_control(file("buffer_size_kb"), std::to_string(kb));
}

uint64_t Instance::buffer_size_kb() const
{
	const std::string text = trim(read_control(file("buffer_size_kb")));
	uint64_t kb = 0;
	// "7 (expanded: 1408)" before the first resize: the number first.
	if (std::from_chars(text.data(), text.data() + text.size(), kb).ec != std::errc())
		fail("unreadable buffer_size_kb '" + text + "' in " + path_, EINVAL);
	return kb;
}

void Instance::enable_event(const Tracepoint &tp, bool enable) const
{
	write_control(file("events/" + tp.system + "/" + tp.name + "/enable"), enable ? "1" : "0");
}

void Instance::set_event_filter(const Tracepoint &tp, const std::string &filter) const
{
	write_control(file("events/" + tp.system + "/" + tp.name + "/filter"), filter.empty() ? "0" : filter);
}

void Instance::set_event_pids(std::span<const pid_t> pids, bool follow_children) const
{
	write_control(file("options/event-fork"), follow_children ? "1" : "0");
	// O_TRUNC clears the list; an empty write then leaves it empty.
	write_control(file("set_event_pid"), join_pids(pids));
}

void Instance::change_event_pids(std::span<const pid_t> before, std::span<const pid_t> after) const
{
	std::vector<pid_t> added, removed;
	for (const pid_t p : after)
		if (std::find(before.begin(), before.end(), p) == before.end())
			added.push_back(p);
	for (const pid_t p : before)
		if (std::find(after.begin(), after.end(), p) == after.end())
			removed.push_back(p);
	if (removed.empty())
		return add_event_pids(added);
	std::vector<pid_t> kept;
	for (const pid_t p : event_pids())
		if (std::find(removed.begin(), removed.end(), p) == removed.end() &&
		    std::find(added.begin(), added.end(), p) == added.end())
			kept.push_back(p);
	kept.insert(kept.end(), added.begin(), added.end());
	write_control(file("set_event_pid"), join_pids(kept));
}

std::vector<pid_t> Instance::event_pids() const
{
	// pids, one a line (bounded by the file's size)
	const std::string now = read_control(file("set_event_pid"));
	std::vector<pid_t> out;
	size_t pos = 0;
	while (pos < now.size()) {
		size_t end = now.find_first_of(" \n", pos);
		if (end == std::string::npos)
			end = now.size();
		pid_t p = 0;
		if (std::from_chars(now.data() + pos, now.data() + end, p).ec == std::errc() && p > 0)
			out.push_back(p);
		pos = end + 1;
	}
	return out;
}

void Instance::add_event_pids(std::span<const pid_t> pids) const
{
	if (!pids.empty())
		write_control(file("set_event_pid"), join_pids(pids), true);
}

void Instance::add_notrace_pids(std::span<const pid_t> tids) const
{
	if (!tids.empty())
		write_control(file("set_event_notrace_pid"), join_pids(tids), true);
}

void Instance::clear_notrace_pids() const { write_control(file("set_event_notrace_pid"), ""); }

void Instance::set_tracing_on(bool on) const { write_control(file("tracing_on"), on ? "1" : "0"); }

void Instance::set_overwrite(bool overwrite) const { write_control(file("options/overwrite"), overwrite ? "1" : "0"); }

std::vector<uint32_t> Instance::cpus() const
{
	const std::string dir = file("per_cpu");
	DIR *d = ::opendir(dir.c_str());
	if (!d)
		fail("open " + dir, errno);
	std::vector<uint32_t> out;
	while (const dirent *e = ::readdir(d)) {
		const std::string_view name(e->d_name);
		uint32_t cpu = 0;
		if (!name.starts_with("cpu"))
			continue;
		const auto [end, ec] = std::from_chars(name.data() + 3, name.data() + name.size(), cpu);
		if (ec == std::errc() && end == name.data() + name.size() && name.size() > 3)
			out.push_back(cpu);
	}
	::closedir(d);
	std::sort(out.begin(), out.end());
	return out;
}

std::string Instance::cpu_stats(uint32_t cpu) const
{
	return read_control(file("per_cpu/cpu" + std::to_string(cpu) + "/stats"));
}

base::Fd Instance::open_cpu_pipe(uint32_t cpu) const
{
	const std::string path = file("per_cpu/cpu" + std::to_string(cpu) + "/trace_pipe_raw");
	base::Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
	if (!fd)
		fail("open " + path, errno);
	return fd;
}

} // namespace tracery::kernel
