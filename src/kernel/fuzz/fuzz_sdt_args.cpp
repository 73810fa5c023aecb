// kernel/fuzz/fuzz_sdt_args.cpp — libFuzzer target: arbitrary bytes as the
// operand string of an SDT note (parse_sdt_operands), which comes from the
// file being probed. Checks that it never throws and that what it returns
// is a well-formed uprobe argument list: at most kMaxSdtOperands arguments
// named arg1..argN in increasing order, types from SIZE, each fetch-arg one
// that parse_user_args() accepts unchanged (so the kernel's grammar), and a
// note for every operand left out.
#include "base/fuzz_check.hpp"
#include "kernel/probe_site.hpp"

#include <string>
#include <string_view>

using namespace tracery::kernel;

namespace {

void check(bool ok, const char *what) { tracery::base::fuzz_check(ok, "fuzz_sdt_args", what); }

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const std::string_view text(reinterpret_cast<const char *>(data), size);
	SdtArgs out;
	try {
		out = parse_sdt_operands(text);
	} catch (...) {
		check(false, "parse_sdt_operands threw");
	}
	check(out.args.size() <= kMaxSdtOperands, "more arguments than the limit");
	check(out.notes.size() <= kMaxSdtOperands + 1, "more notes than operands");
	size_t last = 0;
	for (const ProbeArg &a : out.args) {
		check(a.name.starts_with("arg"), "an argument not named argN");
		const size_t n = std::stoul(a.name.substr(3));
		check(n > last && n <= kMaxSdtOperands, "argument numbers not increasing");
		last = n;
		check(a.type == "s8" || a.type == "u8" || a.type == "s16" || a.type == "u16" || a.type == "s32" ||
		              a.type == "u32" || a.type == "s64" || a.type == "u64",
		      "a type not of a size");
	}
	if (!out.args.empty()) {
		std::vector<ProbeArg> back;
		try {
			back = parse_user_args(args_text(out.args, ','));
		} catch (const ProbeError &) {
			check(false, "a fetch-arg that parse_user_args refuses");
		}
		check(back.size() == out.args.size(), "parse_user_args reads another number of arguments");
		for (size_t i = 0; i < back.size(); ++i)
			check(back[i].fetch == out.args[i].fetch && back[i].type == out.args[i].type,
			      "parse_user_args reads another fetch-arg");
	}
	return 0;
}
