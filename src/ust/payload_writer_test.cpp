// Unit test of the per-layout payload writers (payload_writer.hpp): the same
// bytes as event::write_payload for random all-scalar layouts and values, and
// code generation in a child forked while another thread generates code.
#include "ust/payload_writer.hpp"

#include "event/payload.hpp"
#include "ust/registry.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

namespace tracery::ust {
namespace {

const tracery_enum_entry kEntries[] = {{"zero", 0, 0}};
const tracery_enum_desc kEnum = {"e", kEntries, 1};

tracery_event_desc make_desc(const std::vector<tracery_field_desc> &fields)
{
	return tracery_event_desc{"t",     "ev",    fields.data(), uint32_t(fields.size()), 0,
	                          nullptr, nullptr, nullptr,       TRACERY_GATE_ARGS};
}

TEST(PayloadWriter, SameBytesAsTheGenericWriterForRandomScalarLayouts)
{
	std::mt19937_64 rng(20261123);
	const uint8_t scalar_types[] = {TRACERY_TYPE_U8,    TRACERY_TYPE_U16,    TRACERY_TYPE_U32,  TRACERY_TYPE_U64,
	                                TRACERY_TYPE_S8,    TRACERY_TYPE_S16,    TRACERY_TYPE_S32,  TRACERY_TYPE_S64,
	                                TRACERY_TYPE_FLOAT, TRACERY_TYPE_DOUBLE, TRACERY_TYPE_BOOL, TRACERY_TYPE_ENUM};
	for (int round = 0; round < 2000; ++round) {
		const uint32_t n = 1 + uint32_t(rng() % (round < 1000 ? 8 : kMaxWriterFields));
		std::vector<tracery_field_desc> fields;
		for (uint32_t i = 0; i < n; ++i) {
			const uint8_t t = scalar_types[rng() % std::size(scalar_types)];
			const bool is_enum = t == TRACERY_TYPE_ENUM;
			fields.push_back({"f", t, uint8_t(is_enum ? rng() % 8 : 0), 0, is_enum ? &kEnum : nullptr});
		}
		const tracery_event_desc desc = make_desc(fields);
		const PayloadWriter writer = payload_writer_for(desc);
		ASSERT_NE(writer, nullptr) << "round " << round;
		// Every value 8 random bytes, so bools are often neither 0 nor 1.
		std::vector<uint64_t> values(n);
		std::vector<tracery_arg> args(n);
		for (uint32_t i = 0; i < n; ++i) {
			values[i] = rng();
			args[i] = {&values[i], 0};
		}
		const size_t size = event::payload_size(desc, args.data());
		std::vector<uint8_t> expected(size + 16, 0xAA), got(size + 16, 0xAA);
		event::write_payload(expected.data(), desc, args.data());
		writer(got.data(), args.data());
		ASSERT_EQ(got, expected) << "round " << round << ", " << n
					 << " fields (the 16 bytes after stay untouched)";
	}
}

TEST(PayloadWriter, SharedByLayoutsOfTheSameShape)
{
	const std::vector<tracery_field_desc> a = {{"x", TRACERY_TYPE_U32, 0, 0, nullptr},
	                                           {"y", TRACERY_TYPE_S64, 0, 0, nullptr}};
	const std::vector<tracery_field_desc> b = {{"p", TRACERY_TYPE_FLOAT, 0, 0, nullptr},
	                                           {"q", TRACERY_TYPE_DOUBLE, 0, 0, nullptr}};
	const std::vector<tracery_field_desc> c = {{"p", TRACERY_TYPE_U64, 0, 0, nullptr},
	                                           {"q", TRACERY_TYPE_U32, 0, 0, nullptr}};
	const PayloadWriter wa = payload_writer_for(make_desc(a));
	ASSERT_NE(wa, nullptr);
	EXPECT_EQ(payload_writer_for(make_desc(b)), wa) << "4 then 8 bytes in both";
	EXPECT_NE(payload_writer_for(make_desc(c)), wa) << "8 then 4 bytes";
}

TEST(PayloadWriter, NoneForOtherLayouts)
{
	const std::vector<tracery_field_desc> with_string = {{"n", TRACERY_TYPE_U32, 0, 0, nullptr},
	                                                     {"s", TRACERY_TYPE_STRING, 0, 0, nullptr}};
	const std::vector<tracery_field_desc> with_array = {{"a", TRACERY_TYPE_ARRAY, TRACERY_TYPE_U8, 4, nullptr}};
	const std::vector<tracery_field_desc> bad_enum = {{"e", TRACERY_TYPE_ENUM, TRACERY_TYPE_U8, 0, nullptr}};
	const std::vector<tracery_field_desc> too_many(kMaxWriterFields + 1, {"f", TRACERY_TYPE_U8, 0, 0, nullptr});
	EXPECT_EQ(payload_writer_for(make_desc(with_string)), nullptr);
	EXPECT_EQ(payload_writer_for(make_desc(with_array)), nullptr);
	EXPECT_EQ(payload_writer_for(make_desc(bad_enum)), nullptr) << "an enum without labels is not recordable";
	EXPECT_EQ(payload_writer_for(make_desc(too_many)), nullptr);
	EXPECT_EQ(payload_writer_for(make_desc({})), nullptr);
}

// A layout of its own for each (tag, n): a first field of tag + 1 bytes, then
// twelve fields whose sizes spell n in base 4.
std::vector<tracery_field_desc> distinct_layout(int tag, uint64_t n)
{
	const uint8_t by_size[] = {TRACERY_TYPE_U8, TRACERY_TYPE_U16, TRACERY_TYPE_U32, TRACERY_TYPE_U64};
	std::vector<tracery_field_desc> fields = {{"tag", by_size[tag], 0, 0, nullptr}};
	for (int digit = 0; digit < 12; ++digit, n /= 4)
		fields.push_back({"f", by_size[n % 4], 0, 0, nullptr});
	return fields;
}

// The fork handlers hold the code generation lock across fork()
// (lock_for_fork): a child forked while another thread generates code must be
// able to generate code, instead of waiting forever for a lock held by a
// thread it does not have.
TEST(PayloadWriter, AChildForkedDuringCodeGenerationCanGenerateCode)
{
	std::atomic<bool> stop{false};
	std::atomic<uint64_t> generated{0};
	std::thread generator([&] {
		for (uint64_t n = 0; !stop.load(); ++n) {
			const auto fields = distinct_layout(0, n);
			if (payload_writer_for(make_desc(fields)))
				generated++;
		}
	});
	while (generated.load() == 0)
		std::this_thread::yield();
	for (int round = 0; round < 40; ++round) {
		lock_for_fork();
		const pid_t child = fork();
		if (child == 0) {
			unlock_after_fork();
			const auto fields = distinct_layout(1, uint64_t(round)); // never made by the parent
			_exit(payload_writer_for(make_desc(fields)) ? 0 : 1);
		}
		unlock_after_fork();
		if (child < 0) {
			ADD_FAILURE() << "fork failed";
			break;
		}
		int status = 0;
		pid_t done = 0;
		for (int ms = 0; ms < 10000 && (done = waitpid(child, &status, WNOHANG)) == 0; ++ms)
			usleep(1000);
		if (done == 0) {
			kill(child, SIGKILL);
			waitpid(child, &status, 0);
		}
		EXPECT_NE(done, 0) << "round " << round
				   << ": the child still waits for the code generation lock after 10 s";
		EXPECT_TRUE(done == 0 || (WIFEXITED(status) && WEXITSTATUS(status) == 0))
			<< "round " << round << ": the child got no writer (status " << status << ")";
		if (done == 0)
			break;
	}
	stop = true;
	generator.join();
	EXPECT_GT(generated.load(), 40u) << "the generating thread should have been busy all along";
}

} // namespace
} // namespace tracery::ust
