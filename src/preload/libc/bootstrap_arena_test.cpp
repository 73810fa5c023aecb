// Tests of the libc helper's bootstrap arena (bootstrap_arena.hpp): blocks
// aligned as asked, zeroed, apart from each other, their sizes kept, the
// arena's bounds, refusals once full or for impossible requests, and
// threads carving it at once never sharing a byte.
#include "preload/libc/bootstrap_arena.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace {

using tracery::preload::BootstrapArena;

uintptr_t at(const void *p) { return reinterpret_cast<uintptr_t>(p); }

TEST(BootstrapArena, BlocksAreAlignedZeroedAndApart)
{
	auto arena = std::make_unique<BootstrapArena>();
	void *a = arena->allocate(10, 0);
	void *b = arena->allocate(100, 64);
	void *c = arena->allocate(1, 4096);
	ASSERT_TRUE(a && b && c);
	EXPECT_EQ(at(a) % alignof(max_align_t), 0u);
	EXPECT_EQ(at(b) % 64, 0u);
	EXPECT_EQ(at(c) % 4096, 0u);
	EXPECT_GE(at(b), at(a) + 10);
	EXPECT_GE(at(c), at(b) + 100);
	EXPECT_EQ(arena->size_of(a), 10u);
	EXPECT_EQ(arena->size_of(b), 100u);
	EXPECT_EQ(arena->size_of(c), 1u);
	const std::vector<unsigned char> zeros(100, 0);
	EXPECT_EQ(std::memcmp(b, zeros.data(), 100), 0);
	EXPECT_TRUE(arena->owns(a) && arena->owns(c));
	int elsewhere = 0;
	EXPECT_FALSE(arena->owns(&elsewhere));
	EXPECT_FALSE(arena->owns(nullptr));
}

TEST(BootstrapArena, RefusesWhatDoesNotFit)
{
	auto arena = std::make_unique<BootstrapArena>();
	EXPECT_EQ(arena->allocate(BootstrapArena::kBytes + 1, 0), nullptr);
	EXPECT_EQ(arena->allocate(SIZE_MAX, 0), nullptr);
	EXPECT_EQ(arena->allocate(8, 3), nullptr) << "not a power of two";
	EXPECT_EQ(arena->allocate(8, 8192), nullptr) << "beyond the arena's own alignment";
	size_t blocks = 0;
	while (arena->allocate(1000, 0))
		blocks++;
	// A block of 1000 bytes takes 1008 with its 8-byte header (16-byte
	// alignment): 16 KiB hold 16 of them.
	EXPECT_EQ(blocks, 16u);
	EXPECT_NE(arena->allocate(16, 0), nullptr) << "a smaller block still fits in the end";
}

TEST(BootstrapArena, ThreadsNeverShareABlock)
{
	auto arena = std::make_unique<BootstrapArena>();
	constexpr int kThreads = 4;
	std::vector<std::vector<void *>> got(kThreads);
	std::vector<std::thread> threads;
	for (int t = 0; t < kThreads; t++)
		threads.emplace_back([&, t] {
			while (void *p = arena->allocate(24, 0)) {
				std::memset(p, t + 1, 24);
				got[t].push_back(p);
			}
		});
	for (auto &th : threads)
		th.join();
	size_t total = 0;
	for (int t = 0; t < kThreads; t++)
		for (void *p : got[t]) {
			total++;
			for (int i = 0; i < 24; i++)
				ASSERT_EQ(static_cast<unsigned char *>(p)[i], t + 1)
					<< "a block written by another thread";
		}
	// 24 bytes and an 8-byte header: 32 bytes each, the first at 16.
	EXPECT_EQ(total, BootstrapArena::kBytes / 32 - 1);
}

} // namespace
