// analysis/text_view.cpp — babeltrace2's text format over the reader's merged
// items (see text_view.hpp).
#include "analysis/text_view.hpp"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <cstring>
#include <ctime>
#include <stdexcept>

#include "analysis/view_filter.hpp"
#include "ctf/reader/read_error.hpp"
#include "ctf/reader/trace_reader.hpp"
#include "filter/glob.hpp"

namespace tracery::analysis {

namespace reader = ctf::reader;
using reader::Op;
using reader::OpKind;
using reader::Plan;
using reader::Value;

namespace {

constexpr int64_t kNsPerS = 1000000000;

// Output through a large buffer and write(2); EPIPE ends the output.
class Out {
public:
	explicit Out(int fd) : fd_(fd) { buf_.reserve(kFlushAt + 4096); }
	std::string &buf() { return buf_; }
	bool closed() const { return closed_; }
	void maybe_flush()
	{
		if (buf_.size() >= kFlushAt)
			flush();
	}
	void flush()
	{
		size_t done = 0;
		while (!closed_ && done < buf_.size()) {
			const ssize_t n = ::write(fd_, buf_.data() + done, buf_.size() - done);
			if (n < 0) {
				if (errno == EINTR)
					continue;
				if (errno == EPIPE) {
					closed_ = true;
					break;
				}
				throw std::runtime_error(std::string("cannot write the output: ") + strerror(errno));
			}
			done += static_cast<size_t>(n);
		}
		buf_.clear();
	}

private:
	static constexpr size_t kFlushAt = size_t{1} << 16;
	int fd_;
	bool closed_ = false;
	std::string buf_;
};

void append_u64(std::string &o, uint64_t v)
{
	char b[24];
	auto r = std::to_chars(b, b + sizeof b, v);
	o.append(b, r.ptr);
}
void append_i64(std::string &o, int64_t v)
{
	char b[24];
	auto r = std::to_chars(b, b + sizeof b, v);
	o.append(b, r.ptr);
}
void append_padded(std::string &o, uint64_t v, int width)
{
	char b[24];
	auto r = std::to_chars(b, b + sizeof b, v);
	for (auto n = r.ptr - b; n < width; ++n)
		o += '0';
	o.append(b, r.ptr);
}

// babeltrace2's string escapes.
void append_escaped(std::string &o, const char *s, size_t n)
{
	o += '"';
	for (size_t i = 0; i < n; ++i) {
		const auto c = static_cast<unsigned char>(s[i]);
		switch (c) {
		case '\\':
			o += "\\\\";
			continue;
		case '\'':
			o += "\\'";
			continue;
		case '"':
			o += "\\\"";
			continue;
		case '?':
			o += "\\?";
			continue;
		default:
			break;
		}
		if (c >= 0x20 && c != 0x7f) {
			o += static_cast<char>(c);
			continue;
		}
		switch (c) {
		case '\a':
			o += "\\a";
			break;
		case '\b':
			o += "\\b";
			break;
		case 0x1b:
			o += "\\e";
			break;
		case '\f':
			o += "\\f";
			break;
		case '\n':
			o += "\\n";
			break;
		case '\r':
			o += "\\r";
			break;
		case '\t':
			o += "\\t";
			break;
		case '\v':
			o += "\\v";
			break;
		default: {
			char b[8];
			snprintf(b, sizeof b, "\\x%02x", c);
			o += b;
		}
		}
	}
	o += '"';
}

uint64_t low_bits(uint64_t v, unsigned bits) { return bits < 64 ? v & ((uint64_t{1} << bits) - 1) : v; }

class Printer {
public:
	Printer(std::string &o, const ViewOptions &opt) : o_(o), opt_(opt) {}

	// HH:MM:SS.nnnnnnnnn in local time (seconds.ns before the epoch).
	void time(int64_t ns)
	{
		int64_t s = ns / kNsPerS, sub = ns % kNsPerS;
		if (ns < 0) {
			// babeltrace2 warns once and prints -S.N
			if (!warned_negative_) {
				fprintf(stderr,
				        "[warning] Fallback to [sec.ns] to print negative time value. Use --clock-seconds.\n");
				warned_negative_ = true;
			}
			const uint64_t a = static_cast<uint64_t>(-(ns + 1)) + 1;
			o_ += '-';
			append_u64(o_, a / kNsPerS);
			o_ += '.';
			append_padded(o_, a % kNsPerS, 9);
			return;
		}
		if (s != cached_s_) {
			const auto t = static_cast<time_t>(s);
			struct tm tm;
			if (!localtime_r(&t, &tm)) {
				append_u64(o_, static_cast<uint64_t>(s));
				o_ += '.';
				append_padded(o_, static_cast<uint64_t>(sub), 9);
				return;
			}
			char b[16];
			snprintf(b, sizeof b, "%02d:%02d:%02d.", tm.tm_hour, tm.tm_min, tm.tm_sec);
			cached_hms_ = b;
			cached_s_ = s;
		}
		o_ += cached_hms_;
		append_padded(o_, static_cast<uint64_t>(sub), 9);
	}

	void integer(const Op &op, uint64_t raw)
	{
		const reader::FieldType &t = *op.type;
		switch (t.base) {
		case reader::Base::dec:
			if (t.is_signed)
				append_i64(o_, static_cast<int64_t>(raw));
			else
				append_u64(o_, raw);
			break;
		case reader::Base::hex: {
			// the value's bits rounded up to whole hex digits
			const uint64_t v = low_bits(raw, (t.size + 3) & ~3u);
			char b[24];
			snprintf(b, sizeof b, "0x%" PRIX64, v);
			o_ += b;
			break;
		}
		case reader::Base::oct: {
			// a negative value's bits rounded up to whole octal digits
			const uint64_t v = t.is_signed ? low_bits(raw, ((t.size - 1) / 3 + 1) * 3) : raw;
			char b[32];
			snprintf(b, sizeof b, "0%" PRIo64, v);
			o_ += b;
			break;
		}
		case reader::Base::bin:
			o_ += "0b";
			for (unsigned i = t.size; i-- > 0;)
				o_ += (raw >> i) & 1 ? '1' : '0';
			break;
		}
	}

	// Prints the value of op i at values[v]; returns the next value index.
	size_t field(const Plan &plan, uint32_t i, const Value *values, size_t v)
	{
		const Op &op = plan.ops[i];
		const Value &val = values[v];
		switch (op.kind) {
		case OpKind::u8:
		case OpKind::u16:
		case OpKind::u32:
		case OpKind::u64:
		case OpKind::integer:
			if (op.type->kind == reader::TypeKind::enumeration) {
				o_ += "( ";
				bool any = false;
				reader::for_each_enum_label(*op.type, val.u, [&](const std::string &label) {
					if (any)
						o_ += ", ";
					append_escaped(o_, label.data(), label.size());
					any = true;
				});
				if (!any)
					o_ += "<unknown>";
				o_ += " : container = ";
				integer(op, val.u);
				o_ += " )";
			} else {
				integer(op, val.u);
			}
			return v + 1;
		case OpKind::float32:
		case OpKind::float64: {
			char b[64];
			snprintf(b, sizeof b, "%g", val.f);
			o_ += b;
			return v + 1;
		}
		case OpKind::string:
		case OpKind::text_array:
		case OpKind::text_sequence:
			append_escaped(o_, val.s, val.n);
			return v + 1;
		case OpKind::structure:
			return structure(plan, i, values, v, false);
		case OpKind::array:
		case OpKind::sequence: {
			o_ += '[';
			size_t w = v + 1;
			for (uint64_t k = 0; k < val.n; ++k) {
				o_ += k ? ", [" : " [";
				append_u64(o_, k);
				o_ += "] = ";
				w = field(plan, i + 1, values, w);
			}
			o_ += " ]";
			return w;
		}
		case OpKind::variant: {
			o_ += "{ ";
			const size_t w = field(plan, plan.selectors[op.table].option_ops[val.n], values, v + 1);
			o_ += " }";
			return w;
		}
		}
		return v + 1;
	}

	bool wanted(std::string_view shown) const
	{
		if (opt_.fields.empty())
			return true;
		for (const std::string &f : opt_.fields)
			if (f == shown)
				return true;
		return false;
	}
	static std::string_view shown_name(const std::string &name)
	{
		std::string_view n = name;
		if (!n.empty() && n[0] == '_')
			n.remove_prefix(1);
		return n;
	}

	// "{ a = 1, b = 2 }" of the members shown (at a scope's root, also only
	// those --fields names).
	size_t structure(const Plan &plan, uint32_t i, const Value *values, size_t v, bool root)
	{
		const Op &op = plan.ops[i];
		o_ += '{';
		size_t w = v + 1;
		uint32_t c = i + 1;
		bool first = true;
		for (uint32_t k = 0; k < op.count; ++k) {
			const Op &m = plan.ops[c];
			const std::string_view name = shown_name(*m.name);
			if (m.shown && (!root || opt_.fields.empty() || wanted(name))) {
				o_ += first ? " " : ", ";
				first = false;
				o_ += name;
				o_ += " = ";
				w = field(plan, c, values, w);
			} else {
				w = reader::skip_values(plan, c, values, w);
			}
			c = m.next;
		}
		o_ += " }";
		return w;
	}

	// Whether a scope is shown: babeltrace2 shows a scope with a member it
	// shows, or with no member at all ("{ }"); --fields hides the others.
	bool scope_shows(const Plan &plan) const
	{
		if (plan.empty())
			return false;
		if (plan.ops[0].count == 0)
			return opt_.fields.empty();
		uint32_t c = 1;
		for (uint32_t k = 0; k < plan.ops[0].count; ++k) {
			const Op &m = plan.ops[c];
			if (m.shown && wanted(shown_name(*m.name)))
				return true;
			c = m.next;
		}
		return false;
	}

	void scope(const Plan &plan, std::span<const Value> values, bool &start_line)
	{
		if (!scope_shows(plan))
			return;
		if (!start_line)
			o_ += ", ";
		start_line = false;
		structure(plan, 0, values.data(), 0, true);
	}

	void event(const reader::Item &it)
	{
		const reader::Stream &s = *it.stream;
		if (s.has_clock()) {
			o_ += '[';
			time(it.ns);
			o_ += "] (";
			if (have_last_) {
				const uint64_t d = static_cast<uint64_t>(it.ns) - static_cast<uint64_t>(last_ns_);
				o_ += '+';
				append_u64(o_, d / kNsPerS);
				o_ += '.';
				append_padded(o_, d % kNsPerS, 9);
			} else {
				o_ += "+?.?????????";
			}
			o_ += ") ";
			last_ns_ = it.ns;
			have_last_ = true;
		}
		const reader::Trace &t = s.trace();
		if (t.has_hostname) {
			o_ += t.hostname;
			o_ += ' ';
		}
		o_ += it.event->cls->name;
		o_ += ": ";
		bool start_line = true;
		scope(s.plans().packet_context, it.packet_context, start_line);
		scope(s.plans().event_context, it.stream_context, start_line);
		scope(it.event->context, it.context, start_line);
		scope(it.event->fields, it.fields, start_line);
		o_ += '\n';
	}

	void discarded(const reader::Item &it, FILE *err)
	{
		const reader::Stream &s = *it.stream;
		std::string line = "WARNING: Tracer discarded ";
		append_u64(line, it.count);
		line += it.kind == reader::ItemKind::discarded_events ? " event" : " packet";
		if (it.count != 1)
			line += 's';
		line += ' ';
		if (it.has_range) {
			std::string saved;
			saved.swap(o_);
			line += "between [";
			time(it.ns);
			line += o_;
			o_.clear();
			line += "] and [";
			time(it.end_ns);
			line += o_;
			line += ']';
			o_.swap(saved);
		} else {
			line += "(unknown time range)";
		}
		const reader::Trace &t = s.trace();
		line += " in trace \"";
		line += t.name;
		line += "\" ";
		if (t.has_uuid) {
			char b[64];
			const uint8_t *u = t.uuid;
			snprintf(b, sizeof b,
			         "(UUID: %02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x) ", u[0],
			         u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
			         u[14], u[15]);
			line += b;
		} else {
			line += "(no UUID) ";
		}
		line += "within stream \"";
		line += s.name();
		line += "\" (stream class ID: ";
		append_u64(line, s.class_id());
		line += ", stream ID: ";
		append_u64(line, s.id());
		line += ").\n";
		fwrite(line.data(), 1, line.size(), err);
	}

private:
	std::string &o_;
	const ViewOptions &opt_;
	int64_t cached_s_ = INT64_MIN;
	std::string cached_hms_;
	int64_t last_ns_ = 0;
	bool have_last_ = false;
	bool warned_negative_ = false;
};

bool name_wanted(const std::vector<std::string> &globs, const std::string &name)
{
	if (globs.empty())
		return true;
	for (const std::string &g : globs)
		if (filter::glob_match(g.data(), g.size(), name.data(), name.size()))
			return true;
	return false;
}

} // namespace

namespace {

// The ns of the digits after a decimal point (1 to 9 of them, up to end).
std::optional<uint64_t> fraction_ns(const char *f, const char *end)
{
	uint64_t frac = 0;
	int digits = 0;
	for (; f < end && *f >= '0' && *f <= '9' && digits < 9; ++f, ++digits)
		frac = frac * 10 + static_cast<uint64_t>(*f - '0');
	if (f != end || digits == 0)
		return std::nullopt;
	for (; digits < 9; ++digits)
		frac *= 10;
	return frac;
}

} // namespace

std::optional<int64_t> parse_time(const std::string &text, std::optional<int64_t> first_ns)
{
	const char *p = text.c_str();
	const char *end = p + text.size();
	if (text.empty())
		return std::nullopt;
	// plain integer (ns) or seconds with a fraction
	{
		bool neg = *p == '-';
		const char *q = neg ? p + 1 : p;
		uint64_t whole = 0;
		auto r = std::from_chars(q, end, whole);
		if (r.ec == std::errc() && r.ptr == end)
			return neg ? -static_cast<int64_t>(whole) : static_cast<int64_t>(whole);
		if (r.ec == std::errc() && *r.ptr == '.' && text.find(':') == std::string::npos) {
			const auto frac = fraction_ns(r.ptr + 1, end);
			if (!frac)
				return std::nullopt;
			const int64_t v = static_cast<int64_t>(whole) * kNsPerS + static_cast<int64_t>(*frac);
			return neg ? -v : v;
		}
	}
	struct tm tm {};
	int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0, n = 0;
	const char *rest = nullptr;
	if (sscanf(p, "%4d-%2d-%2d %2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &n) == 6) {
		rest = p + n;
		tm.tm_year = y - 1900;
		tm.tm_mon = mo - 1;
		tm.tm_mday = d;
	} else if (sscanf(p, "%2d:%2d:%2d%n", &h, &mi, &s, &n) == 3) {
		rest = p + n;
		if (!first_ns)
			return std::nullopt;
		const auto t = static_cast<time_t>(*first_ns / kNsPerS);
		if (!localtime_r(&t, &tm))
			return std::nullopt;
	} else {
		return std::nullopt;
	}
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = s;
	tm.tm_isdst = -1;
	uint64_t frac = 0;
	if (rest < end) {
		if (*rest != '.')
			return std::nullopt;
		const auto f = fraction_ns(rest + 1, end);
		if (!f)
			return std::nullopt;
		frac = *f;
	}
	const time_t secs = mktime(&tm);
	if (secs == static_cast<time_t>(-1))
		return std::nullopt;
	return static_cast<int64_t>(secs) * kNsPerS + static_cast<int64_t>(frac);
}

ViewStats view_traces(const std::vector<ViewInput> &inputs, const ViewOptions &options, int out_fd, FILE *err)
{
	std::optional<ViewFilter> filter; // a bad expression is said before the traces are read
	if (!options.filter.empty())
		filter.emplace(options.filter);
	reader::TraceSet set;
	for (const ViewInput &in : inputs)
		set.add_trace(in.dir, in.name_suffix);
	if (filter)
		filter->bind(set, [&](const std::string &name) { return name_wanted(options.names, name); });
	set.start();
	Out out(out_fd);
	Printer printer(out.buf(), options);
	ViewStats stats;
	std::optional<int64_t> begin, end;
	bool resolved = options.begin.empty() && options.end.empty();
	while (const reader::Item *it = set.next()) {
		if (!resolved) {
			const auto bound = [&](const std::string &s, const char *what) -> std::optional<int64_t> {
				if (s.empty())
					return std::nullopt;
				auto v = parse_time(s, it->ns);
				if (!v)
					throw std::invalid_argument(
						std::string("cannot read the ") + what + " time '" + s +
						"': give HH:MM:SS[.NNNNNNNNN], YYYY-MM-DD HH:MM:SS[.N], "
						"SECONDS[.N] from the epoch, or ns from the epoch");
				return v;
			};
			begin = bound(options.begin, "--begin");
			end = bound(options.end, "--end");
			resolved = true;
		}
		if (begin && it->ns < *begin)
			continue;
		if (end && it->ns > *end)
			break;
		if (it->kind != reader::ItemKind::event) {
			out.flush();
			printer.discarded(*it, err);
			continue;
		}
		if (!name_wanted(options.names, it->event->cls->name))
			continue;
		if (filter && !filter->accepts(*it))
			continue;
		printer.event(*it);
		++stats.events;
		out.maybe_flush();
		if (out.closed())
			break;
	}
	out.flush();
	stats.output_closed = out.closed();
	return stats;
}

} // namespace tracery::analysis
