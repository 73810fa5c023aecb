// kernel/uprobes.cpp — see uprobes.hpp.
#include "kernel/uprobes.hpp"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <utility>

namespace tracery::kernel {

namespace {

constexpr size_t kMaxTracefsName = 64;
constexpr size_t kErrorLogLines = 2; // of error_log quoted in a refusal

bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

std::string hex(uint64_t v)
{
	char buf[24];
	std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
	return buf;
}

// The last lines of ROOT/error_log ("" if unreadable): the kernel's reason.
std::string kernel_reason(const std::string &root)
{
	std::string log;
	try {
		log = read_control(root + "/error_log");
	} catch (const TracefsError &) {
		return "";
	}
	while (!log.empty() && log.back() == '\n')
		log.pop_back();
	size_t at = log.size();
	for (size_t n = 0; n < kErrorLogLines * 2 && at != std::string::npos && at > 0; ++n)
		at = log.rfind('\n', at - 1);
	return at == std::string::npos ? log : log.substr(at + 1);
}

// GROUP and EVENT of a uprobe_events line "p:GROUP/EVENT ..." (false if not one).
bool parse_definition(std::string_view line, std::string_view &group, std::string_view &event)
{
	const size_t colon = line.find(':');
	const size_t slash = line.find('/');
	const size_t space = line.find(' ');
	if (colon == std::string_view::npos || slash == std::string_view::npos || space == std::string_view::npos ||
	    !(colon < slash && slash < space))
		return false;
	group = line.substr(colon + 1, slash - colon - 1);
	event = line.substr(slash + 1, space - slash - 1);
	return !group.empty() && !event.empty();
}

std::vector<std::pair<std::string, std::string>> definitions(const std::string &root)
{
	std::vector<std::pair<std::string, std::string>> out;
	const std::string text = read_control(root + "/uprobe_events");
	size_t pos = 0;
	while (pos < text.size()) {
		size_t end = text.find('\n', pos);
		if (end == std::string::npos)
			end = text.size();
		std::string_view group, event;
		if (parse_definition(std::string_view(text).substr(pos, end - pos), group, event))
			out.emplace_back(group, event);
		pos = end + 1;
	}
	return out;
}

// "-:GROUP/EVENT" (appended piece by piece: GCC 12 -O3's -Wrestrict false
// positive on "lit" + std::string).
std::string removal(const std::string &group, const std::string &event)
{
	std::string line = "-:";
	line += group;
	line += '/';
	line += event;
	return line;
}

} // namespace

std::string uprobe_group(pid_t owner, std::string_view label)
{
	std::string group = std::string(kUprobeGroupPrefix) + std::to_string(owner) + "_";
	for (const char c : label)
		group += name_char(c) ? c : '_';
	if (group.size() > kMaxTracefsName)
		group.resize(kMaxTracefsName);
	return group;
}

bool valid_event_name(std::string_view name)
{
	return !name.empty() && name.size() <= kMaxTracefsName && !(name[0] >= '0' && name[0] <= '9') &&
	       std::all_of(name.begin(), name.end(), name_char);
}

std::string uprobe_line(const std::string &group, const std::string &event, bool is_return, const std::string &path,
                        const ProbeSite &site)
{
	std::string line = is_return ? "r:" : "p:";
	line += group;
	line += '/';
	line += event;
	line += ' ';
	line += path;
	line += ':';
	line += hex(site.offset);
	if (site.ref_ctr_offset != 0) {
		line += '(';
		line += hex(site.ref_ctr_offset);
		line += ')';
	}
	if (!site.args.empty()) {
		line += ' ';
		line += args_text(site.args, ' ');
	}
	return line;
}

UprobeEvent::UprobeEvent(std::string root, std::string group, std::string event, const std::string &line)
	: root_(std::move(root)), group_(std::move(group)), event_(std::move(event))
{
	try {
		write_control(root_ + "/uprobe_events", line, true);
	} catch (const TracefsError &e) {
		std::string what = e.what();
		const std::string reason = kernel_reason(root_);
		if (!reason.empty()) {
			what += "; the kernel says: ";
			what += reason;
		}
		throw TracefsError(what, e.error());
	}
	defined_ = true;
}

UprobeEvent::~UprobeEvent()
{
	try {
		remove();
	} catch (const TracefsError &) {
		// Left behind: stale_uprobe_groups() finds it once its owner is gone.
	}
}

UprobeEvent::UprobeEvent(UprobeEvent &&o) noexcept
	: root_(std::move(o.root_)), group_(std::move(o.group_)), event_(std::move(o.event_)),
	  defined_(std::exchange(o.defined_, false))
{
}

void UprobeEvent::remove()
{
	if (!defined_)
		return;
	write_control(root_ + "/uprobe_events", removal(group_, event_), true);
	defined_ = false;
}

std::map<Tracepoint, uint64_t> uprobe_hits(const std::string &root)
{
	constexpr int kAttempts = 3;
	for (int attempt = 0; attempt < kAttempts; ++attempt) {
		const auto defined = definitions(root);
		const std::string profile = read_control(root + "/uprobe_profile");
		// "  FILENAME EVENT HITS": the last two words.
		std::map<Tracepoint, uint64_t> hits;
		size_t row = 0, pos = 0;
		bool agree = true;
		while (agree && pos < profile.size()) {
			size_t end = profile.find('\n', pos);
			if (end == std::string::npos)
				end = profile.size();
			std::string_view line = std::string_view(profile).substr(pos, end - pos);
			pos = end + 1;
			while (!line.empty() && line.back() == ' ')
				line.remove_suffix(1);
			if (line.empty())
				continue;
			const size_t count_at = line.rfind(' ');
			const std::string_view count = line.substr(count_at + 1);
			std::string_view rest = line.substr(0, count_at == std::string_view::npos ? 0 : count_at);
			while (!rest.empty() && rest.back() == ' ')
				rest.remove_suffix(1);
			const std::string_view event = rest.substr(rest.rfind(' ') + 1);
			uint64_t n = 0;
			agree = count_at != std::string_view::npos && row < defined.size() &&
			        defined[row].second == event &&
			        std::from_chars(count.data(), count.data() + count.size(), n).ec == std::errc();
			if (agree)
				hits[{defined[row].first, defined[row].second}] = n;
			++row;
		}
		if (agree && row == defined.size())
			return hits;
	}
	return {};
}

std::vector<std::string> stale_uprobe_groups(const std::string &root)
{
	std::vector<std::string> out;
	for (const auto &[group, event] : definitions(root)) {
		if (!group.starts_with(kUprobeGroupPrefix))
			continue;
		const std::string_view rest = std::string_view(group).substr(kUprobeGroupPrefix.size());
		pid_t pid = 0;
		const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), pid);
		if (ec != std::errc() || pid <= 0 || end == rest.data() + rest.size() || *end != '_')
			continue;
		if (::kill(pid, 0) != 0 && errno == ESRCH)
			out.push_back(group);
	}
	std::sort(out.begin(), out.end());
	out.erase(std::unique(out.begin(), out.end()), out.end());
	return out;
}

void remove_uprobe_group(const std::string &root, const std::string &group)
{
	for (const auto &[g, event] : definitions(root))
		if (g == group)
			write_control(root + "/uprobe_events", removal(g, event), true);
}

} // namespace tracery::kernel
