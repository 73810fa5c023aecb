// Tests of the TRACERY_* environment parsing (daemonless_config.cpp).
#include "ust/local/daemonless_config.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace {

std::map<std::string, std::string> env;
const char *fake_getenv(const char *name)
{
	auto it = env.find(name);
	return it == env.end() ? nullptr : it->second.c_str();
}

using tracery::ust::read_daemonless_config;

TEST(DaemonlessConfig, OffWithoutOutput)
{
	env = {{"TRACERY_EVENTS", "a:*"}};
	std::string err;
	EXPECT_FALSE(read_daemonless_config(fake_getenv, &err));
	EXPECT_EQ(err, "");
}

TEST(DaemonlessConfig, ReadsEveryVariable)
{
	env = {{"TRACERY_OUTPUT", "/tmp/x"},  {"TRACERY_EVENTS", "app:*,lib:open"},
	       {"TRACERY_MODE", "overwrite"}, {"TRACERY_SUBBUF_SIZE", "64k"},
	       {"TRACERY_NUM_SUBBUF", "8"},   {"TRACERY_CONTEXT", "vtid,procname,ip,cgroup_id"}};
	std::string err;
	auto c = read_daemonless_config(fake_getenv, &err);
	ASSERT_TRUE(c) << err;
	EXPECT_EQ(c->output_dir, "/tmp/x");
	ASSERT_EQ(c->patterns.size(), 2u);
	EXPECT_EQ(c->patterns[1], "lib:open");
	EXPECT_EQ(c->mode, tracery::ringbuf::Mode::overwrite);
	EXPECT_EQ(c->subbuf_size, 65536u);
	EXPECT_EQ(c->num_subbuf, 8u);
	EXPECT_FALSE(c->context.vpid);
	EXPECT_TRUE(c->context.vtid);
	EXPECT_TRUE(c->context.procname);
	EXPECT_EQ(tracery::event::context_names(c->context),
	          (std::vector<std::string>{"vtid", "procname", "ip", "cgroup_id"}));
}

TEST(DaemonlessConfig, DefaultsRecordEverythingInDiscardMode)
{
	env = {{"TRACERY_OUTPUT", "d"}};
	std::string err;
	auto c = read_daemonless_config(fake_getenv, &err);
	ASSERT_TRUE(c);
	EXPECT_EQ(c->patterns, std::vector<std::string>{"*"});
	EXPECT_EQ(c->mode, tracery::ringbuf::Mode::discard);
	EXPECT_EQ(c->subbuf_size, 512u * 1024);
}

TEST(DaemonlessConfig, PayloadJitTakesZeroOrOne)
{
	for (const char *v : {"0", "1"}) {
		env = {{"TRACERY_OUTPUT", "d"}, {"TRACERY_PAYLOAD_JIT", v}};
		std::string err;
		EXPECT_TRUE(read_daemonless_config(fake_getenv, &err)) << v << ": " << err;
	}
}

struct BadCase {
	const char *var;
	const char *value;
	const char *fix;
};

TEST(DaemonlessConfig, BadValuesNameVariableValueAndFix)
{
	const BadCase cases[] = {
		{"TRACERY_MODE", "ring", "use discard or overwrite"},
		{"TRACERY_SUBBUF_SIZE", "3000", "power of two"},
		{"TRACERY_SUBBUF_SIZE", "1k", "power of two"},
		{"TRACERY_SUBBUF_SIZE", "12q", "power of two"},
		{"TRACERY_SUBBUF_SIZE", "", "power of two"},
		{"TRACERY_NUM_SUBBUF", "3", "power of two"},
		{"TRACERY_NUM_SUBBUF", "1", "power of two"},
		{"TRACERY_NUM_SUBBUF", "-4", "power of two"},
		{"TRACERY_EVENTS", "justaname", "provider:name"},
		{"TRACERY_EVENTS", ",", "at least one"},
		{"TRACERY_CONTEXT", "vpid,cpu", "vpid,vtid,procname"},
		{"TRACERY_CONTEXT", "ip,perf:thread:nope", "tracery add-context --list"},
		{"TRACERY_PAYLOAD_JIT", "maybe", "use 0 (the generic loop) or 1"},
		{"TRACERY_PAYLOAD_JIT", "", "use 0 (the generic loop) or 1"},
	};
	for (const auto &bc : cases) {
		env = {{"TRACERY_OUTPUT", "d"}, {bc.var, bc.value}};
		std::string err;
		EXPECT_FALSE(read_daemonless_config(fake_getenv, &err)) << bc.var << "=" << bc.value;
		EXPECT_NE(err.find(std::string(bc.var) + "='" + bc.value + "'"), std::string::npos) << err;
		EXPECT_NE(err.find(bc.fix), std::string::npos) << err;
		EXPECT_EQ(err.find('\n'), std::string::npos) << "one line";
	}
}

} // namespace

TEST(DaemonlessConfig, FilterRules)
{
	env = {{"TRACERY_OUTPUT", "/tmp/x"},
	       {"TRACERY_FILTER", "bench:ev=a % 3 == 0 && b == 42; app:*=s == \"x;y\" ;size>=4096"}};
	std::string err;
	auto c = read_daemonless_config(fake_getenv, &err);
	ASSERT_TRUE(c) << err;
	ASSERT_EQ(c->filters.size(), 3u);
	EXPECT_EQ(c->filters[0].pattern, "bench:ev");
	EXPECT_EQ(c->filters[0].expression, "a % 3 == 0 && b == 42");
	EXPECT_EQ(c->filters[1].pattern, "app:*");
	EXPECT_EQ(c->filters[1].expression, "s == \"x;y\" ");
	EXPECT_EQ(c->filters[2].pattern, "*");
	EXPECT_EQ(c->filters[2].expression, "size>=4096");
}

TEST(DaemonlessConfig, FilterWithoutPatternAppliesToEveryEvent)
{
	env = {{"TRACERY_OUTPUT", "/tmp/x"}, {"TRACERY_FILTER", "b==42"}};
	std::string err;
	auto c = read_daemonless_config(fake_getenv, &err);
	ASSERT_TRUE(c) << err;
	ASSERT_EQ(c->filters.size(), 1u);
	EXPECT_EQ(c->filters[0].pattern, "*");
	EXPECT_EQ(c->filters[0].expression, "b==42");
}

TEST(DaemonlessConfig, BadFilterShowsTheCaret)
{
	env = {{"TRACERY_OUTPUT", "/tmp/x"}, {"TRACERY_FILTER", "bench:ev=(a > 3"}};
	std::string err;
	EXPECT_FALSE(read_daemonless_config(fake_getenv, &err));
	EXPECT_NE(err.find("TRACERY_FILTER"), std::string::npos) << err;
	EXPECT_NE(err.find("expected ')'"), std::string::npos) << err;
	// The caret sits under the end of the expression, where ')' is missing.
	const size_t line = err.rfind('\n');
	ASSERT_NE(line, std::string::npos);
	EXPECT_EQ(err.substr(line + 1), std::string(2 + 6, ' ') + "^") << err;
}
