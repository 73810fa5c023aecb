/*
 * preload/dl/loaded_elf.c — the facts the dl helper records of a loaded
 * object: see loaded_elf.h.
 */
#define _GNU_SOURCE
#include "loaded_elf.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_SECTIONS 8192
#define MAX_SECTION_NAMES (1u << 20)

static size_t align_up(size_t n, size_t align) { return (n + align - 1) & ~(align - 1); }

/* The GNU build-id among notes (a PT_NOTE segment's), bounded by size. */
static void read_build_id(const uint8_t *notes, size_t size, size_t align, struct loaded_elf *elf)
{
	size_t at = 0;
	while (size - at >= sizeof(ElfW(Nhdr))) {
		ElfW(Nhdr) note;
		memcpy(&note, notes + at, sizeof note);
		const size_t name_at = at + sizeof note;
		const size_t name_room = align_up(note.n_namesz, align);
		if (name_room < note.n_namesz || name_room > size - name_at)
			return;
		const size_t desc_at = name_at + name_room;
		const size_t desc_room = align_up(note.n_descsz, align);
		if (desc_room < note.n_descsz || desc_room > size - desc_at)
			return;
		if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && memcmp(notes + name_at, "GNU", 4) == 0) {
			if (note.n_descsz > 0 && note.n_descsz <= LOADED_ELF_MAX_BUILD_ID) {
				memcpy(elf->build_id, notes + desc_at, note.n_descsz);
				elf->build_id_len = note.n_descsz;
			}
			return;
		}
		at = desc_at + desc_room;
	}
}

/* Base address, memory size and build-id from the object's program headers
 * as the loader mapped them (l_addr: the difference between the addresses
 * they give and the mapped ones). */
static int read_segments(const ElfW(Phdr) * phdr, int phnum, ElfW(Addr) l_addr, struct loaded_elf *elf)
{
	const ElfW(Phdr) *first_load = NULL;
	uint64_t end = 0;
	for (int i = 0; i < phnum; ++i) {
		const ElfW(Phdr) *ph = &phdr[i];
		if (ph->p_type == PT_LOAD) {
			if (!first_load)
				first_load = ph;
			if (ph->p_vaddr + ph->p_memsz > end)
				end = ph->p_vaddr + ph->p_memsz;
		} else if (ph->p_type == PT_NOTE && !elf->build_id_len) {
			read_build_id((const uint8_t *)(l_addr + ph->p_vaddr), ph->p_memsz, ph->p_align == 8 ? 8 : 4,
			              elf);
		}
	}
	if (!first_load)
		return -1;
	elf->baddr = l_addr + first_load->p_vaddr;
	elf->memsz = end - first_load->p_vaddr;
	return 0;
}

static int read_exactly(int fd, void *buf, size_t size, uint64_t offset)
{
	return pread(fd, buf, size, (off_t)offset) == (ssize_t)size;
}

/* The .gnu_debuglink of the file at elf->path: its name, NUL, padding to 4
 * bytes, then the debug file's CRC-32. */
static void read_debug_link(struct loaded_elf *elf)
{
	const int fd = open(elf->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return;
	Elf64_Ehdr eh;
	Elf64_Shdr *sections = NULL;
	char *names = NULL;
	if (!read_exactly(fd, &eh, sizeof eh, 0) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 ||
	    eh.e_shnum > MAX_SECTIONS || eh.e_shstrndx >= eh.e_shnum)
		goto out;
	sections = malloc((size_t)eh.e_shnum * sizeof *sections);
	if (!sections || !read_exactly(fd, sections, (size_t)eh.e_shnum * sizeof *sections, eh.e_shoff))
		goto out;
	const Elf64_Shdr *names_section = &sections[eh.e_shstrndx];
	if (names_section->sh_size == 0 || names_section->sh_size > MAX_SECTION_NAMES)
		goto out;
	names = malloc(names_section->sh_size);
	if (!names || !read_exactly(fd, names, names_section->sh_size, names_section->sh_offset))
		goto out;
	names[names_section->sh_size - 1] = 0;
	for (unsigned i = 0; i < eh.e_shnum; ++i) {
		const Elf64_Shdr *s = &sections[i];
		if (s->sh_name >= names_section->sh_size || strcmp(names + s->sh_name, ".gnu_debuglink") != 0)
			continue;
		char link[LOADED_ELF_MAX_DEBUG_LINK + 8];
		if (s->sh_type == SHT_NOBITS || s->sh_size < 8 || s->sh_size > sizeof link ||
		    !read_exactly(fd, link, s->sh_size, s->sh_offset))
			break;
		const size_t name_len = strnlen(link, s->sh_size);
		const size_t crc_at = align_up(name_len + 1, 4);
		if (name_len == 0 || name_len >= LOADED_ELF_MAX_DEBUG_LINK || crc_at + 4 > s->sh_size)
			break;
		memcpy(elf->debug_link, link, name_len);
		elf->debug_link[name_len] = 0;
		memcpy(&elf->debug_link_crc, link + crc_at, 4);
		elf->has_debug_link = 1;
		break;
	}
out:
	free(names);
	free(sections);
	close(fd);
}

int loaded_elf_of_handle(void *handle, struct loaded_elf *elf)
{
	struct link_map *map = NULL;
	const ElfW(Phdr) *phdr = NULL;
	memset(elf, 0, sizeof *elf);
	if (!handle || dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_name || !map->l_name[0])
		return -1;
	/* Any namespace's object (dl_iterate_phdr lists only the caller's). */
	const int phnum = dlinfo(handle, RTLD_DI_PHDR, &phdr);
	if (phnum <= 0 || !phdr || read_segments(phdr, phnum, map->l_addr, elf) != 0)
		return -1;
	if (!realpath(map->l_name, elf->path)) {
		strncpy(elf->path, map->l_name, sizeof elf->path - 1);
		return 0;
	}
	read_debug_link(elf);
	return 0;
}
