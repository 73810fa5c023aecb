// The C++ half of the find_package app: events declared with tracepoint.hpp
// (C++20), emitted here; main() then runs the C half's (c_events.c).
#include <tracery/tracepoint.hpp>

#include <array>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>

enum class Op : uint8_t { read, write };
TRACERY_CXX_ENUM(Op, {"read", 0, 0}, {"write", 1, 1});

TRACERY_CXX_EVENT(fp_cxx, query, (id, uint64_t), (table, std::string_view), (op, Op), (dims, std::array<uint16_t, 2>),
                  (keys, std::span<const int32_t>))

extern "C" void emit_c_events(void);

int main()
{
	const int32_t keys[] = {7, -8, 9};
	for (uint64_t i = 0; i < 2; i++) {
		const std::string table = i == 0 ? "users" : "orders";
		const std::array<uint16_t, 2> dims{static_cast<uint16_t>(i + 1), 640};
		TRACERY_CXX_EMIT(fp_cxx, query, 40 + i, table, i == 0 ? Op::read : Op::write, dims,
		                 std::span<const int32_t>(keys, 1 + i * 2));
	}
	emit_c_events();
	std::puts("find_package app: 6 events");
	return 0;
}
