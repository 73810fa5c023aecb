// Unit tests of the inclusion sets of `track` and `untrack`
// (process_tracking.hpp): LTTng's rules (every value at first; the first
// tracked value narrows the set to it; untrack --all leaves none; the sets of
// several attributes combine as an "and"), a failed change leaving every set
// as it was, the ranges of values, and the ids a registered program is
// tracked by.
#include "daemon/process_tracking.hpp"
#include "daemon/app.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

namespace tracery::daemon {
namespace {

ProcessTracking user() { return {"user", {ProcessAttr::vpid, ProcessAttr::vuid, ProcessAttr::vgid}}; }
control::TrackingChange values(const char *attr, std::vector<uint64_t> v) { return {attr, false, std::move(v)}; }
control::TrackingChange all(const char *attr) { return {attr, true, {}}; }
ProcessIds ids(uint64_t vpid, uint64_t vuid, uint64_t vgid) { return {vpid, vpid, vuid, vuid, vgid, vgid}; }

TEST(ProcessTracking, EveryProcessUntilAValueIsTracked)
{
	ProcessTracking t = user();
	EXPECT_TRUE(t.everyone());
	EXPECT_TRUE(t.includes(ids(10, 1000, 1000)));
	t.apply({values("vuid", {1000})}, false);
	EXPECT_FALSE(t.everyone());
	EXPECT_TRUE(t.includes(ids(10, 1000, 1000)));
	EXPECT_FALSE(t.includes(ids(10, 65534, 1000)));
	t.apply({values("vuid", {65534})}, false); // added to the set
	EXPECT_TRUE(t.includes(ids(10, 65534, 1000)));
	EXPECT_FALSE(t.includes(ids(10, 0, 1000)));
	const control::DomainTracking s = t.status();
	EXPECT_EQ(s.domain, "user");
	ASSERT_EQ(s.rules.size(), 3u);
	EXPECT_EQ(s.rules[0], (control::ProcessAttrRule{"vpid", true, {}}));
	EXPECT_EQ(s.rules[1], (control::ProcessAttrRule{"vuid", false, {1000, 65534}}));
	EXPECT_EQ(s.rules[2], (control::ProcessAttrRule{"vgid", true, {}}));
	EXPECT_EQ(s.follow_children, std::nullopt);
}

TEST(ProcessTracking, AttributesCombineAsAnd)
{
	ProcessTracking t = user();
	t.apply({values("vuid", {1000}), values("vpid", {7, 8})}, false);
	EXPECT_TRUE(t.includes(ids(7, 1000, 5)));
	EXPECT_TRUE(t.includes(ids(8, 1000, 5)));
	EXPECT_FALSE(t.includes(ids(9, 1000, 5)));
	EXPECT_FALSE(t.includes(ids(7, 1001, 5)));
}

TEST(ProcessTracking, UntrackAllLeavesNoneAndTrackAllEveryone)
{
	ProcessTracking t = user();
	t.apply({all("vpid")}, true);
	EXPECT_FALSE(t.includes(ids(1, 0, 0)));
	EXPECT_EQ(t.status().rules[0], (control::ProcessAttrRule{"vpid", false, {}}));
	t.apply({values("vpid", {5})}, false);
	EXPECT_TRUE(t.includes(ids(5, 0, 0)));
	EXPECT_FALSE(t.includes(ids(6, 0, 0)));
	t.apply({values("vpid", {5})}, true);
	EXPECT_FALSE(t.includes(ids(5, 0, 0)));
	t.apply({all("vpid")}, false);
	EXPECT_TRUE(t.includes(ids(6, 0, 0)));
	EXPECT_TRUE(t.everyone());
}

TEST(ProcessTracking, AFailedChangeChangesNothing)
{
	ProcessTracking t = user();
	t.apply({values("vgid", {100})}, false);
	auto refused = [&](std::vector<control::TrackingChange> changes, bool untrack, const std::string &error) {
		try {
			t.apply(changes, untrack);
			ADD_FAILURE() << "accepted; expected: " << error;
		} catch (const std::invalid_argument &e) {
			EXPECT_EQ(e.what(), error);
		}
		EXPECT_EQ(t.status().rules[2], (control::ProcessAttrRule{"vgid", false, {100}}));
		EXPECT_TRUE(t.status().rules[0].all);
	};
	// The first change is good, the second is not: neither is applied.
	refused({values("vpid", {3}), values("vgid", {101})}, true,
	        "vpid 3 is not tracked (every vpid is: untrack --all first, or track only the ones to keep)");
	refused({values("vgid", {100, 101})}, true, "vgid 101 is not tracked: see `tracery status`");
	refused({values("vpid", {1}), values("pid", {1})}, false,
	        "the user domain does not track 'pid': use --vpid, --vuid, --vgid");
	refused({values("vpid", {0})}, false, "bad vpid 0: give a process id between 1 and 2147483647");
	refused({values("vpid", {uint64_t{INT32_MAX} + 1})}, false,
	        "bad vpid 2147483648: give a process id between 1 and 2147483647");
	refused({values("vuid", {UINT32_MAX})}, false, "bad vuid 4294967295: give an id between 0 and 4294967294");
	refused({values("vuid", {})}, false, "no value given for --vuid: give ids, or --all");
	refused({{"vuid", true, {1}}}, false, "--all --vuid takes no values");
	refused({}, true, "nothing to untrack: name an attribute with its ids, or with --all");
	std::vector<uint64_t> many;
	for (uint64_t v = 1; v <= ProcessTracking::kMaxValues + 1; v++)
		many.push_back(v);
	refused({values("vgid", many)}, false, "too many tracked vgids: at most 4096");
	// Root's ids are ids like any other.
	t.apply({values("vuid", {0})}, false);
	EXPECT_TRUE(t.includes(ids(1, 0, 100)));
	EXPECT_FALSE(t.includes(ids(1, 0, 0)));
}

TEST(ProcessTracking, AProgramInTheDaemonsNamespacesHasTheIdsItsCredentialsSay)
{
	App app;
	app.cred = {getpid(), getuid(), getgid()};
	control::Hello hello{"p", {}, 1, 4242, 4343}; // what it claims is not believed
	app.registered_ids(hello);
	EXPECT_EQ(app.ids.pid, static_cast<uint64_t>(getpid()));
	EXPECT_EQ(app.ids.vpid, static_cast<uint64_t>(getpid()));
	EXPECT_EQ(app.ids.vuid, getuid());
	EXPECT_EQ(app.ids.uid, getuid());
	EXPECT_EQ(app.ids.vgid, getgid());
	EXPECT_EQ(app.ids.gid, getgid());
}

} // namespace
} // namespace tracery::daemon
