// kernel/probe_elf.hpp — internal to the probe resolver (probe_site.hpp):
// an ELF file read through libelf as hostile input (checked header, load
// segments inside the file, bounded section walks), the separate debug
// file found for it, the SDT sites and DWARF arguments read from them, and
// a string builder that keeps GCC 12's -Wrestrict quiet.
#pragma once

#include "kernel/probe_site.hpp"

#include <gelf.h>
#include <libelf.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tracery::kernel::probe_detail {

// The concatenation of strings, string_views, C strings and chars.
template <typename... Parts>
std::string cat(const Parts &...parts)
{
	std::string s;
	((s += parts), ...);
	return s;
}

std::string hex(uint64_t v); // "0x1139"

class ElfFile {
public:
	// Reads the ELF file open at `fd` (kept open by the caller, or closed
	// here when `owns_fd`); `path` names it in errors. Throws ProbeError:
	// not a regular file, too large, not ELF, not x86-64 little-endian
	// ELF64, not an executable or shared object. A separate debug file
	// (`debug_file`) keeps the program headers of the file it describes,
	// whose segments are not in it: they are not read.
	ElfFile(int fd, std::string path, bool owns_fd = false, bool debug_file = false);
	~ElfFile();
	ElfFile(const ElfFile &) = delete;
	ElfFile &operator=(const ElfFile &) = delete;

	Elf *elf() const { return elf_; }
	int fd() const { return fd_; }
	const std::string &path() const { return path_; }
	uint64_t size() const { return size_; }

	struct Segment {
		uint64_t vaddr, offset, filesz;
		bool exec;
	};
	const std::vector<Segment> &loads() const { return loads_; }
	// The file offset of `vaddr` when a PT_LOAD segment's file bytes hold
	// it (only executable segments when `exec`).
	std::optional<uint64_t> file_offset(uint64_t vaddr, bool exec) const;

	// The first section named `name` (and of `type` unless SHT_NULL).
	Elf_Scn *section(std::string_view name, GElf_Word type, GElf_Shdr *shdr) const;
	// The first section of `type`.
	Elf_Scn *section_of_type(GElf_Word type, GElf_Shdr *shdr) const;
	// A section's data, its bytes checked to lie in the file and to be at
	// most `max_bytes`; nullptr for SHT_NOBITS. Throws ProbeError when
	// libelf cannot read it or it is larger.
	Elf_Data *data(Elf_Scn *scn, const GElf_Shdr &shdr, std::string_view what, uint64_t max_bytes) const;

	std::string build_id() const; // lowercase hex, "" if none
	std::string dir() const;      // the directory holding the file ("/proc/self/fd" link, else the path's)

private:
	int fd_;
	bool owns_fd_;
	std::string path_;
	uint64_t size_ = 0;
	Elf *elf_ = nullptr;
	std::vector<Segment> loads_;
	size_t shstrndx_ = 0;
	bool has_shstrndx_ = false;
};

// The separate debug file of `file` (see probe_site.hpp), nullptr if none is
// found or none matches; *tried lists the paths looked at.
std::unique_ptr<ElfFile> find_debug_file(const ElfFile &file, std::string *tried);

// The SDT sites of provider:name (sdt_notes.cpp).
std::vector<ProbeSite> sdt_sites(const ElfFile &file, const ProbeSpec &spec);

// Whether `file` holds DWARF (a .debug_info section).
bool has_dwarf(const ElfFile &file);

// The arguments of the function entered at `addr` (or its return value),
// from the DWARF of `file`, into site->args/notes; false when no
// subprogram of the DWARF starts there (probe_dwarf.cpp).
bool dwarf_args(const ElfFile &file, uint64_t addr, bool is_return, ProbeSite *site);

} // namespace tracery::kernel::probe_detail
