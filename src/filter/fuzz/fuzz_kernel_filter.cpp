// filter/fuzz/fuzz_kernel_filter.cpp — libFuzzer target: arbitrary bytes as
// a filter expression for `enable-event -k --filter`, translated for an
// event with a field of every kind (signed, unsigned, biased, string,
// computed, array). Checks that the translation either refuses with a
// message and a position inside the expression, or returns a kernel filter
// within its length limit holding no control character (the text is
// written to a tracefs file as it is).
#include "base/fuzz_check.hpp"
#include "filter/kernel_filter.hpp"

#include <array>
#include <string_view>

using namespace tracery::filter;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	using K = KernelField::Kind;
	static const std::array<KernelField, 7> fields = {{
		{"id", "id", K::integer, true, 0, false},
		{"mask", "mask", K::integer, false, 0, false},
		{"prev_prio", "prev_prio", K::integer, true, -100, false},
		{"prev_comm", "prev_comm", K::string, false, 0, false},
		{"name", "filename", K::string, false, 0, false},
		{"parent_pid", "parent_pid", K::integer, true, 0, true},
		{"values", "values", K::other, false, 0, false},
	}};
	const std::string_view expression(reinterpret_cast<const char *>(data), size);
	Error error{"", 0};
	const auto text = kernel_filter(expression, fields, &error);
	const auto check = [](bool ok, const char *what) { tracery::base::fuzz_check(ok, "fuzz_kernel_filter", what); };
	if (!text) {
		check(!error.message.empty(), "a refusal without a message");
		check(error.position <= size, "a refusal placed beyond the expression");
		return 0;
	}
	check(!text->empty() && text->size() <= kMaxKernelFilter, "a kernel filter empty or too long");
	for (const char c : *text)
		check(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f, "a control character in a kernel filter");
	return 0;
}
