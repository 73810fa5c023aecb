// The C API's argument checks and error reporting (tracery/ctl.h), through
// the shared library as a program links it: a wrong argument is refused
// with TRACERY_CTL_ERROR_INVALID and a message naming it before anything is
// sent; with no daemon at the run directory, a call that passes its checks
// fails with TRACERY_CTL_ERROR_NO_DAEMON and the command's message. The
// calls against a daemon are tested by tests/install/ctl_test.py.
#include <tracery/ctl.h>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cstddef>
#include <cstdlib>
#include <string>
#include <thread>

namespace {

class CtlApi : public ::testing::Test {
protected:
	void SetUp() override
	{
		char dir[] = "/tmp/tracery-ctl-test-XXXXXX";
		ASSERT_NE(mkdtemp(dir), nullptr);
		rundir_ = dir;
		// A run directory where no daemon listens, and none started there
		// (ctl_test.py tests the start).
		ASSERT_EQ(setenv("TRACERY_RUNDIR", rundir_.c_str(), 1), 0);
		ASSERT_EQ(setenv("TRACERY_NO_AUTOSTART", "1", 1), 0);
	}
	void TearDown() override
	{
		unsetenv("TRACERY_RUNDIR");
		unsetenv("TRACERY_NO_AUTOSTART");
		rmdir(rundir_.c_str());
	}
	std::string rundir_;
};

std::string message() { return tracery_ctl_error_message(); }

TEST_F(CtlApi, SetupChecksItsArgumentsBeforeSending)
{
	EXPECT_EQ(tracery_ctl_setup(nullptr, "s", 0, 0, 0), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "root_dir is NULL");
	EXPECT_EQ(tracery_ctl_setup("/tmp", "", 0, 0, 0), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "name is empty");
	EXPECT_EQ(tracery_ctl_setup("/tmp", "s", 0, 0, 0x30), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "flags: unknown flags 0x30");
	EXPECT_EQ(tracery_ctl_setup("/tmp", "s", 0, 0, TRACERY_CTL_OVERWRITE | 0x100), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "flags: unknown flags 0x100");
}

TEST_F(CtlApi, NoDaemonIsItsOwnCodeWithTheCommandsMessage)
{
	// TRACERY_NO_AUTOSTART is set: the message does not offer `tracery create`.
	const std::string no_daemon = "no session daemon: start one with `traceryd --daemonize` (TRACERY_NO_AUTOSTART "
				      "keeps `tracery create` from starting one)";
	EXPECT_EQ(tracery_ctl_setup("/tmp", "s", 4096, 4, TRACERY_CTL_OVERWRITE), TRACERY_CTL_ERROR_NO_DAEMON);
	EXPECT_EQ(message(), no_daemon);
	EXPECT_EQ(tracery_ctl_start("s"), TRACERY_CTL_ERROR_NO_DAEMON);
	EXPECT_EQ(message(), no_daemon);
	char *json = nullptr;
	EXPECT_EQ(tracery_ctl_list_sessions(&json), TRACERY_CTL_ERROR_NO_DAEMON);
	EXPECT_EQ(json, nullptr);
	int state = 0;
	EXPECT_EQ(tracery_ctl_get_state("s", &state), TRACERY_CTL_ERROR_NO_DAEMON);
	EXPECT_EQ(state, 0);
}

TEST_F(CtlApi, OutputPointersAreRequired)
{
	EXPECT_EQ(tracery_ctl_get_state("s", nullptr), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "state is NULL");
	EXPECT_EQ(tracery_ctl_get_dropped("s", nullptr), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "dropped is NULL");
	EXPECT_EQ(tracery_ctl_session_status("s", nullptr), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "json is NULL");
	EXPECT_EQ(tracery_ctl_watch_open(nullptr, 0, nullptr), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "watch is NULL");
	EXPECT_EQ(tracery_ctl_watch_fd(nullptr), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(tracery_ctl_watch_next(nullptr, nullptr), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "watch is NULL");
}

TEST_F(CtlApi, DomainsAndArraysAreChecked)
{
	EXPECT_EQ(tracery_ctl_enable_events("s", 2, nullptr, nullptr, 0, nullptr, nullptr, 0),
	          TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "unknown domain 2: TRACERY_CTL_DOMAIN_USER (0) or TRACERY_CTL_DOMAIN_KERNEL (1)");
	EXPECT_EQ(tracery_ctl_enable_events("s", TRACERY_CTL_DOMAIN_USER, nullptr, nullptr, 3, nullptr, nullptr, 0),
	          TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "patterns is NULL with a count of 3");
	const char *const patterns[] = {"app:*", nullptr};
	EXPECT_EQ(tracery_ctl_enable_events("s", TRACERY_CTL_DOMAIN_USER, nullptr, patterns, 2, nullptr, nullptr, 0),
	          TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "patterns[1] is NULL");
	EXPECT_EQ(tracery_ctl_enable_events("s", TRACERY_CTL_DOMAIN_KERNEL, nullptr, patterns, 1, nullptr, patterns, 1),
	          TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "exclusions are for user space events: leave kernel events out with a filter or narrower "
	                     "patterns");
	EXPECT_EQ(tracery_ctl_enable_events("s", TRACERY_CTL_DOMAIN_USER, "", patterns, 1, nullptr, nullptr, 0),
	          TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "channel is empty");
	EXPECT_EQ(tracery_ctl_track("s", TRACERY_CTL_DOMAIN_USER, "vpid", nullptr, 1), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "values is NULL with a count of 1");
	EXPECT_EQ(tracery_ctl_add_context("s", TRACERY_CTL_DOMAIN_USER, nullptr, nullptr, 0),
	          TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "no context type given (vpid, vtid, procname, ...: `tracery add-context --list`)");
}

TEST_F(CtlApi, SizedStructsAreChecked)
{
	tracery_ctl_channel_attr channel{};
	EXPECT_EQ(tracery_ctl_enable_channel("s", TRACERY_CTL_DOMAIN_USER, "c", &channel), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "attr->struct_size is 0, less than the " + std::to_string(sizeof channel) +
	                             " bytes of its first version: set it to sizeof the struct");
	// A program built against a later release: a struct with a field this library does not know.
	struct {
		tracery_ctl_channel_attr known;
		uint64_t later_field;
	} later{};
	later.known.struct_size = sizeof later;
	EXPECT_EQ(tracery_ctl_enable_channel("s", TRACERY_CTL_DOMAIN_USER, "c", &later.known),
	          TRACERY_CTL_ERROR_NO_DAEMON)
		<< "a later field left zero is fine";
	later.later_field = 1;
	EXPECT_EQ(tracery_ctl_enable_channel("s", TRACERY_CTL_DOMAIN_USER, "c", &later.known),
	          TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "attr sets fields past the " + std::to_string(sizeof channel) +
	                             " bytes this libtracery-ctl knows: the program needs a later release of it");
	channel.struct_size = 1u << 20;
	EXPECT_EQ(tracery_ctl_enable_channel("s", TRACERY_CTL_DOMAIN_USER, "c", &channel), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "attr->struct_size is 1048576: no struct of this API is that large; set it to sizeof the "
	                     "struct");
	channel.struct_size = sizeof channel;
	channel.flags = TRACERY_CTL_PER_PID;
	EXPECT_EQ(tracery_ctl_enable_channel("s", TRACERY_CTL_DOMAIN_KERNEL, "c", &channel), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "attr->flags: unknown flags 0x2");
	channel.flags = 0;
	channel.blocking_timeout_us = 10;
	EXPECT_EQ(tracery_ctl_enable_channel("s", TRACERY_CTL_DOMAIN_KERNEL, "c", &channel), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "attr->blocking_timeout_us is for user space channels: the kernel's writers never wait");
	EXPECT_EQ(tracery_ctl_enable_channel("s", TRACERY_CTL_DOMAIN_USER, "c", &channel), TRACERY_CTL_ERROR_NO_DAEMON);

	tracery_ctl_session_attr session{};
	session.struct_size = sizeof session;
	EXPECT_EQ(tracery_ctl_create_session("s", &session), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "attr gives neither an output directory nor a relay URL: the trace would go nowhere");
	session.output = "/tmp/t";
	session.live_period_ns = 1000000;
	EXPECT_EQ(tracery_ctl_create_session("s", &session), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "attr->live_period_ns is for a session sent to a relay: give attr->url too");

	tracery_ctl_trigger_condition condition{};
	condition.struct_size = sizeof condition;
	condition.type = TRACERY_CTL_CONDITION_EVENT_RULE_MATCHES;
	condition.pattern = "app:*";
	tracery_ctl_trigger_action notify{};
	notify.struct_size = sizeof notify;
	notify.type = 9;
	const tracery_ctl_trigger_action *const actions[] = {&notify};
	EXPECT_EQ(tracery_ctl_add_trigger(nullptr, &condition, actions, 1, nullptr), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "actions[].type 9 is no enum tracery_ctl_action_type");
	EXPECT_EQ(tracery_ctl_add_trigger(nullptr, &condition, actions, 0, nullptr), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "no action: a trigger needs at least one (TRACERY_CTL_ACTION_NOTIFY, ...)");
	notify.type = TRACERY_CTL_ACTION_NOTIFY;
	notify.policy = 5;
	EXPECT_EQ(tracery_ctl_add_trigger(nullptr, &condition, actions, 1, nullptr), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "actions[]->policy 5 is no enum tracery_ctl_rate_policy");
	notify.policy = TRACERY_CTL_RATE_EVERY;
	EXPECT_EQ(tracery_ctl_add_trigger(nullptr, &condition, actions, 1, nullptr), TRACERY_CTL_ERROR_NO_DAEMON);
}

TEST_F(CtlApi, RotationArgumentsAreChecked)
{
	EXPECT_EQ(tracery_ctl_enable_rotation("s", 0, 0), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "neither timer_ns nor size_bytes given: rotate by time, by size or both");
	EXPECT_EQ(tracery_ctl_disable_rotation("s", 4), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "which: unknown flags 0x4");
	EXPECT_EQ(tracery_ctl_snapshot_record("s", "", 0, nullptr), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "path is empty");
}

TEST_F(CtlApi, SessionAttrOfTheFirstReleaseAndTheRelaysFiles)
{
	// A program built against 0.1 passes the struct without the relay's files: accepted.
	tracery_ctl_session_attr session{};
	session.struct_size = offsetof(tracery_ctl_session_attr, relay_key_file);
	session.output = "/tmp/t";
	EXPECT_EQ(tracery_ctl_create_session("s", &session), TRACERY_CTL_ERROR_NO_DAEMON);
	session.struct_size = 8;
	EXPECT_EQ(tracery_ctl_create_session("s", &session), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "attr->struct_size is 8, less than the " +
	                             std::to_string(offsetof(tracery_ctl_session_attr, relay_key_file)) +
	                             " bytes of its first version: set it to sizeof the struct");

	session.struct_size = sizeof session;
	session.relay_key_file = "/nonexistent/key";
	EXPECT_EQ(tracery_ctl_create_session("s", &session), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "attr->relay_key_file and attr->relay_ca_file are for a session sent to a relay, or the "
	                     "snapshots of a snapshot session: give attr->url or TRACERY_CTL_SNAPSHOT too");
	session.url = "net://127.0.0.1:1";
	EXPECT_EQ(tracery_ctl_create_session("s", &session), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message().rfind("attr->relay_key_file ", 0), 0u) << message();
	EXPECT_NE(message().find("/nonexistent/key"), std::string::npos) << message();
	// A key others may read is refused before anything is sent, as the command refuses it.
	const std::string key = rundir_ + "/key";
	const int fd = open(key.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
	ASSERT_GE(fd, 0);
	const std::string line = "laptop 00112233445566778899aabbccddeeff\n";
	ASSERT_EQ(write(fd, line.data(), line.size()), static_cast<ssize_t>(line.size()));
	close(fd);
	ASSERT_EQ(chmod(key.c_str(), 0644), 0);
	session.relay_key_file = key.c_str();
	EXPECT_EQ(tracery_ctl_create_session("s", &session), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message().rfind("attr->relay_key_file ", 0), 0u) << message();
	ASSERT_EQ(chmod(key.c_str(), 0600), 0);
	EXPECT_EQ(tracery_ctl_create_session("s", &session), TRACERY_CTL_ERROR_NO_DAEMON) << message();
	session.relay_ca_file = key.c_str(); // no certificate in it
	EXPECT_EQ(tracery_ctl_create_session("s", &session), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message().rfind("attr->relay_ca_file ", 0), 0u) << message();
	unlink(key.c_str());
}

TEST_F(CtlApi, SnapshotOutputsProbesAndSavedSessionsCheckTheirArguments)
{
	char *json = nullptr;
	EXPECT_EQ(tracery_ctl_snapshot_add_output("s", nullptr, nullptr, 0, &json), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "url is NULL");
	EXPECT_EQ(tracery_ctl_snapshot_add_output("s", "http://host/x", nullptr, 0, &json), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "'http://host/x': snapshots are written to a directory (DIR or file://DIR) or sent to a "
	                     "relay (net://HOST[:PORT])");
	EXPECT_EQ(tracery_ctl_snapshot_add_output("s", "file://", nullptr, 0, &json), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "no directory given: DIR or file://DIR");
	EXPECT_EQ(tracery_ctl_snapshot_add_output("s", "/tmp/snaps", "", 0, &json), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "name is empty");
	EXPECT_EQ(tracery_ctl_snapshot_add_output("s", "/tmp/snaps", nullptr, 0, nullptr), TRACERY_CTL_ERROR_NO_DAEMON);
	EXPECT_EQ(tracery_ctl_snapshot_del_output("s", "", &json), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "output is empty");
	EXPECT_EQ(tracery_ctl_snapshot_list_outputs("s", nullptr), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "json is NULL");
	EXPECT_EQ(json, nullptr);

	EXPECT_EQ(tracery_ctl_enable_userspace_probe("s", nullptr, "probe", nullptr, nullptr, nullptr, nullptr),
	          TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "spec is NULL");
	EXPECT_EQ(tracery_ctl_enable_userspace_probe("s", "", "probe", "elf:/bin/true:main", nullptr, nullptr, nullptr),
	          TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "channel is empty");
	EXPECT_EQ(tracery_ctl_enable_userspace_probe("s", nullptr, "probe", "elf:/bin/true:main", nullptr, nullptr,
	                                             nullptr),
	          TRACERY_CTL_ERROR_NO_DAEMON);

	EXPECT_EQ(tracery_ctl_save_session("s", nullptr), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "text is NULL");
	EXPECT_EQ(tracery_ctl_load_session("{}", nullptr, nullptr, 2, nullptr), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "flags: unknown flags 0x2");
	EXPECT_EQ(tracery_ctl_load_session("{", "mine.json", nullptr, 0, nullptr), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message().rfind("mine.json: ", 0), 0u) << message();
	EXPECT_EQ(tracery_ctl_load_session("[]", nullptr, nullptr, 0, nullptr), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message().rfind("text: ", 0), 0u) << message();
	const std::string huge(600 * 1024, ' ');
	EXPECT_EQ(tracery_ctl_load_session(huge.c_str(), nullptr, nullptr, 0, nullptr), TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "text: 614400 bytes, more than the 524288 of a session file");
}

TEST_F(CtlApi, TheMessageIsPerThreadAndClearedBySuccess)
{
	EXPECT_EQ(tracery_ctl_start(nullptr), TRACERY_CTL_ERROR_INVALID);
	std::string other;
	std::thread([&] {
		other = message();
		EXPECT_EQ(tracery_ctl_stop(""), TRACERY_CTL_ERROR_INVALID);
	}).join();
	EXPECT_EQ(other, "");
	EXPECT_EQ(message(), "name is NULL");
	tracery_ctl_free(nullptr);
	int fd_or_error = tracery_ctl_watch_fd(nullptr);
	EXPECT_EQ(fd_or_error, TRACERY_CTL_ERROR_INVALID);
	EXPECT_EQ(message(), "watch is NULL");
}

} // namespace
