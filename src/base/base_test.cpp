// Unit tests of the base layer: the size parser (sizes.hpp), the fd owner
// (fd.hpp) and the filesystem credentials of a scope (fs_creds.hpp).
#include "base/byte_order.hpp"
#include "base/fd.hpp"
#include "base/fs_creds.hpp"
#include "base/sizes.hpp"
#include "base/test_temp_dir.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
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

// The owner of a file made in the scope (as root: nobody's), and root's again after it, nested scopes
// restoring what they found.
TEST(FsCreds, FilesMadeInTheScopeBelongToItsUser)
{
	if (::geteuid() != 0)
		GTEST_SKIP() << "needs root (setfsuid to another user)";
	TestTempDir dir;
	ASSERT_EQ(::chmod(dir.path().c_str(), 0777), 0);
	const auto owner_of = [&](const char *name) {
		const std::string path = dir.path() + "/" + name;
		const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		EXPECT_GE(fd, 0) << name << ": " << errno;
		struct stat st {};
		EXPECT_EQ(::fstat(fd, &st), 0);
		::close(fd);
		return std::pair{st.st_uid, st.st_gid};
	};
	{
		FsCreds as_nobody(65534, 65534);
		EXPECT_EQ(owner_of("a"), (std::pair<uid_t, gid_t>{65534, 65534}));
		{
			FsCreds unchanged(static_cast<uid_t>(-1), 0);
			EXPECT_EQ(owner_of("b"), (std::pair<uid_t, gid_t>{65534, 65534}));
			FsCreds as_other(1234, 5678);
			EXPECT_EQ(owner_of("c"), (std::pair<uid_t, gid_t>{1234, 5678}));
		}
		EXPECT_EQ(owner_of("d"), (std::pair<uid_t, gid_t>{65534, 65534}));
		// Another user's file: refused, as it would be to that user.
		EXPECT_LT(::open("/etc/shadow", O_RDONLY | O_CLOEXEC), 0);
	}
	EXPECT_EQ(owner_of("e"), (std::pair<uid_t, gid_t>{0, 0}));
}

} // namespace
} // namespace tracery::base
