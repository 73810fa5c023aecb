// kernel/syscall_args.cpp — see syscall_args.hpp.
#include "kernel/syscall_args.hpp"

#include <algorithm>
#include <string>

namespace tracery::kernel {

namespace {

using K = SyscallField::Kind;
using D = SyscallField::Direction;

const std::vector<SyscallFields> &table()
{
	static const std::vector<SyscallFields> t = {
#include "kernel/syscall_table.inc"
	};
	return t;
}

// The words of a C type without qualifiers ("const", "volatile", "__user").
std::string bare_type(std::string_view c_type)
{
	std::string out;
	size_t i = 0;
	while (i < c_type.size()) {
		while (i < c_type.size() && c_type[i] == ' ')
			++i;
		size_t end = i;
		while (end < c_type.size() && c_type[end] != ' ')
			++end;
		const std::string_view word = c_type.substr(i, end - i);
		if (!word.empty() && word != "const" && word != "volatile" && word != "__user") {
			if (!out.empty())
				out += ' ';
			out += word;
		}
		i = end;
	}
	return out;
}

} // namespace

std::optional<CIntegerType> c_integer_type(std::string_view c_type)
{
	if (c_type.find('*') != std::string_view::npos)
		return CIntegerType{8, false};
	struct Named {
		const char *name;
		uint8_t size;
		bool is_signed;
	};
	static constexpr Named kTypes[] = {
		{"char", 1, true},
		{"signed char", 1, true},
		{"unsigned char", 1, false},
		{"short", 2, true},
		{"unsigned short", 2, false},
		{"int", 4, true},
		{"unsigned", 4, false},
		{"unsigned int", 4, false},
		{"long", 8, true},
		{"unsigned long", 8, false},
		{"long long", 8, true},
		{"unsigned long long", 8, false},
		{"u8", 1, false},
		{"__u8", 1, false},
		{"u16", 2, false},
		{"__u16", 2, false},
		{"u32", 4, false},
		{"__u32", 4, false},
		{"s32", 4, true},
		{"__s32", 4, true},
		{"u64", 8, false},
		{"__u64", 8, false},
		{"s64", 8, true},
		{"__s64", 8, true},
		{"size_t", 8, false},
		{"ssize_t", 8, true},
		{"loff_t", 8, true},
		{"off_t", 8, true},
		{"umode_t", 2, false},
		{"mode_t", 4, false},
		{"pid_t", 4, true},
		{"uid_t", 4, false},
		{"gid_t", 4, false},
		{"old_uid_t", 2, false},
		{"old_gid_t", 2, false},
		{"qid_t", 4, false},
		{"key_t", 4, true},
		{"key_serial_t", 4, true},
		{"clockid_t", 4, true},
		{"timer_t", 4, true},
		{"mqd_t", 4, true},
		{"rwf_t", 4, true},
		{"aio_context_t", 8, false},
		{"time_t", 8, true},
		{"__kernel_old_time_t", 8, true},
		{"cap_user_header_t", 8, false},
		{"cap_user_data_t", 8, false},
	};
	const std::string bare = bare_type(c_type);
	if (bare.starts_with("enum "))
		return CIntegerType{4, false};
	for (const Named &t : kTypes)
		if (bare == t.name)
			return CIntegerType{t.size, t.is_signed};
	return std::nullopt;
}

const SyscallFields *lttng_syscall_fields(std::string_view name)
{
	const std::vector<SyscallFields> &t = table();
	const auto it = std::lower_bound(t.begin(), t.end(), name,
	                                 [](const SyscallFields &s, std::string_view n) { return s.name < n; });
	return it != t.end() && it->name == name ? &*it : nullptr;
}

} // namespace tracery::kernel
