// analysis/view/text_printer.hpp — babeltrace2's text format of the reader's
// items, as its text sink prints them with its default options (same bytes):
// "[time] (+delta) host event: { packet context }, { stream event context },
// { context }, { payload }" (timestamps in local time, the delta to the
// previous event), and discarded events and packets as WARNING lines.
//
// The text of a line that is the same for every event of a class is made
// once per class and stream (its name, the separators and the member names
// of scopes whose members are one value each); the packet context's text
// once per packet. What is left per event is the values, written from digit
// tables into a TextBuffer: no allocation and no lookup by name.
//
//   TextPrinter p(out.buf(), fields);        // fields: --fields ({}: all)
//   p.event(item);                           // one line
//   p.discarded(item, stderr);               // a WARNING line
//
// With symbols (set_symbols; `view --symbols`), babeltrace2's debug-info
// filter's lines: a `debug_info = { bin, func, src }` member at the end of
// the stream event context of the events that have an `ip` context, and
// (Tracery's own) `FIELD_debug_info` members at the end of the payload of
// the function entry and exit events, for their `addr` and `call_site`.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "analysis/model/symbol_events.hpp"
#include "analysis/output/text_buffer.hpp"
#include "ctf/reader/fields.hpp"

namespace tracery::analysis {

class TextPrinter {
public:
	// fields: the only members shown of each scope's root (as shown, e.g.
	// "cpu_id", "vtid", "msg"; a scope left with none is not shown); empty:
	// all. Kept by reference.
	TextPrinter(TextBuffer &out, const std::vector<std::string> &fields)
		: o_(out), fields_(fields), all_fields_(fields.empty())
	{
	}

	// Resolves the events' addresses through symbols (kept; fed by the
	// caller: SymbolEvents::observe for every event, printed or not).
	void set_symbols(SymbolEvents *symbols) { symbols_ = symbols; }

	// The line of an event item.
	void event(const ctf::reader::Item &it);
	// The WARNING line of a discarded-items item, to err.
	void discarded(const ctf::reader::Item &it, FILE *err);

private:
	// One shown member of a direct scope (below): the text before its value,
	// where its value is, how it prints.
	struct Piece {
		std::string before;
		ctf::reader::FieldDecl decl;
		uint32_t value; // its value's index (one value per member)
		enum Kind : uint8_t {
			udec,
			sdec,
			string,
			other
		} kind; // (udec, sdec: decimal integers, not enumerations)
	};
	// How one scope of an event class prints: directly from its pieces and
	// the text after them (end), or (not direct) by structure() with `before`.
	struct ScopeProgram {
		ctf::reader::FieldDecl root;
		bool direct = false;
		bool symbols = false; // the debug_info members at its end
		std::vector<Piece> pieces;
		std::string before, end;
	};
	// The line of an event class after its time: its name, then (after the
	// packet context) its scopes, then `end`.
	struct EventProgram {
		bool made = false;
		std::string name; // "host name: "
		std::vector<ScopeProgram> scopes;
		std::string end;
	};
	struct StreamText {
		uint64_t packet = 0; // Stream::packets_reached() of the packet_text
		bool packet_shown = false;
		std::string packet_text;
		std::vector<EventProgram> programs; // by index in the stream class's events
	};

	void time(int64_t ns);
	void integer(const ctf::reader::FieldDecl &d, uint64_t raw);
	void field(const ctf::reader::Field &f);
	bool wanted(std::string_view shown) const
	{
		if (all_fields_)
			return true;
		for (const std::string &f : fields_)
			if (f == shown)
				return true;
		return false;
	}
	// (with `it`: a scope's root, and its debug_info members if it has any)
	void structure(const ctf::reader::Field &f, bool root, std::string_view before = {},
	               const ctf::reader::Item *it = nullptr);
	bool scope_shows(const ctf::reader::FieldDecl &root) const;
	const EventProgram &head(const ctf::reader::Item &it);
	void packet(const ctf::reader::Item &it, StreamText &st);
	void program(const ctf::reader::Item &it, bool packet_shown, EventProgram &prog);
	void run(const ctf::reader::Item &it, const ScopeProgram &sp, const ctf::reader::Value *values);
	void debug_info(const ctf::reader::Item &it, ctf::reader::Scope scope);
	void debug_info_struct(const Symbol *s);

	TextBuffer &o_;
	const std::vector<std::string> &fields_;
	bool all_fields_;
	int64_t cached_s_ = INT64_MIN;
	char cached_hms_[9] = {}; // "HH:MM:SS." of the second cached_s_
	int64_t last_ns_ = 0;
	bool have_last_ = false;
	bool warned_negative_ = false;
	std::vector<StreamText> streams_;
	std::unique_ptr<TextBuffer> scratch_; // where packet contexts are formatted
	SymbolEvents *symbols_ = nullptr;
};

} // namespace tracery::analysis
