// The threads a kernel session's tracked attributes select: see
// process_filter.hpp.
#include "kernel/process_filter.hpp"

#include "base/fd.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <memory>
#include <string_view>

namespace tracery::kernel {

namespace {

constexpr size_t kMaxProcFile = 8192; // a status file is about 1.5 KiB; a map has at most 340 lines of 33 bytes

// A /proc file's text, at most kMaxProcFile bytes; nullopt if it cannot be read.
std::optional<std::string> read_proc_file(const std::string &path)
{
	base::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
	if (!fd)
		return std::nullopt;
	std::string text(kMaxProcFile, '\0');
	size_t used = 0;
	while (used < text.size()) {
		const ssize_t n = ::read(fd.get(), text.data() + used, text.size() - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return std::nullopt;
		if (n == 0)
			break;
		used += static_cast<size_t>(n);
	}
	text.resize(used);
	return text;
}

// The numbers after "KEY:\t" on the line of status text `status` that starts
// with it (tab or space separated), at most `max`; empty if there is no
// such line.
std::vector<uint64_t> status_numbers(std::string_view status, std::string_view key, size_t max)
{
	std::vector<uint64_t> out;
	size_t pos = 0;
	while (pos < status.size()) {
		size_t end = status.find('\n', pos);
		if (end == std::string_view::npos)
			end = status.size();
		const std::string_view line = status.substr(pos, end - pos);
		pos = end + 1;
		if (line.size() <= key.size() || !line.starts_with(key) || line[key.size()] != ':')
			continue;
		const char *p = line.data() + key.size() + 1, *const stop = line.data() + line.size();
		while (p < stop && out.size() < max) {
			while (p < stop && (*p == ' ' || *p == '\t'))
				++p;
			uint64_t v = 0;
			const auto r = std::from_chars(p, stop, v);
			if (r.ec != std::errc())
				break;
			out.push_back(v);
			p = r.ptr;
		}
		return out;
	}
	return out;
}

bool includes(const ProcessRules::Values &set, uint64_t v) { return !set || set->count(v) != 0; }

// Whether process `tgid` or one of its ancestors has one of `pids`.
bool has_listed_ancestor(const std::set<uint64_t> &pids, pid_t tgid, pid_t ppid, const std::string &proc_root)
{
	if (pids.count(static_cast<uint64_t>(tgid)))
		return true;
	pid_t p = ppid;
	for (int depth = 0; p > 0 && depth < kMaxAncestors; ++depth) {
		if (pids.count(static_cast<uint64_t>(p)))
			return true;
		const std::optional<std::string> status =
			read_proc_file(proc_root + "/" + std::to_string(p) + "/status");
		if (!status)
			return false;
		const std::vector<uint64_t> parent = status_numbers(*status, "PPid", 1);
		if (parent.empty())
			return false;
		p = static_cast<pid_t>(parent[0]);
	}
	return false;
}

// The numeric entries of directory `path`.
std::vector<pid_t> numeric_entries(const std::string &path)
{
	std::vector<pid_t> out;
	const std::unique_ptr<DIR, int (*)(DIR *)> dir(::opendir(path.c_str()), ::closedir);
	if (!dir)
		return out;
	while (const dirent *e = ::readdir(dir.get())) {
		const std::string_view name = e->d_name;
		pid_t v = 0;
		const auto r = std::from_chars(name.data(), name.data() + name.size(), v);
		if (r.ec == std::errc() && r.ptr == name.data() + name.size() && v > 0)
			out.push_back(v);
	}
	return out;
}

} // namespace

bool ProcessRules::everyone() const { return !pid && !vpid && !uid && !vuid && !gid && !vgid; }

bool ProcessRules::pids_only() const { return pid && !pid->empty() && !vpid && !uid && !vuid && !gid && !vgid; }

bool ProcessRules::closed_under_fork() const { return !vpid && (!pid || follow_children); }

uint64_t map_id_inside(const std::string &map_text, uint64_t outside)
{
	size_t pos = 0;
	while (pos < map_text.size()) {
		size_t end = map_text.find('\n', pos);
		if (end == std::string::npos)
			end = map_text.size();
		const std::string_view line(map_text.data() + pos, end - pos);
		pos = end + 1;
		uint64_t v[3] = {};
		const char *p = line.data(), *const stop = line.data() + line.size();
		int n = 0;
		for (; n < 3; ++n) {
			while (p < stop && *p == ' ')
				++p;
			const auto r = std::from_chars(p, stop, v[n]);
			if (r.ec != std::errc())
				break;
			p = r.ptr;
		}
		if (n == 3 && outside >= v[1] && outside - v[1] < v[2])
			return v[0] + (outside - v[1]);
	}
	return kOverflowId;
}

std::optional<TaskIds> read_task_ids(const std::string &task_dir)
{
	const std::optional<std::string> status = read_proc_file(task_dir + "/status");
	if (!status)
		return std::nullopt;
	const std::vector<uint64_t> pid = status_numbers(*status, "Pid", 1), tgid = status_numbers(*status, "Tgid", 1),
				    ppid = status_numbers(*status, "PPid", 1), uid = status_numbers(*status, "Uid", 1),
				    gid = status_numbers(*status, "Gid", 1);
	// NStgid: the thread group id in each pid namespace, the process's own last.
	const std::vector<uint64_t> nstgid = status_numbers(*status, "NStgid", 64);
	if (pid.empty() || tgid.empty() || ppid.empty() || uid.empty() || gid.empty())
		return std::nullopt;
	const std::optional<std::string> uid_map = read_proc_file(task_dir + "/uid_map"),
					 gid_map = read_proc_file(task_dir + "/gid_map");
	if (!uid_map || !gid_map)
		return std::nullopt;
	TaskIds ids;
	ids.tid = static_cast<pid_t>(pid[0]);
	ids.tgid = static_cast<pid_t>(tgid[0]);
	ids.ppid = static_cast<pid_t>(ppid[0]);
	ids.vpid = nstgid.empty() ? tgid[0] : nstgid.back();
	ids.uid = uid[0];
	ids.gid = gid[0];
	ids.vuid = map_id_inside(*uid_map, uid[0]);
	ids.vgid = map_id_inside(*gid_map, gid[0]);
	return ids;
}

bool task_matches(const ProcessRules &rules, const TaskIds &ids, const std::string &proc_root)
{
	if (!includes(rules.vpid, ids.vpid) || !includes(rules.uid, ids.uid) || !includes(rules.vuid, ids.vuid) ||
	    !includes(rules.gid, ids.gid) || !includes(rules.vgid, ids.vgid))
		return false;
	if (!rules.pid)
		return true;
	if (!rules.follow_children)
		return rules.pid->count(static_cast<uint64_t>(ids.tgid)) != 0;
	return has_listed_ancestor(*rules.pid, ids.tgid, ids.ppid, proc_root);
}

std::vector<pid_t> matching_tasks(const ProcessRules &rules, const std::string &proc_root)
{
	std::vector<pid_t> out;
	for (const pid_t process : numeric_entries(proc_root)) {
		const std::string dir = proc_root + "/" + std::to_string(process) + "/task";
		for (const pid_t tid : numeric_entries(dir)) {
			const std::optional<TaskIds> ids = read_task_ids(dir + "/" + std::to_string(tid));
			if (ids && task_matches(rules, *ids, proc_root))
				out.push_back(tid);
		}
	}
	std::sort(out.begin(), out.end());
	out.erase(std::unique(out.begin(), out.end()), out.end());
	return out;
}

std::vector<pid_t> listed_process_tasks(const ProcessRules &rules, const std::string &proc_root)
{
	std::vector<pid_t> out = matching_tasks(rules, proc_root);
	if (rules.pid)
		for (const uint64_t p : *rules.pid)
			if (p > 0 && p <= static_cast<uint64_t>(std::numeric_limits<pid_t>::max()))
				out.push_back(static_cast<pid_t>(p));
	std::sort(out.begin(), out.end());
	out.erase(std::unique(out.begin(), out.end()), out.end());
	return out;
}

} // namespace tracery::kernel
