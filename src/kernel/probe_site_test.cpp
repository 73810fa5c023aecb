// kernel/probe_site_test.cpp — the probe resolver (probe_site.hpp) on
// programs built here without Tracery (testapps/): file offsets against
// binutils' readelf (another ELF reader than the code's libelf), the
// arguments DWARF gives each function, return values, the stripped copy,
// the copy with a separate debug file, SDT notes against readelf -n, the
// texts (specs, --args, SDT operands) with their errors; and, as root, the
// kernel taking the generated uprobe_events lines in a private instance and
// recording the values the program passes.
#include "kernel/probe_site.hpp"
#include "kernel/uprobes.hpp"

#include "kernel/tracefs.hpp"
#include "kernel/tracefs_testing.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace tracery::kernel;

namespace {

const std::string kTargetO0 = TRACERY_PROBE_TARGET_O0;
const std::string kTargetO2 = TRACERY_PROBE_TARGET_O2;
const std::string kStripped = TRACERY_PROBE_TARGET_STRIPPED;
const std::string kLinked = TRACERY_PROBE_TARGET_LINKED;
const std::string kSdt = TRACERY_PROBE_SDT;

std::string run(const std::string &command)
{
	FILE *p = popen(command.c_str(), "r");
	EXPECT_NE(p, nullptr) << command;
	if (!p)
		return "";
	std::string out;
	char buf[4096];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, p)) > 0)
		out.append(buf, n);
	EXPECT_EQ(pclose(p), 0) << command;
	return out;
}

class Fd {
public:
	explicit Fd(const std::string &path) : fd_(open(path.c_str(), O_RDONLY | O_CLOEXEC))
	{
		EXPECT_GE(fd_, 0) << path;
	}
	~Fd()
	{
		if (fd_ >= 0)
			close(fd_);
	}
	int get() const { return fd_; }

private:
	int fd_;
};

std::vector<ProbeSite> resolve(const std::string &spec, const std::string &args = "")
{
	const ProbeSpec s = parse_probe_spec(spec);
	Fd fd(s.path);
	return resolve_probe(fd.get(), s, args);
}

// The message of the ProbeError that resolving `spec` throws.
std::string resolve_error(const std::string &spec, const std::string &args = "")
{
	try {
		resolve(spec, args);
	} catch (const ProbeError &e) {
		return e.what();
	}
	ADD_FAILURE() << spec << " resolved";
	return "";
}

// ---- readelf: the independent view of the file -----------------------------

struct Load {
	uint64_t offset, vaddr, filesz;
	bool exec;
};

std::vector<Load> readelf_loads(const std::string &path)
{
	std::vector<Load> out;
	std::istringstream in(run("readelf -lW " + path));
	std::string line;
	while (std::getline(in, line)) {
		std::istringstream l(line);
		std::string kind, offset, vaddr, paddr, filesz, memsz;
		if (!(l >> kind) || kind != "LOAD" || !(l >> offset >> vaddr >> paddr >> filesz >> memsz))
			continue;
		std::string rest;
		std::getline(l, rest);
		out.push_back({std::stoull(offset, nullptr, 16), std::stoull(vaddr, nullptr, 16),
		               std::stoull(filesz, nullptr, 16), rest.find('E') != std::string::npos});
	}
	EXPECT_FALSE(out.empty()) << path;
	return out;
}

uint64_t to_file_offset(const std::string &path, uint64_t vaddr, bool exec)
{
	for (const Load &l : readelf_loads(path))
		if ((!exec || l.exec) && vaddr >= l.vaddr && vaddr < l.vaddr + l.filesz)
			return vaddr - l.vaddr + l.offset;
	ADD_FAILURE() << std::hex << vaddr << " in no load segment of " << path;
	return 0;
}

struct ElfSymbol {
	uint64_t value = 0, size = 0;
};

ElfSymbol readelf_function(const std::string &path, const std::string &name)
{
	std::istringstream in(run("readelf -sW " + path));
	std::string line;
	while (std::getline(in, line)) {
		std::istringstream l(line);
		std::string num, value, size, type, bind, vis, ndx, sym;
		if (l >> num >> value >> size >> type >> bind >> vis >> ndx >> sym && type == "FUNC" && sym == name)
			return {std::stoull(value, nullptr, 16), std::stoull(size, nullptr, 0)};
	}
	ADD_FAILURE() << name << " not in readelf -s " << path;
	return {};
}

uint64_t readelf_section_addr(const std::string &path, const std::string &section)
{
	std::istringstream in(run("readelf -SW " + path));
	std::string line;
	while (std::getline(in, line)) {
		const size_t bracket = line.find(']');
		if (bracket == std::string::npos)
			continue;
		std::istringstream l(line.substr(bracket + 1));
		std::string name, type, addr;
		if (l >> name >> type >> addr && name == section)
			return std::stoull(addr, nullptr, 16);
	}
	return 0;
}

struct ReadelfNote {
	std::string provider, name, arguments;
	uint64_t location = 0, base = 0, semaphore = 0;
};

std::vector<ReadelfNote> readelf_sdt(const std::string &path)
{
	std::vector<ReadelfNote> out;
	std::istringstream in(run("readelf -n " + path));
	std::string line;
	while (std::getline(in, line)) {
		auto value = [&](const std::string &key) {
			const size_t at = line.find(key);
			return at == std::string::npos ? std::string() : line.substr(at + key.size());
		};
		if (line.find("Provider: ") != std::string::npos) {
			out.emplace_back();
			out.back().provider = value("Provider: ");
		} else if (!out.empty() && line.find("Name: ") != std::string::npos) {
			out.back().name = value("Name: ");
		} else if (!out.empty() && line.find("Location: ") != std::string::npos) {
			out.back().location = std::stoull(value("Location: "), nullptr, 16);
			out.back().base = std::stoull(value("Base: "), nullptr, 16);
			out.back().semaphore = std::stoull(value("Semaphore: "), nullptr, 16);
		} else if (!out.empty() && line.find("Arguments: ") != std::string::npos) {
			out.back().arguments = value("Arguments: ");
		}
	}
	return out;
}

struct Expected {
	std::string name, fetch, type, c_type;
};

// The names GCC gives base types in DWARF (what the expectations say) for
// those clang spells otherwise: the test programs are built with either.
std::string gcc_spelling(const std::string &c_type)
{
	static const std::map<std::string, std::string> gcc = {
		{"long", "long int"}, {"short", "short int"}, {"unsigned long long", "long long unsigned int"}};
	const auto it = gcc.find(c_type);
	return it == gcc.end() ? c_type : it->second;
}

void expect_args(const ProbeSite &site, const std::vector<Expected> &want, const std::string &what)
{
	ASSERT_EQ(site.args.size(), want.size()) << what;
	for (size_t i = 0; i < want.size(); ++i) {
		EXPECT_EQ(site.args[i].name, want[i].name) << what << " #" << i;
		EXPECT_EQ(site.args[i].fetch, want[i].fetch) << what << " #" << i;
		EXPECT_EQ(site.args[i].type, want[i].type) << what << " #" << i;
		EXPECT_EQ(gcc_spelling(site.args[i].c_type), want[i].c_type) << what << " #" << i;
	}
}

bool any_note_has(const ProbeSite &site, const std::string &text)
{
	for (const std::string &n : site.notes)
		if (n.find(text) != std::string::npos)
			return true;
	return false;
}

} // namespace

// ---- texts ------------------------------------------------------------------

TEST(ProbeSpec, ParsesTheThreeForms)
{
	ProbeSpec s = parse_probe_spec("elf:/bin/bash:readline%return");
	EXPECT_EQ(s.kind, ProbeSpec::Kind::function_return);
	EXPECT_EQ(s.path, "/bin/bash");
	EXPECT_EQ(s.symbol, "readline");
	s = parse_probe_spec("elf:./a.out:f+4");
	EXPECT_EQ(s.kind, ProbeSpec::Kind::function);
	EXPECT_EQ(s.path, "./a.out");
	EXPECT_EQ(s.symbol, "f");
	EXPECT_EQ(s.symbol_offset, 4u);
	s = parse_probe_spec("elf:/opt/x:y/lib.so:_ZN3foo3barEv+0x10");
	EXPECT_EQ(s.path, "/opt/x:y/lib.so");
	EXPECT_EQ(s.symbol, "_ZN3foo3barEv");
	EXPECT_EQ(s.symbol_offset, 16u);
	s = parse_probe_spec("sdt:/usr/bin/python3.11:python:function__entry");
	EXPECT_EQ(s.kind, ProbeSpec::Kind::sdt);
	EXPECT_EQ(s.path, "/usr/bin/python3.11");
	EXPECT_EQ(s.provider, "python");
	EXPECT_EQ(s.name, "function__entry");
}

TEST(ProbeSpec, RefusesOtherTextsNamingTheForms)
{
	for (const char *bad :
	     {"", "elf:", "elf:/bin/bash", "elf::readline", "elf:/bin/bash:", "elf:/bin/bash:f+", "elf:/bin/bash:f+x",
	      "elf:/bin/bash:f+99999999999", "elf:/bin/bash:f g", "elf:/bin/bash:%return", "sdt:/bin/x:prov",
	      "sdt:/bin/x::name", "sdt::p:n", "sdt:/bin/x:p-q:n", "uprobe:/bin/x:f", "elf:/bin/bash:f;rm"}) {
		try {
			parse_probe_spec(bad);
			ADD_FAILURE() << "accepted: " << bad;
		} catch (const ProbeError &e) {
			const std::string m = e.what();
			EXPECT_NE(m.find("expected elf:PATH:SYMBOL[+OFFSET], elf:PATH:SYMBOL%return or "
			                 "sdt:PATH:PROVIDER:NAME"),
			          std::string::npos)
				<< m;
			EXPECT_EQ(m.find('\n'), std::string::npos) << m;
		}
	}
}

TEST(ProbeUserArgs, ParsesRegistersDereferencesAndTypes)
{
	const auto args = parse_user_args(
		"a=%di:s32,b=+8(%si):u64,s=+0(%si):string,n=-16(+0x10(%sp)):x32,r=$retval:s64,k=\\5:u8,q=%r12:x8");
	const std::vector<std::pair<std::string, std::string>> want = {
		{"a", "%di"},     {"b", "+8(%si)"}, {"s", "+0(%si)"}, {"n", "-16(+0x10(%sp))"},
		{"r", "$retval"}, {"k", "\\5"},     {"q", "%r12"}};
	const std::vector<std::string> types = {"s32", "u64", "string", "x32", "s64", "u8", "x8"};
	ASSERT_EQ(args.size(), want.size());
	for (size_t i = 0; i < want.size(); ++i) {
		EXPECT_EQ(args[i].name, want[i].first);
		EXPECT_EQ(args[i].fetch, want[i].second);
		EXPECT_EQ(args[i].type, types[i]);
	}
}

TEST(ProbeUserArgs, ArgsTextReadsBack)
{
	const std::string text = "a=%di:s32,s=+0(+8(%sp)):string,k=\\-3:s64";
	const auto args = parse_user_args(text);
	EXPECT_EQ(args_text(args, ','), text);
	EXPECT_EQ(args_text(args, ' '), "a=%di:s32 s=+0(+8(%sp)):string k=\\-3:s64");
	EXPECT_EQ(args_text({}, ' '), "");
}

TEST(ProbeUserArgs, RefusesWithACaretUnderTheBadPart)
{
	struct Bad {
		std::string text;
		size_t position;
		std::string says;
	};
	const std::vector<Bad> cases = {
		{"", 0, "empty"},
		{"a=%zz:u8", 2, "unknown register"},
		{"a=%di:u7", 6, "expected a type"},
		{"a=%di", 5, "expected ':TYPE'"},
		{"1a=%di:u8", 0, "argument name"},
		{"a=%di:u8,a=%si:u8", 9, "a second argument named 'a'"},
		{"a=%di:u8,", 9, "argument name"},
		{"a=%di:string", 2, "a string is read from memory"},
		{"a=+8%di:u8", 4, "expected '('"},
		{"a=+8(%di:u8", 8, "expected ')'"},
		{"a=+zz(%di):u8", 3, "expected an offset"},
		{"a=+9999999999(%di):u8", 3, "expected an offset"},
		{"common_pid=%di:u8", 0, "kernel's own fields"},
		{"a=$ret:u8", 2, "$retval"},
		{"a=%di:u8 b=%si:u8", 8, "expected ','"},
		{"a=+0(+0(+0(+0(+0(+0(+0(+0(+0(%sp))))))))):u64", 26, "nested deeper than 8"},
		{"a=di:u8", 2, "expected %REG"},
	};
	for (const Bad &b : cases) {
		try {
			parse_user_args(b.text);
			ADD_FAILURE() << "accepted: " << b.text;
		} catch (const ProbeError &e) {
			const std::string m = e.what();
			EXPECT_EQ(e.position(), b.position) << b.text << "\n" << m;
			EXPECT_NE(m.find(b.says), std::string::npos) << m;
			// The text on the second line, the caret under the position.
			const std::string want_tail = "\n  " + b.text + "\n  " + std::string(b.position, ' ') + "^";
			EXPECT_TRUE(m.ends_with(want_tail)) << m;
		}
	}
}

TEST(ProbeSdtOperands, BecomeFetchArgsOrNotes)
{
	const SdtArgs got = parse_sdt_operands("-4@%edi 8@%rax -4@-20(%rbp) 8@8(%rsp) 4@$5 -8@%r12 1@%dil 2@%r9w "
	                                       "-1@%al 8@(%rbx) -8@$-3 8@%r10d 4@0x10(%r11)");
	const std::vector<Expected> want = {
		{"arg1", "%di", "s32", "int32_t"},        {"arg2", "%ax", "u64", "uint64_t"},
		{"arg3", "-20(%bp)", "s32", "int32_t"},   {"arg4", "+8(%sp)", "u64", "uint64_t"},
		{"arg5", "\\5", "u32", "uint32_t"},       {"arg6", "%r12", "s64", "int64_t"},
		{"arg7", "%di", "u8", "uint8_t"},         {"arg8", "%r9", "u16", "uint16_t"},
		{"arg9", "%ax", "s8", "int8_t"},          {"arg10", "+0(%bx)", "u64", "uint64_t"},
		{"arg11", "\\-3", "s64", "int64_t"},      {"arg12", "%r10", "u64", "uint64_t"},
		{"arg13", "+16(%r11)", "u32", "uint32_t"}};
	ProbeSite site;
	site.args = got.args;
	expect_args(site, want, "operands");
	EXPECT_TRUE(got.notes.empty()) << got.notes.front();

	// The operands uprobes cannot fetch: skipped, the others keep their numbers.
	const SdtArgs skipped = parse_sdt_operands("8@8(%rax,%rbx,4) -4@var(%rip) 8@%fs:0x28 -4@%ah 8@$sym 3@%eax "
	                                           "8@0x601040 4@8(%eax) %edi 8@%rdx");
	ASSERT_EQ(skipped.args.size(), 1u);
	EXPECT_EQ(skipped.args[0].name, "arg10");
	EXPECT_EQ(skipped.args[0].fetch, "%dx");
	const std::vector<std::string> reasons = {"arg1 (8@8(%rax,%rbx,4)): an index register",
	                                          "arg2 (-4@var(%rip)): an address relative to %rip",
	                                          "arg3 (8@%fs:0x28): a segment prefix",
	                                          "arg4 (-4@%ah): a register uprobes cannot read",
	                                          "arg5 (8@$sym): a constant that is not a number",
	                                          "arg6 (3@%eax): no size of 1, 2, 4 or 8 bytes",
	                                          "arg7 (8@0x601040): an absolute address",
	                                          "arg8 (4@8(%eax)): a base that is not a 64-bit register",
	                                          "arg9 (%edi): no size"};
	ASSERT_EQ(skipped.notes.size(), reasons.size());
	for (size_t i = 0; i < reasons.size(); ++i)
		EXPECT_TRUE(skipped.notes[i].starts_with(reasons[i])) << skipped.notes[i];

	// Bounded: operands after the 32nd are left out, with a note.
	std::string many;
	for (int i = 0; i < 40; ++i)
		many += "8@%rax ";
	const SdtArgs bounded = parse_sdt_operands(many);
	EXPECT_EQ(bounded.args.size(), kMaxSdtOperands);
	ASSERT_EQ(bounded.notes.size(), 1u);
	EXPECT_NE(bounded.notes[0].find("after the 32th"), std::string::npos);
}

TEST(ProbeCloseNames, ClosestFirstAtMostThree)
{
	const std::vector<std::string> names = {"pt_ints", "pt_double", "pt_struct",  "pt_misc",
	                                        "main",    "pt_int_x",  "pt_ret_enum"};
	EXPECT_EQ(close_names("pt_int", names), (std::vector<std::string>{"pt_ints", "pt_int_x"}));
	EXPECT_EQ(close_names("pt_doubel", names), (std::vector<std::string>{"pt_double"}));
	EXPECT_EQ(close_names("zzzzzzzz", names), std::vector<std::string>{});
	EXPECT_EQ(close_names("ret_enum", names), (std::vector<std::string>{"pt_ret_enum"}));
}

// ---- function probes ----------------------------------------------------------

TEST(ProbeFunction, OffsetsAreReadelfsValueMadeFileOffsets)
{
	for (const std::string &path : {kTargetO0, kTargetO2})
		for (const char *fn : {"pt_ints", "pt_double", "pt_struct", "pt_misc", "pt_ret_string", "main"}) {
			const ElfSymbol sym = readelf_function(path, fn);
			const auto sites = resolve(std::string("elf:") + path + ":" + fn);
			ASSERT_EQ(sites.size(), 1u);
			EXPECT_EQ(sites[0].offset, to_file_offset(path, sym.value, true)) << path << " " << fn;
			EXPECT_EQ(sites[0].ref_ctr_offset, 0u);
			EXPECT_EQ(sites[0].path, path);
		}
}

TEST(ProbeFunction, OffsetInsideTheFunctionOnly)
{
	const ElfSymbol sym = readelf_function(kTargetO0, "pt_ints");
	ASSERT_GT(sym.size, 4u);
	const auto sites = resolve("elf:" + kTargetO0 + ":pt_ints+4");
	ASSERT_EQ(sites.size(), 1u);
	EXPECT_EQ(sites[0].offset, to_file_offset(kTargetO0, sym.value, true) + 4);
	EXPECT_TRUE(sites[0].args.empty());
	EXPECT_NE(sites[0].args_source.find("only at a function's entry"), std::string::npos);
	const std::string m = resolve_error("elf:" + kTargetO0 + ":pt_ints+" + std::to_string(sym.size));
	EXPECT_NE(m.find("is not inside pt_ints (" + std::to_string(sym.size) + " bytes)"), std::string::npos) << m;
}

TEST(ProbeFunction, DwarfArgumentsByTheCallingConvention)
{
	for (const std::string &path : {kTargetO0, kTargetO2}) {
		auto site = resolve("elf:" + path + ":pt_ints").at(0);
		EXPECT_EQ(site.args_source, "DWARF");
		expect_args(site,
		            {{"a", "%di", "s32", "int"},
		             {"b", "%si", "s64", "long int"},
		             {"c", "%dx", "u8", "unsigned char"},
		             {"d", "%cx", "u8", "_Bool"},
		             {"e", "%r8", "u32", "enum color"},
		             {"p", "%r9", "x64", "void *"},
		             {"s", "+0(+8(%sp))", "string", "const char *"}},
		            path + " pt_ints");
		EXPECT_TRUE(site.notes.empty());

		site = resolve("elf:" + path + ":pt_double").at(0);
		expect_args(site, {{"a", "%di", "s32", "int"}, {"b", "%si", "s64", "long int"}}, path + " pt_double");
		ASSERT_EQ(site.notes.size(), 1u);
		EXPECT_EQ(site.notes[0], "x (double): in an xmm register, which uprobes cannot read, not recorded");

		site = resolve("elf:" + path + ":pt_struct").at(0);
		expect_args(site, {{"a", "%di", "s32", "int"}}, path + " pt_struct");
		ASSERT_EQ(site.notes.size(), 1u);
		EXPECT_TRUE(site.notes[0].starts_with("p (struct point): passed by value")) << site.notes[0];

		site = resolve("elf:" + path + ":pt_misc").at(0);
		expect_args(site,
		            {{"name", "+0(%di)", "string", "const char *"},
		             {"n", "%si", "u64", "my_size"},
		             {"k", "%dx", "s16", "short int"},
		             {"sc", "%cx", "s8", "signed char"},
		             {"u", "%r8", "u64", "long long unsigned int"},
		             {"sg", "%r9", "s32", "enum sign"}},
		            path + " pt_misc");

		site = resolve("elf:" + path + ":pt_varargs").at(0);
		expect_args(site, {{"n", "%di", "s32", "int"}}, path + " pt_varargs");
		EXPECT_TRUE(any_note_has(site, "variable arguments")) << path;

		site = resolve("elf:" + path + ":pt_ret_void").at(0);
		expect_args(site, {{"n", "%di", "s32", "int"}}, path + " pt_ret_void");
	}
}

TEST(ProbeFunction, ReturnValuesTypedFromDwarf)
{
	for (const std::string &path : {kTargetO0, kTargetO2}) {
		expect_args(resolve("elf:" + path + ":pt_ret_string%return").at(0),
		            {{"ret", "+0($retval)", "string", "char *"}}, path);
		expect_args(resolve("elf:" + path + ":pt_ret_enum%return").at(0),
		            {{"ret", "$retval", "s32", "enum sign"}}, path);
		expect_args(resolve("elf:" + path + ":pt_ret_bool%return").at(0), {{"ret", "$retval", "u8", "_Bool"}},
		            path);
		expect_args(resolve("elf:" + path + ":pt_ints%return").at(0), {{"ret", "$retval", "s32", "int"}}, path);
		const ProbeSite v = resolve("elf:" + path + ":pt_ret_void%return").at(0);
		EXPECT_TRUE(v.args.empty());
		EXPECT_EQ(v.args_source, "DWARF");
		const ProbeSite d = resolve("elf:" + path + ":pt_ret_double%return").at(0);
		EXPECT_TRUE(d.args.empty());
		EXPECT_TRUE(any_note_has(d, "the return value (double): in an xmm register")) << path;
	}
}

TEST(ProbeFunction, UserArgsReplaceDwarf)
{
	const ProbeSite s = resolve("elf:" + kTargetO0 + ":pt_ints", "x=%di:x32,y=+0(+8(%sp)):string").at(0);
	EXPECT_EQ(s.args_source, "--args");
	expect_args(s, {{"x", "%di", "x32", ""}, {"y", "+0(+8(%sp))", "string", ""}}, "--args");
	const std::string m = resolve_error("elf:" + kTargetO0 + ":pt_ints", "r=$retval:u8");
	EXPECT_NE(m.find("only a return probe"), std::string::npos) << m;
}

TEST(ProbeFunction, StrippedCopyIsSaidSoAndTakesArgs)
{
	const std::string m = resolve_error("elf:" + kStripped + ":pt_ints");
	EXPECT_NE(m.find(kStripped + " is stripped: no symbol table (.symtab), and pt_ints is not among its dynamic "
	                             "symbols"),
	          std::string::npos)
		<< m;
	EXPECT_NE(m.find("install the debug file (build-id "), std::string::npos) << m;
	EXPECT_EQ(m.find('\n'), std::string::npos) << m;
	// A symbol of the dynamic table resolves without .symtab: the C
	// library's getpid.
	const std::string libc = "/lib/x86_64-linux-gnu/libc.so.6";
	if (access(libc.c_str(), R_OK) == 0) {
		const ProbeSite s = resolve("elf:" + libc + ":getpid", "x=%di:s32").at(0);
		const ElfSymbol sym = readelf_function(libc, "getpid@@GLIBC_2.2.5");
		EXPECT_EQ(s.offset, to_file_offset(libc, sym.value, true));
		EXPECT_EQ(s.args_source, "--args");
	}
}

TEST(ProbeFunction, DebugFileThroughDebuglink)
{
	const ProbeSite s = resolve("elf:" + kLinked + ":pt_misc").at(0);
	// The symbol from the debug file's .symtab, the offset the original's.
	EXPECT_EQ(s.offset, resolve("elf:" + kTargetO2 + ":pt_misc").at(0).offset);
	EXPECT_EQ(s.args_source, "DWARF from " + kLinked + ".debug");
	ASSERT_EQ(s.args.size(), 6u);
	EXPECT_EQ(s.args[0].name, "name");
	EXPECT_EQ(s.args[0].type, "string");
	EXPECT_EQ(s.args[5].c_type, "enum sign");
}

TEST(ProbeFunction, ClearErrors)
{
	std::string m = resolve_error("elf:" + kTargetO0 + ":pt_int");
	EXPECT_EQ(m, "no function pt_int in " + kTargetO0 + "; close names: pt_ints") << m;
	m = resolve_error("elf:" + kTargetO0 + ":pt_ret_strin");
	EXPECT_NE(m.find("close names: pt_ret_string"), std::string::npos) << m;
	m = resolve_error("elf:" + kTargetO0 + ":pt_ifunc");
	EXPECT_NE(m.find("pt_ifunc in " + kTargetO0 + " is an indirect function (STT_GNU_IFUNC)"), std::string::npos)
		<< m;
	m = resolve_error("elf:" + kTargetO0 + ":tracery_no_such_function_anywhere");
	EXPECT_NE(m.find("no close names"), std::string::npos) << m;

	char dir[] = "/tmp/probe-test-XXXXXX";
	ASSERT_NE(mkdtemp(dir), nullptr);
	const std::string text = std::string(dir) + "/script.sh";
	std::ofstream(text) << "#!/bin/sh\necho not an ELF file\n";
	m = resolve_error("elf:" + text + ":main");
	EXPECT_EQ(m, text + " is not an ELF file");
	const std::string empty = std::string(dir) + "/empty";
	std::ofstream(empty).flush();
	EXPECT_EQ(resolve_error("elf:" + empty + ":main"), empty + " is not an ELF file");
	// A truncated ELF: the header promises what the file lacks.
	const std::string cut = std::string(dir) + "/cut";
	run("head -c 3000 " + kTargetO0 + " > " + cut);
	m = resolve_error("elf:" + cut + ":pt_ints");
	EXPECT_NE(m.find(cut), std::string::npos) << m;
	m = resolve_error("elf:" + std::string(dir) + ":main");
	EXPECT_EQ(m, std::string(dir) + " is not a regular file, so not an ELF file");
	run("rm -rf " + std::string(dir));
}

// ---- SDT ----------------------------------------------------------------------

TEST(ProbeSdt, NotesAgainstReadelf)
{
	const std::vector<ReadelfNote> notes = readelf_sdt(kSdt);
	ASSERT_EQ(notes.size(), 4u);
	const uint64_t base_addr = readelf_section_addr(kSdt, ".stapsdt.base");
	ASSERT_NE(base_addr, 0u);
	for (const char *name : {"work", "pair", "global"}) {
		const auto sites = resolve(std::string("sdt:") + kSdt + ":tracery_test:" + name);
		std::vector<ReadelfNote> want;
		for (const ReadelfNote &n : notes)
			if (n.provider == "tracery_test" && n.name == name)
				want.push_back(n);
		ASSERT_EQ(sites.size(), want.size()) << name;
		for (size_t i = 0; i < want.size(); ++i) {
			const uint64_t shift = base_addr - want[i].base;
			EXPECT_EQ(sites[i].offset, to_file_offset(kSdt, want[i].location + shift, true)) << name;
			EXPECT_EQ(sites[i].ref_ctr_offset,
			          want[i].semaphore ? to_file_offset(kSdt, want[i].semaphore + shift, false) : 0)
				<< name;
			EXPECT_EQ(sites[i].args_source, "SDT note");
			// The note's operands, one argument each, sizes as types.
			std::istringstream ops(want[i].arguments);
			std::string op;
			size_t n = 0;
			for (; ops >> op; ++n) {
				if (op.find("(%rip)") != std::string::npos)
					continue;
				const std::string size = op.substr(0, op.find('@'));
				const std::string type =
					std::string(size[0] == '-' ? "s" : "u") +
					std::to_string(std::stoi(size[0] == '-' ? size.substr(1) : size) * 8);
				bool found = false;
				for (const ProbeArg &a : sites[i].args)
					if (a.name == "arg" + std::to_string(n + 1)) {
						found = true;
						EXPECT_EQ(a.type, type) << name << " " << op;
					}
				EXPECT_TRUE(found) << name << " " << op;
			}
		}
	}
	// The semaphore is the variable of that name, in .probes.
	const ElfSymbol sem = [&] {
		std::istringstream in(run("readelf -sW " + kSdt));
		std::string line;
		while (std::getline(in, line))
			if (line.ends_with(" tracery_test_work_semaphore")) {
				std::istringstream l(line);
				std::string num, value;
				l >> num >> value;
				return ElfSymbol{std::stoull(value, nullptr, 16), 2};
			}
		return ElfSymbol{};
	}();
	ASSERT_NE(sem.value, 0u);
	EXPECT_EQ(resolve("sdt:" + kSdt + ":tracery_test:work").at(0).ref_ctr_offset,
	          to_file_offset(kSdt, sem.value, false));
}

TEST(ProbeSdt, OperandsOfTheTestProgram)
{
	// -O2: "-4@$42 -4@%esi -4@8(%rdi)" (checked by readelf above: the
	// compiler chose them).
	const auto work = resolve("sdt:" + kSdt + ":tracery_test:work");
	ASSERT_EQ(work.size(), 1u);
	const std::string ops = readelf_sdt(kSdt).at(0).arguments;
	if (ops == "-4@$42 -4@%esi -4@8(%rdi)")
		expect_args(work[0],
		            {{"arg1", "\\42", "s32", "int32_t"},
		             {"arg2", "%si", "s32", "int32_t"},
		             {"arg3", "+8(%di)", "s32", "int32_t"}},
		            "work");
	else
		EXPECT_EQ(work[0].args.size(), 3u) << ops;
	const auto pair = resolve("sdt:" + kSdt + ":tracery_test:pair");
	ASSERT_EQ(pair.size(), 2u);
	EXPECT_NE(pair[0].offset, pair[1].offset);
	EXPECT_EQ(pair[0].ref_ctr_offset, 0u);
	const auto global = resolve("sdt:" + kSdt + ":tracery_test:global").at(0);
	// GCC reads the global where it is (%rip-relative), clang copies it to
	// the stack first.
	std::string global_ops;
	for (const ReadelfNote &n : readelf_sdt(kSdt))
		if (n.name == "global")
			global_ops = n.arguments;
	if (global_ops.find("(%rip)") == std::string::npos) {
		ASSERT_EQ(global.args.size(), 2u);
		EXPECT_TRUE(global.notes.empty());
		return;
	}
	ASSERT_EQ(global.args.size(), 1u);
	EXPECT_EQ(global.args[0].name, "arg2");
	EXPECT_EQ(global.args[0].fetch, "\\3");
	ASSERT_EQ(global.notes.size(), 1u);
	EXPECT_TRUE(global.notes[0].starts_with("arg1 (-4@tracery_test_global(%rip)): an address relative to %rip"))
		<< global.notes[0];
	const ProbeSite with_args = resolve("sdt:" + kSdt + ":tracery_test:global", "g=+0(%ip):s32").at(0);
	EXPECT_EQ(with_args.args_source, "--args");
	EXPECT_TRUE(with_args.notes.empty());
}

TEST(ProbeSdt, ArgsNameOperandsOfEachSite)
{
	// --args with $argN: the operand's place at each site, dereferenced or typed as the user says.
	const auto notes = resolve("sdt:" + kSdt + ":tracery_test:pair");
	const auto given = resolve("sdt:" + kSdt + ":tracery_test:pair", "second=$arg2:u8,first=+0($arg1):u32");
	ASSERT_EQ(given.size(), 2u);
	for (size_t i = 0; i < 2; ++i) {
		ASSERT_EQ(notes[i].args.size(), 2u);
		EXPECT_EQ(given[i].args_source, "--args");
		expect_args(given[i],
		            {{"second", notes[i].args[1].fetch, "u8", ""},
		             {"first", "+0(" + notes[i].args[0].fetch + ")", "u32", ""}},
		            "pair site " + std::to_string(i));
	}
	std::string m = resolve_error("sdt:" + kSdt + ":tracery_test:work", "x=$arg4:s32");
	EXPECT_TRUE(m.starts_with("bad --args: x uses $arg4, which the probe point at file offset 0x")) << m;
	EXPECT_NE(m.find("does not have (arg1 arg2 arg3)"), std::string::npos) << m;
	m = resolve_error("elf:" + kTargetO2 + ":pt_ints", "x=$arg1:s32");
	EXPECT_EQ(m, "bad --args: x uses an SDT operand ($argN), which only an sdt: probe has");
	m = resolve_error("sdt:" + kSdt + ":tracery_test:work", "x=$argv:s32");
	EXPECT_TRUE(m.starts_with("bad --args: expected $retval, $stack, $stackN or (SDT probes) $argN\n")) << m;
}

TEST(ProbeSdt, ClearErrors)
{
	std::string m = resolve_error("sdt:" + kSdt + ":tracery_test:wrok");
	EXPECT_EQ(m, "no SDT probe tracery_test:wrok in " + kSdt + " (3 others; close ones: tracery_test:work)");
	m = resolve_error("sdt:" + kTargetO0 + ":tracery_test:work");
	EXPECT_EQ(m, kTargetO0 + " has no SDT probes (no .note.stapsdt section)");
}

TEST(ProbeSdt, PythonNotesParse)
{
	const std::string python = "/usr/bin/python3.11";
	if (access(python.c_str(), R_OK) != 0)
		GTEST_SKIP() << python << " absent";
	const std::vector<ReadelfNote> notes = readelf_sdt(python);
	if (notes.empty())
		GTEST_SKIP() << python << " has no SDT notes";
	const uint64_t base_addr = readelf_section_addr(python, ".stapsdt.base");
	size_t checked = 0;
	for (const ReadelfNote &n : notes) {
		const auto sites = resolve("sdt:" + python + ":" + n.provider + ":" + n.name);
		bool found = false;
		for (const ProbeSite &s : sites)
			if (s.offset == to_file_offset(python, n.location + (base_addr - n.base), true)) {
				found = true;
				EXPECT_EQ(s.ref_ctr_offset,
				          n.semaphore
				                  ? to_file_offset(python, n.semaphore + (base_addr - n.base), false)
				                  : 0);
				std::istringstream ops(n.arguments);
				size_t count = 0;
				for (std::string op; ops >> op;)
					++count;
				EXPECT_EQ(s.args.size() + s.notes.size(), count) << n.name << ": " << n.arguments;
			}
		EXPECT_TRUE(found) << n.provider << ":" << n.name;
		++checked;
	}
	EXPECT_GE(checked, 5u);
}

// ---- hostile files -------------------------------------------------------------

// Copies of the test programs with bytes overwritten at random (a fixed
// seed): each resolution returns or throws ProbeError, nothing else, and
// does not crash or hang.
TEST(ProbeHostile, DamagedCopiesFailCleanly)
{
	char dir[] = "/tmp/probe-hostile-XXXXXX";
	ASSERT_NE(mkdtemp(dir), nullptr);
	std::mt19937 random(18);
	size_t refused = 0, resolved = 0;
	for (const std::string &original : {kTargetO0, kSdt}) {
		std::ifstream in(original, std::ios::binary);
		const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
		ASSERT_GT(bytes.size(), 4096u);
		for (int round = 0; round < 150; ++round) {
			std::string damaged = bytes;
			const int changes = 1 + static_cast<int>(random() % 16);
			for (int i = 0; i < changes; ++i) {
				// Half of the changes in the headers, where they hurt most.
				const size_t at = random() % 2 ? random() % 128 : random() % damaged.size();
				damaged[at] = static_cast<char>(random());
			}
			if (round % 10 == 0)
				damaged.resize(random() % damaged.size());
			const std::string path = std::string(dir) + "/damaged";
			std::ofstream(path, std::ios::binary | std::ios::trunc) << damaged;
			for (const std::string &spec :
			     {"elf:" + path + ":pt_ints", "elf:" + path + ":pt_ret_string%return",
			      "elf:" + path + ":pt_misc", "sdt:" + path + ":tracery_test:work",
			      "sdt:" + path + ":tracery_test:pair"}) {
				try {
					resolve(spec);
					++resolved;
				} catch (const ProbeError &e) {
					++refused;
					EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
				} catch (const std::exception &e) {
					ADD_FAILURE()
						<< spec << " round " << round << ": not a ProbeError: " << e.what();
				}
			}
		}
	}
	std::printf("damaged copies: %zu resolutions, %zu refused\n", resolved, refused);
	EXPECT_GT(refused, 0u);
	EXPECT_GT(resolved, 0u);
	run("rm -rf " + std::string(dir));
}

// ---- the kernel takes it (root) ----------------------------------------------

TEST(ProbeKernel, RecordsTheValuesTheProgramPasses)
{
	std::string why;
	const std::string root = test_support::tracefs_for_tests(why);
	if (root.empty())
		GTEST_SKIP() << why;
	if (access((root + "/uprobe_events").c_str(), W_OK) != 0)
		GTEST_SKIP() << "no uprobe_events";
	const std::string before = read_control(root + "/uprobe_events");
	const auto globals = test_support::global_settings(root);
	const std::string group = uprobe_group(getpid(), "probe_test");
	struct Probe {
		std::string name, spec;
		bool is_return;
		std::string program;
	};
	const std::vector<Probe> probes = {
		{"ints", "elf:" + kTargetO2 + ":pt_ints", false, kTargetO2},
		{"misc", "elf:" + kTargetO0 + ":pt_misc", false, kTargetO0},
		{"rstr", "elf:" + kTargetO2 + ":pt_ret_string%return", true, kTargetO2},
		{"renum", "elf:" + kTargetO2 + ":pt_ret_enum%return", true, kTargetO2},
		{"work", "sdt:" + kSdt + ":tracery_test:work", false, kSdt},
		{"pair", "sdt:" + kSdt + ":tracery_test:pair", false, kSdt},
	};
	std::vector<std::string> events;
	std::vector<UprobeEvent> uprobes; // removed after the instance that enables them
	{
		Instance instance(root, instance_name(getpid(), "probe-test"));
		try {
			for (const Probe &p : probes) {
				const auto sites = resolve(p.spec);
				for (size_t i = 0; i < sites.size(); ++i) {
					const std::string event = p.name + std::to_string(i);
					uprobes.emplace_back(
						root, group, event,
						uprobe_line(group, event, p.is_return, sites[i].path, sites[i]));
					events.push_back(event);
					instance.enable_event({group, event});
				}
			}
			instance.set_tracing_on(true);
			run(kTargetO2 + " 2");
			run(kTargetO0 + " 1");
			run(kSdt + " 2");
			instance.set_tracing_on(false);
			const std::string trace = read_control(instance.file("trace"));
			auto count = [&](const std::string &text) {
				size_t n = 0;
				for (size_t at = trace.find(text); at != std::string::npos;
				     at = trace.find(text, at + 1))
					++n;
				return n;
			};
			EXPECT_EQ(count("ints0: (0x"), 2u) << trace;
			EXPECT_EQ(count(" a=-5 b=-70000000000 c=200 d=1 e=4 p=0x1234 s=\"hello\""), 2u) << trace;
			EXPECT_EQ(count(" name=\"misc\" n=123456789 k=-300 sc=-7 u=18446744073709551615 sg=-1"), 1u)
				<< trace;
			EXPECT_EQ(count(" ret=\"positive\""), 2u) << trace;
			EXPECT_EQ(count("renum0: (0x"), 2u) << trace;
			EXPECT_EQ(count(" ret=-1"), 2u) << trace;
			// The semaphore was on, so the program fired its probe:
			// 42, i + 100, it->weight.
			EXPECT_EQ(count(" arg1=42 arg2=100 arg3=-9"), 1u) << trace;
			EXPECT_EQ(count(" arg1=42 arg2=101 arg3=-9"), 1u) << trace;
			// Two sites of pair: (v, 1) and (v + 1, 2), v = 0 and 1.
			for (const char *values :
			     {" arg1=0 arg2=1", " arg1=1 arg2=2", " arg1=1 arg2=1", " arg1=2 arg2=2"})
				EXPECT_EQ(count(values), 1u) << values << "\n" << trace;
		} catch (const std::exception &e) {
			ADD_FAILURE() << e.what();
		}
		for (const std::string &e : events) {
			instance.enable_event({group, e}, false);
		}
		instance.remove();
	}
	for (UprobeEvent &u : uprobes)
		EXPECT_NO_THROW(u.remove());
	// Every probe that was there is still there and none of ours is (the
	// file is the system's: a probe someone else adds meanwhile may stay).
	const std::string after = read_control(root + "/uprobe_events");
	EXPECT_EQ(after.find(group), std::string::npos) << after;
	std::istringstream lines(before);
	for (std::string line; std::getline(lines, line);)
		EXPECT_NE(after.find(line), std::string::npos) << line;
	EXPECT_EQ(test_support::global_settings(root), globals);
}

// A uprobe whose owner died with SIGKILL stays in uprobe_events: its group
// is stale, and removing the group removes it and nothing else. A line the
// kernel refuses gives its reason.
TEST(ProbeKernel, StaleGroupsOfADeadOwnerAreFoundAndRemoved)
{
	std::string why;
	const std::string root = test_support::tracefs_for_tests(why);
	if (root.empty())
		GTEST_SKIP() << why;
	if (access((root + "/uprobe_events").c_str(), W_OK) != 0)
		GTEST_SKIP() << "no uprobe_events";
	const std::string before = read_control(root + "/uprobe_events");
	const ProbeSite site = resolve("elf:" + kTargetO2 + ":pt_ints").at(0);
	int ready[2];
	ASSERT_EQ(pipe(ready), 0);
	const pid_t child = fork();
	ASSERT_GE(child, 0);
	if (child == 0) {
		const std::string group = uprobe_group(getpid(), "killed");
		UprobeEvent a(root, group, "a", uprobe_line(group, "a", false, site.path, site));
		UprobeEvent b(
			root, group, "b",
			uprobe_line(group, "b", true, site.path, ProbeSite{site.path, site.offset, 0, {}, "", {}}));
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	char c;
	ASSERT_EQ(read(ready[0], &c, 1), 1);
	close(ready[0]);
	kill(child, SIGKILL);
	ASSERT_EQ(waitpid(child, nullptr, 0), child);
	const std::string group = uprobe_group(child, "killed");
	const std::string defined = read_control(root + "/uprobe_events");
	EXPECT_NE(defined.find("p:" + group + "/a "), std::string::npos) << defined;
	EXPECT_NE(defined.find("r:" + group + "/b "), std::string::npos) << defined;
	const auto stale = stale_uprobe_groups(root);
	EXPECT_NE(std::find(stale.begin(), stale.end(), group), stale.end());
	EXPECT_EQ(std::find(stale.begin(), stale.end(), uprobe_group(getpid(), "killed")), stale.end());
	remove_uprobe_group(root, group);
	const std::string after = read_control(root + "/uprobe_events");
	EXPECT_EQ(after.find(group), std::string::npos) << after;
	std::istringstream lines(before);
	for (std::string line; std::getline(lines, line);)
		EXPECT_NE(after.find(line), std::string::npos) << line;

	// An argument the kernel refuses (no such register): its reason is quoted.
	ProbeSite bad = site;
	bad.args = {{"x", "%nosuchreg", "u64", ""}};
	const std::string mine = uprobe_group(getpid(), "bad");
	try {
		UprobeEvent u(root, mine, "x", uprobe_line(mine, "x", false, bad.path, bad));
		ADD_FAILURE() << "the kernel took a register that does not exist";
	} catch (const TracefsError &e) {
		EXPECT_NE(std::string(e.what()).find("the kernel says:"), std::string::npos) << e.what();
	}
	EXPECT_EQ(read_control(root + "/uprobe_events").find(mine), std::string::npos);
}
