/*
 * preload/dl/dl.c — libtracery-preload-dl.so: dlopen, dlmopen and dlclose, as
 * LTTng-UST's liblttng-ust-dl.so records them (provider lttng_ust_dl): the
 * loaded object's base address, memory size, flags and path
 * (dlopen, dlmopen with its namespace), then its build-id and debug link
 * (build_id, debug_link) where it has them, and the base address of the
 * object a dlclose lets go. With the state dump libtracery records when a
 * session starts (lttng_ust_statedump), a reader can resolve addresses in
 * code loaded at any time.
 *
 * Each wrapper calls the next definition (glibc's) through dlsym(RTLD_NEXT).
 * One difference from a direct call: glibc resolves a relative name through
 * the RUNPATH of dlopen's caller, which is now this helper, not the program.
 */
#define _GNU_SOURCE
#define TRACERY_CREATE_EVENTS
#include <tracery/tracepoint.h>

#include "loaded_elf.h"

#include <dlfcn.h>

/* LTTng-UST's field types: addresses and flags shown in hex, the build-id a
 * blob (bytes shown in hex, as its ctf_sequence_hex of uint8_t). */
/* clang-format off */
TRACERY_EVENT(lttng_ust_dl, dlopen, TRACERY_HEX(U64, baddr), TRACERY_U64(memsz), TRACERY_HEX(S32, flags),
              TRACERY_STRING(path), TRACERY_U8(has_build_id), TRACERY_U8(has_debug_link))
TRACERY_EVENT(lttng_ust_dl, dlmopen, TRACERY_HEX(U64, baddr), TRACERY_U64(memsz), TRACERY_S64(nsid),
              TRACERY_HEX(S32, flags), TRACERY_STRING(path), TRACERY_U8(has_build_id), TRACERY_U8(has_debug_link))
TRACERY_EVENT(lttng_ust_dl, build_id, TRACERY_HEX(U64, baddr), TRACERY_BLOB(build_id))
TRACERY_EVENT(lttng_ust_dl, debug_link, TRACERY_HEX(U64, baddr), TRACERY_U32(crc), TRACERY_STRING(filename))
TRACERY_EVENT(lttng_ust_dl, dlclose, TRACERY_HEX(U64, baddr))
/* clang-format on */

#define TRACERY_PRELOAD_EXPORT __attribute__((visibility("default")))

typedef void *(*dlopen_fn)(const char *, int);
typedef void *(*dlmopen_fn)(Lmid_t, const char *, int);
typedef int (*dlclose_fn)(void *);

static void *next_symbol(const char *name) { return dlsym(RTLD_NEXT, name); }

/* Whether any event of the helper is recorded: only then is a loaded object
 * looked at. */
static int any_enabled(void)
{
	return TRACERY_ENABLED(lttng_ust_dl, dlopen) || TRACERY_ENABLED(lttng_ust_dl, dlmopen) ||
	       TRACERY_ENABLED(lttng_ust_dl, build_id) || TRACERY_ENABLED(lttng_ust_dl, debug_link);
}

static void emit_build_id_and_debug_link(const struct loaded_elf *elf)
{
	if (elf->build_id_len)
		TRACERY_EMIT(lttng_ust_dl, build_id, elf->baddr, elf->build_id, elf->build_id_len);
	if (elf->has_debug_link)
		TRACERY_EMIT(lttng_ust_dl, debug_link, elf->baddr, elf->debug_link_crc, elf->debug_link);
}

TRACERY_PRELOAD_EXPORT void *dlopen(const char *filename, int flags)
{
	static dlopen_fn next;
	if (!next)
		next = (dlopen_fn)next_symbol("dlopen");
	if (!next)
		return NULL;
	void *handle = next(filename, flags);
	struct loaded_elf elf;
	if (handle && any_enabled() && loaded_elf_of_handle(handle, &elf) == 0) {
		TRACERY_EMIT(lttng_ust_dl, dlopen, elf.baddr, elf.memsz, flags, elf.path, elf.build_id_len != 0,
		             elf.has_debug_link);
		emit_build_id_and_debug_link(&elf);
	}
	return handle;
}

TRACERY_PRELOAD_EXPORT void *dlmopen(Lmid_t nsid, const char *filename, int flags)
{
	static dlmopen_fn next;
	if (!next)
		next = (dlmopen_fn)next_symbol("dlmopen");
	if (!next)
		return NULL;
	void *handle = next(nsid, filename, flags);
	struct loaded_elf elf;
	if (handle && any_enabled() && loaded_elf_of_handle(handle, &elf) == 0) {
		/* The namespace the object is in: LM_ID_NEWLM (-1) asks for a new one. */
		Lmid_t in = nsid;
		dlinfo(handle, RTLD_DI_LMID, &in);
		TRACERY_EMIT(lttng_ust_dl, dlmopen, elf.baddr, elf.memsz, (int64_t)in, flags, elf.path,
		             elf.build_id_len != 0, elf.has_debug_link);
		emit_build_id_and_debug_link(&elf);
	}
	return handle;
}

TRACERY_PRELOAD_EXPORT int dlclose(void *handle)
{
	static dlclose_fn next;
	if (!next)
		next = (dlclose_fn)next_symbol("dlclose");
	if (!next)
		return -1;
	if (TRACERY_ENABLED(lttng_ust_dl, dlclose)) {
		/* Before the object may be unmapped: its address is still known. */
		struct loaded_elf elf;
		if (loaded_elf_of_handle(handle, &elf) == 0)
			TRACERY_EMIT(lttng_ust_dl, dlclose, elf.baddr);
	}
	return next(handle);
}
