// kernel/fuzz/fuzz_probe_args.cpp — libFuzzer target: arbitrary bytes as
// what a user gives a dynamic probe (the first byte chooses): the --args
// list (parse_user_args) or the --userspace-probe spec (parse_probe_spec).
// Checks that they refuse with ProbeError or return what the text says:
// arguments that written back as name=FETCH:TYPE give the text itself,
// unique names, types of the list; an error's caret inside the text; a
// spec with a path and a symbol or provider and name.
#include "base/fuzz_check.hpp"
#include "kernel/probe_site.hpp"

#include <set>
#include <string>
#include <string_view>

using namespace tracery::kernel;

namespace {

void check(bool ok, const char *what) { tracery::base::fuzz_check(ok, "fuzz_probe_args", what); }

bool is_type(const std::string &t)
{
	static const std::set<std::string> types = {"s8",  "s16", "s32", "s64", "u8",  "u16",   "u32",
	                                            "u64", "x8",  "x16", "x32", "x64", "string"};
	return types.count(t) != 0;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	const std::string_view text(reinterpret_cast<const char *>(data) + 1, size - 1);
	if (data[0] % 2 == 0) {
		try {
			const std::vector<ProbeArg> args = parse_user_args(text);
			check(!args.empty() && args.size() <= kMaxProbeArgs, "an argument count out of bounds");
			std::set<std::string> names;
			for (const ProbeArg &a : args) {
				check(names.insert(a.name).second, "two arguments of one name");
				check(is_type(a.type), "a type not in the list");
				check(a.type != "string" || a.fetch.ends_with(')'), "a string not read from memory");
				check(a.fetch.find_first_of(" \t\n,") == std::string::npos,
				      "a separator in a fetch-arg");
			}
			check(args_text(args, ',') == text, "the arguments are not the text");
		} catch (const ProbeError &e) {
			check(e.position() <= text.size(), "a caret beyond the text");
			check(std::string_view(e.what()).ends_with("^"), "an error without its caret");
		}
	} else {
		try {
			const ProbeSpec s = parse_probe_spec(text);
			check(!s.path.empty(), "a spec without a path");
			if (s.kind == ProbeSpec::Kind::sdt)
				check(!s.provider.empty() && !s.name.empty(), "an SDT spec without provider or name");
			else
				check(!s.symbol.empty(), "a function spec without a symbol");
			check(s.path.find_first_of(" \t\n") == std::string::npos, "a space in the path");
		} catch (const ProbeError &e) {
			check(std::string_view(e.what()).find("expected elf:PATH") != std::string_view::npos,
			      "an error not naming the forms");
		}
	}
	return 0;
}
