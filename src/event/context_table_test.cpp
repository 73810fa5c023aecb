// Unit tests of the context table (context_table.hpp, context.hpp): names to
// options and back, sizes, and the table's own rules (LTTng-UST's field names).
#include "event/context.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace tracery::event {
namespace {

TEST(ContextTable, FieldNamesAreLttngs)
{
	std::set<std::string_view> names;
	for (const UserContext &c : kUserContexts) {
		EXPECT_TRUE(names.insert(c.name).second) << c.name;
		std::string field(1, '_');
		field += c.name;
		for (char &ch : field)
			if (ch == ':' || ch == '-')
				ch = '_';
		EXPECT_EQ(c.field, field);
		EXPECT_TRUE(c.size == 4 || c.size == 8) << c.name;
		if (c.kind == UserContextKind::ns) {
			std::string ns(kNamespaceFiles[c.index]);
			ns += "_ns";
			EXPECT_EQ(ns, c.name);
		}
	}
	EXPECT_EQ(kUserContexts[*find_user_context("vuid")].size, 4);
	EXPECT_EQ(kUserContexts[*find_user_context("perf:thread:page-fault")].perf_config,
	          2u);                           // PERF_COUNT_SW_PAGE_FAULTS
	EXPECT_FALSE(find_user_context("vpid")); // one of the first three, not in the table
}

TEST(ContextTable, NamesToOptionsAndBack)
{
	ContextOptions o;
	for (const char *name : {"perf:thread:cs", "vtid", "ip", "cgroup_id", "vgid"})
		ASSERT_TRUE(set_user_context(o, name)) << name;
	EXPECT_FALSE(set_user_context(o, "perf:cpu:cycles"));
	EXPECT_FALSE(set_user_context(o, ""));
	EXPECT_EQ(context_names(o), (std::vector<std::string>{"vtid", "ip", "vgid", "cgroup_id", "perf:thread:cs"}));
	EXPECT_EQ(context_size(o), 4u + 8 + 4 + 8 + 8);
	EXPECT_EQ(user_contexts_size(o.more), 8u + 4 + 8 + 8);
}

TEST(ContextTable, ListingNamesEachContextOnce)
{
	const auto listing = context_listing();
	std::set<std::string_view> names;
	for (const ContextListing &l : listing) {
		EXPECT_TRUE(names.insert(l.name).second) << l.name;
		EXPECT_NE(l.domains, 0);
	}
	EXPECT_EQ(
		listing.size(), 3 + kUserContexts.size() + kKernelContextNames.size() - [] {
			size_t shared = 0;
			for (std::string_view k : kKernelContextNames)
				shared += k == "vpid" || k == "vtid" || k == "procname" ||
			                  find_user_context(k).has_value();
			return shared;
		}());
	EXPECT_EQ(listing[0].name, "vpid");
	EXPECT_EQ(listing[3].name, "ip");
}

} // namespace
} // namespace tracery::event
