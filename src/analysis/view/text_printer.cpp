// analysis/view/text_printer.cpp — babeltrace2's text lines of the reader's
// items (see text_printer.hpp).
#include "analysis/view/text_printer.hpp"

#include <cinttypes>
#include <cstring>
#include <ctime>

#include "base/monotonic.hpp"
#include "ctf/reader/trace_reader.hpp"

namespace tracery::analysis {

namespace reader = ctf::reader;
using reader::Field;
using reader::FieldDecl;
using reader::FieldKind;
using reader::Scope;
using reader::Value;

namespace {

using base::kNsPerS;

uint64_t low_bits(uint64_t v, unsigned bits) { return bits < 64 ? v & ((uint64_t{1} << bits) - 1) : v; }

} // namespace

// HH:MM:SS.nnnnnnnnn in local time (seconds.ns before the epoch).
void TextPrinter::time(int64_t ns)
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
		o_.put('-');
		o_.put_unsigned(a / kNsPerS);
		o_.reserve(10);
		*o_.ptr()++ = '.';
		o_.ptr() = nine_digits(o_.ptr(), static_cast<uint32_t>(a % kNsPerS));
		return;
	}
	if (s != cached_s_) {
		const auto t = static_cast<time_t>(s);
		struct tm tm;
		if (!localtime_r(&t, &tm)) {
			o_.put_unsigned(static_cast<uint64_t>(s));
			o_.reserve(10);
			*o_.ptr()++ = '.';
			o_.ptr() = nine_digits(o_.ptr(), static_cast<uint32_t>(sub));
			return;
		}
		char b[16];
		snprintf(b, sizeof b, "%02d:%02d:%02d.", tm.tm_hour, tm.tm_min, tm.tm_sec);
		std::memcpy(cached_hms_, b, sizeof cached_hms_); // tm's fields are in range: 9 bytes
		cached_s_ = s;
	}
	o_.reserve(sizeof cached_hms_ + 9);
	char *p = o_.ptr();
	std::memcpy(p, cached_hms_, sizeof cached_hms_);
	o_.ptr() = nine_digits(p + sizeof cached_hms_, static_cast<uint32_t>(sub));
}

void TextPrinter::integer(const FieldDecl &d, uint64_t raw)
{
	const reader::FieldType &t = *d.type();
	switch (t.base) {
	case reader::Base::dec:
		if (t.is_signed)
			o_.put_signed(static_cast<int64_t>(raw));
		else
			o_.put_unsigned(raw);
		break;
	case reader::Base::hex: {
		// the value's bits rounded up to whole hex digits
		const uint64_t v = low_bits(raw, (t.size + 3) & ~3u);
		char b[24];
		snprintf(b, sizeof b, "0x%" PRIX64, v);
		o_.put(b, strlen(b));
		break;
	}
	case reader::Base::oct: {
		// a negative value's bits rounded up to whole octal digits
		const uint64_t v = t.is_signed ? low_bits(raw, ((t.size - 1) / 3 + 1) * 3) : raw;
		char b[32];
		snprintf(b, sizeof b, "0%" PRIo64, v);
		o_.put(b, strlen(b));
		break;
	}
	case reader::Base::bin:
		o_.lit("0b");
		o_.reserve(t.size);
		for (unsigned i = t.size; i-- > 0;)
			*o_.ptr()++ = (raw >> i) & 1 ? '1' : '0';
		break;
	}
}

void TextPrinter::field(const Field &f)
{
	switch (f.kind()) {
	case FieldKind::integer:
		if (f.decl().is_plain_unsigned()) {
			o_.put_unsigned(f.as_unsigned()); // the common case
		} else if (f.is_enumeration()) {
			o_.lit("( ");
			bool any = false;
			f.for_each_label([&](const std::string &label) {
				if (any)
					o_.lit(", ");
				put_quoted_c(o_, label.data(), label.size());
				any = true;
			});
			if (!any)
				o_.lit("<unknown>");
			o_.lit(" : container = ");
			integer(f.decl(), f.as_unsigned());
			o_.lit(" )");
		} else {
			integer(f.decl(), f.as_unsigned());
		}
		return;
	case FieldKind::floating:
		o_.put_double_g(f.as_double());
		return;
	case FieldKind::string: {
		const std::string_view text = f.text();
		put_quoted_c(o_, text.data(), text.size());
		return;
	}
	case FieldKind::structure:
		structure(f, false);
		return;
	case FieldKind::array: {
		o_.put('[');
		uint64_t k = 0;
		for (const Field e : f.elements()) {
			if (k)
				o_.lit(", [");
			else
				o_.lit(" [");
			o_.put_unsigned(k++);
			o_.lit("] = ");
			field(e);
		}
		o_.lit(" ]");
		return;
	}
	case FieldKind::variant:
		o_.lit("{ ");
		field(f.option());
		o_.lit(" }");
		return;
	}
}

// "{ a = 1, b = 2 }" of the members shown (at a scope's root, also only
// those --fields names).
void TextPrinter::structure(const Field &f, bool root, std::string_view before, const reader::Item *it)
{
	o_.put(before);
	o_.put('{');
	bool first = true;
	for (const Field m : f.members()) {
		const std::string_view name = m.name();
		if (!m.shown() || (root && !wanted(name)))
			continue;
		o_.reserve(name.size() + 5);
		char *p = o_.ptr();
		if (!first)
			*p++ = ',';
		*p++ = ' ';
		copy_short(p, name.data(), name.size());
		p += name.size();
		std::memcpy(p, " = ", 3);
		o_.ptr() = p + 3;
		first = false;
		field(m);
	}
	if (it)
		debug_info(*it, f.decl().scope());
	o_.lit(" }");
}

// ", debug_info = { bin = "...", func = "...", src = "..." }" in the stream
// event context of an event with an ip, as babeltrace2's debug-info filter
// adds it; in the payload, one such member per address field.
void TextPrinter::debug_info(const reader::Item &it, Scope scope)
{
	if (scope == Scope::stream_event_context) {
		o_.lit(", debug_info = ");
		debug_info_struct(symbols_->ip(it));
		return;
	}
	for (const SymbolEvents::Address &a : symbols_->addresses(it)) {
		o_.lit(", ");
		o_.put(a.name);
		o_.lit("_debug_info = ");
		debug_info_struct(a.symbol);
	}
}

void TextPrinter::debug_info_struct(const Symbol *s)
{
	static const Symbol kUnknown;
	if (!s)
		s = &kUnknown;
	o_.lit("{ bin = ");
	put_quoted_c(o_, s->bin.data(), s->bin.size());
	o_.lit(", func = ");
	put_quoted_c(o_, s->func.data(), s->func.size());
	o_.lit(", src = ");
	put_quoted_c(o_, s->src.data(), s->src.size());
	o_.lit(" }");
}

// Whether a scope is shown: babeltrace2 shows a scope with a member it
// shows, or with no member at all ("{ }"); --fields hides the others.
bool TextPrinter::scope_shows(const FieldDecl &root) const
{
	if (!root)
		return false;
	if (root.member_count() == 0)
		return all_fields_;
	for (const FieldDecl m : root.members())
		if (m.shown() && wanted(m.name()))
			return true;
	return false;
}

// "host name: " of the event's class, then "{ packet context }": the packet
// context's text is the same for all the events of a packet, made once per
// packet of each stream (packet()); the rest of the line's text once per
// class and stream (program()). Returns that class's program.
[[gnu::always_inline]] inline const TextPrinter::EventProgram &TextPrinter::head(const reader::Item &it)
{
	const reader::Stream &s = *it.stream;
	if (streams_.size() <= s.index())
		streams_.resize(s.index() + 1);
	StreamText &st = streams_[s.index()];
	if (st.packet != s.packets_reached())
		packet(it, st);
	const size_t cls = s.class_index(it);
	if (st.programs.size() != s.event_classes())
		st.programs.resize(s.event_classes());
	EventProgram &prog = st.programs[cls];
	if (!prog.made)
		program(it, st.packet_shown, prog);
	o_.put(prog.name);
	o_.put(st.packet_text);
	return prog;
}

// The text of the packet context of the event's packet.
void TextPrinter::packet(const reader::Item &it, StreamText &st)
{
	st.packet = it.stream->packets_reached();
	const FieldDecl packet = reader::scope_root(it, Scope::packet_context);
	st.packet_shown = scope_shows(packet);
	st.packet_text.clear();
	if (st.packet_shown) {
		if (!scratch_)
			scratch_ = std::make_unique<TextBuffer>();
		scratch_->clear();
		TextPrinter(*scratch_, fields_).structure(Field(packet, it.packet_context.data(), 0), true);
		st.packet_text.assign(scratch_->data(), scratch_->size());
	}
}

// The text of an event class's line after its packet context, made once:
// "host name: " before, then each scope shown with the separator before it.
// A root struct whose members are one value each (integers, strings, text,
// floats) is printed from a list of its shown members with the text before
// each ("{ a = ", ", b = "), the others by structure().
void TextPrinter::program(const reader::Item &it, bool packet_shown, EventProgram &prog)
{
	const reader::Trace &t = it.stream->trace();
	// babeltrace2's trace fields: the host name, then a per-process trace's
	// program name and "(vpid)", joined by ':'.
	std::string trace_label = t.has_hostname ? t.hostname : std::string();
	bool labelled = t.has_hostname;
	const auto add_label = [&](const std::string &part) {
		if (labelled)
			trace_label += ':';
		trace_label += part;
		labelled = true;
	};
	if (const reader::EnvValue *v = t.cls.env_value("procname"); v && std::holds_alternative<std::string>(*v))
		add_label(std::get<std::string>(*v));
	if (const reader::EnvValue *v = t.cls.env_value("vpid"); v && std::holds_alternative<int64_t>(*v)) {
		std::string vpid = "("; // appended apart: GCC 12 -O3 -Wrestrict false positive on "(" + string
		vpid += std::to_string(std::get<int64_t>(*v));
		vpid += ')';
		add_label(vpid);
	}
	if (labelled) {
		prog.name += trace_label;
		prog.name += ' ';
	}
	prog.name += it.event->cls->name;
	prog.name += ": ";
	bool start_line = !packet_shown;
	std::string pending; // text not yet given to a piece
	for (const Scope scope : {Scope::stream_event_context, Scope::event_context, Scope::payload}) {
		const FieldDecl root = reader::scope_root(it, scope);
		if (!scope_shows(root))
			continue;
		if (!start_line)
			pending += ", ";
		start_line = false;
		ScopeProgram &sp = prog.scopes.emplace_back();
		sp.root = root;
		if (symbols_ && all_fields_)
			sp.symbols = scope == Scope::stream_event_context ? symbols_->adds_debug_info(it)
			             : scope == Scope::payload            ? symbols_->has_addresses(it)
			                                                  : false;
		sp.direct = true; // members of one value each
		for (const FieldDecl m : root.members())
			sp.direct = sp.direct && (m.kind() == FieldKind::integer || m.kind() == FieldKind::floating ||
			                          m.kind() == FieldKind::string);
		if (!sp.direct) {
			sp.before = std::move(pending);
			pending.clear();
			continue;
		}
		pending += '{';
		bool first = true;
		uint32_t value = 1; // (the root's own value is the first)
		for (const FieldDecl m : root.members()) {
			const uint32_t at = value++;
			const std::string_view name = m.name();
			if (!m.shown() || !wanted(name))
				continue;
			pending += first ? " " : ", ";
			pending += name;
			pending += " = ";
			first = false;
			const bool dec =
				!m.is_enumeration() && m.kind() == FieldKind::integer && m.base() == reader::Base::dec;
			const Piece::Kind kind = m.is_plain_unsigned()           ? Piece::udec
			                         : dec && m.is_signed()          ? Piece::sdec
			                         : m.kind() == FieldKind::string ? Piece::string
			                                                         : Piece::other;
			sp.pieces.push_back({std::move(pending), m, at, kind});
			pending.clear();
		}
		sp.end = std::move(pending) + " }"; // "{" too when no member is shown
		pending.clear();
	}
	// the line's end joins the last scope's text when it is direct
	const bool joined = !prog.scopes.empty() && prog.scopes.back().direct;
	if (joined)
		prog.scopes.back().end.push_back('\n');
	prog.end.assign(joined ? 0 : 1, '\n');
	prog.made = true;
}

// A direct scope's program over its values.
[[gnu::always_inline]] inline void TextPrinter::run(const reader::Item &it, const ScopeProgram &sp, const Value *values)
{
	for (const Piece &p : sp.pieces) {
		const Field f(p.decl, values, p.value);
		if (p.kind == Piece::udec || p.kind == Piece::sdec) { // (the text before it and it: one reserve)
			const size_t n = p.before.size();
			o_.reserve(n + 21);
			char *q = o_.ptr();
			copy_short(q, p.before.data(), n);
			o_.ptr() =
				p.kind == Piece::udec ? put_u64(q + n, f.as_unsigned()) : put_i64(q + n, f.as_signed());
			continue;
		}
		o_.put(p.before);
		if (p.kind == Piece::string) {
			const std::string_view text = f.text();
			put_quoted_c(o_, text.data(), text.size());
		} else {
			field(f);
		}
	}
	if (sp.symbols)
		debug_info(it, sp.root.scope());
	o_.put(sp.end);
}

void TextPrinter::event(const reader::Item &it)
{
	const reader::Stream &s = *it.stream;
	if (s.has_clock()) {
		o_.put('[');
		time(it.ns);
		if (have_last_) {
			const uint64_t d = static_cast<uint64_t>(it.ns) - static_cast<uint64_t>(last_ns_);
			o_.reserve(40);
			char *p = o_.ptr();
			std::memcpy(p, "] (+", 4);
			p += 4;
			if (d < static_cast<uint64_t>(kNsPerS)) {
				*p++ = '0';
			} else {
				char b[24];
				char *q = digits_before(b + sizeof b, d / kNsPerS);
				const auto n = static_cast<size_t>(b + sizeof b - q);
				std::memcpy(p, q, n);
				p += n;
			}
			*p++ = '.';
			p = nine_digits(p, static_cast<uint32_t>(d % kNsPerS));
			*p++ = ')';
			*p++ = ' ';
			o_.ptr() = p;
		} else {
			o_.lit("] (+?.????????"
			       "?) ");
		}
		last_ns_ = it.ns;
		have_last_ = true;
	}
	const EventProgram &prog = head(it);
	for (const ScopeProgram &sp : prog.scopes) {
		const std::span<const Value> values = reader::scope_values(it, sp.root.scope());
		if (sp.direct)
			run(it, sp, values.data());
		else
			structure(Field(sp.root, values.data(), 0), true, sp.before, sp.symbols ? &it : nullptr);
	}
	o_.put(prog.end);
}

void TextPrinter::discarded(const reader::Item &it, FILE *err)
{
	const reader::Stream &s = *it.stream;
	std::string line = "WARNING: Tracer discarded ";
	append_unsigned(line, it.count);
	line += it.kind == reader::ItemKind::discarded_events ? " event" : " packet";
	if (it.count != 1)
		line += 's';
	line += ' ';
	if (it.has_range) {
		TextBuffer b;
		TextPrinter p(b, fields_);
		p.warned_negative_ = warned_negative_;
		line += "between [";
		p.time(it.ns);
		line += b.view();
		b.clear();
		line += "] and [";
		p.time(it.end_ns);
		line += b.view();
		line += ']';
		warned_negative_ = p.warned_negative_;
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
		snprintf(b, sizeof b, "(UUID: %02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x) ",
		         u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
		         u[15]);
		line += b;
	} else {
		line += "(no UUID) ";
	}
	line += "within stream \"";
	line += s.name();
	line += "\" (stream class ID: ";
	append_unsigned(line, s.class_id());
	line += ", stream ID: ";
	append_unsigned(line, s.id());
	line += ").\n";
	fwrite(line.data(), 1, line.size(), err);
}

} // namespace tracery::analysis
