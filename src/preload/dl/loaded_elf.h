/*
 * preload/dl/loaded_elf.h — what the dl helper records of an object the
 * loader mapped: its base address and memory size (from its program headers
 * in memory, dlinfo's RTLD_DI_PHDR, glibc 2.36: an object of any link-map
 * namespace), its build-id (from its mapped notes) and its debug link (the
 * .gnu_debuglink section, read from its file). Every read is bounded; what
 * cannot be read is reported as absent. libtracery's state dump reads the
 * same facts for every object (src/ust/loaded_objects.hpp); this helper may
 * use only the public headers, so it has its own reader, in C.
 */
#ifndef TRACERY_PRELOAD_LOADED_ELF_H
#define TRACERY_PRELOAD_LOADED_ELF_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#define LOADED_ELF_MAX_BUILD_ID 64
#define LOADED_ELF_MAX_DEBUG_LINK 256

struct loaded_elf {
	uint64_t baddr; /* address of the first loadable segment */
	uint64_t memsz; /* from there to the end of the last loadable segment */
	char path[PATH_MAX];
	uint8_t build_id[LOADED_ELF_MAX_BUILD_ID];
	uint32_t build_id_len; /* 0: none */
	char debug_link[LOADED_ELF_MAX_DEBUG_LINK];
	uint32_t debug_link_crc;
	uint8_t has_debug_link;
};

/* Fills *elf for the object of a dlopen/dlmopen handle; 0 on success, -1 if
 * the loader does not know the handle or it is the executable's (dlopen(NULL),
 * which loads nothing). */
int loaded_elf_of_handle(void *handle, struct loaded_elf *elf);

#endif /* TRACERY_PRELOAD_LOADED_ELF_H */
