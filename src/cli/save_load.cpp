// Sessions saved to files and loaded from them, and the current session
// chosen: see save_load.hpp.
#include "cli/save_load.hpp"

#include "cli/client.hpp"
#include "cli/current.hpp"
#include "cli/verbs.hpp"

#include "ctl/request_inputs.hpp"

#include "base/whole_file.hpp"
#include "control/paths.hpp"
#include "control/relay_protocol.hpp"
#include "control/relay_url.hpp"
#include "control/session_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace tracery::cli {

namespace {

// At most this many files of a directory are read by `load` (names sorted).
constexpr size_t kMaxFilesRead = 1024;

bool is_directory(const std::string &path)
{
	struct stat st;
	return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void make_directories(const std::string &dir)
{
	for (size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
		const std::string part = dir.substr(0, slash);
		if (mkdir(part.c_str(), 0700) != 0 && errno != EEXIST)
			throw CliError("cannot create " + part + ": " + strerror(errno) +
			               "; give another --output-path");
		if (slash == std::string::npos)
			return;
	}
}

void write_file(const std::string &path, const std::string &text, bool force)
{
	struct stat st;
	if (!force && lstat(path.c_str(), &st) == 0)
		throw CliError(path + " exists: save over it with -f, or give another --output-path");
	const std::string tmp = path + ".tmp" + std::to_string(getpid());
	const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		throw CliError("cannot write " + tmp + ": " + strerror(errno));
	const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
	const int err = errno;
	if (close(fd) != 0 || !ok || rename(tmp.c_str(), path.c_str()) != 0) {
		const std::string why = strerror(ok ? errno : err);
		unlink(tmp.c_str());
		throw CliError("cannot write " + path + ": " + why);
	}
}

// The session files of a directory (FILE.json), sorted.
std::vector<std::string> files_in(const std::string &dir)
{
	std::vector<std::string> files;
	DIR *d = opendir(dir.c_str());
	if (!d)
		return files;
	const size_t suffix = strlen(control::kSessionFileSuffix);
	while (dirent *e = readdir(d)) {
		const std::string name = e->d_name;
		if (name[0] != '.' && name.size() > suffix &&
		    name.compare(name.size() - suffix, suffix, control::kSessionFileSuffix) == 0)
			files.push_back(dir + "/" + name);
	}
	closedir(d);
	std::sort(files.begin(), files.end());
	if (files.size() > kMaxFilesRead)
		throw CliError(dir + " holds " + std::to_string(files.size()) + " session files, more than the " +
		               std::to_string(kMaxFilesRead) + " `load` reads: give one with --input-path FILE");
	return files;
}

control::SavedSession read_session_file(const std::string &path)
{
	base::WholeFileRules rules;
	rules.max_size = control::kMaxSessionFileBytes;
	rules.what = "a session file";
	std::string text;
	if (std::string why = base::read_whole_file(path, rules, &text); !why.empty())
		throw CliError(why);
	try {
		return control::parse_session_file(text);
	} catch (const control::DecodeError &e) {
		throw CliError(path + ": " + e.what());
	}
}

// Where `load` looks without --input-path: the user's directory, then the
// system's (lttng load's order).
std::vector<std::string> default_input_dirs()
{
	std::vector<std::string> dirs{control::default_sessions_dir()};
	if (dirs[0] != control::kSystemSessionsDir && !getenv("TRACERY_SESSIONS_DIR"))
		dirs.emplace_back(control::kSystemSessionsDir);
	return dirs;
}

// The files to load: (path, session) pairs.
std::vector<std::pair<std::string, control::SavedSession>> sessions_to_load(const SaveLoadArgs &a)
{
	std::vector<std::string> dirs;
	std::vector<std::pair<std::string, control::SavedSession>> out;
	if (!a.path.empty()) {
		const std::string path = ctl::absolute_path(a.path);
		if (!is_directory(path)) {
			out.emplace_back(path, read_session_file(path));
			if (!a.session.empty() && out[0].second.name != a.session)
				throw CliError(path + " holds session '" + out[0].second.name + "', not '" + a.session +
				               "'");
			return out;
		}
		dirs.push_back(path);
	} else {
		dirs = default_input_dirs();
	}
	const bool every = a.session.empty();
	for (const std::string &dir : dirs) {
		if (!every) {
			// NAME.json first, else any file of the directory holding it.
			const std::string named = dir + "/" + a.session + control::kSessionFileSuffix;
			if (access(named.c_str(), F_OK) == 0) {
				control::SavedSession s = read_session_file(named);
				if (s.name == a.session)
					return {{named, std::move(s)}};
			}
		}
		for (const std::string &file : files_in(dir)) {
			control::SavedSession s = read_session_file(file);
			const bool seen = std::any_of(out.begin(), out.end(),
			                              [&](const auto &loaded) { return loaded.second.name == s.name; });
			if (every ? !seen : s.name == a.session) {
				out.emplace_back(file, std::move(s));
				if (!every)
					return out;
			}
		}
	}
	if (out.empty()) {
		std::string where;
		for (const std::string &dir : dirs)
			where += (where.empty() ? "" : " or ") + dir;
		throw CliError((every ? std::string("no session file") : "no session '" + a.session + "'") + " in " +
		               where + ": save one with `tracery save`, or give --input-path");
	}
	return out;
}

// load --override-url: a directory (path or file://) or a relay (net://).
void override_url(control::SavedSession &s, const std::string &url)
{
	if (url.rfind("net://", 0) == 0) {
		std::string why;
		if (!control::relay::parse_relay_url(url, control::relay::kDefaultPort, &why))
			throw CliError("--override-url: " + why);
		s.relay = control::SavedRelay{url, s.relay ? s.relay->live_period_ns : std::nullopt,
		                              s.relay && s.relay->public_live};
		s.output.reset();
		return;
	}
	const std::string path = url.rfind("file://", 0) == 0 ? url.substr(7) : url;
	if (path.empty())
		throw CliError("--override-url: give a directory, file://DIR or net://HOST[:PORT]");
	s.output = ctl::absolute_path(path);
	s.relay.reset();
}

} // namespace

int verb_save(const SaveLoadArgs &a)
{
	control::Save req;
	if (a.all) {
		if (!a.session.empty())
			throw CliError("--all and a session name exclude each other: give one or the other");
		req.all = true;
	} else {
		req.session = session_or_current(a.session);
	}
	const control::SaveReply r = request(req);
	if (r.sessions.empty()) {
		printf("No session to save\n");
		return 0;
	}
	const std::string dir = a.path.empty() ? control::default_sessions_dir() : ctl::absolute_path(a.path);
	make_directories(dir);
	for (const control::SavedSession &s : r.sessions) {
		const std::string path = dir + "/" + s.name + control::kSessionFileSuffix;
		write_file(path, control::session_file_text(s), a.force);
		printf("Session '%s' saved to %s\n", s.name.c_str(), path.c_str());
	}
	return 0;
}

int verb_load(const SaveLoadArgs &a)
{
	if (a.all && !a.session.empty())
		throw CliError("--all and a session name exclude each other: give one or the other");
	auto sessions = sessions_to_load(a);
	if (sessions.size() > 1 && (!a.override_name.empty() || !a.override_url.empty()))
		throw CliError("--override-name and --override-url apply to one session, and " +
		               std::to_string(sessions.size()) + " are to be loaded: name one");
	int failed = 0;
	for (auto &[path, s] : sessions) {
		if (!a.override_name.empty())
			s.name = a.override_name;
		if (!a.override_url.empty())
			override_url(s, a.override_url);
		try {
			if (a.force) {
				try {
					request(control::Destroy{std::nullopt, s.name});
					forget_current_session(s.name);
				} catch (const CliError &) {
					// no such session: nothing to replace
				}
			}
			const control::LoadReply r = request(control::Load{s, path, std::nullopt});
			printf("Session '%s' loaded from %s%s; traces go to %s\n", r.session.c_str(), path.c_str(),
			       r.started ? " and started" : "", r.output.empty() ? "the relay" : r.output.c_str());
			if (sessions.size() == 1)
				set_current_session(r.session);
		} catch (const CliError &e) {
			if (sessions.size() == 1)
				throw;
			fprintf(stderr, "tracery: %s\n", e.what());
			failed++;
		}
	}
	return failed ? 1 : 0;
}

int verb_set_session(const std::string &name)
{
	request(control::Status{{name}}); // it exists, and is the user's
	set_current_session(name);
	printf("Session '%s' is now the current session\n", name.c_str());
	return 0;
}

} // namespace tracery::cli
