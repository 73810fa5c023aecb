// analysis/model/symbols.hpp — the objects each process has loaded, over the
// time of the trace, and what an address of a process names: the object and
// the offset in it, the function, the source line. Fed plain arguments (the
// state dump's and the dl helper's events: SymbolEvents, symbol_events.hpp,
// reads them from a trace), so the unit tests drive it with made-up
// sequences.
//
//   SymbolResolver r({.debug_dir = "/tmp/debug"});
//   r.start_dump(vpid);                                      // a state dump starts: forget the process's objects
//   r.load(vpid, baddr, memsz, "/usr/bin/prog", true);       // bin_info, dlopen
//   r.set_build_id(vpid, baddr, bytes);                      // build_id
//   r.set_debug_link(vpid, baddr, "prog.debug", crc);        // debug_link
//   r.unload(vpid, baddr);                                   // dlclose
//   const Symbol *s = r.resolve(vpid, ip);                   // null: in no object
//   s->bin, s->func, s->src                                  // babeltrace2's debug_info strings
//
// An address is looked up among the objects loaded at the time: the one
// loaded last that holds it (overlapping objects: the newest wins); an object
// unloaded, or another loaded at its base, takes effect from that event on.
// Files are read once per object (ObjectFile, object_file.hpp), shared by the
// processes that load the same file. Memory is bounded: at most kMaxProcesses
// processes and kMaxObjects objects per process are kept (the others are
// counted in dropped()), at most kMaxFiles files open, at most
// kMaxCachedAddresses names cached per process.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analysis/model/object_file.hpp"

namespace tracery::analysis {

struct SymbolOptions {
	std::string debug_dir; // separate debug files (default: /usr/lib/debug)
};

// What an address names. The strings are babeltrace2's debug_info fields.
struct Symbol {
	std::string bin;      // "libfoo.so+0x1234" ("@0x..." when not position-independent); "" if unknown
	std::string func;     // "main+0x12"; "" if unknown
	std::string src;      // "prog.c:12" (the file name only); "" if unknown
	std::string path;     // the object's path as the trace gives it
	uint64_t offset = 0;  // in the object (its own address for a non-PIC one)
	std::string function; // the function's name alone
	std::string file;     // the source file as DWARF gives it
	uint64_t line = 0;
};

class SymbolResolver {
public:
	static constexpr size_t kMaxProcesses = 1 << 16;
	static constexpr size_t kMaxObjects = 1 << 12;
	static constexpr size_t kMaxFiles = 256;
	static constexpr size_t kMaxCachedAddresses = 1 << 16;
	static constexpr size_t kMaxBuildIdBytes = 64;
	static constexpr size_t kMaxPathBytes = 4096;

	explicit SymbolResolver(SymbolOptions options = {});
	~SymbolResolver();

	// A state dump starts: the process's objects are about to be listed
	// again.
	void start_dump(int64_t vpid);
	// An object mapped at [baddr, baddr + memsz). memsz 0 (the vDSO) is
	// ignored; an object already at baddr with the same path is kept (the
	// state dump lists again what dlopen told), another replaces it.
	void load(int64_t vpid, uint64_t baddr, uint64_t memsz, std::string_view path, bool is_pic);
	void set_build_id(int64_t vpid, uint64_t baddr, std::span<const uint8_t> build_id);
	void set_debug_link(int64_t vpid, uint64_t baddr, std::string_view filename, uint32_t crc);
	void unload(int64_t vpid, uint64_t baddr);

	// What ip names in the process now; null when no object holds it. Valid
	// until the objects of the process change, or the cache is emptied: by
	// a resolve() when it holds kMaxCachedAddresses, by make_room() when
	// fewer than n entries are left (so that n resolutions stay valid).
	const Symbol *resolve(int64_t vpid, uint64_t ip);
	void make_room(int64_t vpid, size_t n);

	// Objects and processes not kept for the bounds above, events with
	// impossible values, and build_id or debug_link events that named no
	// loaded object (an unload of none is no loss: LTTng-UST tells each
	// unload twice).
	struct Dropped {
		uint64_t processes = 0, objects = 0, orphans = 0, bad = 0;
	};
	const Dropped &dropped() const { return dropped_; }
	// Each object whose file could not give what it should (missing,
	// another build, no symbols), once: "PATH: why".
	std::vector<std::string> problems() const;
	// The problems and what dropped() counts, one "tracery: symbols: ..."
	// line each, to err.
	void report(FILE *err) const;

private:
	struct Mapping {
		uint64_t baddr = 0, end = 0; // [baddr, end)
		bool is_pic = true;
		uint64_t serial = 0; // load order
		ObjectIdentity id;
		ObjectFile *file = nullptr;    // null until first used, or after its identity changed
		uint64_t files_generation = 0; // files_generation_ when file was set
	};
	struct Process {
		std::map<uint64_t, Mapping> by_base;
		std::unordered_map<uint64_t, Symbol> cache; // by ip, cleared when the objects change
	};

	Process *process(int64_t vpid, bool create);
	Mapping *mapping(int64_t vpid, uint64_t baddr);
	ObjectFile &file_of(Mapping &m);
	static void changed(Process &p) { p.cache.clear(); }

	SymbolOptions options_;
	std::unordered_map<int64_t, Process> processes_;
	// The files read, by path (a path may have several builds: the key
	// includes the build-id and debug link).
	std::vector<std::unique_ptr<ObjectFile>> files_;
	uint64_t files_generation_ = 1;     // counts the times files_ was emptied
	std::vector<std::string> problems_; // at most kMaxProblems
	static constexpr size_t kMaxProblems = 64;
	Symbol symbol_;
	uint64_t serial_ = 0;
	Dropped dropped_;
};

} // namespace tracery::analysis
