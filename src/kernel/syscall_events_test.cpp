// kernel/syscall_events_test.cpp — system-call events written whole by BPF
// (bpf/syscall_events.hpp): records parsed as untrusted bytes, and, as
// root, the program on openat recording this thread's calls exactly (time,
// thread, process, name, arguments, path, return value, a fault) and not
// another thread's.
#include <fcntl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "kernel/bpf/syscall_events.hpp"

extern "C" {
#include "kernel/bpf/syscall_record.h"
}

namespace tracery::kernel {
namespace {

std::vector<uint8_t> record_bytes(const tracery_syscall_event &h, std::string_view slots)
{
	std::vector<uint8_t> out(sizeof h + slots.size());
	std::memcpy(out.data(), &h, sizeof h);
	std::memcpy(out.data() + sizeof h, slots.data(), slots.size());
	return out;
}

TEST(SyscallEvents, RecordsParsedAsUntrustedBytes)
{
	tracery_syscall_event h{};
	h.timestamp = 123456789;
	h.pid = 40;
	h.event_id = 7;
	h.ret = -2;
	std::memcpy(h.comm, "cat", 4);
	h.call.tid = 41;
	h.call.nr = 257;
	h.call.strings = 1;
	h.call.len[0] = 6;
	h.call.args[1] = 0x7f00;
	const std::vector<uint8_t> ok = record_bytes(h, std::string_view("/etc/\0", 6));
	SyscallEventView v;
	ASSERT_TRUE(parse_syscall_event(ok, v));
	EXPECT_EQ(v.timestamp, 123456789u);
	EXPECT_EQ(v.pid, 40u);
	EXPECT_EQ(v.event_id, 7u);
	EXPECT_EQ(v.ret, -2);
	EXPECT_EQ(v.comm, "cat");
	EXPECT_EQ(v.call.tid, 41u);
	EXPECT_EQ(v.call.nr, 257);
	EXPECT_EQ(v.call.args[1], 0x7f00u);
	EXPECT_EQ(v.call.string(0), "/etc/");
	EXPECT_EQ(v.call.unfetched(1), 0);
	// Short of its slots, of its header; a name without its NUL.
	EXPECT_FALSE(parse_syscall_event({ok.data(), ok.size() - 1}, v));
	EXPECT_FALSE(parse_syscall_event({ok.data(), sizeof h - 1}, v));
	std::memset(h.comm, 'x', sizeof h.comm);
	EXPECT_FALSE(parse_syscall_event(record_bytes(h, std::string_view("/etc/\0", 6)), v));
}

uint64_t monotonic_ns()
{
	timespec ts{};
	::clock_gettime(CLOCK_MONOTONIC, &ts);
	return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

struct Seen {
	SyscallEventView view;
	std::string path; // the view's slot 0, copied before release()
};

TEST(SyscallEvents, RingSizedForTheChannelsBuffer)
{
	constexpr uint64_t kPage = 4096, KiB = 1024, MiB = KiB * KiB;
	EXPECT_EQ(ring_bytes_for_channel(1 * MiB, kPage), 4 * MiB);          // 1 MiB x 4: a power of 2 already
	EXPECT_EQ(ring_bytes_for_channel(1410 * KiB, kPage), 8 * MiB);       // tracefs's default, x 4, rounded up
	EXPECT_EQ(ring_bytes_for_channel(3 * MiB + 1, kPage), 16 * MiB);     // x 4 is over 12 MiB
	EXPECT_EQ(ring_bytes_for_channel(0, kPage), kMinRingBytes);          // the largest record fits
	EXPECT_EQ(ring_bytes_for_channel(4 * KiB, kPage), kMinRingBytes);    // 16 KiB: below the least
	EXPECT_EQ(ring_bytes_for_channel(1024 * MiB, kPage), kMaxRingBytes); // 4 GiB: above the most
	EXPECT_EQ(ring_bytes_for_channel(UINT64_MAX, kPage), kMaxRingBytes); // no overflow
	EXPECT_EQ(ring_bytes_for_channel(4 * KiB, 1 * MiB), 1 * MiB);        // at least a page
}

TEST(SyscallEvents, ReaderPauseHeldByTheRing)
{
	using std::chrono::milliseconds;
	constexpr uint64_t KiB = 1024, MiB = KiB * KiB;
	EXPECT_EQ(reader_pause_for_ring(kMinRingBytes), milliseconds(2)); // a small ring: as a quiet tracefs CPU
	EXPECT_EQ(reader_pause_for_ring(1 * MiB), milliseconds(2));
	EXPECT_EQ(reader_pause_for_ring(3 * MiB), milliseconds(6)); // 3 MiB at 512 KiB a millisecond
	EXPECT_EQ(reader_pause_for_ring(4 * MiB - 1), milliseconds(7));
	EXPECT_EQ(reader_pause_for_ring(8 * MiB), milliseconds(10)); // the default ring: the longest
	EXPECT_EQ(reader_pause_for_ring(kMaxRingBytes), milliseconds(10));
}

TEST(SyscallEvents, OpenatRecordedWholeForListedThreadsOnly)
{
	const uint32_t cpus = static_cast<uint32_t>(::sysconf(_SC_NPROCESSORS_CONF));
	std::unique_ptr<SyscallEvents> events;
	try {
		events = std::make_unique<SyscallEvents>(cpus, 1 << 16);
	} catch (const std::exception &e) {
		if (::geteuid() != 0)
			GTEST_SKIP() << e.what();
		FAIL() << e.what();
	}
	EXPECT_EQ(events->ring_bytes(), uint64_t{1} << 16); // the map the kernel made
	char comm[16] = {};
	std::FILE *f = std::fopen("/proc/self/comm", "r");
	ASSERT_TRUE(f);
	ASSERT_TRUE(std::fgets(comm, sizeof comm, f));
	std::fclose(f);
	comm[std::strcspn(comm, "\n")] = 0;
	const uint32_t self = static_cast<uint32_t>(::gettid());
	constexpr uint16_t kEntry = 5, kExit = 6;
	events->record_listed_only(true);
	events->attach_entry("openat", uint64_t{1} << 1 /* filename */, kEntry); // (its own openat not listed)
	events->attach_exit("openat", 0, kExit);
	EXPECT_TRUE(events->attached("sys_enter_openat"));
	events->set_thread(self, true);
	events->set_recording(true);

	const uint64_t before = monotonic_ns();
	const int fd = ::openat(AT_FDCWD, "/etc/hostname", O_RDONLY);
	ASSERT_GE(fd, 0);
	::close(fd);
	const long fault = ::syscall(SYS_openat, AT_FDCWD, nullptr, O_RDONLY);            // EFAULT
	std::thread([] { ::close(::openat(AT_FDCWD, "/etc/passwd", O_RDONLY)); }).join(); // not listed
	const uint64_t after = monotonic_ns();

	std::vector<Seen> seen;
	for (uint32_t cpu = 0; cpu < events->num_cpus(); ++cpu) {
		for (const SyscallEventView &v : events->read(cpu))
			seen.push_back({v, std::string(v.call.string(0))});
		events->release(cpu);
	}
	std::sort(seen.begin(), seen.end(),
	          [](const Seen &a, const Seen &b) { return a.view.timestamp < b.view.timestamp; });

	std::string listing;
	for (const Seen &s : seen)
		listing += std::to_string(s.view.call.tid) + " " + std::to_string(s.view.event_id) + " " + s.path +
		           " " + std::to_string(s.view.ret) + "\n";
	ASSERT_EQ(seen.size(), 4u) << "two entries and two exits of this thread, none of the other's:\n" << listing;
	for (const Seen &s : seen) {
		EXPECT_EQ(s.view.call.tid, self);
		EXPECT_EQ(s.view.pid, static_cast<uint32_t>(::getpid()));
		EXPECT_EQ(s.view.comm, comm);
		EXPECT_EQ(s.view.call.nr & 0xffff, SYS_openat);
		EXPECT_GE(s.view.timestamp, before);
		EXPECT_LE(s.view.timestamp, after);
	}
	const SyscallEventView &entry = seen[0].view;
	EXPECT_EQ(entry.event_id, kEntry);
	EXPECT_FALSE(entry.call.exit);
	EXPECT_EQ(static_cast<int32_t>(entry.call.args[0]), AT_FDCWD);
	EXPECT_EQ(seen[0].path, "/etc/hostname");
	EXPECT_EQ(entry.call.args[2], static_cast<uint64_t>(O_RDONLY));
	EXPECT_EQ(entry.call.unfetched(1), 0);
	const SyscallEventView &exit = seen[1].view;
	EXPECT_EQ(exit.event_id, kExit);
	EXPECT_TRUE(exit.call.exit);
	EXPECT_EQ(exit.ret, fd);
	// The NULL path: a fault, recorded as such, not a string.
	EXPECT_EQ(seen[2].view.event_id, kEntry);
	EXPECT_EQ(seen[2].view.call.args[1], 0u);
	EXPECT_EQ(seen[2].view.call.unfetched(1), 1);
	EXPECT_EQ(seen[2].path, "");
	EXPECT_EQ(seen[3].view.ret, fault == -1 ? -EFAULT : fault);
	// Stopped: nothing more.
	events->set_recording(false);
	::close(::openat(AT_FDCWD, "/etc/hostname", O_RDONLY));
	for (uint32_t cpu = 0; cpu < events->num_cpus(); ++cpu) {
		EXPECT_TRUE(events->read(cpu).empty());
		events->release(cpu);
	}
	const SyscallEventsCounts counts = events->counts();
	EXPECT_EQ(counts.records, 4u);
	EXPECT_EQ(counts.lost, 0u);
	EXPECT_EQ(counts.malformed, 0u);
	EXPECT_EQ(counts.faults, 1u);
}

} // namespace
} // namespace tracery::kernel
