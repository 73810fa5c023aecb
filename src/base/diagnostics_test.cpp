// base/diagnostics_test.cpp — where diagnostic() writes: stderr in Tracery's
// programs; after diagnostics_only_when_asked(), as in a traced program,
// nowhere unless TRACERY_LOG says stderr or a file. Each case runs in a child
// process (the choice is made once per process), its stderr a file.
#include "base/diagnostics.hpp"
#include "base/test_temp_dir.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>

namespace tracery::base {
namespace {

std::string read_all(const std::string &path)
{
	std::ifstream in(path, std::ios::binary);
	return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

class DiagnosticsTest : public ::testing::Test {
protected:
	// Runs, in a child whose stderr is the file `stderr`: TRACERY_LOG=log
	// (nullptr: unset), diagnostics_only_when_asked() if `traced`, then two
	// diagnostics. Returns what its stderr received.
	std::string run(const char *log, bool traced)
	{
		const pid_t pid = fork();
		if (pid == 0) {
			const int fd = open(stderr_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
			if (fd < 0 || dup2(fd, STDERR_FILENO) < 0)
				_exit(2);
			if (log)
				setenv("TRACERY_LOG", log, 1);
			else
				unsetenv("TRACERY_LOG");
			if (traced)
				diagnostics_only_when_asked();
			diagnostic("first %d", 1);
			diagnostic("%s", std::string(5000, 'x').c_str()); // (cut at 4 KiB)
			_exit(0);
		}
		int status = 0;
		EXPECT_EQ(waitpid(pid, &status, 0), pid);
		EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
		return read_all(stderr_);
	}

	const TestTempDir tmp_{"tracery-diagnostics"};
	const std::string stderr_ = tmp_.path() + "/stderr";
	const std::string two_lines_ = "tracery: first 1\ntracery: " + std::string(4096 - 9 - 2, 'x') + "\n";
};

TEST_F(DiagnosticsTest, OnStderrInTraceryPrograms)
{
	EXPECT_EQ(run(nullptr, false), two_lines_);
	EXPECT_EQ(run("/nonexistent/log", false), two_lines_); // (TRACERY_LOG is libtracery's)
}

TEST_F(DiagnosticsTest, NowhereInATracedProgramUnlessAsked)
{
	EXPECT_EQ(run(nullptr, true), "");
	EXPECT_EQ(run("", true), "");
}

TEST_F(DiagnosticsTest, StderrWhenAsked) { EXPECT_EQ(run("stderr", true), two_lines_); }

TEST_F(DiagnosticsTest, AppendedToTheFileAsked)
{
	const std::string log = tmp_.path() + "/log";
	EXPECT_EQ(run(log.c_str(), true), "");
	EXPECT_EQ(run(log.c_str(), true), "");
	EXPECT_EQ(read_all(log), two_lines_ + two_lines_);
	EXPECT_EQ(run((tmp_.path() + "/no/such/dir/log").c_str(), true), ""); // nothing, and no crash
}

} // namespace
} // namespace tracery::base
