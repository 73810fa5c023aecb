// Tests of the loaded objects the state dump records (loaded_objects.cpp):
// the build-id parser on well-formed and malformed notes, and the objects of
// this very process against what the loader says of its own functions.
#include "ust/loaded_objects.hpp"

#include "base/test_temp_dir.hpp"

#include <gtest/gtest.h>
#include <dlfcn.h>
#include <elf.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace tracery::ust {
namespace {

// One ELF note: header, name padded to 4 bytes, descriptor padded to 4 bytes.
void append_note(std::vector<uint8_t> &out, uint32_t type, const std::string &name, const std::vector<uint8_t> &desc)
{
	const uint32_t header[3] = {static_cast<uint32_t>(name.size() + 1), static_cast<uint32_t>(desc.size()), type};
	const auto *h = reinterpret_cast<const uint8_t *>(header);
	out.insert(out.end(), h, h + sizeof header);
	out.insert(out.end(), name.begin(), name.end());
	out.push_back(0);
	out.resize((out.size() + 3) & ~size_t{3});
	out.insert(out.end(), desc.begin(), desc.end());
	out.resize((out.size() + 3) & ~size_t{3});
}

TEST(BuildIdInNotes, FoundAfterOtherNotes)
{
	std::vector<uint8_t> notes;
	append_note(notes, NT_GNU_ABI_TAG, "GNU", {0, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0});
	append_note(notes, NT_GNU_BUILD_ID, "XYZ", {9, 9, 9}); // another owner's note of the same type
	const std::vector<uint8_t> id = {0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03};
	append_note(notes, NT_GNU_BUILD_ID, "GNU", id);
	EXPECT_EQ(build_id_in_notes(notes.data(), notes.size(), 4), id);
}

TEST(BuildIdInNotes, MalformedNotesGiveNone)
{
	std::vector<uint8_t> notes;
	append_note(notes, NT_GNU_BUILD_ID, "GNU", {1, 2, 3, 4});
	// Cut inside the descriptor: nothing read past the end.
	EXPECT_TRUE(build_id_in_notes(notes.data(), notes.size() - 4, 4).empty());
	// A descriptor size past the end, and one that wraps when aligned.
	for (uint32_t bad : {uint32_t{4096}, uint32_t{0xfffffffe}}) {
		std::vector<uint8_t> copy = notes;
		memcpy(copy.data() + 4, &bad, 4);
		EXPECT_TRUE(build_id_in_notes(copy.data(), copy.size(), 4).empty()) << bad;
	}
	// Longer than any build-id kept.
	std::vector<uint8_t> long_id;
	append_note(long_id, NT_GNU_BUILD_ID, "GNU", std::vector<uint8_t>(kMaxBuildIdBytes + 4, 7));
	EXPECT_TRUE(build_id_in_notes(long_id.data(), long_id.size(), 4).empty());
	EXPECT_TRUE(build_id_in_notes(notes.data(), 11, 4).empty()); // shorter than a note header
}

// The object whose [baddr, baddr + memsz) holds addr.
const LoadedObject *object_holding(const std::vector<LoadedObject> &objects, const void *addr)
{
	const auto a = reinterpret_cast<uint64_t>(addr);
	for (const LoadedObject &o : objects)
		if (a >= o.baddr && a < o.baddr + o.memsz)
			return &o;
	return nullptr;
}

TEST(LoadedObjects, ThisProcessAndItsLibc)
{
	const std::vector<LoadedObject> objects = loaded_objects();
	ASSERT_GE(objects.size(), 3u);
	char exe[4096];
	const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	ASSERT_GT(n, 0);
	EXPECT_EQ(objects[0].path, std::string(exe, static_cast<size_t>(n)));
	const LoadedObject *own = object_holding(objects, reinterpret_cast<const void *>(&object_holding));
	ASSERT_NE(own, nullptr);
	EXPECT_EQ(own, &objects[0]);
	EXPECT_FALSE(own->build_id.empty()); // Debian's gcc links with --build-id

	Dl_info info{};
	void *fn = dlsym(RTLD_DEFAULT, "getpid");
	ASSERT_NE(dladdr(fn, &info), 0);
	const LoadedObject *libc = object_holding(objects, fn);
	ASSERT_NE(libc, nullptr);
	char real[4096];
	ASSERT_NE(realpath(info.dli_fname, real), nullptr);
	EXPECT_EQ(libc->path, real);
	EXPECT_EQ(libc->baddr, reinterpret_cast<uint64_t>(info.dli_fbase));
	EXPECT_TRUE(libc->is_pic);
	EXPECT_EQ(libc->build_id.size(), 20u);
}

TEST(ElfFileFacts, NotElfOrMissing)
{
	base::TestTempDir dir;
	const std::string text = dir.path() + "/text";
	std::ofstream(text) << "not an ELF file, but long enough to fill an ELF header of sixty-four bytes......";
	LoadedObject o;
	EXPECT_FALSE(read_elf_file_facts(text, &o));
	EXPECT_FALSE(read_elf_file_facts(dir.path() + "/missing", &o));
	EXPECT_FALSE(o.has_debug_link);
}

} // namespace
} // namespace tracery::ust
