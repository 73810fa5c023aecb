// `track` and `untrack`'s request and the rules shown: see tracking.hpp
// (their options are main.cpp's).
#include "cli/tracking.hpp"

#include "cli/client.hpp"
#include "cli/verbs.hpp"

#include <grp.h>
#include <pwd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>

namespace tracery::cli {

namespace {

const Attribute &attribute(const std::string &name)
{
	for (const Attribute &a : kAttributes)
		if (name == a.name)
			return a;
	throw CliError("unknown process attribute '" + name + "'"); // not reached: the options name them
}

// A number: digits only, no sign or space, below 2^32.
bool parse_id(const std::string &text, uint64_t &out)
{
	if (text.empty() || text.size() > 10)
		return false;
	for (const char c : text)
		if (!isdigit(static_cast<unsigned char>(c)))
			return false;
	out = strtoull(text.c_str(), nullptr, 10);
	return out <= UINT32_MAX;
}

// A user or group name, resolved here (as lttng's session daemon resolves it).
uint64_t id_of_name(const Attribute &a, const std::string &name)
{
	std::vector<char> buf(16384);
	if (a.kind == Attribute::user) {
		passwd pw, *found = nullptr;
		if (getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found) == 0 && found)
			return pw.pw_uid;
	} else {
		group gr, *found = nullptr;
		if (getgrnam_r(name.c_str(), &gr, buf.data(), buf.size(), &found) == 0 && found)
			return gr.gr_gid;
	}
	throw CliError(std::string("bad --") + a.name + " '" + name + "': no " +
	               (a.kind == Attribute::user ? "user" : "group") + " of that name; give ids or names");
}

uint64_t value_of(const Attribute &a, const std::string &text)
{
	uint64_t v = 0;
	if (parse_id(text, v) && (v > 0 || a.kind != Attribute::process))
		return v;
	if (a.kind != Attribute::process && !text.empty() && !isdigit(static_cast<unsigned char>(text[0])))
		return id_of_name(a, text);
	throw CliError(std::string("bad --") + a.name + " '" + text + "': give " +
	               (a.kind == Attribute::process ? "process ids" : "ids or names") + ", comma-separated (e.g. --" +
	               a.name + "=" + (a.kind == Attribute::process ? "1234,5678" : "1000") + ")");
}

std::string values_text(const control::ProcessAttrRule &rule)
{
	if (rule.all)
		return "all";
	if (rule.values.empty())
		return "none";
	std::string out;
	for (const uint64_t v : rule.values) {
		if (!out.empty())
			out += ", ";
		out += std::to_string(v);
	}
	return out;
}

} // namespace

control::Tracking tracking_request(const TrackingArgs &args, bool kernel, bool untrack, std::string session)
{
	const char *verb = untrack ? "untrack" : "track";
	control::Tracking req;
	req.session = std::move(session);
	req.domain = kernel ? "kernel" : "user";
	if (args.given.empty())
		throw CliError(std::string("nothing to ") + verb + ": give " +
		               (kernel ? "--pid, --vpid, --uid, --vuid, --gid or --vgid" : "--vpid, --vuid or --vgid") +
		               " with ids (or bare, with --all)");
	for (const auto &[name, texts] : args.given) {
		const Attribute &a = attribute(name);
		if (a.kernel_only && !kernel)
			throw CliError(std::string("--") + a.name +
			               " is the kernel domain's (-k): user space programs are " +
			               "tracked by --vpid, --vuid and --vgid");
		control::TrackingChange change{a.name, false, {}};
		for (const std::string &v : split_commas(texts))
			change.values.push_back(value_of(a, v));
		if (change.values.empty() != args.all)
			throw CliError(args.all ? std::string("--all goes with bare attributes (--all --") + a.name +
			                                  "), not with values"
			                        : std::string("no value given for --") + a.name + ": give --" + a.name +
			                                  "=ID[,ID...], or --all --" + a.name);
		change.all = args.all;
		req.changes.push_back(std::move(change));
	}
	if (args.follow_children) {
		const bool pid_given = std::any_of(args.given.begin(), args.given.end(),
		                                   [](const auto &g) { return g.first == "pid"; });
		if (!kernel || !pid_given)
			throw CliError("--follow-children and --no-follow-children go with -k --pid");
		req.follow_children = args.follow_children;
	}
	return req;
}

void print_tracking(const control::DomainTracking &tracking, const char *indent)
{
	printf("%stracked process attributes (%s):\n", indent, tracking.domain == "kernel" ? "kernel" : "user space");
	for (const control::ProcessAttrRule &rule : tracking.rules) {
		const char *title = rule.attribute.c_str();
		for (const Attribute &a : kAttributes)
			if (rule.attribute == a.name)
				title = a.title;
		printf("%s  %-21s %s%s\n", indent, (std::string(title) + ":").c_str(), values_text(rule).c_str(),
		       rule.attribute == "pid" && !rule.all && !rule.values.empty() &&
		                       tracking.follow_children.value_or(false)
		               ? " and their descendants"
		               : "");
	}
}

} // namespace tracery::cli
