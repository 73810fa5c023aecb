// preload/wrapper.cpp — the definition, in each helper, of the per-thread
// mark that the tracer is running (wrapper.hpp), to which the dynamic linker
// binds all the helpers of a process (the first one); where libtracery's code
// is, found before the helper's events register; and the mark set around that
// registration, during which libtracery attaches the probes of the sessions
// that enable them one event after the other, and calls libc (which may
// allocate) as it goes: unmarked, a block libc allocated for it before
// malloc's event was enabled and freed after would show up as a free of a
// block never allocated.
#include "preload/wrapper.hpp"

#include <link.h>

__thread unsigned tracery_preload_in_tracer;

namespace tracery::preload {

TracerCode tracer_code;

} // namespace tracery::preload

namespace {

// The executable segment that holds tracery_fire.
int find_tracer_code(dl_phdr_info *info, size_t, void *)
{
	const auto fire = reinterpret_cast<uintptr_t>(&tracery_fire);
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) &ph = info->dlpi_phdr[i];
		if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
		if (fire - start < ph.p_memsz) {
			tracery::preload::tracer_code = {start, ph.p_memsz};
			return 1;
		}
	}
	return 0;
}

// Before the constructors of the helper without a priority, the event
// registration among them.
__attribute__((constructor(101))) void helper_starting()
{
	tracery_preload_in_tracer = 1;
	dl_iterate_phdr(find_tracer_code, nullptr);
}

// After them: wrapper.cpp is the last source of each helper (CMakeLists.txt),
// and constructors of one priority run in the order of their objects.
__attribute__((constructor)) void helper_started() { tracery_preload_in_tracer = 0; }

} // namespace
