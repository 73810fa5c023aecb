// ctf/files_test.cpp — UUIDs, trace directories, atomic metadata publication
// and stream files (packet bytes, O_EXCL, errors, rollback).
#include <gtest/gtest.h>

#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include <thread>
#include <vector>

#include "ctf/packet.hpp"
#include "ctf/stream_writer.hpp"
#include "ctf/trace_dir.hpp"
#include "ctf/uuid.hpp"

using namespace tracery::ctf;
namespace fs = std::filesystem;

namespace {

class TmpDir {
public:
	TmpDir()
	{
		char tmpl[] = "/tmp/tracery-ctf-files-XXXXXX";
		if (!mkdtemp(tmpl))
			throw std::system_error(errno, std::generic_category(), "mkdtemp");
		path_ = tmpl;
	}
	~TmpDir() { fs::remove_all(path_); }
	const std::string &path() const { return path_; }

private:
	std::string path_;
};

std::string slurp(const std::string &path)
{
	std::ifstream f(path, std::ios::binary);
	std::stringstream ss;
	ss << f.rdbuf();
	return ss.str();
}

mode_t file_mode(const std::string &path)
{
	struct stat st;
	EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
	return st.st_mode & 07777;
}

std::vector<std::string> dir_entries(const std::string &dir)
{
	std::vector<std::string> v;
	for (const auto &e : fs::directory_iterator(dir))
		v.push_back(e.path().filename());
	std::sort(v.begin(), v.end());
	return v;
}

// Sets a umask for the scope of a test.
struct Umask {
	explicit Umask(mode_t m) : old(umask(m)) {}
	~Umask() { umask(old); }
	mode_t old;
};

} // namespace

TEST(Uuid, RandomFormatParse)
{
	const Uuid a = Uuid::random(), b = Uuid::random();
	EXPECT_NE(a, b);
	EXPECT_FALSE(a.is_nil());
	EXPECT_EQ(a.bytes[6] >> 4, 4);      // version 4
	EXPECT_EQ(a.bytes[8] & 0xC0, 0x80); // RFC 4122 variant
	const std::string s = a.to_string();
	ASSERT_EQ(s.size(), 36u);
	EXPECT_EQ(s[8], '-');
	EXPECT_EQ(s[13], '-');
	EXPECT_EQ(s[18], '-');
	EXPECT_EQ(s[23], '-');
	EXPECT_EQ(Uuid::parse(s), a);
	EXPECT_EQ(Uuid::parse("01234567-89AB-cdef-0123-456789abcdef")->to_string(),
	          "01234567-89ab-cdef-0123-456789abcdef");
	EXPECT_FALSE(Uuid::parse("01234567-89ab-cdef-0123-456789abcde"));
	EXPECT_FALSE(Uuid::parse("01234567x89ab-cdef-0123-456789abcdef"));
	EXPECT_FALSE(Uuid::parse("g1234567-89ab-cdef-0123-456789abcdef"));
	EXPECT_TRUE(Uuid{}.is_nil());
}

TEST(TraceDir, MakeDirectories)
{
	TmpDir tmp;
	Umask um(022);
	const std::string deep = tmp.path() + "/a/b/c/";
	make_directories(deep);
	EXPECT_TRUE(fs::is_directory(tmp.path() + "/a/b/c"));
	EXPECT_EQ(file_mode(tmp.path() + "/a"), 0700u);
	EXPECT_EQ(file_mode(tmp.path() + "/a/b/c"), 0700u);
	make_directories(deep); // exists: fine
	make_directories(tmp.path() + "/x", 0750);
	EXPECT_EQ(file_mode(tmp.path() + "/x"), 0750u);
	// A file in the way.
	std::ofstream(tmp.path() + "/file") << "x";
	try {
		make_directories(tmp.path() + "/file/sub");
		FAIL() << "no exception";
	} catch (const std::system_error &e) {
		EXPECT_EQ(e.code().value(), ENOTDIR);
		EXPECT_NE(std::string(e.what()).find(tmp.path() + "/file"), std::string::npos) << e.what();
	}
	EXPECT_THROW(make_directories(tmp.path() + "/file"), std::system_error);
}

// What stands at the metadata's path in a directory another user owns: an
// append neither blocks on a FIFO nor follows a symbolic link.
TEST(TraceDir, AppendRefusesWhatIsNotARegularFile)
{
	TmpDir tmp;
	const TraceDir dir = TraceDir::create(tmp.path() + "/t");
	ASSERT_EQ(::mkfifo(dir.metadata_path().c_str(), 0600), 0);
	EXPECT_THROW(dir.append_metadata("B\n"), std::system_error); // at once: no writer ever opens the FIFO
	ASSERT_EQ(::unlink(dir.metadata_path().c_str()), 0);
	const TraceDir other = TraceDir::create(tmp.path() + "/other");
	other.write_metadata("A\n");
	ASSERT_EQ(::symlink(other.metadata_path().c_str(), dir.metadata_path().c_str()), 0);
	EXPECT_THROW(dir.append_metadata("B\n"), std::system_error);
	EXPECT_EQ(slurp(other.metadata_path()), "A\n");
}

TEST(TraceDir, WriteAndAppendMetadata)
{
	TmpDir tmp;
	Umask um(022);
	const TraceDir dir = TraceDir::create(tmp.path() + "/t");
	EXPECT_EQ(dir.metadata_path(), tmp.path() + "/t/metadata");
	EXPECT_THROW(dir.append_metadata("x"), std::system_error); // no metadata yet
	dir.write_metadata("/* CTF 1.8 */\nA\n", 0640);
	EXPECT_EQ(slurp(dir.metadata_path()), "/* CTF 1.8 */\nA\n");
	EXPECT_EQ(file_mode(dir.metadata_path()), 0640u);
	dir.append_metadata("B\n");
	dir.append_metadata("C\n", /*durable=*/true);
	EXPECT_EQ(slurp(dir.metadata_path()), "/* CTF 1.8 */\nA\nB\nC\n");
	EXPECT_EQ(file_mode(dir.metadata_path()), 0640u); // kept across appends
	// Replacing starts over.
	dir.write_metadata("new\n");
	EXPECT_EQ(slurp(dir.metadata_path()), "new\n");
	EXPECT_EQ(file_mode(dir.metadata_path()), 0600u);
	// No temporary file left behind.
	EXPECT_EQ(dir_entries(dir.path()), std::vector<std::string>{"metadata"});
}

TEST(TraceDir, LargeAppend)
{
	TmpDir tmp;
	const TraceDir dir = TraceDir::create(tmp.path());
	const std::string big(3 << 20, 'x');
	dir.write_metadata(big);
	dir.append_metadata("tail");
	const std::string got = slurp(dir.metadata_path());
	ASSERT_EQ(got.size(), big.size() + 4);
	EXPECT_EQ(got.substr(big.size()), "tail");
	EXPECT_EQ(got.find_first_not_of('x'), big.size());
}

// A reader that keeps reopening the metadata file while blocks are appended
// must only ever see whole blocks.
TEST(TraceDir, ReadersNeverSeePartialBlocks)
{
	TmpDir tmp;
	const TraceDir dir = TraceDir::create(tmp.path());
	const std::string head = "/* CTF 1.8 */\n";
	auto block = [](int i) {
		std::string b = "event { id = " + std::to_string(i) + "; ";
		b.append(20000, 'f'); // spans several pages
		return b + " };\n";
	};
	dir.write_metadata(head);
	constexpr int kBlocks = 150;
	std::atomic<bool> done{false};
	std::atomic<int> reads{0}, bad{0};
	std::thread reader([&] {
		while (!done.load()) {
			const std::string s = slurp(dir.metadata_path());
			size_t pos = head.size();
			int i = 0;
			bool ok = s.compare(0, head.size(), head) == 0;
			while (ok && pos < s.size()) {
				const std::string b = block(i++);
				ok = s.compare(pos, b.size(), b) == 0;
				pos += b.size();
			}
			if (!ok || pos != s.size())
				bad.fetch_add(1);
			reads.fetch_add(1);
		}
	});
	for (int i = 0; i < kBlocks; ++i)
		dir.append_metadata(block(i));
	done = true;
	reader.join();
	EXPECT_EQ(bad.load(), 0) << "of " << reads.load() << " reads";
	EXPECT_GT(reads.load(), 0);
	size_t total = head.size();
	for (int i = 0; i < kBlocks; ++i)
		total += block(i).size();
	EXPECT_EQ(slurp(dir.metadata_path()).size(), total);
}

TEST(StreamWriter, PacketBytes)
{
	TmpDir tmp;
	Umask um(022);
	const Uuid uuid = Uuid::random();
	StreamWriter w(tmp.path(), "chan_0", uuid, 2, 9);
	EXPECT_TRUE(w.is_open());
	EXPECT_EQ(w.path(), tmp.path() + "/chan_0");
	EXPECT_EQ(file_mode(w.path()), 0600u);
	const std::string events = "0123456789abcdef";
	PacketInfo p{100, 200, 3, 0, 1};
	w.write_packet(p, events.data(), events.size());
	EXPECT_EQ(w.bytes_written(), kPacketPrefixSize + 16);
	// An empty packet, then one from three pieces.
	p.seq = 1;
	w.write_packet(p, nullptr, 0);
	const iovec pieces[3] = {{const_cast<char *>("ab"), 2}, {nullptr, 0}, {const_cast<char *>("cde"), 3}};
	p.seq = 2;
	w.write_packet(p, std::span<const iovec>(pieces, 3));
	w.close();
	EXPECT_FALSE(w.is_open());
	w.close(); // twice: fine

	const std::string f = slurp(tmp.path() + "/chan_0");
	ASSERT_EQ(f.size(), 3 * kPacketPrefixSize + 16 + 5);
	uint8_t expect[kPacketPrefixSize];
	write_packet_prefix(expect, uuid, 2, 9, PacketInfo{100, 200, 3, 0, 1, kEventsUnknown}, 16);
	EXPECT_EQ(std::memcmp(f.data(), expect, kPacketPrefixSize), 0);
	EXPECT_EQ(f.substr(kPacketPrefixSize, 16), events);
	const auto *second = reinterpret_cast<const uint8_t *>(f.data()) + kPacketPrefixSize + 16;
	EXPECT_EQ(tracery::base::load_le<uint64_t>(second + 48), kPacketPrefixSize * 8); // content_size
	EXPECT_EQ(tracery::base::load_le<uint64_t>(second + 56), kPacketPrefixSize * 8); // packet_size
	EXPECT_EQ(tracery::base::load_le<uint64_t>(second + 64), 1u);
	const auto *third = second + kPacketPrefixSize;
	EXPECT_EQ(tracery::base::load_le<uint64_t>(third + 48), (kPacketPrefixSize + 5) * 8);
	EXPECT_EQ(f.substr(f.size() - 5), "abcde");
}

TEST(StreamWriter, ManyPieces)
{
	// More pieces than IOV_MAX (1024): written in several pwritev calls.
	TmpDir tmp;
	StreamWriter w(tmp.path(), "s", Uuid::random(), 0, 0);
	std::vector<uint8_t> data(3000);
	std::vector<iovec> iov;
	for (size_t i = 0; i < data.size(); ++i) {
		data[i] = static_cast<uint8_t>(i * 7);
		iov.push_back({&data[i], 1});
	}
	w.write_packet(PacketInfo{}, iov);
	w.close();
	const std::string f = slurp(tmp.path() + "/s");
	ASSERT_EQ(f.size(), kPacketPrefixSize + data.size());
	EXPECT_EQ(std::memcmp(f.data() + kPacketPrefixSize, data.data(), data.size()), 0);
}

TEST(StreamWriter, ModeExclusiveAndErrors)
{
	TmpDir tmp;
	Umask um(0);
	{
		StreamWriter w(tmp.path(), "s", Uuid::random(), 0, 0, 0640);
		EXPECT_EQ(file_mode(w.path()), 0640u);
	}
	try {
		StreamWriter again(tmp.path(), "s", Uuid::random(), 0, 0);
		FAIL() << "an existing stream file was opened";
	} catch (const std::system_error &e) {
		EXPECT_EQ(e.code().value(), EEXIST);
		EXPECT_NE(std::string(e.what()).find(tmp.path() + "/s"), std::string::npos) << e.what();
	}
	EXPECT_THROW(StreamWriter(tmp.path() + "/missing", "s", Uuid::random(), 0, 0), std::system_error);

	StreamWriter closed;
	EXPECT_FALSE(closed.is_open());
	EXPECT_THROW(closed.write_packet(PacketInfo{}, "x", 1), std::system_error);

	// Moves hand the file over.
	StreamWriter a(tmp.path(), "m", Uuid::random(), 0, 0);
	StreamWriter b = std::move(a);
	EXPECT_FALSE(a.is_open());
	b.write_packet(PacketInfo{}, "xy", 2);
	a = std::move(b);
	a.write_packet(PacketInfo{}, "z", 1);
	EXPECT_EQ(a.bytes_written(), 2 * kPacketPrefixSize + 3);
	a.sync();
}

// A write that hits the file size limit: the first pwritev is short, the
// retry fails with EFBIG. The error names the file and the partial packet
// is removed; after the limit is lifted the writer goes on.
TEST(StreamWriter, ErrorRollsBackPartialPacket)
{
	TmpDir tmp;
	StreamWriter w(tmp.path(), "s", Uuid::random(), 0, 0);
	const std::string events(100, 'e');
	w.write_packet(PacketInfo{}, events.data(), events.size());
	const uint64_t one = kPacketPrefixSize + 100;
	ASSERT_EQ(w.bytes_written(), one);

	struct rlimit old;
	ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
	struct sigaction ign = {}, old_sa;
	ign.sa_handler = SIG_IGN;
	ASSERT_EQ(sigaction(SIGXFSZ, &ign, &old_sa), 0);
	struct rlimit lim = old;
	lim.rlim_cur = one + 50; // room for half a packet
	ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
	int err = 0;
	std::string what;
	try {
		w.write_packet(PacketInfo{}, events.data(), events.size());
	} catch (const std::system_error &e) {
		err = e.code().value();
		what = e.what();
	}
	ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &old), 0);
	ASSERT_EQ(sigaction(SIGXFSZ, &old_sa, nullptr), 0);

	EXPECT_EQ(err, EFBIG);
	EXPECT_NE(what.find(tmp.path() + "/s"), std::string::npos) << what;
	EXPECT_EQ(w.bytes_written(), one);
	EXPECT_EQ(fs::file_size(tmp.path() + "/s"), one);
	w.write_packet(PacketInfo{}, events.data(), events.size());
	EXPECT_EQ(fs::file_size(tmp.path() + "/s"), 2 * one);
	w.close();
}
