// ust/loaded_objects.cpp — the objects mapped into this process: see
// loaded_objects.hpp.
#include "ust/loaded_objects.hpp"

#include "base/diagnostics.hpp"
#include "base/fd.hpp"

#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>

namespace tracery::ust {
namespace {

// Bounds on what is read of a file: its section headers and their names.
constexpr size_t kMaxSections = 8192;
constexpr size_t kMaxSectionNames = 1 << 20;
constexpr size_t kMaxDebugLink = 4096;

struct Collected {
	std::vector<LoadedObject> objects;
	bool executable_seen = false;
};

int collect_object(dl_phdr_info *info, size_t, void *data)
{
	auto *collected = static_cast<Collected *>(data);
	if (collected->objects.size() >= kMaxLoadedObjects)
		return 1;
	const ElfW(Phdr) *first_load = nullptr;
	uint64_t end = 0;
	for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
		const ElfW(Phdr) &ph = info->dlpi_phdr[i];
		if (ph.p_type != PT_LOAD)
			continue;
		if (!first_load)
			first_load = &ph;
		end = std::max<uint64_t>(end, ph.p_vaddr + ph.p_memsz);
	}
	if (!first_load)
		return 0;
	LoadedObject object;
	object.baddr = info->dlpi_addr + first_load->p_vaddr;
	object.memsz = end - first_load->p_vaddr;
	const bool nameless = !info->dlpi_name || !info->dlpi_name[0];
	if (nameless && !collected->executable_seen) {
		// The loader names neither the executable (listed first) nor, in some
		// versions, the vDSO.
		collected->executable_seen = true;
		char path[PATH_MAX];
		const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
		if (n <= 0)
			return 0;
		object.path.assign(path, static_cast<size_t>(n));
	} else if (nameless) {
		object.path = "[vdso]";
	} else {
		char path[PATH_MAX];
		object.path = realpath(info->dlpi_name, path) ? path : info->dlpi_name;
	}
	for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
		const ElfW(Phdr) &ph = info->dlpi_phdr[i];
		if (ph.p_type != PT_NOTE || !object.build_id.empty())
			continue;
		object.build_id = build_id_in_notes(reinterpret_cast<const uint8_t *>(info->dlpi_addr + ph.p_vaddr),
		                                    ph.p_memsz, ph.p_align == 8 ? 8 : 4);
	}
	collected->objects.push_back(std::move(object));
	return 0;
}

size_t align_up(size_t n, size_t align) { return (n + align - 1) & ~(align - 1); }

bool read_exactly(int fd, void *buf, size_t size, uint64_t offset)
{
	return pread(fd, buf, size, static_cast<off_t>(offset)) == static_cast<ssize_t>(size);
}

} // namespace

std::vector<uint8_t> build_id_in_notes(const uint8_t *notes, size_t size, size_t align)
{
	size_t at = 0;
	while (size - at >= sizeof(ElfW(Nhdr))) {
		ElfW(Nhdr) note;
		memcpy(&note, notes + at, sizeof note);
		const size_t name_at = at + sizeof note;
		const size_t name_room = align_up(note.n_namesz, align);
		if (name_room < note.n_namesz || name_room > size - name_at)
			return {};
		const size_t desc_at = name_at + name_room;
		const size_t desc_room = align_up(note.n_descsz, align);
		if (desc_room < note.n_descsz || desc_room > size - desc_at)
			return {};
		if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && memcmp(notes + name_at, "GNU", 4) == 0) {
			if (note.n_descsz == 0 || note.n_descsz > kMaxBuildIdBytes)
				return {};
			return {notes + desc_at, notes + desc_at + note.n_descsz};
		}
		at = desc_at + desc_room;
	}
	return {};
}

bool read_elf_file_facts(const std::string &path, LoadedObject *object)
{
	const base::Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
	if (!fd)
		return false;
	Elf64_Ehdr eh;
	if (!read_exactly(fd.get(), &eh, sizeof eh, 0) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return false;
	object->is_pic = eh.e_type == ET_DYN;
	if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 || eh.e_shnum > kMaxSections ||
	    eh.e_shstrndx >= eh.e_shnum)
		return true; // no section headers to read: no debug link
	std::vector<Elf64_Shdr> sections(eh.e_shnum);
	if (!read_exactly(fd.get(), sections.data(), sections.size() * sizeof(Elf64_Shdr), eh.e_shoff))
		return true;
	const Elf64_Shdr &names_section = sections[eh.e_shstrndx];
	if (names_section.sh_size == 0 || names_section.sh_size > kMaxSectionNames)
		return true;
	std::string names(names_section.sh_size, '\0');
	if (!read_exactly(fd.get(), names.data(), names.size(), names_section.sh_offset))
		return true;
	names.back() = '\0'; // every name below ends inside the table
	for (const Elf64_Shdr &s : sections) {
		if (s.sh_name >= names.size() || strcmp(names.c_str() + s.sh_name, ".gnu_debuglink") != 0)
			continue;
		// The file name, NUL, padding to 4 bytes, then the debug file's CRC-32.
		if (s.sh_type == SHT_NOBITS || s.sh_size < 8 || s.sh_size > kMaxDebugLink)
			return true;
		std::string link(s.sh_size, '\0');
		if (!read_exactly(fd.get(), link.data(), link.size(), s.sh_offset))
			return true;
		const size_t name_len = strnlen(link.data(), link.size());
		const size_t crc_at = align_up(name_len + 1, 4);
		if (name_len == 0 || crc_at + 4 > link.size())
			return true;
		object->has_debug_link = true;
		object->debug_link.assign(link.data(), name_len);
		memcpy(&object->debug_link_crc, link.data() + crc_at, 4);
		return true;
	}
	return true;
}

std::vector<LoadedObject> loaded_objects()
{
	Collected collected;
	dl_iterate_phdr(collect_object, &collected);
	if (collected.objects.size() == kMaxLoadedObjects)
		base::diagnostic("the state dump lists the first %zu loaded objects only", kMaxLoadedObjects);
	for (LoadedObject &object : collected.objects) {
		if (object.path.empty() || object.path[0] != '/') {
			// The vDSO, or a name with no file: as LTTng, no size and no build-id.
			object.memsz = 0;
			object.build_id.clear();
		} else {
			read_elf_file_facts(object.path, &object);
		}
	}
	return collected.objects;
}

} // namespace tracery::ust
