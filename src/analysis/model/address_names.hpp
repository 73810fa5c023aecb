// analysis/model/address_names.hpp — the names of the code addresses a walk
// meets (the functions of function entry events, the callers of lock calls):
// hex, or with symbols (symbol_events.hpp) what each names in its process at
// the event where it is first seen, so that an object loaded or unloaded
// later in the trace does not change it. The products name addresses
// through namer() once the walk is over.
//
//   AddressNames names(options.symbols);           // nullopt: hex
//   while (const Item *it = walk.next()) {
//       names.observe(*it);                        // every event, in order
//       names.see(vpid, ip, AddressNames::call_site);
//   }
//   report(names.namer());                         // "worker+0x1c (prog.c:25)", or "0x401136"
//   names.report(stderr);
//
// At most kMaxNames names are kept; the addresses seen beyond are named in
// hex, each sighting counted in report().
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>

#include "analysis/model/preload_events.hpp"
#include "analysis/model/symbol_events.hpp"

namespace tracery::analysis {

class AddressNames {
public:
	static constexpr size_t kMaxNames = size_t{1} << 20;
	// function: a function's own address, named by the function alone
	// ("worker"); call_site: an address in a function, "worker+0x1c
	// (prog.c:25)" (the parts known). Either: the object and offset when the
	// object has no name for it, hex when no object holds it.
	enum Style : uint8_t { function, call_site };

	explicit AddressNames(std::optional<SymbolOptions> symbols = std::nullopt);

	// Every event of the walk, in order, before its addresses are seen.
	void observe(const ctf::reader::Item &it)
	{
		if (symbols_)
			symbols_->observe(it);
	}
	// An address of process vpid: named now when first seen.
	void see(int64_t vpid, uint64_t address, Style style);

	// The names seen (hex for the others); valid while this lives.
	AddressNamer namer() const;
	// With symbols: what the resolver could not name or keep, and the
	// addresses beyond kMaxNames, one "tracery: symbols: ..." line each.
	void report(FILE *err);
	// The resolver the events feed; null without symbols.
	SymbolResolver *resolver() { return symbols_ ? &symbols_->resolver() : nullptr; }

private:
	std::optional<SymbolEvents> symbols_;
	std::map<std::pair<int64_t, uint64_t>, std::string> names_; // (vpid, address)
	uint64_t unnamed_ = 0;
};

// What a resolved address is called in the style given (s: null when no
// object holds it, then hex).
std::string address_name(const Symbol *s, uint64_t address, AddressNames::Style style);

} // namespace tracery::analysis
