// Link support for asmjit inside libtracery.so.
//
// Debian 12 ships asmjit only as a static library built for executables
// (-fPIE): its globals.cpp.o reaches `stderr` with a PC-relative relocation,
// which a shared object cannot contain. That object holds nothing but the
// three DebugUtils functions below, so libtracery.so defines them itself and
// the linker never takes globals.cpp.o from the archive. (The rest of the
// archive links into a shared object once its symbols are made local with
// --exclude-libs, see src/ust/CMakeLists.txt.)
#include <asmjit/core.h>

#include <cstdio>
#include <cstdlib>

ASMJIT_BEGIN_NAMESPACE
namespace DebugUtils {

const char *errorAsString(Error err) noexcept
{
	static thread_local char text[32];
	snprintf(text, sizeof text, "asmjit error %u", err);
	return text;
}

void debugOutput(const char *str) noexcept { fputs(str, stderr); }

void assertionFailed(const char *file, int line, const char *msg) noexcept
{
	fprintf(stderr, "tracery: asmjit assertion failed at %s:%d: %s\n", file, line, msg);
	abort();
}

} // namespace DebugUtils
ASMJIT_END_NAMESPACE
