// Unit tests of FairQueue: users served round-robin, at most `per_user` jobs
// of one user in progress, close() ending the waits.
#include "daemon/fair_queue.hpp"

#include <gtest/gtest.h>

#include <thread>

namespace tracery::daemon {
namespace {

TEST(FairQueue, OneUsersFloodWaitsBehindEveryOtherUser)
{
	FairQueue<int> q(2);
	for (int i = 0; i < 100; i++)
		q.push(1000, i); // a flood of uid 1000
	q.push(0, -1);           // root's one request, after it
	q.push(7, -7);
	std::vector<std::pair<uid_t, int>> order;
	for (int i = 0; i < 4; i++)
		order.push_back(*q.pop());
	// uid 1000 had one turn, then the others had theirs, then its second
	// job (its limit: two at once) came after them.
	EXPECT_EQ(order, (std::vector<std::pair<uid_t, int>>{{1000, 0}, {0, -1}, {7, -7}, {1000, 1}}));
	q.done(0);
	q.done(7);
	// uid 1000 has two in progress: nothing more of it until one is done.
	q.push(5, -5);
	EXPECT_EQ(*q.pop(), (std::pair<uid_t, int>{5, -5}));
	q.done(1000);
	EXPECT_EQ(*q.pop(), (std::pair<uid_t, int>{1000, 2}));
}

TEST(FairQueue, PopWaitsForAJobAndCloseEndsIt)
{
	FairQueue<int> q(1);
	std::optional<std::pair<uid_t, int>> got;
	std::thread t([&] { got = q.pop(); });
	q.push(3, 33);
	t.join();
	ASSERT_TRUE(got);
	EXPECT_EQ(got->second, 33);
	std::thread waiting([&] { got = q.pop(); });
	q.close();
	waiting.join();
	EXPECT_FALSE(got);
}

} // namespace
} // namespace tracery::daemon
