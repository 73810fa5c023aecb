// hello-cxx: a small C++ program instrumented with tracery's C++ API
// (see docs/instrumenting.md). Run it traced without a daemon:
//   TRACERY_OUTPUT=/tmp/hello-trace ./hello-cxx
#include <tracery/tracepoint.hpp>

#include <array>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

enum class Op : uint8_t { read, write };
TRACERY_CXX_ENUM(Op, {"read", 0, 0}, {"write", 1, 1});

TRACERY_CXX_EVENT(shop, order, (id, uint64_t), (item, std::string_view), (op, Op), (urgent, bool),
                  (dims, std::array<uint16_t, 3>), (prices, std::span<const int32_t>))

int main()
{
	const std::vector<std::string> items = {"apple", "pear", "fig"};
	std::vector<int32_t> prices;
	for (uint64_t id = 0; id < items.size(); id++) {
		prices.push_back(static_cast<int32_t>(100 * (id + 1)));
		TRACERY_CXX_EMIT(shop, order, id, items[id], id % 2 ? Op::write : Op::read, id == 0,
		                 std::array<uint16_t, 3>{1, 2, 3}, std::span<const int32_t>(prices));
	}
	std::printf("shop: %zu orders emitted\n", items.size());
	return 0;
}
