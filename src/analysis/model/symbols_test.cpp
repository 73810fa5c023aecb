// analysis/model/symbols_test.cpp — the symbol resolver fed made-up sequences
// of loads, build-ids and unloads, resolving addresses of this test program
// itself (its own file, read through libelf and libdw); and the names the
// analyses give what it resolves (address_names.hpp).
#include "analysis/model/symbols.hpp"

#include <gtest/gtest.h>

#include "analysis/model/address_names.hpp"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <string>
#include <vector>

extern "C" [[gnu::noinline]] int tracery_symbols_test_target(int x)
{
	asm volatile("" ::: "memory");
	return x * 3 + 1;
}

namespace tracery::analysis {
namespace {

// This program's file, base and size as the state dump would give them.
struct Self {
	std::string path;
	uint64_t base = 0, memsz = 0;
	std::vector<uint8_t> build_id;
};

Self self()
{
	Self s;
	char buf[PATH_MAX];
	const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
	if (n > 0)
		s.path.assign(buf, static_cast<size_t>(n));
	dl_iterate_phdr(
		[](dl_phdr_info *info, size_t, void *data) {
			auto &me = *static_cast<Self *>(data);
			if (info->dlpi_name && info->dlpi_name[0])
				return 0; // the program is the first, nameless one
			uint64_t end = 0;
			for (int i = 0; i < info->dlpi_phnum; ++i)
				if (info->dlpi_phdr[i].p_type == PT_LOAD)
					end = std::max<uint64_t>(end, info->dlpi_phdr[i].p_vaddr +
				                                              info->dlpi_phdr[i].p_memsz);
			me.base = info->dlpi_addr;
			me.memsz = end;
			return 1;
		},
		&s);
	elf_version(EV_CURRENT);
	const int fd = open(s.path.c_str(), O_RDONLY | O_CLOEXEC);
	if (Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ, nullptr) : nullptr) {
		const void *id = nullptr;
		const ssize_t len = dwelf_elf_gnu_build_id(e, &id);
		if (len > 0)
			s.build_id.assign(static_cast<const uint8_t *>(id), static_cast<const uint8_t *>(id) + len);
		elf_end(e);
	}
	if (fd >= 0)
		close(fd);
	return s;
}

uint64_t target_address() { return reinterpret_cast<uint64_t>(&tracery_symbols_test_target) + 4; }

TEST(SymbolResolver, NamesAFunctionOfThisProgramWithItsOffset)
{
	const Self me = self();
	ASSERT_FALSE(me.path.empty());
	ASSERT_NE(me.memsz, 0u);
	SymbolResolver r;
	r.load(7, me.base, me.memsz, me.path, true);
	r.set_build_id(7, me.base, me.build_id);
	const Symbol *s = r.resolve(7, target_address());
	ASSERT_NE(s, nullptr);
	EXPECT_EQ(s->func, "tracery_symbols_test_target+0x4");
	EXPECT_EQ(s->function, "tracery_symbols_test_target");
	EXPECT_EQ(s->offset, target_address() - me.base);
	char loc[32];
	snprintf(loc, sizeof loc, "+%#llx", static_cast<unsigned long long>(s->offset));
	EXPECT_EQ(s->bin, std::string(file_name_of(me.path)) + loc);
	EXPECT_EQ(s->path, me.path);
	// another process knows nothing of it
	EXPECT_EQ(r.resolve(8, target_address()), nullptr);
	// below and past the object: nothing
	EXPECT_EQ(r.resolve(7, me.base - 1), nullptr);
	EXPECT_EQ(r.resolve(7, me.base + me.memsz), nullptr);
	EXPECT_TRUE(r.problems().empty()) << r.problems()[0];
}

TEST(SymbolResolver, UnloadAndAnotherObjectAtTheSameBaseTakeEffectFromThen)
{
	const Self me = self();
	SymbolResolver r;
	r.load(7, me.base, me.memsz, me.path, true);
	ASSERT_NE(r.resolve(7, target_address()), nullptr);
	r.unload(7, me.base);
	EXPECT_EQ(r.resolve(7, target_address()), nullptr);
	r.unload(7, me.base); // unloaded twice (dlclose, lib:unload): nothing lost
	EXPECT_EQ(r.dropped().orphans, 0u);
	EXPECT_EQ(r.resolve(7, target_address()), nullptr);
	// another file at that base: its name, and nothing of ours
	r.load(7, me.base, me.memsz, "/nonexistent/libother.so", true);
	const Symbol *s = r.resolve(7, target_address());
	ASSERT_NE(s, nullptr);
	EXPECT_EQ(s->bin.substr(0, 13), "libother.so+0");
	EXPECT_EQ(s->func, "");
	EXPECT_EQ(s->src, "");
	ASSERT_EQ(r.problems().size(), 1u);
	EXPECT_NE(r.problems()[0].find("/nonexistent/libother.so: No such file"), std::string::npos) << r.problems()[0];
	// our file again at that base
	r.load(7, me.base, me.memsz, me.path, true);
	s = r.resolve(7, target_address());
	ASSERT_NE(s, nullptr);
	EXPECT_EQ(s->function, "tracery_symbols_test_target");
	// a new state dump forgets everything
	r.start_dump(7);
	EXPECT_EQ(r.resolve(7, target_address()), nullptr);
}

TEST(SymbolResolver, ABuildIdThatDoesNotMatchShowsNothing)
{
	const Self me = self();
	ASSERT_FALSE(me.build_id.empty());
	SymbolResolver r({.debug_dir = "/nonexistent"});
	std::vector<uint8_t> other = me.build_id;
	other[0] ^= 0xff;
	r.load(7, me.base, me.memsz, me.path, true);
	r.set_build_id(7, me.base, other);
	const Symbol *s = r.resolve(7, target_address());
	ASSERT_NE(s, nullptr); // an object holds it, but not the file found
	EXPECT_EQ(s->bin, "");
	EXPECT_EQ(s->func, "");
	ASSERT_EQ(r.problems().size(), 1u);
	EXPECT_NE(r.problems()[0].find("another build"), std::string::npos) << r.problems()[0];
	// the right build-id later: resolved again
	r.set_build_id(7, me.base, me.build_id);
	s = r.resolve(7, target_address());
	ASSERT_NE(s, nullptr);
	EXPECT_EQ(s->function, "tracery_symbols_test_target");
}

TEST(SymbolResolver, OverlappingObjectsTheNewestWins)
{
	const Self me = self();
	SymbolResolver r;
	r.load(7, me.base, me.memsz, me.path, true);
	r.load(7, me.base - 0x1000, me.memsz + 0x1000, "/nonexistent/over.so", true);
	const Symbol *s = r.resolve(7, target_address());
	ASSERT_NE(s, nullptr);
	EXPECT_EQ(s->path, "/nonexistent/over.so");
	EXPECT_EQ(s->offset, target_address() - me.base + 0x1000);
	r.unload(7, me.base - 0x1000);
	s = r.resolve(7, target_address());
	ASSERT_NE(s, nullptr);
	EXPECT_EQ(s->path, me.path);
}

TEST(SymbolResolver, HostileEventsAreCountedNotKept)
{
	SymbolResolver r;
	r.load(7, UINT64_MAX - 10, 100, "/x", true); // wraps around
	EXPECT_EQ(r.dropped().bad, 1u);
	EXPECT_EQ(r.resolve(7, UINT64_MAX - 5), nullptr);
	r.load(7, 0x1000, 0, "[vdso]", true); // the vDSO: ignored
	EXPECT_EQ(r.resolve(7, 0x1000), nullptr);
	r.set_build_id(7, 0x5000, std::vector<uint8_t>{1, 2, 3}); // before any load
	r.set_debug_link(9, 0x5000, "x.debug", 1);
	EXPECT_EQ(r.dropped().orphans, 2u);
	r.set_build_id(7, 0x1000, std::vector<uint8_t>(SymbolResolver::kMaxBuildIdBytes + 1, 7));
	EXPECT_EQ(r.dropped().bad, 2u);
	for (uint64_t i = 0; i < SymbolResolver::kMaxObjects + 5; ++i)
		r.load(7, 0x100000 + i * 0x1000, 0x1000, "/nonexistent/many.so", true);
	EXPECT_EQ(r.dropped().objects, 5u);
	const Symbol *s = r.resolve(7, 0x100000 + 3 * 0x1000 + 0x10);
	ASSERT_NE(s, nullptr);
	EXPECT_EQ(s->bin, "many.so+0x10");
	EXPECT_EQ(r.resolve(7, 0x100000 + (SymbolResolver::kMaxObjects + 1) * 0x1000), nullptr);
	// a non-PIC object: absolute addresses, "@"
	r.load(9, 0x400000, 0x1000, "/nonexistent/static", false);
	s = r.resolve(9, 0x400010);
	ASSERT_NE(s, nullptr);
	EXPECT_EQ(s->bin, "static@0x400010");
}

TEST(SymbolResolver, AFifoOrADirectoryAtThePathIsNoObjectFile)
{
	char dir[] = "/tmp/tracery-symbols-XXXXXX";
	ASSERT_NE(mkdtemp(dir), nullptr);
	const std::string fifo = std::string(dir) + "/fifo";
	ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
	SymbolResolver r;
	r.load(7, 0x1000, 0x1000, fifo, true);
	r.load(7, 0x3000, 0x1000, dir, true);
	const Symbol *s = r.resolve(7, 0x1010); // (no writer: an open that waited would never return)
	ASSERT_NE(s, nullptr);
	EXPECT_EQ(s->bin, "fifo+0x10");
	EXPECT_EQ(s->func, "");
	s = r.resolve(7, 0x3010);
	ASSERT_NE(s, nullptr);
	EXPECT_EQ(s->func, "");
	ASSERT_EQ(r.problems().size(), 2u);
	EXPECT_EQ(r.problems()[0], fifo + ": not a regular file");
	unlink(fifo.c_str());
	rmdir(dir);
}

TEST(SymbolResolver, FileNameOf)
{
	EXPECT_EQ(file_name_of("/usr/lib/libc.so.6"), "libc.so.6");
	EXPECT_EQ(file_name_of("prog"), "prog");
	EXPECT_EQ(file_name_of("/dir/"), "/dir/");
	EXPECT_EQ(build_id_hex({0x0a, 0xff}), "0aff");
}

TEST(AddressNames, TheSymbolsPartsOrHex)
{
	using S = AddressNames::Style;
	EXPECT_EQ(address_name(nullptr, 0x401136, S::call_site), "0x401136");
	Symbol s;
	EXPECT_EQ(address_name(&s, 0x401136, S::function), "0x401136"); // an object with no file to read
	s.bin = "prog+0x1136";
	EXPECT_EQ(address_name(&s, 0x401136, S::function), "prog+0x1136");
	EXPECT_EQ(address_name(&s, 0x401136, S::call_site), "prog+0x1136");
	s.func = "worker+0x5e";
	s.function = "worker";
	EXPECT_EQ(address_name(&s, 0x401136, S::function), "worker");
	EXPECT_EQ(address_name(&s, 0x401136, S::call_site), "worker+0x5e");
	s.src = "prog.c:30";
	EXPECT_EQ(address_name(&s, 0x401136, S::call_site), "worker+0x5e (prog.c:30)");
	// without symbols, every address in hex
	EXPECT_EQ(AddressNames().resolver(), nullptr);
	AddressNames hex;
	hex.see(7, 0x401136, S::function);
	EXPECT_EQ(hex.namer()(0x401136, 7), "0x401136");
}

TEST(AddressNames, NamedAsWhenFirstSeen)
{
	const Self me = self();
	AddressNames names(SymbolOptions{});
	ASSERT_NE(names.resolver(), nullptr);
	names.resolver()->load(7, me.base, me.memsz, me.path, true);
	names.resolver()->set_build_id(7, me.base, me.build_id);
	names.see(7, target_address(), AddressNames::function);
	names.resolver()->unload(7, me.base);
	names.see(7, target_address(), AddressNames::call_site);     // seen already: named while loaded
	names.see(7, target_address() + 1, AddressNames::call_site); // first seen once unloaded
	const AddressNamer name = names.namer();
	EXPECT_EQ(name(target_address(), 7), "tracery_symbols_test_target");
	EXPECT_EQ(name(target_address() + 1, 7), hex_address(target_address() + 1));
	EXPECT_EQ(name(target_address(), 8), hex_address(target_address())); // another process: not seen
}

} // namespace
} // namespace tracery::analysis
