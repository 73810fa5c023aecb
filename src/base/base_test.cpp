// Unit tests of the base layer: the size parser (sizes.hpp) and the fd owner
// (fd.hpp).
#include "base/byte_order.hpp"
#include "base/fd.hpp"
#include "base/sizes.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace tracery::base {
namespace {

TEST(ParseSize, NumbersAndBinarySuffixes)
{
	EXPECT_EQ(parse_size("0"), 0u);
	EXPECT_EQ(parse_size("65536"), 65536u);
	EXPECT_EQ(parse_size("512k"), 512u * 1024);
	EXPECT_EQ(parse_size("512K"), 512u * 1024);
	EXPECT_EQ(parse_size("4m"), 4u << 20);
	EXPECT_EQ(parse_size("4M"), 4u << 20);
	EXPECT_EQ(parse_size("1G"), uint64_t{1} << 30);
	EXPECT_EQ(parse_size("3g"), uint64_t{3} << 30);
	EXPECT_EQ(parse_size("18446744073709551615"), UINT64_MAX);
}

TEST(ParseSize, RejectsAnythingElse)
{
	for (const char *bad : {"", "k", "-1", "+4", " 4", "4 ", "4kb", "4KiB", "4T", "0x10", "1.5M", "4Mk",
	                        "18446744073709551616", "17179869184G"})
		EXPECT_FALSE(parse_size(bad).has_value()) << '"' << bad << '"';
}

TEST(FormatSize, WholeUnitsOrTwoDecimals)
{
	EXPECT_EQ(format_size(1), "1 byte");
	EXPECT_EQ(format_size(512), "512 bytes");
	EXPECT_EQ(format_size(4096), "4 KiB");
	EXPECT_EQ(format_size((uint64_t{1} << 30)), "1 GiB");
	EXPECT_EQ(format_size(3 * (uint64_t{1} << 20) + (uint64_t{1} << 20) / 2), "3.50 MiB");
	EXPECT_EQ(format_size(uint64_t{1} << 40), "1 TiB");
	EXPECT_EQ(format_size(uint64_t{3} << 50), "3072 TiB");
}

TEST(ChannelDefaults, ArePowersOfTwo)
{
	EXPECT_TRUE(is_power_of_two(kDefaultSubbufSize));
	EXPECT_TRUE(is_power_of_two(kDefaultNumSubbuf));
	EXPECT_FALSE(is_power_of_two(0));
	EXPECT_FALSE(is_power_of_two(12));
}

TEST(Fd, ClosesWhatItOwnsAndNothingReleased)
{
	int raw = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
	ASSERT_GE(raw, 0);
	{
		Fd fd(raw);
		EXPECT_TRUE(fd);
		Fd moved(std::move(fd));
		EXPECT_FALSE(fd);
		EXPECT_EQ(moved.get(), raw);
	}
	errno = 0;
	EXPECT_EQ(::fcntl(raw, F_GETFD), -1);
	EXPECT_EQ(errno, EBADF);

	raw = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
	ASSERT_GE(raw, 0);
	{
		Fd fd(raw);
		EXPECT_EQ(fd.release(), raw);
	}
	EXPECT_NE(::fcntl(raw, F_GETFD), -1);
	::close(raw);
}

TEST(ByteOrder, StoresAndLoadsLittleEndian)
{
	uint8_t b[8];
	store_le<uint32_t>(b, 0x11223344u);
	EXPECT_EQ(b[0], 0x44);
	EXPECT_EQ(b[3], 0x11);
	EXPECT_EQ(load_le<uint32_t>(b), 0x11223344u);
	EXPECT_EQ(byteswap<uint16_t>(0x1234), 0x3412);
}

} // namespace
} // namespace tracery::base
