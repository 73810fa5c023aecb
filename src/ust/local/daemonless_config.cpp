// Parsing of the TRACERY_* environment variables: see daemonless_config.hpp.
#include "ust/local/daemonless_config.hpp"

#include "ust/payload_writer.hpp"

#include <sstream>

namespace tracery::ust {
namespace {

std::vector<std::string> split_list(const std::string &s)
{
	std::vector<std::string> out;
	std::stringstream in(s);
	std::string item;
	while (std::getline(in, item, ','))
		if (!item.empty())
			out.push_back(item);
	return out;
}

std::string bad(const char *var, const std::string &value, const char *fix)
{
	return std::string(var) + "='" + value + "' is not valid: " + fix;
}

} // namespace

std::optional<DaemonlessConfig> read_daemonless_config(const char *(*getenv_fn)(const char *), std::string *error)
{
	const char *out = getenv_fn("TRACERY_OUTPUT");
	if (!out)
		return std::nullopt;
	DaemonlessConfig c;
	c.output_dir = out;
	if (c.output_dir.empty()) {
		*error = bad("TRACERY_OUTPUT", out, "give the directory to write the trace to");
		return std::nullopt;
	}
	if (const char *ev = getenv_fn("TRACERY_EVENTS")) {
		c.patterns = split_list(ev);
		for (const auto &p : c.patterns) {
			if (p.find(':') == std::string::npos && p != "*") {
				*error =
					bad("TRACERY_EVENTS", ev,
				            "list patterns as provider:name, with * wildcards (e.g. 'app:*,lib:open')");
				return std::nullopt;
			}
		}
		if (c.patterns.empty()) {
			*error = bad("TRACERY_EVENTS", ev, "list at least one pattern such as 'app:*'");
			return std::nullopt;
		}
	}
	if (const char *m = getenv_fn("TRACERY_MODE")) {
		std::string mode = m;
		if (mode == "discard")
			c.mode = ringbuf::Mode::discard;
		else if (mode == "overwrite")
			c.mode = ringbuf::Mode::overwrite;
		else {
			*error = bad("TRACERY_MODE", mode, "use discard or overwrite");
			return std::nullopt;
		}
	}
	if (const char *s = getenv_fn("TRACERY_SUBBUF_SIZE")) {
		const auto v = base::parse_size(s);
		if (!v || !base::is_power_of_two(*v) || *v < 4096 || *v > (1u << 30)) {
			*error = bad("TRACERY_SUBBUF_SIZE", s, "use a power of two from 4096 to 1G, e.g. 64k or 1M");
			return std::nullopt;
		}
		c.subbuf_size = static_cast<uint32_t>(*v);
	}
	if (const char *n = getenv_fn("TRACERY_NUM_SUBBUF")) {
		const auto v = base::parse_size(n);
		if (!v || !base::is_power_of_two(*v) || *v < 2 || *v > 65536) {
			*error = bad("TRACERY_NUM_SUBBUF", n, "use a power of two from 2 to 65536, e.g. 8");
			return std::nullopt;
		}
		c.num_subbuf = static_cast<uint32_t>(*v);
	}
	if (const char *ctx = getenv_fn("TRACERY_CONTEXT")) {
		for (const auto &f : split_list(ctx)) {
			if (!event::set_user_context(c.context, f)) {
				*error = bad(
					"TRACERY_CONTEXT", ctx,
					"list any of vpid,vtid,procname and the others of `tracery add-context --list` "
					"with the domain user (e.g. vpid,vtid,perf:thread:page-fault)");
				return std::nullopt;
			}
		}
		if (const std::string why = event::perf_counters_unavailable(c.context); !why.empty()) {
			*error = bad("TRACERY_CONTEXT", ctx, why.c_str());
			return std::nullopt;
		}
	}
	// Read by payload_writer_for(); checked here so that a bad value leaves
	// the run untraced, as the others do.
	if (const char *j = getenv_fn("TRACERY_PAYLOAD_JIT"); j && !parse_payload_jit(j)) {
		*error = bad("TRACERY_PAYLOAD_JIT", j, kPayloadJitValues);
		return std::nullopt;
	}
	if (const char *f = getenv_fn("TRACERY_FILTER")) {
		auto rules = parse_filter_rules(f, error);
		if (!rules)
			return std::nullopt;
		c.filters = std::move(*rules);
	}
	return c;
}

} // namespace tracery::ust
