// analysis/model/object_file.hpp — one loaded object's file on this machine,
// read as hostile input through libelf and libdw, and what an address in it
// names: the function and its offset, the source file and line. The rules are
// babeltrace2's `flt.lttng-utils.debug-info` (2.0), so that `tracery view
// --symbols` prints what `babeltrace2 --debug-info` prints:
//
//   - the file at the trace's path is used when the trace gives no build-id
//     or when its build-id note holds the trace's; otherwise (missing, other
//     build) the separate debug file found by the build-id stands in for it,
//     and with none the object resolves to nothing at all;
//   - DWARF comes from the file itself when it has a compile unit, else from
//     DIR/.build-id/xx/rest.debug (DIR: --debug-info-dir, else
//     /usr/lib/debug), else from the debug link: beside the file, in its
//     `.debug/`, then DIR/its directory/, each checked against the link's CRC;
//   - with DWARF, the function is the compile unit's top-level subprogram
//     holding the address ("name+0xoff" from its low pc) and the source the
//     call site of an inlined subroutine holding it, else the line table's
//     row that starts exactly at the address; without DWARF, the nearest
//     function symbol at or below the address in the file's .symtab, and no
//     source.
//
//   ObjectFile f({path, build_id, debug_link, crc}, "/usr/lib/debug");
//   const ObjectFile::Names &n = f.names(addr);  // addr: in the file's own addresses
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace tracery::analysis {

// What the trace says of an object: enough to find its files.
struct ObjectIdentity {
	std::string path;              // as the trace gives it
	std::vector<uint8_t> build_id; // empty: none given
	std::string debug_link;        // the .gnu_debuglink file name; empty: none given
	uint32_t debug_link_crc = 0;

	bool operator==(const ObjectIdentity &) const = default;
};

class ObjectFile {
public:
	// What an address names: empty strings where nothing is known.
	struct Names {
		std::string function; // "main+0x12" (babeltrace2's form: "main+0" at the start)
		std::string source;   // the source file's path as DWARF gives it ("" if none)
		uint64_t line = 0;    // with source
	};

	// Opens nothing yet: the files are looked for at the first names().
	ObjectFile(ObjectIdentity id, std::string debug_dir);
	~ObjectFile();
	ObjectFile(const ObjectFile &) = delete;
	ObjectFile &operator=(const ObjectFile &) = delete;

	const ObjectIdentity &identity() const { return id_; }
	// False when the trace's build-id matches neither the file at its path
	// nor a debug file: nothing of the object is shown (bin included).
	bool usable();
	// The names of an address in the object's own addresses (the offset
	// from its base for a position-independent object). Cached per address
	// (at most kMaxCachedAddresses, then the cache starts again).
	const Names &names(uint64_t addr);
	// Why the object resolves to less than it could ("" when all is well,
	// or a debug file stands in): the file missing, or another build.
	const std::string &problem();

	static constexpr size_t kMaxCachedAddresses = 1 << 16;

private:
	struct Files;
	void open();
	Names look_up(uint64_t addr);

	ObjectIdentity id_;
	std::string debug_dir_;
	std::unique_ptr<Files> files_;
	std::unordered_map<uint64_t, Names> cache_;
};

// "libfoo.so" of "/usr/lib/libfoo.so" (babeltrace2's: a path ending in '/'
// is returned whole).
std::string_view file_name_of(std::string_view path);
// The build-id as lowercase hex.
std::string build_id_hex(const std::vector<uint8_t> &build_id);

} // namespace tracery::analysis
