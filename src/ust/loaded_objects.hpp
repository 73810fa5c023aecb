// ust/loaded_objects.hpp — the objects mapped into this process (the
// executable, its libraries, the vDSO), as the state dump records them: where
// each is loaded, how much memory it spans, its path, whether it is
// position-independent, its build-id (read from its mapped notes) and its
// debug link (the .gnu_debuglink section, read from its file). Every read is
// bounded, and a file that cannot be read or is not an ELF file this process
// could have mapped only loses the facts it would have given.
#pragma once

#include <stdint.h>

#include <string>
#include <vector>

namespace tracery::ust {

struct LoadedObject {
	uint64_t baddr = 0; // address of its first loadable segment
	uint64_t memsz = 0; // from its first loadable segment's start to its last one's end (0 for the vDSO)
	std::string path;   // absolute, resolved; "[vdso]" or the loader's name for an object with no file
	bool is_pic = false;
	std::vector<uint8_t> build_id; // empty: none
	bool has_debug_link = false;
	std::string debug_link; // the debug file's name
	uint32_t debug_link_crc = 0;
};

// At most this many objects (the diagnostics say when there were more) and
// this many bytes of a build-id are kept.
inline constexpr size_t kMaxLoadedObjects = 4096;
inline constexpr size_t kMaxBuildIdBytes = 64;

// The objects loaded now, in the loader's order (the executable first). Holds
// the loader's lock only while it copies each object's addresses, name and
// build-id; the files are read after.
std::vector<LoadedObject> loaded_objects();

// The build-id in a run of ELF notes (as a PT_NOTE segment holds them, with
// the given alignment, 4 or 8), bounded by size; empty if there is none or
// the notes are malformed.
std::vector<uint8_t> build_id_in_notes(const uint8_t *notes, size_t size, size_t align);

// Reads from the ELF file at path whether it is position-independent
// (ET_DYN) and its .gnu_debuglink, into *object. False if the file cannot be
// opened or is not a 64-bit little-endian ELF file.
bool read_elf_file_facts(const std::string &path, LoadedObject *object);

} // namespace tracery::ust
