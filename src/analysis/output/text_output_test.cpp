// analysis/output/text_output_test.cpp — the fast text writer: integers at
// every digit count and both ends of their range, the nanoseconds' nine
// digits, doubles, C escapes (in and around the sixteen-byte blocks), a
// buffer growing past its first room, and TextWriter through a pipe (what
// was written arrives, in order; a closed reader ends it quietly).
#include "analysis/output/numbers.hpp"
#include "analysis/output/text_buffer.hpp"
#include "analysis/output/text_writer.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <climits>
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>

namespace tracery::analysis {
namespace {

std::string u64(uint64_t v)
{
	char b[24];
	return {b, put_u64(b, v)};
}

TEST(Numbers, IntegersAsPrintfWritesThem)
{
	uint64_t v = 1;
	for (int digits = 1; digits <= 20; ++digits, v *= 10) {
		for (const uint64_t x : {v - 1, v, v + 1, v * 9 / 5})
			EXPECT_EQ(u64(x), std::to_string(x));
		if (digits == 20)
			break;
	}
	EXPECT_EQ(u64(UINT64_MAX), "18446744073709551615");
	const auto text = [](auto append, auto v) {
		std::string s = "=";
		append(s, v);
		return s;
	};
	EXPECT_EQ(text(append_signed, INT64_MIN), "=-9223372036854775808");
	EXPECT_EQ(text(append_signed, -7), "=-7");
	EXPECT_EQ(text(append_unsigned, 0), "=0");
	char b[9];
	nine_digits(b, 4200);
	EXPECT_EQ(std::string(b, 9), "000004200");
}

TEST(Numbers, Doubles)
{
	const auto text = [](auto append, double v) {
		std::string s = "=";
		append(s, v);
		return s;
	};
	EXPECT_EQ(text(append_double_g, 0.5), "=0.5");
	EXPECT_EQ(text(append_double_g, 1e100), "=1e+100");
	EXPECT_EQ(text(append_double_shortest, 0.1), "=0.1");
	EXPECT_EQ(text(append_double_shortest, -1e-300), "=-1e-300");
}

TEST(TextBuffer, QuotesWithCEscapes)
{
	for (const size_t pad : {0, 5, 14, 15, 16, 17, 31}) {
		const std::string plain(pad, 'x');
		std::string in = plain, want = "\"" + plain;
		in.append("a\tb\\'\"?\x1b\x7f\x01\n").append(plain);
		want.append("a\\tb\\\\\\'\\\"\\?\\e\\x7f\\x01\\n").append(plain).append("\"");
		TextBuffer b;
		put_quoted_c(b, in.data(), in.size());
		EXPECT_EQ(b.view(), want) << pad;
	}
}

TEST(TextBuffer, GrowsKeepingWhatItHolds)
{
	TextBuffer b;
	std::string want;
	for (int i = 0; i < 5000; ++i) {
		b.put_unsigned(static_cast<uint64_t>(i));
		b.lit(", ");
		want += std::to_string(i) + ", ";
	}
	EXPECT_EQ(b.view(), want);
}

TEST(TextWriter, WritesEverythingInOrder)
{
	int fds[2];
	ASSERT_EQ(pipe(fds), 0);
	std::string got;
	std::thread reader([&] {
		char b[65536];
		ssize_t n;
		while ((n = read(fds[0], b, sizeof b)) > 0)
			got.append(b, static_cast<size_t>(n));
	});
	std::string want;
	{
		TextWriter out(fds[1]);
		for (uint64_t i = 0; i < 300000; ++i) { // several buffers of 1 MiB
			out.buf().put_unsigned(i);
			out.buf().put('\n');
			want += std::to_string(i) + '\n';
			out.maybe_flush();
		}
		out.flush();
		EXPECT_FALSE(out.closed());
	}
	close(fds[1]);
	reader.join();
	close(fds[0]);
	EXPECT_EQ(got, want);
}

TEST(TextWriter, AClosedReaderEndsItQuietly)
{
	int fds[2];
	ASSERT_EQ(pipe(fds), 0);
	close(fds[0]);
	signal(SIGPIPE, SIG_IGN);
	TextWriter out(fds[1]);
	out.buf().lit("lost\n");
	EXPECT_NO_THROW(out.flush());
	EXPECT_TRUE(out.closed());
	close(fds[1]);
}

} // namespace
} // namespace tracery::analysis
