// kernel/format_test.cpp — the format parsers on this kernel's own files
// (copied into testdata/events/), on every format file of the running kernel
// (root with tracefs), and on malformed text, each refused with a message
// naming the line and the problem.
#include "kernel/format.hpp"
#include "kernel/tracefs.hpp"
#include "kernel/tracefs_testing.hpp"

#include <gtest/gtest.h>

#include <filesystem>

using namespace tracery::kernel;

using tracery::kernel::test_support::fixture;

namespace {

const char *kGood = "name: ev\nID: 7\nformat:\n"
		    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n"
		    "\tfield:int a;\toffset:8;\tsize:4;\tsigned:1;\n\n"
		    "print fmt: \"a=%d\", REC->a\n";

std::string with_field(const std::string &line)
{
	return std::string("name: ev\nID: 7\nformat:\n") + line + "\n\nprint fmt: \"\"\n";
}

void expect_error(const std::string &text, const std::string &needle)
{
	try {
		parse_event_format(text, "test");
		ADD_FAILURE() << "accepted: " << text;
	} catch (const FormatError &e) {
		EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
			<< "message '" << e.what() << "' lacks '" << needle << "'";
	}
}

} // namespace

TEST(Format, SchedSwitch)
{
	const EventFormat ev = parse_event_format(fixture("sched/sched_switch/format"), "sched");
	EXPECT_EQ(ev.system, "sched");
	EXPECT_EQ(ev.name, "sched_switch");
	EXPECT_EQ(ev.id, 372u);
	ASSERT_EQ(ev.common_fields.size(), 4u);
	EXPECT_EQ(ev.common_fields[3].name, "common_pid");
	EXPECT_EQ(ev.common_fields[3].offset, 4u);
	EXPECT_TRUE(ev.common_fields[3].is_signed);
	ASSERT_EQ(ev.fields.size(), 7u);
	const FieldFormat &comm = ev.fields[0];
	EXPECT_EQ(comm.name, "prev_comm");
	EXPECT_EQ(comm.type, "char");
	EXPECT_EQ(comm.kind, FieldKind::array);
	EXPECT_EQ(comm.array_length, 16u);
	EXPECT_EQ(comm.elem_size, 1u);
	EXPECT_TRUE(comm.is_char);
	const FieldFormat *state = ev.field("prev_state");
	ASSERT_NE(state, nullptr);
	EXPECT_EQ(state->type, "long");
	EXPECT_EQ(state->offset, 32u);
	EXPECT_EQ(state->size, 8u);
	EXPECT_TRUE(state->is_signed);
	EXPECT_EQ(state->kind, FieldKind::scalar);
	EXPECT_EQ(ev.field("next_prio")->offset, 60u);
	EXPECT_EQ(ev.field("next_pid")->type, "pid_t");
	EXPECT_EQ(ev.fixed_size(), 64u);
	EXPECT_EQ(ev.field("nope"), nullptr);
}

TEST(Format, DataLocPointerTrailingAndByteArrays)
{
	const EventFormat exec = parse_event_format(fixture("sched/sched_process_exec/format"), "sched");
	const FieldFormat *file = exec.field("filename");
	ASSERT_NE(file, nullptr);
	EXPECT_EQ(file->kind, FieldKind::data_loc);
	EXPECT_EQ(file->type, "char");
	EXPECT_EQ(file->elem_size, 1u);
	EXPECT_TRUE(file->is_char);
	EXPECT_EQ(file->offset, 8u);

	const EventFormat openat = parse_event_format(fixture("syscalls/sys_enter_openat/format"), "syscalls");
	EXPECT_EQ(openat.field("filename")->type, "const char *");
	EXPECT_EQ(openat.field("filename")->kind, FieldKind::scalar);
	EXPECT_EQ(openat.field("__syscall_nr")->offset, 8u);
	EXPECT_EQ(openat.fixed_size(), 48u);

	const EventFormat print = parse_event_format(fixture("ftrace/print/format"), "ftrace");
	const FieldFormat *buf = print.field("buf");
	ASSERT_NE(buf, nullptr);
	EXPECT_EQ(buf->kind, FieldKind::trailing);
	EXPECT_TRUE(buf->is_char);
	EXPECT_EQ(buf->size, 0u);

	const EventFormat fdb = parse_event_format(fixture("bridge/br_fdb_add/format"), "bridge");
	const FieldFormat *addr = fdb.field("addr");
	ASSERT_NE(addr, nullptr);
	EXPECT_EQ(addr->kind, FieldKind::array);
	EXPECT_EQ(addr->array_length, 6u);
	EXPECT_FALSE(addr->is_char); // unsigned char: bytes, not text

	const EventFormat rq = parse_event_format(fixture("block/block_rq_complete/format"), "block");
	EXPECT_EQ(rq.field("rwbs")->array_length, 10u);
	EXPECT_EQ(rq.field("cmd")->kind, FieldKind::data_loc);
}

TEST(Format, HeaderPageAndEvent)
{
	const PageHeaderFormat page = parse_header_page(fixture("header_page"));
	EXPECT_EQ(page.timestamp_offset, 0u);
	EXPECT_EQ(page.commit_offset, 8u);
	EXPECT_EQ(page.commit_size, 8u);
	EXPECT_EQ(page.data_offset, 16u);
	EXPECT_EQ(page.data_size, 4080u);
	EXPECT_EQ(page.page_size(), 4096u);
	const EventHeaderFormat h = parse_header_event(fixture("header_event"));
	EXPECT_EQ(h.type_len_bits, 5u);
	EXPECT_EQ(h.time_delta_bits, 27u);
	EXPECT_EQ(h.padding, 29u);
	EXPECT_EQ(h.time_extend, 30u);
	EXPECT_EQ(h.time_stamp, 31u);
	EXPECT_EQ(h.data_max, 28u);
}

TEST(Format, MalformedEventFormatsAreRefusedWithTheirLine)
{
	EXPECT_EQ(parse_event_format(kGood, "t").fields.size(), 1u);
	expect_error("ID: 7\nformat:\n", "no 'name:'");
	expect_error("name: ev\nformat:\n", "no 'name:', 'ID:'");
	expect_error("name: ev\nID: x7\nformat:\n", "line 2: bad or repeated ID");
	expect_error("name: ev\nID: 99999\nformat:\n", "bad or repeated ID");
	expect_error("name: e v\nID: 1\nformat:\n", "not an identifier");
	expect_error("hello\n", "line 1: expected 'name:'");
	expect_error(with_field("\tfield:int a;\toffset:8;\tsize:4"), "line 4: a field item without its ';'");
	expect_error(with_field("\tfield:int a;\toffset:eight;\tsize:4;"), "'offset' is not a number");
	expect_error(with_field("\tfield:int a;\toffset:8;"), "without offset or size");
	expect_error(with_field("\tfield:int a;\toffset:8;\toffset:8;\tsize:4;"), "'offset' given twice");
	expect_error(with_field("\tfield:int a;\toffset:65535;\tsize:4;"), "beyond 65536 bytes");
	expect_error(with_field("\tfield:int a;\toffset:4294967295;\tsize:4;"), "beyond 65536 bytes");
	expect_error(with_field("\tfield:int a;\toffset:8;\tsize:4;\tsigned:2;"), "signed is neither");
	expect_error(with_field("\tfield:int a;\toffset:8;\tsize:0;"), "of 0 bytes");
	expect_error(with_field("\tfield:char a[3];\toffset:8;\tsize:16;"), "array 'a' of 3 elements in 16 bytes");
	expect_error(with_field("\tfield:char a[0];\toffset:8;\tsize:16;"), "array 'a' of 0 elements");
	expect_error(with_field("\tfield:struct x a[N];\toffset:8;\tsize:16;"), "unknown element size");
	expect_error(with_field("\tfield:char a[];\toffset:8;\tsize:4;"), "flexible array 'a' of 4 bytes");
	expect_error(with_field("\tfield:char a];\toffset:8;\tsize:4;"), "']' without '['");
	expect_error(with_field("\tfield:__data_loc char[] s;\toffset:8;\tsize:8;"), "of 8 bytes, not 4");
	expect_error(with_field("\tfield:int;\toffset:8;\tsize:4;"), "no type for field 'int'");
	expect_error(with_field("\tfield:int 9a;\toffset:8;\tsize:4;"), "no field name");
	expect_error(with_field("\tfield:int *;\toffset:8;\tsize:4;"), "no field name");
	expect_error(with_field("\tfiled:int a;\toffset:8;\tsize:4;"), "expected 'field:'");
	expect_error(with_field("\tfield:int a;\toffset:8;\tsize:4;\n\tfield:int a;\toffset:12;\tsize:4;"),
	             "line 5: field 'a' given twice");
	expect_error(std::string(kMaxFormatText + 1, 'x'), "longer than");
	std::string many = "name: ev\nID: 7\nformat:\n";
	for (size_t i = 0; i <= kMaxFields; ++i)
		many += "\tfield:char f" + std::to_string(i) + ";\toffset:" + std::to_string(i) + ";\tsize:1;\n";
	expect_error(many, "more than 512 fields");
}

TEST(Format, AStructFieldIsOpaqueBytes)
{
	const EventFormat ev = parse_event_format(with_field("\tfield:struct in6_addr a;\toffset:8;\tsize:16;"), "t");
	ASSERT_EQ(ev.fields.size(), 1u);
	EXPECT_EQ(ev.fields[0].kind, FieldKind::array);
	EXPECT_EQ(ev.fields[0].elem_size, 1u);
	EXPECT_EQ(ev.fields[0].array_length, 16u);
	EXPECT_FALSE(ev.fields[0].is_char);
}

TEST(Format, MalformedHeadersAreRefused)
{
	auto page_error = [](const std::string &text, const std::string &needle) {
		try {
			parse_header_page(text);
			ADD_FAILURE() << "accepted: " << text;
		} catch (const FormatError &e) {
			EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
		}
	};
	const std::string ts = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n";
	const std::string commit = "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n";
	const std::string data = "\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
	EXPECT_EQ(parse_header_page(ts + commit + data).page_size(), 4096u);
	page_error(ts + data, "no timestamp, commit or data");
	page_error(ts + commit + commit + data, "'commit' given twice");
	page_error("\tfield: u32 timestamp;\toffset:0;\tsize:4;\tsigned:0;\n" + commit + data, "timestamp of 4 bytes");
	page_error(ts + "\tfield: local_t commit;\toffset:8;\tsize:2;\tsigned:1;\n" + data, "commit word of 2 bytes");
	page_error(ts + "\tfield: local_t commit;\toffset:4;\tsize:8;\tsigned:1;\n" + data, "overlap");
	page_error(ts + commit + "\tfield: char data;\toffset:12;\tsize:4080;\tsigned:0;\n", "overlap");
	page_error(ts + commit + "\tfield: char data;\toffset:16;\tsize:2000000;\tsigned:0;\n", "beyond 65536");

	auto event_error = [](const std::string &text, const std::string &needle) {
		try {
			parse_header_event(text);
			ADD_FAILURE() << "accepted: " << text;
		} catch (const FormatError &e) {
			EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
		}
	};
	const std::string bits = "\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n";
	const std::string types = "\tpadding     : type == 29\n\ttime_extend : type == 30\n\ttime_stamp : type == 31\n";
	const std::string max = "\tdata max type_len  == 28\n";
	EXPECT_EQ(parse_header_event(bits + types + max).padding, 29u);
	event_error(bits + types, "missing");
	event_error("\ttype_len    :    6 bits\n\ttime_delta  :   27 bits\n" + types + max, "32-bit word");
	event_error(bits + types + "\tdata max type_len  == 29\n", "overlap");
	event_error(bits + "\tpadding     : type == 30\n\ttime_extend : type == 30\n\ttime_stamp : type == 31\n" + max,
	            "overlap");
	event_error(bits + types + "\tdata max type_len  = 28\n", "no '=='");
	event_error(bits + types + max + "\tpadding     : type == 29\n", "given twice");
	event_error("\ttype_len    :    5\n", "expected 'N bits'");
	event_error(bits + "\tpadding     : 29\n", "expected 'type == N'");
	event_error(bits + "\tpadding     : type == x\n", "not a number");
	event_error("what is this\n", "expected 'KEY : VALUE'");
}

TEST(FormatRoot, EveryFormatOfThisKernelParses)
{
	std::string why;
	const std::string root = test_support::tracefs_for_tests(why);
	if (root.empty())
		GTEST_SKIP() << why;
	size_t parsed = 0, data_locs = 0;
	// System by system: a group of dynamic events another program removes
	// meanwhile (uprobes) is skipped, not an error.
	for (const auto &group : std::filesystem::directory_iterator(root + "/events")) {
		std::error_code gone;
		for (std::filesystem::directory_iterator it(group.path(), gone), end; !gone && it != end;
		     it.increment(gone)) {
			const std::filesystem::path format = it->path() / "format";
			if (!std::filesystem::exists(format, gone))
				continue;
			std::string text;
			try {
				text = read_control(format);
			} catch (const std::exception &) {
				if (std::filesystem::exists(format))
					throw;
				continue; // removed since
			}
			try {
				const EventFormat ev = parse_event_format(text, group.path().filename().string());
				EXPECT_EQ(it->path().filename(), ev.name);
				ASSERT_NE(ev.field("common_type"), nullptr) << format;
				EXPECT_EQ(ev.field("common_type")->offset, 0u);
				for (const FieldFormat &f : ev.fields)
					data_locs += f.kind == FieldKind::data_loc;
				++parsed;
			} catch (const FormatError &e) {
				ADD_FAILURE() << format << ": " << e.what();
			}
		}
	}
	EXPECT_GT(parsed, 1000u);
	EXPECT_GT(data_locs, 10u);
	EXPECT_NO_THROW(parse_header_page(read_control(root + "/events/header_page")));
	EXPECT_NO_THROW(parse_header_event(read_control(root + "/events/header_event")));
}
