// kernel/page_decoder_oracle_test.cpp — the page decoder and the format
// parser against libtraceevent (kbuffer + tep), the reference reader of
// trace-cmd, on the same bytes: the same events at the same places of the
// page, the same timestamps, the same lost-event counts and the same value
// of every field. On pages built here (time extends, absolute timestamps,
// padding, long events, lost counts stored or not), with this kernel's
// header and format files (testdata/), and on pages read from a tracefs
// instance while a program runs (root; skipped with a message otherwise),
// with a buffer small enough that the oldest pages are overwritten, so
// that real pages carry lost events.
#include "kernel/fields.hpp"
#include "kernel/format.hpp"
#include "kernel/page_builder_testing.hpp"
#include "kernel/page_decoder.hpp"
#include "kernel/tracefs.hpp"
#include "kernel/tracefs_testing.hpp"

#include <event-parse.h>
#include <trace-seq.h>
extern "C" { // kbuffer.h has no extern "C" of its own
#include <kbuffer.h>
}

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

using namespace tracery::kernel;
using tracery::kernel::test_support::PageBuilder;

using tracery::kernel::test_support::fixture;

namespace {

// Both readers, loaded with the same header_page, header_event and formats.
class Readers {
public:
	Readers(const std::string &header_page, const std::string &header_event) : tep_(tep_alloc())
	{
		// As trace-cmd does: the kernel's long and page size first (tep_kbuffer
		// reads the commit word as a long).
		tep_set_long_size(tep_, sizeof(long));
		tep_set_page_size(tep_, static_cast<int>(::sysconf(_SC_PAGESIZE)));
		std::string copy = header_page;
		EXPECT_EQ(tep_parse_header_page(tep_, copy.data(), copy.size(), sizeof(long)), 0);
		kbuf_ = tep_kbuffer(tep_);
		layout_ = make_page_layout(parse_header_page(header_page), parse_header_event(header_event));
	}
	~Readers()
	{
		kbuffer_free(kbuf_); // tep_kbuffer() made it for us
		tep_free(tep_);
	}
	Readers(const Readers &) = delete;
	Readers &operator=(const Readers &) = delete;

	void add_format(const std::string &system, const std::string &text)
	{
		ASSERT_EQ(tep_parse_event(tep_, text.data(), text.size(), system.c_str()), TEP_ERRNO__SUCCESS) << text;
		EventFormat ev = parse_event_format(text, system);
		const uint32_t id = ev.id;
		formats_.emplace(id, std::move(ev));
	}
	const EventFormat &format(uint32_t id) const { return formats_.at(id); }

	struct Counts {
		size_t events = 0, fields = 0, lost_pages = 0;
	};

	// Decodes `page` with both and compares everything; adds to `counts`.
	void compare(const std::vector<uint8_t> &page, Counts &counts)
	{
		struct Ours {
			uint64_t ts;
			const uint8_t *payload;
			uint32_t size;
		};
		std::vector<Ours> ours;
		const PageResult r = PageDecoder(layout_).decode(std::span(page), [&](const RawEvent &e) {
			ours.push_back({e.timestamp, e.payload, e.size});
		});
		EXPECT_EQ(r.error, nullptr) << r.error << " at " << r.error_offset;

		std::vector<uint8_t> copy = page; // kbuffer takes a non-const page
		ASSERT_EQ(kbuffer_load_subbuffer(kbuf_, copy.data()), 0);
		const int missed = kbuffer_missed_events(kbuf_);
		if (missed < 0) {
			EXPECT_TRUE(r.events_lost && !r.lost_count_known);
		} else {
			EXPECT_EQ(r.events_lost, missed > 0);
			EXPECT_EQ(r.lost_count_known, missed > 0);
			EXPECT_EQ(r.lost, static_cast<uint64_t>(missed));
		}
		counts.lost_pages += r.events_lost;
		size_t i = 0;
		unsigned long long ts = 0;
		for (void *data = kbuffer_read_event(kbuf_, &ts); data; data = kbuffer_next_event(kbuf_, &ts), ++i) {
			if (i >= ours.size()) {
				ADD_FAILURE() << "libtraceevent sees more events than " << ours.size();
				return;
			}
			const Ours &o = ours[i];
			EXPECT_EQ(o.ts, ts) << "event " << i;
			const ptrdiff_t at = static_cast<const uint8_t *>(data) - copy.data();
			EXPECT_EQ(o.payload - page.data(), at) << "event " << i;
			EXPECT_EQ(o.size, static_cast<uint32_t>(kbuffer_event_size(kbuf_))) << "event " << i;
			compare_fields(copy.data() + at, o.size, ts, counts);
		}
		EXPECT_EQ(i, ours.size());
		counts.events += i;
	}

private:
	void compare_fields(uint8_t *payload, uint32_t size, unsigned long long ts, Counts &counts)
	{
		const std::span<const uint8_t> bytes(payload, size);
		const uint16_t id = tracery::base::load_le<uint16_t>(payload);
		tep_event *tev = tep_find_event(tep_, id);
		const auto it = formats_.find(id);
		ASSERT_NE(tev, nullptr) << "libtraceevent knows no event " << id;
		ASSERT_NE(it, formats_.end()) << "no format for event " << id;
		tep_record record{};
		record.ts = ts;
		record.data = payload;
		record.size = static_cast<int>(size);
		trace_seq seq;
		trace_seq_init(&seq);
		for (const auto *list : {&it->second.common_fields, &it->second.fields}) {
			for (const FieldFormat &f : *list) {
				tep_format_field *tf = tep_find_any_field(tev, f.name.c_str());
				ASSERT_NE(tf, nullptr) << f.name;
				EXPECT_EQ(static_cast<uint32_t>(tf->offset), f.offset) << f.name;
				if (f.kind == FieldKind::scalar) {
					uint64_t mine = 0;
					unsigned long long theirs = 0;
					ASSERT_TRUE(read_integer(f, bytes, mine)) << f.name;
					ASSERT_EQ(tep_read_number_field(tf, payload, &theirs), 0) << f.name;
					const uint64_t mask =
						f.size == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * f.size)) - 1;
					EXPECT_EQ(mine & mask, theirs) << f.name;
					// Sign extension: the high bits follow the sign bit.
					if (f.is_signed && f.size < 8) {
						EXPECT_EQ(mine >> (8 * f.size - 1) == 0,
						          (theirs >> (8 * f.size - 1)) == 0)
							<< f.name;
					}
				} else {
					int len = 0;
					void *raw = tep_get_field_raw(&seq, tev, f.name.c_str(), &record, &len, 0);
					const std::span<const uint8_t> mine = field_bytes(f, bytes);
					ASSERT_NE(raw, nullptr) << f.name;
					EXPECT_EQ(mine.data(), static_cast<const uint8_t *>(raw)) << f.name;
					EXPECT_EQ(mine.size(), static_cast<size_t>(len)) << f.name;
				}
				++counts.fields;
			}
		}
		trace_seq_destroy(&seq);
	}

	tep_handle *tep_;
	kbuffer *kbuf_ = nullptr;
	PageLayout layout_;
	std::map<uint32_t, EventFormat> formats_;
};

// A payload of `ev` with each scalar field set to value(i) and each char
// array to `text`; `extra` bytes of variable data after the fixed part,
// pointed to by the first __data_loc field.
std::vector<uint8_t> payload_of(const EventFormat &ev, uint64_t seed, const std::string &text = "comm",
                                const std::string &dynamic = "")
{
	std::vector<uint8_t> p(ev.fixed_size() + dynamic.size() + 1, 0);
	tracery::base::store_le<uint16_t>(p.data(), static_cast<uint16_t>(ev.id));
	uint64_t v = seed;
	for (const FieldFormat &f : ev.fields) {
		v = v * 6364136223846793005ull + 1442695040888963407ull;
		uint8_t *at = p.data() + f.offset;
		switch (f.kind) {
		case FieldKind::scalar:
			std::memcpy(at, &v, f.size); // little-endian host: the low bytes
			break;
		case FieldKind::array:
			std::memcpy(at, text.data(), std::min<size_t>(text.size(), f.size));
			break;
		case FieldKind::data_loc:
			tracery::base::store_le<uint32_t>(at, ev.fixed_size() |
			                                              static_cast<uint32_t>(dynamic.size() + 1) << 16);
			std::memcpy(p.data() + ev.fixed_size(), dynamic.c_str(), dynamic.size() + 1);
			break;
		default:
			break;
		}
	}
	tracery::base::store_le<int32_t>(p.data() + 4, static_cast<int32_t>(seed));
	return p;
}

} // namespace

TEST(PageDecoderOracle, SyntheticPages)
{
	Readers readers(fixture("header_page"), fixture("header_event"));
	for (const char *path :
	     {"sched/sched_switch/format", "sched/sched_process_exec/format", "syscalls/sys_enter_getpid/format",
	      "syscalls/sys_exit_getpid/format", "block/block_rq_complete/format"})
		readers.add_format(std::string(path).substr(0, std::string(path).find('/')), fixture(path));
	const EventFormat &sw = readers.format(372), &exec = readers.format(365), &enter = readers.format(309);
	Readers::Counts counts;

	// Every kind of header on one page, and a stored lost count.
	PageBuilder a(1'700'000'000'000);
	a.event(0, payload_of(sw, 1, "swapper/0"))
		.event((1u << 27) - 1, payload_of(enter, 2))
		.time_extend((uint64_t{5} << 27) | 12345)
		.event(3, payload_of(exec, 3, "", std::string(150, 'x'))) // long: type_len 0
		.padding(17, 20)
		.event(4, payload_of(sw, 4, "a-very-long-comm-name"))
		.absolute(1'800'000'000'000)
		.event(5, payload_of(exec, 5, "", "/bin/true"))
		.padding(0x1234, 4)
		.event(6, payload_of(enter, 6), true);
	readers.compare(a.finish(77), counts);

	// Events lost, their count not stored.
	PageBuilder b(42);
	b.event(1, payload_of(enter, 7)).event(2, payload_of(sw, 8));
	readers.compare(b.finish(-1), counts);

	// A full page of small events, with time extends every 50.
	PageBuilder c(0);
	for (uint32_t i = 0; c.data_size() + 64 < 4080; ++i) {
		if (i % 50 == 49)
			c.time_extend(uint64_t{1} << 30);
		c.event(i * 977 % (1u << 27), payload_of(enter, i));
	}
	readers.compare(c.finish(), counts);

	EXPECT_GT(counts.events, 200u);
	EXPECT_GT(counts.fields, 1000u);
	EXPECT_EQ(counts.lost_pages, 2u);
}

TEST(PageDecoderOracleRoot, PagesOfALiveInstance)
{
	std::string why;
	const std::string root = test_support::tracefs_for_tests(why);
	if (root.empty())
		GTEST_SKIP() << why;
	const auto before = test_support::global_settings(root);
	Readers readers(read_control(root + "/events/header_page"), read_control(root + "/events/header_event"));
	const std::vector<Tracepoint> events = {
		{"sched", "sched_switch"},        {"sched", "sched_wakeup"},        {"sched", "sched_process_fork"},
		{"sched", "sched_process_exec"},  {"sched", "sched_process_exit"},  {"syscalls", "sys_enter_getpid"},
		{"syscalls", "sys_exit_getpid"},  {"syscalls", "sys_enter_openat"}, {"syscalls", "sys_exit_openat"},
		{"syscalls", "sys_enter_execve"}, {"sched", "sched_waking"},        {"syscalls", "sys_enter_write"},
		{"syscalls", "sys_exit_write"},
	};
	Readers::Counts counts;
	{
		Instance inst(root, instance_name(::getpid(), "oracle-test"));
		inst.set_buffer_size_kb(16); // small: the oldest pages are overwritten
		for (const Tracepoint &tp : events) {
			inst.enable_event(tp);
			readers.add_format(tp.system,
			                   read_control(root + "/events/" + tp.system + "/" + tp.name + "/format"));
		}
		const pid_t pids[] = {::getpid()};
		inst.set_event_pids(pids, true);
		// A child that makes system calls, then runs a program.
		const pid_t child = ::fork();
		ASSERT_GE(child, 0);
		if (child == 0) {
			for (int i = 0; i < 20000; ++i)
				::getpid();
			::execl("/bin/true", "true", static_cast<char *>(nullptr));
			::_exit(127);
		}
		int status = 0;
		ASSERT_EQ(::waitpid(child, &status, 0), child);
		inst.set_tracing_on(false);
		const long cpus = ::sysconf(_SC_NPROCESSORS_CONF);
		for (long cpu = 0; cpu < cpus; ++cpu) {
			tracery::base::Fd fd = inst.open_cpu_pipe(static_cast<uint32_t>(cpu));
			for (;;) {
				std::vector<uint8_t> page(4096, 0);
				const ssize_t n = ::read(fd.get(), page.data(), page.size());
				if (n <= 0) {
					EXPECT_TRUE(n == 0 || errno == EAGAIN) << std::strerror(errno);
					break;
				}
				readers.compare(page, counts);
			}
		}
	}
	EXPECT_GT(counts.events, 400u); // what 16 KiB per CPU holds
	EXPECT_GT(counts.fields, 2000u);
	EXPECT_GT(counts.lost_pages, 0u) << "no page with lost events: the buffer was not overwritten";
	EXPECT_EQ(test_support::global_settings(root), before);
}
