// analysis/model/symbol_events.hpp — the events that tell which objects a
// process has loaded, read from a trace into a SymbolResolver (symbols.hpp),
// and the addresses an event carries, resolved. The event and field names are
// LTTng-UST 2.13's, which libtracery's state dump and the preload helpers
// also write:
//
//   lttng_ust_statedump:start                       the process's objects are listed again
//   lttng_ust_statedump:bin_info, lttng_ust_dl:dlopen, lttng_ust_dl:dlmopen,
//   lttng_ust_lib:load                              baddr, memsz, path (, is_pic)
//   lttng_ust_{statedump,dl,lib}:build_id            baddr, build_id
//   lttng_ust_{statedump,dl,lib}:debug_link          baddr, crc, filename
//   lttng_ust_dl:dlclose, lttng_ust_lib:unload      baddr
//
// The process is the event's `vpid` context, else the one its trace's env
// names (a per-process buffer). An event's addresses are its `ip` context
// and, in the function entry and exit events (lttng_ust_cyg_profile*), its
// `addr` and `call_site` fields.
//
//   SymbolEvents symbols({.debug_dir = dir});
//   while (const Item *it = walk.next()) {
//       symbols.observe(*it);                      // every event, in order
//       if (const Symbol *s = symbols.ip(*it)) ... // (null: no ip, or in no object)
//   }
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "analysis/model/symbols.hpp"
#include "analysis/read/event_walk.hpp"

namespace tracery::analysis {

class SymbolEvents {
public:
	explicit SymbolEvents(SymbolOptions options = {}) : resolver_(std::move(options)) {}

	// Feeds the resolver when the event is one of those above. Call it for
	// every event, in the order of the trace, before resolving its
	// addresses (the state dump's own events then resolve as babeltrace2
	// resolves them).
	void observe(const ctf::reader::Item &it);

	// Whether the event's class has an `ip` context; and whether a
	// debug_info member joins its stream event context: where babeltrace2's
	// debug-info filter adds one (an unsigned `ip` and a signed 32-bit
	// `vpid` there, and no debug_info already), and where the `ip` is there
	// and the process is the trace's (babeltrace2 adds none: no vpid).
	bool has_ip(const ctf::reader::Item &it) { return bool(info(it).ip); }
	bool adds_debug_info(const ctf::reader::Item &it) { return info(it).debug_info; }
	// Whether the event has address fields (addresses()).
	bool has_addresses(const ctf::reader::Item &it) { return !info(it).address_fields.empty(); }
	// What the event's `ip` context names; null when it has none, or no
	// object holds it.
	const Symbol *ip(const ctf::reader::Item &it);

	// The event's address fields (function entry and exit: `addr`,
	// `call_site`), with what each names (null: in no object).
	struct Address {
		std::string_view name;
		uint64_t value;
		const Symbol *symbol;
	};
	// (valid until the next call)
	const std::vector<Address> &addresses(const ctf::reader::Item &it);

	// f(name, ref) for each address field of the event's class: "ip" (the
	// context), then "addr" and "call_site" (function entry and exit).
	template <class F>
	void for_each_address_field(const ctf::reader::Item &it, F &&f)
	{
		const ClassInfo &c = info(it);
		if (c.ip)
			f(std::string_view("ip"), c.ip);
		for (const auto &[name, ref] : c.address_fields)
			f(name, ref);
	}
	// What the address in the event's field ref names; null when none.
	const Symbol *at(const ctf::reader::Item &it, const FieldRef &ref);

	// The process of an event (its vpid, else its trace's), if known.
	std::optional<int64_t> process(const ctf::reader::Item &it);

	SymbolResolver &resolver() { return resolver_; }

private:
	enum class Kind : uint8_t { other, dump_start, load, build_id, debug_link, unload };
	struct ClassInfo {
		Kind kind = Kind::other;
		FieldRef baddr, memsz, path, is_pic, build_id, crc, filename;
		FieldRef vpid; // the context; else env_pid
		std::optional<int64_t> env_pid;
		FieldRef ip;
		bool debug_info = false;
		std::vector<std::pair<std::string_view, FieldRef>> address_fields;
	};
	const ClassInfo &info(const ctf::reader::Item &it);
	std::optional<int64_t> vpid_of(const ctf::reader::Item &it, const ClassInfo &c);

	SymbolResolver resolver_;
	ClassCache<ClassInfo> classes_;
	std::vector<Address> addresses_;
	std::vector<uint8_t> build_id_;
};

// Whether the symbols read the payload of events of that name (the state
// dump's, the dl helper's, function entry and exit): for a walk that decodes
// only some payloads (EventWalk's FieldsWanted).
bool symbol_events_fields(std::string_view event_name);

// A Symbol as one line of text: "func (src) in bin", or "bin" alone, or
// "unknown" (null: in no object; or nothing known).
std::string symbol_text(const Symbol *s);

} // namespace tracery::analysis
